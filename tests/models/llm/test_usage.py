"""What an engine call cost, per prompt (issue 45): the engines record each prompt's tokens, the G-Eval scorer and
the pairwise judges put them on each score's ``cost``, and an engine that records none leaves them unknown."""

from __future__ import annotations

import pytest

from models.judging.judges import JudgeScorer
from models.llm.engine import record_usage, take_usage
from models.llm.scorer import LLMRubricScorer
from rubric.io.records import AnswerItem, PairRecord
from rubric.judging import resolve_judges
from rubric.scoring.specs import resolve_rubrics
from tests.models.llm.test_scorer import FakeEngine

ITEMS = [AnswerItem("a", "Why is the sky blue?", "Rayleigh scattering: shorter wavelengths scatter more."),
         AnswerItem("b", "Why do cats purr?", "Mostly contentment, sometimes to soothe themselves.")]


def test_usage_is_taken_once_and_only_for_the_count_it_was_made_for():
    record_usage([(10, 2, 1), (12, 0, 1)])
    assert take_usage(3) is None  # another call's count: never guessed
    record_usage([(10, 2, 1)])
    assert take_usage(1) == [(10, 2, 1)] and take_usage(1) is None


def test_an_engine_that_counts_nothing_leaves_the_prompt_count_and_no_more():
    eng = FakeEngine()
    take_usage(0)  # nothing left over from an earlier test on this thread
    res = LLMRubricScorer(resolve_rubrics("coherence"), eng).score_batch(ITEMS)
    prompt = LLMRubricScorer(resolve_rubrics("coherence"), eng)._render(ITEMS[0], ITEMS[0].answer)
    assert dict(res[0]["coherence"].cost) == {"prompt_tokens": eng.count_tokens(prompt)[0],
                                             "cached_prompt_tokens": None, "generated_tokens": None}


def _check_scorer_costs(engine, cached_known: bool):
    sc = LLMRubricScorer(resolve_rubrics("coherence,relevance"), engine)
    res = sc.score_batch(ITEMS)
    for item, r in zip(ITEMS, res):
        prompts = sc._render(item, item.answer)
        for name, n in zip(("coherence", "relevance"), engine.count_tokens(prompts)):
            cost = r[name].cost
            assert cost["prompt_tokens"] == n and cost["generated_tokens"] == 1
            if cached_known:
                assert 0 <= cost["cached_prompt_tokens"] <= n
            else:
                assert cost["cached_prompt_tokens"] is None


def test_vllm_reports_each_prompts_tokens_and_its_cached_prefix(vllm_engine):
    _check_scorer_costs(vllm_engine, cached_known=True)
    # the same prompts again: their prefix is in vLLM's cache now
    sc = LLMRubricScorer(resolve_rubrics("coherence"), vllm_engine)
    again = sc.score_batch(ITEMS)
    assert all(r["coherence"].cost["cached_prompt_tokens"] > 0 for r in again)


def test_transformers_reports_each_prompts_tokens_and_no_cache(hf_engine):
    _check_scorer_costs(hf_engine, cached_known=False)


def test_a_judge_score_costs_both_orders_prompts(vllm_engine):
    pair = PairRecord("p1", ITEMS[0].question, ITEMS[0].answer, "Because of the ocean.", "a")
    judge = JudgeScorer(vllm_engine, resolve_judges("plain"))
    [res] = judge.judge_pairs([pair])
    cost = res["judge.plain.v1"].cost
    # the two orders' prompts are the same texts swapped: the same tokens give or take a few
    assert cost["generated_tokens"] == 2 and cost["prompt_tokens"] > 2 * 60
    assert 0 <= cost["cached_prompt_tokens"] <= cost["prompt_tokens"]


@pytest.mark.parametrize("mode", ["vote"])
def test_a_vote_judge_counts_every_generated_token(vllm_engine, mode):
    pair = PairRecord("p1", ITEMS[0].question, ITEMS[0].answer, "Because of the ocean.", "a")
    judge = JudgeScorer(vllm_engine, resolve_judges("plain"), mode=mode, n_votes=2, max_vote_tokens=8)
    [res] = judge.judge_pairs([pair])
    cost = res["judge.plain.v1"].cost
    assert 2 <= cost["generated_tokens"] <= 2 * 2 * 8  # two orders x two votes x at most 8 tokens
