"""LLM pool on a local Ray: the synchronous actor vs the kept-busy one, same SmolLM2 inputs (Markdown table).

    nice -n 10 .venv/bin/python scripts/bench_keep_busy.py --questions 16 --rubrics coherence,fluency \\
        --batch-size 8 --batches-in-flight 3

The unique answers of the first ``--questions`` WebGLM questions (default file
``../shared/data/WEBGLM_50.json``) go through one LLM pool stage (``workers.cluster.pipeline.add_pool_stage``,
one actor) twice on one local Ray: ``batches_in_flight=1`` (today's actor: one synchronous engine call
per Ray batch) and ``batches_in_flight=K`` (K batches per actor in threads, one kept-busy engine). An
untimed pass over one batch comes first, so the model files are in the page cache for both rows. Each
row's seconds run from submitting the dataset to its last batch, the actor's engine start included
(the same work in both rows). ``--repeat R`` runs the pair R times in alternating order (A B, B A, ...)
so that a load change on a shared machine does not favour one path; the "all passes" rows pool them.
The scores of every pass are compared with the first synchronous pass, answer by answer.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing

DEFAULT_DATA = REPO.parent / "shared" / "data" / "WEBGLM_50.json"
_PATH = {True: "synchronous actor", False: "kept-busy actor"}


def _run(items, versions, pool, config) -> tuple[float, dict[str, dict[str, float | None]]]:
    """One pass of the pool over ``items``: seconds, and answer id -> rubric -> raw score (None: an error)."""
    import ray

    import json

    from workers.jobs import ScoreKind
    from workers.cluster import add_pool_stage, item_rows, shutdown_ray
    from workers.storage.codec import decode_score

    kind = ScoreKind("lfqa-hp", {}, versions, config)
    t0 = time.perf_counter()
    ds = add_pool_stage(ray.data.from_arrow(item_rows(kind, items)), kind, "llm", versions, pool,
                        batch_size=pool.batch_size or config.batch_size)
    scores: dict[str, dict[str, float | None]] = {}
    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
        cols = batch.to_pydict()
        for ids, got in zip(cols["ids"], cols["scores"]):
            (answer_id,), (row,) = json.loads(ids), json.loads(got)
            scores[answer_id] = {n: decode_score(v).raw for n, v in row.items()}
    return time.perf_counter() - t0, scores


def _max_diff(a: dict, b: dict) -> float:
    """Largest |a - b| over every answer and rubric; inf when an answer, or whether it failed, differs."""
    if set(a) != set(b):
        return math.inf
    worst = 0.0
    for answer_id, row in a.items():
        for name, x in row.items():
            y = b[answer_id][name]
            if (x is None) != (y is None):
                return math.inf
            if x is not None:
                worst = max(worst, abs(x - y))
    return worst


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="WebGLM-style JSON file")
    ap.add_argument("--questions", type=int, default=16, help="first N questions (3 answers each)")
    ap.add_argument("--rubrics", default="coherence,fluency", help="LLM rubrics (names or versions)")
    ap.add_argument("--batch-size", type=int, default=8, help="answers per Ray batch")
    ap.add_argument("--batches-in-flight", type=int, default=3, help="K of the kept-busy row")
    ap.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray")
    ap.add_argument("--cpus-per-actor", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=1, help="pairs of passes, in alternating order")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if not args.data.is_file():
        ap.error(f"benchmark data {args.data} not found; pass --data")
    if args.batches_in_flight < 2 or args.repeat < 1:
        ap.error("--batches-in-flight must be >= 2 and --repeat >= 1")
    load_start = os.getloadavg()[0]

    import ray

    from scripts._bench_common import load_pairs
    from rubric.config import ScoringConfig
    from rubric.io import explode
    from rubric.scoring import resolve_rubrics
    from workers.cluster import PoolConfig, init_local_ray

    items = explode(load_pairs(args.data, args.questions))
    versions = [s.version for s in resolve_rubrics(args.rubrics)]
    config = ScoringConfig(batch_size=args.batch_size)
    temp_dir = init_local_ray(num_cpus=args.num_cpus, object_store_mb=512)
    rows = []
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        _run(items[:args.batch_size], versions, PoolConfig(size=1, num_cpus=args.cpus_per_actor), config)
        for r in range(args.repeat):
            order = (1, args.batches_in_flight) if r % 2 == 0 else (args.batches_in_flight, 1)
            for k in order:
                pool = PoolConfig(size=1, num_cpus=args.cpus_per_actor, batch_size=args.batch_size,
                                  batches_in_flight=k)
                seconds, scores = _run(items, versions, pool, config)
                rows.append((k, seconds, scores))
    finally:
        shutdown_ray()
        shutil.rmtree(temp_dir, ignore_errors=True)
    base_scores = next(sc for k, _, sc in rows if k == 1)
    pooled = {k: sum(s for kk, s, _ in rows if kk == k) for k in (1, args.batches_in_flight)}
    n = len(items)
    sync_rate = n * args.repeat / pooled[1]
    out = [f"{n} unique answers of {args.questions} WebGLM questions; rubrics {', '.join(versions)}; "
           f"{args.batch_size} answers per Ray batch; one LLM actor ({args.cpus_per_actor} CPU) on a "
           f"{args.num_cpus}-CPU local Ray; load average {load_start:.2f} at the start, "
           f"{os.getloadavg()[0]:.2f} at the end", "",
           "| pass | path | batches in flight | answers | seconds | answers/s | ratio to synchronous "
           "| scores vs first synchronous pass |",
           "|---|---|---|---|---|---|---|---|"]
    for i, (k, seconds, scores) in enumerate(rows, 1):
        diff = _max_diff(scores, base_scores)
        same = "identical" if diff == 0.0 else f"max abs diff {diff:.3g}"
        out.append(f"| {i} | {_PATH[k == 1]} | {k} | {len(scores)} | {seconds:.1f} | {len(scores) / seconds:.2f} | "
                   f"{len(scores) / seconds / sync_rate:.2f} | {same} |")
    for k in (1, args.batches_in_flight):
        rate = n * args.repeat / pooled[k]
        out.append(f"| all passes | {_PATH[k == 1]} | {k} | {n * args.repeat} | {pooled[k]:.1f} | {rate:.2f} | "
                   f"{rate / sync_rate:.2f} | |")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":  # vLLM may spawn processes: keep the guard
    sys.exit(main())
