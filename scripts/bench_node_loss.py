"""A score job on a multi-node Ray cluster of this machine, with and without a worker node lost mid-job (Markdown).

    .venv/bin/python scripts/bench_node_loss.py --shards 8 --copies 4 --rubrics conciseness,length

Each run starts a fresh cluster (``tests/multinode/cluster.py``: a head without CPUs and two worker
nodes, everything on 127.0.0.1, its own temp folder, every process stopped at the end; its start is
not in the wall time) and runs the same job over the same shards (the bundled sample, repeated with
distinct questions: ``--shards`` x ``--copies`` x 33 pairs, no answer shared between shards) with its
step on Ray. The "node lost" run removes worker node 0 (SIGKILL of its raylet, object store, actors
and workers) as soon as the first shard's store is finished. A single-process run gives the reference:
both Ray runs' tables must equal it (CPU rubrics: exactly; with an LLM rubric, within
``tests/tolerances.py``), or the script exits 1 before printing.

Columns: rows in (input records) and rows out (rows scored + rejected, each once); pairs and unique
answers in the tables; the store ids the step scored, and how many of them actors restarted after
the loss scored (their batches retried, or later batches); when the node was lost and how many
store ids the driver had written by then (it goes at the first write, every ``--flush-rows`` ids);
wall time, and against the same job without the loss.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

log = logging.getLogger("lfqa_rubric.bench_node_loss")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--copies", type=int, default=4, help="copies of the 33-pair sample per shard (distinct questions)")
    p.add_argument("--rubrics", default="conciseness,length")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--ray-batch-size", type=int, default=4)
    p.add_argument("--actors", type=int, default=2, help="actors per pool (spread over the two worker nodes)")
    p.add_argument("--worker-cpus", type=float, default=2, help="logical CPUs per worker node")
    p.add_argument("--runs", type=int, default=1, help="pairs of runs (without, with the loss), alternating")
    p.add_argument("--flush-rows", type=int, default=64,
                   help="store ids the driver buffers before writing (RayStep.flush_rows; the node goes at the first write)")
    p.add_argument("--no-global-dedupe", dest="global_dedupe", action="store_false")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    import pyarrow.parquet as pq

    from rubric.config import ScoringConfig
    from rubric.scoring import resolve_rubrics
    from tests.multinode.cluster import LocalCluster, NodeRemover, write_shards
    from tests.tolerances import LLM_BATCH_NOISE
    from workers.jobs import run_score_job
    from workers.cluster import PoolConfig, RayStep

    specs = resolve_rubrics(args.rubrics)
    config = ScoringConfig(batch_size=args.batch_size)
    pool = PoolConfig(size=args.actors, num_cpus=0.5, batch_size=args.ray_batch_size)
    pools = {name: pool for name in ("text", "classifier", "factuality", "llm")}
    llm = any(s.backend == "llm" for s in specs)
    rows = []
    with tempfile.TemporaryDirectory(prefix="lfqa-bench-") as tmp:
        tmp = Path(tmp)
        shards = write_shards(tmp / "in", args.shards, args.copies)
        t0 = time.perf_counter()
        ref = run_score_job(shards, "lfqa-hp", specs, tmp / "local", config=config, progress=False)
        rows.append(("single process", ref, None, time.perf_counter() - t0))
        for k in range(args.runs):
            for lose in (False, True):
                out = tmp / f"ray-{k}-{int(lose)}"
                with LocalCluster(workers=2, worker_cpus=args.worker_cpus) as cluster:
                    remover = NodeRemover(cluster, out / "scores") if lose else None
                    if remover:
                        remover.start()
                    t0 = time.perf_counter()
                    m = run_score_job(shards, "lfqa-hp", specs, out, config=config, progress=False,
                                ray=RayStep(pools=pools, address=cluster.address, flush_rows=args.flush_rows,
                                            global_dedupe=args.global_dedupe))
                    wall = time.perf_counter() - t0
                    if remover:
                        remover.join(timeout=60)
                        if remover.error or remover.stored_before is None or \
                                remover.stored_before >= m["counts"]["unique_answers"]:
                            raise SystemExit(f"the node was not removed mid-job: {remover.error}")
                _check(out, tmp / "local", llm, LLM_BATCH_NOISE, pq)
                if m["counts"] != ref["counts"]:
                    raise SystemExit(f"counts differ from the single process: {m['counts']} vs {ref['counts']}")
                rows.append(("node lost" if lose else "no loss", m, remover, wall))

    base = [w for name, _, _, w in rows if name == "no loss"]
    c = ref["counts"]
    lines = [f"Input: {args.shards} shards x {args.copies} x 33 pairs (the bundled sample, distinct questions) = "
             f"{c['rows_in']} rows, {c['unique_answers']} unique answers; rubrics {args.rubrics}; {args.actors} "
             f"actor(s) per pool, Ray batches of {args.ray_batch_size}, global dedupe {'on' if args.global_dedupe else 'off'}; "
             f"head (0 CPUs) + 2 worker nodes x {args.worker_cpus:g} CPUs on this machine. Tables equal to the single "
             "process: checked.", "",
             "| run | rows in | rows out | pairs | unique answers | ids scored | by restarted actors | node lost at (s) | "
             "ids stored then | wall (s) | wall / no loss (mean) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, m, remover, wall in rows:
        cc, faults = m["counts"], m["job"].get("faults", {})
        lost_at = f"{remover.at_s:.1f}" if remover else "-"
        stored = f"{remover.stored_before} of {m['counts']['unique_answers']}" if remover else "-"
        ratio = f"{wall / (sum(base) / len(base)):.2f}" if name != "single process" else "-"
        lines.append(f"| {name} | {cc['rows_in']} | {cc['rows_ok'] + cc['rejected']} | {cc['pairs']} | "
                     f"{cc['unique_answers']} | {m['job']['answers_scored_now']} | "
                     f"{faults.get('ids_scored_by_restarted_actors', 0) if name != 'single process' else '-'} | "
                     f"{lost_at} | {stored} | {wall:.1f} | {ratio} |")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _check(got: Path, want: Path, llm: bool, bound: float, pq) -> None:
    for name in ("answers.parquet", "pairs.parquet"):
        a, b = pq.read_table(got / name), pq.read_table(want / name)
        if not llm:
            if not a.equals(b, check_metadata=True):
                raise SystemExit(f"{name} differs from the single process")
            continue
        for ra, rb in zip(a.to_pylist(), b.to_pylist(), strict=True):
            for col, va in ra.items():
                vb = rb[col]
                if isinstance(va, float) and isinstance(vb, float) and abs(va - vb) <= bound:
                    continue
                if va != vb:
                    raise SystemExit(f"{name}: {col} of {ra.get('answer_id') or ra.get('pair_id')}: {va} vs {vb}")


if __name__ == "__main__":
    raise SystemExit(main())
