"""What a scorer process's resident memory holds as it scores many distinct answers: live objects, or heap the C
library keeps after the scorer freed it (Markdown).

    .venv/bin/python scripts/bench_scorer_heap.py --answers 4000

Builds the scorers of ``--rubrics`` (default: the ``cpu`` preset's versions of the ``cpu_text`` backend, the one
scorer deployment whose memory rose in ``scripts/soak_serve.py``) in this process and scores the soak's distinct
answers in batches of ``--batch`` (as a Serve replica gets them). Every ``--every`` answers: the resident memory
(VmRSS), the same after ``gc.collect()`` and glibc's ``malloc_trim(0)`` (the heap pages nothing uses handed back),
and the strings spaCy's vocabulary holds. RSS that falls back after the trim was heap freed and kept by the
allocator; what stays after it is live.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _rss_mb() -> float:
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rubrics", default=None, help="rubric versions (default: the cpu preset's cpu_text versions)")
    p.add_argument("--answers", type=int, default=4000)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--every", type=int, default=1000)
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    args = p.parse_args(argv)

    from models.backends import build_scorers
    from rubric.config import ScoringConfig
    from rubric.io import AnswerItem
    from rubric.scoring import RUBRICS, resolve_rubrics
    from rubric.presets import CPU
    from soak_serve import distinct_items

    specs = (resolve_rubrics(args.rubrics) if args.rubrics else
             [RUBRICS.get(v) for v in CPU.rubric_versions.values() if RUBRICS.get(v).backend == "cpu_text"])
    scorers = build_scorers(specs, ScoringConfig(batch_size=16))
    items = [AnswerItem(answer_id=str(i), question=q, answer=a)
             for i, (q, a) in enumerate(distinct_items(Path(args.data))[:args.answers])]
    vocabs = [s.nlp.vocab for s in scorers if getattr(s, "nlp", None) is not None]
    trim = ctypes.CDLL("libc.so.6").malloc_trim
    print(f"rubrics: {', '.join(s.version for s in specs)}; {len(items):,} distinct answers in batches of "
          f"{args.batch}; load {os.getloadavg()[0]:.2f}; RSS {_rss_mb():.0f} MB with the scorers built\n")
    print("| answers | RSS MB | after gc + malloc_trim | spaCy strings | s |\n|---:|---:|---:|---:|---:|")
    t0 = time.perf_counter()
    for k in range(0, len(items), args.batch):
        for s in scorers:
            s.score_batch(items[k:k + args.batch])
        n = min(k + args.batch, len(items))
        if n // args.every > (n - args.batch) // args.every or n == len(items):
            before = _rss_mb()
            gc.collect()
            trim(0)
            print(f"| {n:,} | {before:.0f} | {_rss_mb():.0f} | {sum(len(v.strings) for v in vocabs):,} | "
                  f"{time.perf_counter() - t0:.0f} |", flush=True)
    print(f"\nload {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
