"""Single-process vs local Ray on the same shards: wall time, answers/s, overhead ratio (Markdown).

    .venv/bin/python scripts/bench_ray.py --shards 3 --questions-per-shard 2 --passages 20 \\
        --max-pairs-per-question 10 --rubrics conciseness,grammar --text-actors 1,2

Shards are cut from a graded file (default ``../shared/data/TREC-DL-NF.json``). The single-process
row runs ``workers.jobs.score.run_job`` over all shards; each Ray row runs it with ``ray=workers.cluster.pipeline.RayStep(...)``
over the same shards into a fresh folder, on one local Ray whose start-up time is reported on its
own. Both are one job (scored, then assembled once); the tables are checked to be identical before
timings are printed.

``--prompt-tokens`` instead counts the prompt tokens the LLM rubrics send per unique answer (both
prompt layouts, chat template applied, and the prefix the answer-first prompts share) - the inputs of
the pairs/hour estimate in docs/ray.md:

    .venv/bin/python scripts/bench_ray.py --prompt-tokens --data ../shared/data/WEBGLM_50.json
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

log = logging.getLogger("lfqa_rubric.bench_ray")


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parents[1]
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(root.parent / "shared" / "data" / "TREC-DL-NF.json"))
    p.add_argument("--shards", type=int, default=3)
    p.add_argument("--questions-per-shard", type=int, default=2)
    p.add_argument("--passages", type=int, default=20, help="graded passages kept per question")
    p.add_argument("--max-pairs-per-question", type=int, default=10)
    p.add_argument("--rubrics", default="conciseness,grammar")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--text-actors", default="1", help="comma-separated text pool sizes, one Ray run each")
    p.add_argument("--num-cpus", type=int, default=2)
    p.add_argument("--prompt-tokens", action="store_true", help="count LLM prompt tokens instead of timing")
    p.add_argument("--tokenizer", default=None, help="tokenizer folder (default: the embedded SmolLM2's)")
    p.add_argument("--llm-rubrics", default="coherence,relevance,fluency,completeness,use_of_examples")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.prompt_tokens:
        return _prompt_tokens(args)

    import pyarrow.parquet as pq

    from rubric.config import ScoringConfig
    from rubric.scoring import resolve_rubrics
    from workers.jobs import run_score_job
    from workers.cluster import PoolConfig, RayStep, init_local_ray, shutdown_ray

    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    questions = list(data)[: args.shards * args.questions_per_shard]
    specs = resolve_rubrics(args.rubrics)
    config = ScoringConfig(batch_size=args.batch_size)
    options = {"max_pairs_per_question": args.max_pairs_per_question}
    rows = []
    with tempfile.TemporaryDirectory(prefix="lfqa-bench-") as tmp:
        tmp = Path(tmp)
        shards = []
        for k in range(args.shards):
            qs = questions[k * args.questions_per_shard:(k + 1) * args.questions_per_shard]
            path = tmp / "in" / f"shard_{k}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({q: data[q][: args.passages] for q in qs}), encoding="utf-8")
            shards.append(path)

        t0 = time.perf_counter()
        m = run_score_job(shards, "graded", specs, tmp / "local", config=config, reader_options=options, progress=False)
        answers = m["job"]["answers_scored_now"]
        single = time.perf_counter() - t0
        rows.append(("single process", "-", single, answers / single, 1.0))

        t0 = time.perf_counter()
        temp_dir = init_local_ray(num_cpus=args.num_cpus, object_store_mb=256)
        ray_init = time.perf_counter() - t0
        try:
            for n in (int(x) for x in args.text_actors.split(",")):
                out = tmp / f"ray{n}"
                t0 = time.perf_counter()
                got = run_score_job([tmp / "in"], "graded", specs, out, config=config, reader_options=options,
                              ray=RayStep(pools={"text": PoolConfig(size=n, num_cpus=0.5)}), progress=False)
                wall = time.perf_counter() - t0
                if got["job"]["answers_scored_now"] != answers:
                    raise SystemExit(f"Ray scored {got['job']['answers_scored_now']} answers, single process {answers}")
                for name in ("answers.parquet", "pairs.parquet"):
                    if not pq.read_table(out / name).equals(pq.read_table(tmp / "local" / name)):
                        raise SystemExit(f"{name} differs between Ray and the single process")
                rows.append((f"local Ray, {n} text actor(s)", f"{ray_init:.1f}", wall, answers / wall, wall / single))
        finally:
            shutdown_ray()
            import shutil

            shutil.rmtree(temp_dir, ignore_errors=True)

    lines = [f"Input: {args.shards} shards x {args.questions_per_shard} questions x {args.passages} graded passages, "
             f"max {args.max_pairs_per_question} pairs/question -> {answers} unique answers; rubrics {args.rubrics}; "
             f"{args.num_cpus} CPUs for Ray.", "",
             "| path | Ray start (s, not in wall) | wall (s) | answers/s | wall / single process |",
             "|---|---|---|---|---|"]
    lines += [f"| {name} | {init} | {wall:.1f} | {rate:.2f} | {ratio:.2f} |" for name, init, wall, rate, ratio in rows]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _prompt_tokens(args) -> int:
    """Mean prompt tokens per unique answer over all LLM rubrics, per layout, and the shared prefix."""
    import statistics

    from transformers import AutoTokenizer

    from rubric.scoring import get_template
    from rubric.io import read_input
    from rubric.io import explode
    from rubric.scoring import resolve_rubrics

    if args.tokenizer is None:
        from models.llm import smollm2_folder

        args.tokenizer = str(smollm2_folder())
    tok = AutoTokenizer.from_pretrained(args.tokenizer)
    items = explode(read_input(args.data, "graded", max_pairs_per_question=args.max_pairs_per_question).pairs)
    specs = resolve_rubrics(args.llm_rubrics)

    def ids(prompt) -> list[int]:
        text = tok.apply_chat_template(prompt.messages(), continue_final_message=True, tokenize=False)
        return tok(text, add_special_tokens=False)["input_ids"]

    lines = [f"Data: {args.data} -> {len(items)} unique answers, mean "
             f"{statistics.mean(len(it.answer.split()) for it in items):.0f} words; rubrics {args.llm_rubrics}; "
             f"tokenizer {args.tokenizer}.", "",
             "| layout | prompts/answer | prompt tokens/answer (sum over rubrics) | shared prefix tokens | "
             "tokens to prefill with prefix caching |", "|---|---|---|---|---|"]
    for layout in ("paper", "answer_first"):
        templates = [get_template(s.version, layout) for s in specs]
        total, shared = [], []
        for it in items:
            seqs = [ids(t.render(question=it.question, answer=it.answer)) for t in templates]
            n = 0
            while all(len(x) > n for x in seqs) and len({x[n] for x in seqs}) == 1:
                n += 1
            total.append(sum(len(x) for x in seqs))
            shared.append(n)
        t, sh = statistics.mean(total), statistics.mean(shared)
        lines.append(f"| {layout} | {len(templates)} | {t:.0f} | {sh:.0f} | {t - (len(templates) - 1) * sh:.0f} |")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
