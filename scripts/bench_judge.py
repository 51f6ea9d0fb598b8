"""Benchmark the pairwise LLM judges: pairs/s for both orders in one engine call vs one call per order,
and logprob vs vote mode.

Runs, all on the same pairs and the same vLLM engine (prefix cache reset before each run):

(a) ``JudgeScorer`` in logprob mode: both orders of every pair in one engine call.
(b) the same scorer on an adapter that sends each call's prompts as two calls, one per order
    (the even and the odd prompts: the scorer lists every judge-pair as ab, ba). Same prompts, so
    the same numbers come out; only the calls differ.
(c) logprob mode is (a).
(d) vote mode, the paper's protocol: ``n_votes`` votes at temperature 0 (greedy: one generation
    per prompt, repeated), at most ``--max-vote-tokens`` new tokens, free text.
(d') the same with the votes pre-filled with ``"answer_"`` (``prefill_votes``): SmolLM2's free text
    rarely names a verdict.
(e) vote mode at temperature 1, ``n_votes`` seeded samples per order (the appendix's T=1 variant),
    pre-filled. On CPU the engine sends seeded samples in sub-batches (a vLLM-CPU workaround, see
    ``VLLMEngine.generate``), so (e) also measures that.

Default data: the first ``--pairs`` pairs that ``rubric.io.graded.read_graded`` makes of
``../shared/data/WEBGLM_50.json`` beside the checkout. Example::

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_judge.py --pairs 10
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing
os.environ.setdefault("HF_HUB_OFFLINE", "1")

#: The benchmark data beside the checkout (``../shared/data``), as for the other bench scripts.
DEFAULT_DATA = REPO.parent / "shared" / "data" / "WEBGLM_50.json"

log = logging.getLogger("bench_judge")


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - not on every platform
        return math.nan


class Counting:
    """Wraps an engine: counts calls, prompts, prompt and cached tokens; optionally one call per order."""

    def __init__(self, engine, per_order: bool) -> None:
        self.inner, self.per_order = engine, per_order
        self.calls = self.prompts = self.prompt_tokens = self.cached_tokens = 0
        for name in ("backend", "model_id", "revision", "max_context", "top_k"):
            setattr(self, name, getattr(engine, name))

    def encode(self, text):
        return self.inner.encode(text)

    def decode(self, ids):
        return self.inner.decode(ids)

    def count_tokens(self, prompts):
        return self.inner.count_tokens(prompts)

    def _split(self, fn, prompts, stats: bool):
        parts = [list(range(0, len(prompts), 2)), list(range(1, len(prompts), 2))] if self.per_order else \
            [list(range(len(prompts)))]
        out = [None] * len(prompts)
        for idx in parts:
            if not idx:
                continue
            got = fn([prompts[i] for i in idx])
            self.calls += 1
            if stats:  # the engines keep prefix-cache counts for score_token_probs only
                self.prompt_tokens += self.inner.last_stats["prompt_tokens"]
                self.cached_tokens += self.inner.last_stats["cached_tokens"]
            for i, g in zip(idx, got):
                out[i] = g
        self.prompts += len(prompts)
        return out

    def score_token_probs(self, prompts, candidates):
        return self._split(lambda ps: self.inner.score_token_probs(ps, candidates), prompts, True)

    def generate(self, prompts, max_tokens, *, temperature=0.0, n=1, seed=None):
        return self._split(lambda ps: self.inner.generate(ps, max_tokens, temperature=temperature, n=n, seed=seed),
                           prompts, False)


@dataclass
class Run:
    name: str
    seconds: float = 0.0
    calls: int = 0
    prompts: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    load: float = math.nan
    errors: int = 0
    raw: list[dict[str, float | None]] = field(default_factory=list)
    decisions: list[dict[str, str | None]] = field(default_factory=list)
    first: list[dict[str, str | None]] = field(default_factory=list)


def run(name: str, engine, pairs, specs, *, per_order: bool = False, **kwargs) -> Run:
    """Time one ``judge_pairs`` over all pairs from a cold prefix cache."""
    from models.judging import JudgeScorer

    engine.reset_prefix_cache()  # a vLLM engine: every run starts from a cold prefix cache
    wrapped = Counting(engine, per_order)
    scorer = JudgeScorer(wrapped, specs, **kwargs)
    log.info("%s: %d pairs, judges %s", name, len(pairs), [s.version for s in specs])
    t0 = time.perf_counter()
    results = scorer.judge_pairs(pairs)
    r = Run(name, time.perf_counter() - t0, wrapped.calls, wrapped.prompts, wrapped.prompt_tokens,
            wrapped.cached_tokens, _load())
    r.raw = [{v: s.raw for v, s in res.items()} for res in results]
    r.decisions = [{v: s.extras["decision"] for v, s in res.items()} for res in results]
    r.first = [{v: s.extras["decision_ab"] for v, s in res.items()} for res in results]
    r.errors = sum(s.raw is None for res in results for s in res.values())
    return r


def _table(runs: list[Run], n_pairs: int, n_judges: int) -> list[str]:
    out = ["| run | engine calls | prompts | s | pairs/s | prompt tok cached (score calls) | rows with error "
           "| rows decided | load avg (1 min) |", "|---|---|---|---|---|---|---|---|---|"]
    rows = n_pairs * n_judges
    for r in runs:
        cached = f"{r.cached_tokens / r.prompt_tokens:.0%}" if r.prompt_tokens else "-"
        decided = sum(d is not None for row in r.decisions for d in row.values())
        out.append(f"| {r.name} | {r.calls} | {r.prompts} | {r.seconds:.1f} | {n_pairs / r.seconds:.2f} | {cached} | "
                   f"{r.errors}/{rows} | {decided}/{rows} | {r.load:.2f} |")
    return out


def _max_diff(x: Run, y: Run) -> float:
    diffs = [abs(a - b) for ra, rb in zip(x.raw, y.raw) for v in ra
             if (a := ra[v]) is not None and (b := rb[v]) is not None]
    return max(diffs) if diffs else math.nan


def _agree(x: list[dict[str, str | None]], y: list[dict[str, str | None]]) -> str:
    both = [(a, yb[v]) for xa, yb in zip(x, y) for v, a in xa.items() if a is not None and yb[v] is not None]
    return f"{sum(a == b for a, b in both)}/{len(both)}" if both else "0/0"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=None,
                    help="graded JSON file (default: ../shared/data/WEBGLM_50.json beside the checkout)")
    ap.add_argument("--pairs", type=int, default=10, help="first N pairs that read_graded makes")
    ap.add_argument("--judges", default="plain", help="judges to run (plain,cot,rubrics)")
    ap.add_argument("--n-votes", type=int, default=3)
    ap.add_argument("--max-vote-tokens", type=int, default=16)
    ap.add_argument("--max-reasoning-tokens", type=int, default=64)
    ap.add_argument("--profile", default="cpu", choices=("cpu", "gpu"))
    ap.add_argument("--model", default=None, help="override the profile's model (Hub id or folder)")
    args = ap.parse_args(argv)
    if args.data is None:
        if not DEFAULT_DATA.is_file():
            ap.error(f"no --data given and the default benchmark file {DEFAULT_DATA} is absent; "
                     "pass --data PATH to a graded (WebGLM-style) JSON file")
        args.data = DEFAULT_DATA
    if args.pairs < 1:
        ap.error(f"--pairs must be >= 1, got {args.pairs}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    from models.llm import build_engine
    from rubric.config import ScoringConfig
    import rubric.protocols  # noqa: F401  (registers the protocols' pairwise judges)
    from rubric.judging import resolve_judges
    from rubric.io import read_graded

    pairs = read_graded(args.data).pairs[: args.pairs]
    specs = resolve_judges(args.judges)
    load_start = _load()
    eng = build_engine(ScoringConfig(llm_profile=args.profile, llm_backend="vllm", llm_model=args.model))
    common = {"max_reasoning_tokens": args.max_reasoning_tokens}
    run("warm-up", eng, pairs[:1], specs, **common)
    vote = {**common, "mode": "vote", "n_votes": args.n_votes, "max_vote_tokens": args.max_vote_tokens}
    a = run("(a)=(c) logprob, both orders in one call", eng, pairs, specs, **common)
    b = run("(b) logprob, one call per order", eng, pairs, specs, per_order=True, **common)
    d = run(f"(d) vote, n={args.n_votes}, T=0, free text (paper)", eng, pairs, specs, **vote)
    dp = run(f"(d') vote, n={args.n_votes}, T=0, pre-filled", eng, pairs, specs, prefill_votes=True, **vote)
    e = run(f"(e) vote, n={args.n_votes}, T=1 seed 0, pre-filled", eng, pairs, specs, temperature=1.0,
            prefill_votes=True, **vote)
    runs = [a, b, d, dp, e]
    out = [f"model: {eng.model_id} @ {eng.revision}; backend vllm, max_context={eng.max_context}; "
           f"{len(pairs)} pairs from {args.data.name}; judges {args.judges}; "
           f"load avg (1 min) {load_start:.2f} at start, {_load():.2f} at end; {os.cpu_count()} CPUs", "",
           *_table(runs, len(pairs), len(specs)), "",
           f"- (a) vs (b): max |p_a_debiased difference| {_max_diff(a, b):.2g} (same prompts: should be ~0); "
           f"(b)/(a) time {b.seconds / a.seconds:.2f}x",
           f"- debiased decisions that agree (rows where both decided): (a) vs (d) {_agree(a.decisions, d.decisions)}, "
           f"(a) vs (d') {_agree(a.decisions, dp.decisions)}, (d') vs (e) {_agree(dp.decisions, e.decisions)}",
           f"- order-ab verdicts that agree: (a) vs (d') {_agree(a.first, dp.first)}, "
           f"(d') vs (e) {_agree(dp.first, e.first)}"]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":  # vLLM may spawn processes: keep the guard
    sys.exit(main())
