"""Scale benchmark: one large synthetic Parquet file of N pairs scored single-process and on local Ray.

The pairs recombine a pool of real answers from the shared data (``../shared/data/*.json``: every
question's answers, graded lists), so scoring stays cheap (a few thousand unique answers whatever N
is) and reading, dedupe, assembly and writing are what grow with N. The file is built here, into
``--workdir`` (default: a temp folder), never into the repository.

For each size and path it measures wall seconds, pairs/s and the peak RSS of the whole process tree
(this process and every child, Ray's workers and raylet included; sampled every 0.2 s from /proc via
psutil), and checks rows in = pairs + rejects from the manifest. Prints a Markdown table.

    nice -n 10 .venv/bin/python scripts/bench_scale.py --sizes 10000,100000,1000000
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def answer_pool(data_dir: Path, max_answers: int, seed: int) -> list[tuple[str, list[str]]]:
    """(question, its distinct answers) from the graded files of ``data_dir``, at most ``max_answers`` answers."""
    pool: list[tuple[str, list[str]]] = []
    total = 0
    for f in sorted(data_dir.glob("*.json")):
        doc = json.loads(f.read_text())
        if not isinstance(doc, dict):
            continue
        for q, v in doc.items():
            items = v if isinstance(v, list) else (v.get("doc_list") if isinstance(v, dict) else None)
            if not items:
                continue
            texts = []
            for it in items:
                t = next((it.get(k) for k in ("passage", "answer", "text") if isinstance(it, dict) and it.get(k)), None)
                if isinstance(t, str) and t.strip() and t not in texts:
                    texts.append(t)
            if len(texts) >= 2:
                pool.append((q, texts))
                total += len(texts)
    random.Random(seed).shuffle(pool)
    out, n = [], 0
    for q, texts in pool:
        if n >= max_answers:
            break
        out.append((q, texts))
        n += len(texts)
    return out


def build_parquet(path: Path, n_pairs: int, pool, seed: int, row_group: int = 10_000) -> None:
    """N LFQA-HP-style pairs: a random pooled question and two of its answers; every 500th row is broken."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    labels = ("answer_1", "answer_2", "tie")
    writer = None
    try:
        for start in range(0, n_pairs, row_group):
            rows = []
            for i in range(start, min(start + row_group, n_pairs)):
                q, texts = pool[rng.randrange(len(pool))]
                a, b = rng.sample(texts, 2)
                rows.append({"question_text": q, "answer_1": a, "answer_2": "" if i % 500 == 7 else b,
                             "human_judgment": labels[rng.randrange(3)], "source": "bench", "domain": "synthetic"})
            t = pa.Table.from_pylist(rows)
            if writer is None:
                writer = pq.ParquetWriter(path, t.schema)
            writer.write_table(t)
    finally:
        if writer is not None:
            writer.close()


