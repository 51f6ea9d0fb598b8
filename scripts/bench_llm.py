"""Benchmark the five LLM rubrics: (a) the reference code's way vs (b) ours (vLLM, batched, cached, deduplicated).

Example (CPU, embedded SmolLM2)::

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_llm.py --questions 4

On a CUDA machine without vLLM, (b) runs on the transformers engine (batched, deduplicated, no
prefix cache), and the raw scores can be saved and set against another run's::

    python scripts/bench_llm.py --backend transformers --device cuda --dtype float32 \
        --questions 100 --save-scores cuda.json
    python scripts/bench_llm.py --backend transformers --device cpu --questions 10 \
        --skip-reference --compare-to cuda.json

Logic lives in ``scripts/_bench_common.py``; this file only parses arguments and prints the tables.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing

RUBRICS = "coherence,relevance,fluency,completeness,use_of_examples"
#: The benchmark data beside the checkout (``../shared/data``), as for the other bench scripts.
DEFAULT_DATA = REPO.parent / "shared" / "data" / "WEBGLM_50.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=None,
                    help="WebGLM-style JSON file (default: ../shared/data/WEBGLM_50.json beside the checkout)")
    ap.add_argument("--questions", type=int, default=4, help="first N questions (3 answers -> 3 pairs each)")
    ap.add_argument("--batch-size", type=int, default=32, help="answers per score_batch call in (b)")
    ap.add_argument("--profile", default="cpu", choices=("cpu", "gpu"))
    ap.add_argument("--model", default=None, help="override the profile's model (Hub id or folder)")
    ap.add_argument("--max-context", type=int, default=None, help="prompt limit (default: the profile's)")
    ap.add_argument("--skip-reference", action="store_true", help="do not run (a) (slow on a GPU-sized model)")
    ap.add_argument("--backend", default="vllm", choices=("vllm", "transformers"), help="the engine of (b)")
    ap.add_argument("--device", default=None, help="transformers only: cpu, cuda... (default: cuda when available)")
    ap.add_argument("--dtype", default=None,
                    help="transformers only: torch dtype (default float32 on CPU, bfloat16 on GPU)")
    ap.add_argument("--engine-batch-size", type=int, default=None,
                    help="transformers only: most prompts per forward pass in (b) (the engine's default: 8)")
    ap.add_argument("--engine-batch-tokens", type=int, default=None,
                    help="transformers only: most padded tokens per forward pass in (b) (the engine's default: 8192)")
    ap.add_argument("--save-scores", type=Path, default=None,
                    help="write (b)'s raw scores (paper layout) as JSON: {answer_id: {rubric: raw}}")
    ap.add_argument("--compare-to", type=Path, default=None,
                    help="a --save-scores file: print r and max |diff| of (b)'s paper-layout scores against it")
    args = ap.parse_args(argv)
    if args.data is None:
        if not DEFAULT_DATA.is_file():
            ap.error(f"no --data given and the default benchmark file {DEFAULT_DATA} is absent; "
                     "pass --data PATH to a WebGLM-style JSON file")
        args.data = DEFAULT_DATA
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    log = logging.getLogger("bench_llm")

    from scripts._bench_common import (compare_scores, correlations, device_line, format_table, load_pairs, load_scores,
                                  run_ours, run_reference, save_scores, transformers_kwargs, warm_up)
    from models.llm import build_engine
    from rubric.config import ScoringConfig
    from rubric.scoring import resolve_rubrics

    specs = resolve_rubrics(RUBRICS)
    pairs = load_pairs(args.data, args.questions)
    kw = {"max_context": args.max_context} if args.max_context else {}
    hf_kw = transformers_kwargs(device=args.device, dtype=args.dtype)
    if hf_kw and args.backend != "transformers" and args.skip_reference:
        ap.error("--device/--dtype set the transformers engine: use them with --backend transformers or (a)")
    runs = []
    # (a) first: vLLM, once started, lowers torch's thread count for the whole process.
    ref = None
    if not args.skip_reference:
        hf = build_engine(ScoringConfig(llm_profile=args.profile, llm_backend="transformers", llm_model=args.model,
                                        engine_kwargs={**kw, **hf_kw, "batch_size": 1}))
        warm_up(hf)
        log.info("(a) reference: %d pairs, one prompt per call, transformers", len(pairs))
        ref = run_reference(pairs, specs, hf)
        runs.append(ref)
        del hf
    t0 = time.perf_counter()
    b_kw = dict(kw)
    if args.backend == "transformers":
        b_kw.update(transformers_kwargs(device=args.device, dtype=args.dtype, batch_size=args.engine_batch_size,
                                        batch_tokens=args.engine_batch_tokens))
    eng = build_engine(ScoringConfig(llm_profile=args.profile, llm_backend=args.backend, llm_model=args.model,
                                     engine_kwargs=b_kw))
    log.info("%s engine started in %.1f s", args.backend, time.perf_counter() - t0)
    warm_up(eng)
    for layout in ("paper", "answer_first"):
        if hasattr(eng, "reset_prefix_cache"):
            eng.reset_prefix_cache()
        log.info("(b) ours, %s layout", layout)
        runs.append(run_ours(pairs, specs, eng, layout=layout, batch_size=args.batch_size,
                             name=f"ours-{args.backend}-{layout.replace('_', '-')}"))
    base = ref or runs[0]
    where = f" device={eng.device} dtype={eng.model.dtype}" if args.backend == "transformers" else ""
    out = [f"model: {eng.model_id} @ {eng.revision}; backend {args.backend}{where} max_context={eng.max_context}; "
           f"{args.questions} questions, {len(pairs)} pairs; {device_line()}", "", format_table(runs, base), ""]
    names = [s.name for s in specs]
    paper, first = runs[-2], runs[-1]
    out.append("| rubric | r(answer-first, paper) | max abs diff | r((a), (b) paper) | max abs diff |")
    out.append("|---|---|---|---|---|")
    agree = correlations(first, paper, names)
    ref_agree = correlations(ref, paper, names) if ref else {}
    for n in names:
        r1, d1 = agree[n]
        r2, d2 = ref_agree.get(n, (float("nan"), float("nan")))
        out.append(f"| {n} | {r1:.3f} | {d1:.3f} | {r2:.4f} | {d2:.2g} |")
    if args.save_scores:
        save_scores(args.save_scores, paper, meta={"model": eng.model_id, "backend": args.backend, "where": where,
                                                   "questions": args.questions})
    if args.compare_to:
        other = load_scores(args.compare_to)
        out += ["", f"(b) paper layout against {args.compare_to} ({other.name}):", "",
                "| rubric | answers in both | r | max abs diff | mean abs diff |", "|---|---|---|---|---|"]
        for n, (k, r, dmax, dmean) in compare_scores(paper, other, names).items():
            out.append(f"| {n} | {k} | {r:.4f} | {dmax:.2g} | {dmean:.2g} |")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":  # vLLM may spawn processes: keep the guard
    sys.exit(main())
