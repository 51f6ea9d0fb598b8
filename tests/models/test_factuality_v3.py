"""factuality.veriscore.v3's plumbing with in-test engine doubles (no model): the stop rule is asked
of the engine, claims are read up to the loop, a sentence's claims share their evidence, and the
verification prompts put that evidence before the claim."""

import re

import pytest

pytest.importorskip("rank_bm25")

from models.rubric_backends.evidence import AttachedDocs  # noqa: E402
from models.rubric_backends.factuality import FactualityScorer  # noqa: E402
from models.llm.engine import Completion  # noqa: E402
from rubric.errors import ConfigError  # noqa: E402
from rubric.io.records import AnswerItem  # noqa: E402
from rubric.scoring import EXTRACTION_STOP, LOOP_RULE, RUBRICS, claims_from_json, loops  # noqa: E402
from rubric.scoring.scorer import check_batch  # noqa: E402

V2, V3 = RUBRICS.get("factuality.veriscore.v2"), RUBRICS.get("factuality.veriscore.v3")

# What the fake model writes for each marked sentence: it loops after its claims, as SmolLM2 does.
WRITES = {
    "The Zorblatt bridge was built in 1873 of cast iron.":
        "1. The Zorblatt bridge was built in 1873.\n2. The Zorblatt bridge is made of cast iron.\n"
        "3. The Zorblatt bridge was built in 1873.\n4. The Zorblatt bridge was built in 1873.\n5. The Zo",
    "It carries trams.": "1. The Zorblatt bridge carries trams. 2. The bridge is in Kelvingrad. 3. The",
}
DOC = ("The Zorblatt bridge in Kelvingrad was built in 1873.\n\nIt is made of steel and carries trams.\n\n"
       "Kelvingrad has a tram network.")
ITEM = AnswerItem("a1", "Tell me about the Zorblatt bridge.",
                  "The Zorblatt bridge was built in 1873 of cast iron. It carries trams. I like it.", docs=(DOC,))
BUDGET = 64


def split(texts):
    return [[s for s in re.split(r"(?<=[.!?])\s+", t.strip()) if s] for t in texts]


def _sentence(prompt):
    return re.findall(r"<SOS>(.*?)<EOS>", prompt.user)[-1]


class CompletingEngine:
    """Greedy completions with a stop rule, like ``VLLMEngine.complete``: a completion ends where the
    rule first holds on its text (its words are the 'tokens'), else at the budget ('cut')."""

    backend, model_id, revision, top_k, max_context = "fake", "fake-judge", "r0", None, 4096

    def __init__(self, rule_in_engine=True):
        self.rule_in_engine = rule_in_engine
        self.complete_calls, self.score_calls = [], []

    def count_tokens(self, prompts):
        return [len((p.user + p.prefill).split()) for p in prompts]

    def complete(self, prompts, max_tokens, *, stop=(), stop_rule=None):
        self.complete_calls.append((list(prompts), max_tokens, tuple(stop), stop_rule))
        out = []
        for p in prompts:
            words = WRITES.get(_sentence(p), "No verifiable claim.").split(" ")
            text, n = "", 0
            for n, w in enumerate(words[:max_tokens], 1):
                text = f"{text} {w}" if text else w
                if self.rule_in_engine and stop_rule is not None and loops(text):
                    break
            out.append(Completion(text, n >= max_tokens and not loops(text), n))
        return out

    def score_token_probs(self, prompts, candidates):
        self.score_calls.append(list(prompts))
        return [{"Ġyes": 0.3, "Ġno": 0.7} for _ in prompts]


def _claims(result):
    return [(c.claim, c.sentence_index) for c in claims_from_json(result["factuality"].extras["claims"])]


def test_v3_asks_the_engine_for_its_stop_rule_and_reads_the_claims_before_the_loop():
    engine = CompletingEngine()
    scorer = FactualityScorer((V3,), engine, split, AttachedDocs(), k=2, max_claim_tokens=BUDGET)
    results = scorer.score_batch([ITEM])
    check_batch(scorer, [ITEM], results)
    (prompts, budget, stop, rule), = engine.complete_calls
    assert len(prompts) == 3 and budget == BUDGET and stop == EXTRACTION_STOP and rule == LOOP_RULE
    assert _claims(results[0]) == [
        ("The Zorblatt bridge was built in 1873.", 0), ("The Zorblatt bridge is made of cast iron.", 0),
        ("The Zorblatt bridge carries trams.", 1), ("The bridge is in Kelvingrad.", 1)]  # "3. The" was cut
    # the same claims when the engine cannot stop early (vLLM with speculative decoding)
    late = FactualityScorer((V3,), CompletingEngine(rule_in_engine=False), split, AttachedDocs(), k=2,
                            max_claim_tokens=BUDGET).score_batch([ITEM])
    assert _claims(late[0]) == _claims(results[0])


def test_v3_claims_of_a_sentence_share_evidence_placed_before_the_claim():
    engine = CompletingEngine()
    FactualityScorer((V3,), engine, split, AttachedDocs(), k=2, max_claim_tokens=BUDGET).score_batch([ITEM])
    prompts, = engine.score_calls
    assert len(prompts) == 4
    evidence = [p.user[p.user.index("Evidence:"):p.user.index("Claim:")] for p in prompts]
    assert evidence[0] == evidence[1] and evidence[2] == evidence[3]  # one list per sentence
    for p in prompts:
        assert p.user.index("Evidence:") < p.user.index("Claim:")
    # what the claims of a sentence share is one prefix: the prompts differ only from the claim on
    first, second = prompts[0].user, prompts[1].user
    assert first[:first.index("Claim:")] == second[:second.index("Claim:")]


def test_v3_provenance_and_rules_differ_from_v2():
    engine = CompletingEngine()
    v3 = FactualityScorer((V3,), engine, split, AttachedDocs(), max_claim_tokens=BUDGET)
    v2 = FactualityScorer((V2,), engine, split, AttachedDocs(), generator=_Generating(),
                          max_claim_tokens=BUDGET)
    assert v3.provenance("factuality").template_hash != v2.provenance("factuality").template_hash
    assert v3.provenance("factuality").rubric_version == "factuality.veriscore.v3"
    # like v2, an answer without a verifiable claim scores 0.0
    vague = AnswerItem("a2", "Q?", "Hmm. Not sure.")
    assert v3.score_batch([vague])[0]["factuality"].raw == 0.0


class _Generating:
    def generate(self, prompts, max_tokens):
        return ["No verifiable claim."] * len(prompts)


def test_v3_needs_an_engine_that_completes_with_a_stop_rule():
    with pytest.raises(ConfigError, match="complete"):
        FactualityScorer((V3,), CompletingEngine(), split, AttachedDocs(), generator=_Generating())
