"""classify_questions: one decision per question, in order; a too-long question is a row error, not a crash."""

from __future__ import annotations

import pytest

from models.llm.lfq import classify_questions
from rubric.errors import BatchMismatchError, EngineError
from rubric.scoring import lfq_filter_template


class FakeEngine:
    """Whitespace 'tokens'. Like the real engines, it refuses a batch holding any prompt over its context."""

    backend = "fake"
    model_id = "fake/judge"
    revision = "r1"
    top_k = 20

    def __init__(self, max_context=10_000, fail=False, drop=False):
        self.max_context = max_context
        self.fail = fail
        self.drop = drop
        self.calls = []

    def encode(self, text):
        return text.split()

    def decode(self, ids):
        return " ".join(ids)

    def count_tokens(self, prompts):
        return [len(p.user.split()) + len(p.prefill.split()) for p in prompts]

    def score_token_probs(self, prompts, candidates):
        if self.fail:
            raise RuntimeError("worker died")
        for i, n in enumerate(self.count_tokens(prompts)):
            if n + 1 > self.max_context:
                raise ValueError(f"prompt {i} has {n} tokens; max_context is {self.max_context}")
        self.calls.append(list(prompts))
        out = [{"Ġyes": 0.9999} if "Why" in p.user.split("Input:")[-1] else {"Ġno": 0.8, "Ġyes": 0.1}
               for p in prompts]
        return out[:-1] if self.drop else out


def _prompt_tokens(question: str) -> int:
    return FakeEngine().count_tokens([lfq_filter_template().render(question=question)])[0]


def test_decisions_in_order_from_one_call():
    eng = FakeEngine()
    out = classify_questions(eng, ["Why is the sky blue?", "Who won?", "Why do cats purr?"])
    assert [d.is_lfq for d in out] == [True, False, True]
    assert [d.confident for d in out] == [True, False, True]
    assert all(d.error is None for d in out)
    assert len(eng.calls) == 1 and len(eng.calls[0]) == 3


def test_long_question_gets_a_row_error_and_the_others_are_kept():
    base = _prompt_tokens("Who won?")
    eng = FakeEngine(max_context=base + 20)
    long_q = "Why " + "really " * 200 + "?"
    out = classify_questions(eng, ["Why is the sky blue?", long_q, "Who won?"])
    assert len(out) == 3
    assert out[0].is_lfq is True and out[0].error is None
    assert out[2].is_lfq is False and out[2].error is None
    bad = out[1]
    assert bad.is_lfq is None and bad.p_yes is None and bad.log_score is None and not bad.confident
    n = _prompt_tokens(long_q)
    assert "question 1" in bad.error and f"{n} tokens" in bad.error and str(base + 20) in bad.error
    assert len(eng.calls) == 1 and len(eng.calls[0]) == 2  # the long one never reached the engine


def test_prompt_exactly_at_the_limit_is_sent():
    q = "Why is the sky blue?"
    n = _prompt_tokens(q)
    out = classify_questions(FakeEngine(max_context=n + 1), [q])  # n tokens + the scored one
    assert out[0].error is None and out[0].is_lfq is True
    out = classify_questions(FakeEngine(max_context=n), [q])
    assert out[0].error is not None and "question 0" in out[0].error


def test_all_questions_too_long_makes_no_engine_call():
    eng = FakeEngine(max_context=5)
    out = classify_questions(eng, ["Why?", "How?"])
    assert [d.error is not None for d in out] == [True, True] and eng.calls == []


def test_empty_input():
    assert classify_questions(FakeEngine(), []) == []


def test_dead_engine_raises_engine_error():
    with pytest.raises(EngineError, match="worker died"):
        classify_questions(FakeEngine(fail=True), ["Why?"])


def test_missing_result_raises():
    with pytest.raises(BatchMismatchError, match="1 results for 2 prompts"):
        classify_questions(FakeEngine(drop=True), ["Why?", "How?"])