class PeakRSS:
    """Peak summed RSS of a process and all its descendants, sampled in a thread; ``at_peak`` is the
    composition at the peak: process name (Ray names its workers ``ray::<task or actor>``) ->
    (processes, bytes)."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        import psutil

        self._proc = psutil.Process(pid)
        self.peak = 0
        self.at_peak: dict[str, tuple[int, int]] = {}
        self._stop = threading.Event()
        self._interval = interval
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            total = 0
            parts: dict[str, tuple[int, int]] = {}
            try:
                procs = [self._proc] + self._proc.children(recursive=True)
            except psutil.Error:
                break
            for p in procs:
                try:
                    rss = p.memory_info().rss
                    name = "driver (CLI)" if p.pid == self._proc.pid else p.name()
                except psutil.Error:
                    continue
                total += rss
                n, b = parts.get(name, (0, 0))
                parts[name] = (n + 1, b + rss)
            if total > self.peak:
                self.peak, self.at_peak = total, parts
            self._stop.wait(self._interval)

    def __enter__(self) -> "PeakRSS":
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()


def run_one(path: Path, out: Path, ray: bool, timeout: float, read_concurrency: int | None = None) -> dict:
    """Score ``path`` in a fresh child process (so each row's peak RSS is its own) and measure it."""
    import psutil

    cmd = [sys.executable, "-m", "workers.cli", "score", str(path), "--format", "lfqa-hp", "--out", str(out),
           "--rubrics", "conciseness,grammar", "--quiet"]
    if ray:
        cmd += ["--ray", "--address", "local", "--text-actors", "2", "--global-dedupe"]
        if read_concurrency is not None:
            cmd += ["--read-concurrency", str(read_concurrency)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with PeakRSS(proc.pid) as rss:
        try:
            log, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for p in psutil.Process(proc.pid).children(recursive=True):
                p.kill()
            proc.kill()
            raise
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{log[-4000:]}")
    m = json.loads((out / "manifest.json").read_text())
    c = m["counts"]
    if c["rows_in"] != c["pairs"] + c["rejected"]:
        raise SystemExit(f"rows in {c['rows_in']} != pairs {c['pairs']} + rejects {c['rejected']}")
    return {"wall": wall, "rss": rss.peak, "at_peak": rss.at_peak, "counts": c, "blocks": m["inputs"][0].get("blocks", 1),
            "scored": m["job"]["answers_scored_now"], "timings": m["timings_s"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10000,100000", help="comma-separated pair counts, e.g. 10000,100000,1000000")
    p.add_argument("--paths", default="local,ray", help="local, ray or both")
    p.add_argument("--pool-answers", type=int, default=3000, help="answers in the pool the pairs are drawn from")
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--workdir", type=Path, default=None, help="where the synthetic files and outputs go (temp)")
    p.add_argument("--keep", action="store_true", help="keep the workdir")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--read-concurrency", type=int, default=None,
                   help="Ray rows: most blocks read at once (default: as many as the CPUs allow)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("bench_scale")

    sizes = [int(s) for s in args.sizes.split(",") if s]
    paths = [s.strip() for s in args.paths.split(",") if s.strip()]
    pool = answer_pool(args.data, args.pool_answers, args.seed)
    n_answers = sum(len(t) for _, t in pool)
    log.info("pool: %d questions, %d answers from %s", len(pool), n_answers, args.data)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="lfqa-bench-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for n in sizes:
            f = work / f"bench{n}.parquet"
            if not f.exists():
                t0 = time.perf_counter()
                build_parquet(f, n, pool, args.seed)
                log.info("built %s (%.1f MB) in %.1f s", f, f.stat().st_size / 1e6, time.perf_counter() - t0)
            for path in paths:
                out = work / f"out-{path}-{n}"
                shutil.rmtree(out, ignore_errors=True)
                log.info("scoring %d pairs, %s", n, path)
                r = run_one(f, out, path == "ray", args.timeout, args.read_concurrency)
                log.info("%s %d: %.1f s, peak RSS %.0f MiB, %s", path, n, r["wall"], r["rss"] / 2**20, r["timings"])
                rows.append((n, path, r))
                shutil.rmtree(out, ignore_errors=True)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nPool: {len(pool)} questions, {n_answers} answers ({args.data}); rubrics conciseness,grammar; "
          f"{os.cpu_count()} CPUs; every 500th row rejected (empty answer_2); Ray read concurrency "
          f"{args.read_concurrency or 'as the CPUs allow'}.\n")
    print("| pairs | path | blocks | unique answers (scored) | rows in = pairs + rejects | wall (s) | pairs/s "
          "| peak RSS, process tree (MiB) | plan / score / assemble (s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n, path, r in rows:
        c, t = r["counts"], r["timings"]
        print(f"| {n:,} | {'single process' if path == 'local' else 'local Ray'} | {r['blocks']} "
              f"| {c['unique_answers']:,} ({r['scored']:,}) "
              f"| {c['rows_in']:,} = {c['pairs']:,} + {c['rejected']:,} | {r['wall']:.1f} | {n / r['wall']:,.0f} "
              f"| {r['rss'] / 2**20:,.0f} | {t['plan']:.1f} / {t['score']:.1f} / {t['assemble']:.1f} |")
    print("\nPeak RSS by process name at each run's peak (processes of that name: MiB together; the largest first):\n")
    for n, path, r in rows:
        top = sorted(r["at_peak"].items(), key=lambda kv: -kv[1][1])[:8]
        print(f"- {n:,} {path}: " + ", ".join(f"{name} ({k}): {b / 2**20:,.0f}" for name, (k, b) in top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
