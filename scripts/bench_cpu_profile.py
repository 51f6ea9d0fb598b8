"""Answers/s of the cpu preset's nine rubrics (no LLM), per scorer and all together (Markdown table).

    python scripts/bench_cpu_profile.py --trec 1000 --webglm 300

Each scorer is built once (model loading excluded), warmed up on a few answers, then run over the
answers with ``models.scorer_set.score_items`` in the job's batches (``--batch-size``, the job's
default 32): the same path as ``lfqa-rubric score --preset cpu``. Wall seconds and the process's CPU
seconds (all its threads) are both printed: on a machine shared with other jobs the wall time
measures the sharing, while the CPU time says what the work costs (two idle cores supply two
CPU-seconds per second, when the work runs on both). TREC-DL-NF passages are short
(~56 words, no reference); WebGLM answers are long (~178 words) and carry the question's reference
answer, which completeness and factuality read. The 1-minute load average is printed before and after:
on a shared machine a high value means slower numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO))

from models.backends import build_scorers  # noqa: E402
from models.scorer_set import score_items  # noqa: E402
from rubric.config import ScoringConfig  # noqa: E402
from rubric.io import AnswerItem, content_id  # noqa: E402
from rubric.scoring import CPU, RUBRICS  # noqa: E402

DATA = REPO.parent / "shared" / "data"


def trec_items(path: Path, limit: int) -> list[AnswerItem]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = [AnswerItem(answer_id=content_id(q, p["passage"]), question=q, answer=p["passage"])
           for q, passages in data.items() for p in passages]
    return out[:limit]


def webglm_items(path: Path, limit: int) -> list[AnswerItem]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = [AnswerItem(answer_id=content_id(q, d["answer"]), question=q, answer=d["answer"], reference=v["ground3"])
           for q, v in data.items() for d in v["doc_list"]]
    return out[:limit]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trec", type=int, default=1000, help="TREC-DL-NF passages (file order); 0 skips")
    ap.add_argument("--webglm", type=int, default=300, help="WebGLM answers (file order); 0 skips")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--batch-size", type=int, default=ScoringConfig().batch_size)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    args = ap.parse_args(argv)

    load_before = os.getloadavg()[0]
    specs = [RUBRICS.get(v) for v in CPU.rubric_versions.values()]
    t0 = time.perf_counter()
    scorers = build_scorers(specs, ScoringConfig(batch_size=args.batch_size))  # imports torch: nothing before it
    load_s = time.perf_counter() - t0
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    sets = {"TREC-DL-NF": trec_items(args.data / "TREC-DL-NF.json", args.trec) if args.trec else [],
            "WebGLM": webglm_items(args.data / "WEBGLM_50.json", args.webglm) if args.webglm else []}
    for scorer in scorers:  # warm-up: first calls allocate
        scorer.score_batch(next(iter(v for v in sets.values() if v))[:4])
    rows = []
    for name, items in sets.items():
        if not items:
            continue
        words = sum(len(it.answer.split()) for it in items) / len(items)
        total = total_cpu = 0.0
        for scorer in scorers:
            cpu0 = time.process_time()
            run = score_items(items, [scorer], batch_size=args.batch_size, progress=False)
            cpu = time.process_time() - cpu0
            (label, secs), = run.seconds.items()
            total += secs
            total_cpu += cpu
            rows.append((name, len(items), words, label, secs, cpu))
        rows.append((name, len(items), words, "**all nine**", total, total_cpu))
    load_after = os.getloadavg()[0]
    print(f"torch threads {torch.get_num_threads()}, OMP_WAIT_POLICY {os.environ.get('OMP_WAIT_POLICY')}, "
          f"os.cpu_count() {os.cpu_count()}, batch size {args.batch_size}; "
          f"scorers built in {load_s:.1f} s; 1-min load average {load_before:.2f} before, {load_after:.2f} after\n")
    print("| set | answers | mean words | scorer (rubrics) | wall s | answers/s | CPU s | answers per CPU-second |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    for name, n, words, label, secs, cpu in rows:
        print(f"| {name} | {n} | {words:.0f} | {label} | {secs:.1f} | {n / secs:.1f} | {cpu:.1f} | {n / cpu:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
