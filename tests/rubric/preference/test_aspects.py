"""Rubric agreement with per-aspect human judgements, on pairs built here with hand-computed answers."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from rubric.preference.aspects import (OVERALL, agreement, agreement_markdown, aspect_agreement, aspect_agreement_from_table,
                            judgements_of)
from rubric.errors import ConfigError
from rubric.tables.features import answers_table, pairs_table
from rubric.io.records import PairRecord, explode
from rubric.scoring.scorer import Provenance, Score
from rubric.scoring.specs import RUBRICS

# Six pairs over three questions. Per pair: coherence difference a - b, the coherence judgement,
# the overall judgement.
#   0: +1.0  a    a    coherence: agrees          overall: agrees
#   1: -0.5  a    b    coherence: disagrees       overall: agrees
#   2:  0.0  b    a    coherence: zero diff       overall: zero diff
#   3: +2.0  tie  b    coherence: tie             overall: disagrees
#   4:  None a    tie  coherence: missing value   overall: tie (human side is checked first)
#   5: -1.0  None b    coherence: no judgement    overall: agrees
DIFFS = [1.0, -0.5, 0.0, 2.0, None, -1.0]
COHERENCE = ["a", "a", "b", "tie", "a", None]
LABELS = ["a", "b", "a", "b", "tie", "b"]
QUESTIONS = ["q1", "q1", "q2", "q2", "q3", "q3"]


def test_agreement_with_own_aspect_counts_every_pair_left_out():
    r = agreement("coherence", "coherence", DIFFS, COHERENCE, QUESTIONS, n_boot=200)
    assert (r.n_pairs, r.n_questions) == (2, 1)  # pairs 0 and 1, both of q1
    assert r.agreement == pytest.approx(0.5)
    assert (r.n_ties, r.n_zero_diff, r.n_missing, r.n_unjudged) == (1, 1, 1, 1)
    assert r.n_pairs + r.n_ties + r.n_zero_diff + r.n_missing + r.n_unjudged == len(DIFFS)
    assert all(math.isnan(x) for x in r.ci)  # one question: resampling questions says nothing


def test_agreement_with_overall():
    r = agreement("coherence", OVERALL, DIFFS, LABELS, QUESTIONS, n_boot=200)
    assert (r.n_pairs, r.n_questions) == (4, 3)  # pairs 0, 1, 3, 5
    assert r.agreement == pytest.approx(3 / 4)
    assert (r.n_ties, r.n_zero_diff, r.n_missing, r.n_unjudged) == (1, 1, 0, 0)
    lo, hi = r.ci
    assert 0.0 <= lo <= 0.75 <= hi <= 1.0


def test_ci_resamples_questions_not_pairs():
    # q1: ten pairs the rubric gets right, q2: ten it gets wrong. Resampling two questions gives
    # 0, 0.5 or 1, so the 95% CI spans [0, 1]; resampling pairs would give a narrow band around 0.5.
    diffs = [1.0] * 20
    human = ["a"] * 10 + ["b"] * 10
    r = agreement("coherence", OVERALL, diffs, human, ["q1"] * 10 + ["q2"] * 10, n_boot=1000, seed=3)
    assert r.agreement == pytest.approx(0.5) and r.n_questions == 2
    assert r.ci == (0.0, 1.0)


def test_perfect_agreement_has_a_degenerate_ci():
    r = agreement("factuality", "factuality", [0.4, -2.0, 1.0], ["a", "b", "a"], ["q1", "q2", "q3"], n_boot=300)
    assert r.agreement == 1.0 and r.ci == (1.0, 1.0) and r.n_pairs == 3


def test_nothing_counted_gives_nan_not_zero():
    r = agreement("coherence", OVERALL, [0.0, None], ["a", "tie"], ["q1", "q2"])
    assert r.n_pairs == 0 and math.isnan(r.agreement) and (r.n_zero_diff, r.n_ties) == (1, 1)


def test_aspect_agreement_pairs_rubrics_with_their_own_aspect_and_overall():
    factuality = [0.5, 0.5, -1.0, 1.0, 1.0, 0.0]
    rows = aspect_agreement(
        {"coherence": DIFFS, "factuality": factuality, "grammar": [1.0] * 6},
        {OVERALL: LABELS, "coherence": COHERENCE, "factuality": ["a", "b", "b", "a", None, "tie"]},
        QUESTIONS, n_boot=100)
    assert [(r.rubric, r.aspect) for r in rows] == [
        ("coherence", "coherence"), ("coherence", OVERALL), ("factuality", "factuality"), ("factuality", OVERALL),
        ("grammar", OVERALL)]
    fact_own = rows[2]
    # pairs 0 (+, a), 2 (-, b), 3 (+, a) agree; pair 1 (+, b) does not; 4 unjudged; 5 tie
    assert (fact_own.agreement, fact_own.n_pairs) == (pytest.approx(3 / 4), 4)
    assert (fact_own.n_unjudged, fact_own.n_ties) == (1, 1)
    grammar = rows[4]  # always prefers a; overall says a on pairs 0 and 2 of 5 non-tie pairs
    assert (grammar.agreement, grammar.n_pairs) == (pytest.approx(2 / 5), 5)


@pytest.mark.parametrize("kwargs, err", [
    ({"diffs": [1.0], "judgements": ["a", "b"], "question_ids": ["q", "q"]}, "one entry per pair"),
    ({"diffs": [1.0], "judgements": ["answer_1"], "question_ids": ["q"]}, "'answer_1'"),
])
def test_agreement_rejects_bad_input(kwargs, err):
    with pytest.raises(ConfigError, match=err):
        agreement("coherence", OVERALL, **kwargs)


def _pair(i: int, label, aspects=()) -> PairRecord:
    return PairRecord(f"p{i}", f"Question {i // 2}?", f"answer a{i}", f"answer b{i}", label, aspects=aspects)


def test_judgements_of_records():
    pairs = [_pair(0, "a", (("coherence", "b"), ("factuality", "tie"))), _pair(1, None, (("coherence", "a"),)),
             _pair(2, "tie")]
    assert judgements_of(pairs) == {OVERALL: ["a", None, "tie"], "coherence": ["b", "a", None],
                                    "factuality": ["tie", None, None]}
    with pytest.raises(ConfigError, match="may not be called 'overall'"):
        judgements_of([_pair(0, "a", (("overall", "b"),))])


def test_agreement_from_a_pairs_table_with_aspect_columns():
    coh = RUBRICS.get("coherence.geval.v1")
    # coherence raw scores (1-5, identity rescale) chosen so that d_coherence = DIFFS (None: a failed score)
    raw = [(4.0, 3.0), (2.0, 2.5), (3.0, 3.0), (5.0, 3.0), (None, 3.0), (2.0, 3.0)]
    pairs = [_pair(i, label, (("coherence", c),) if c else ()) for i, (label, c) in enumerate(zip(LABELS, COHERENCE))]
    items = explode(pairs)
    by_text = {}
    for p, (a, b) in zip(pairs, raw):
        by_text[p.answer_a], by_text[p.answer_b] = a, b
    scores = {"coherence": [Score.failed("engine error") if by_text[it.answer] is None else Score.ok(by_text[it.answer])
                            for it in items]}
    answers = answers_table(items, [coh], scores, {"coherence": Provenance(coh.version, "vllm", "m", "r")})
    table = pairs_table(pairs, ["test"] * 4 + ["train"] * 2, answers)
    assert table.column("d_coherence").to_pylist() == DIFFS
    # pairs_table carries one string column per judged aspect
    assert table.column("aspect_coherence").to_pylist() == COHERENCE
    assert table.schema.field("aspect_coherence").type == pa.string()
    rows = aspect_agreement_from_table(table, n_boot=100)
    assert [(r.aspect, r.n_pairs, r.agreement) for r in rows] == [("coherence", 2, 0.5), (OVERALL, 4, 0.75)]
    test_only = aspect_agreement_from_table(table, split="test", n_boot=100)
    # test rows 0-3: coherence counts pairs 0, 1; overall counts 0, 1, 3 (agree, agree, disagree)
    assert [(r.n_pairs, round(r.agreement, 4)) for r in test_only] == [(2, 0.5), (3, round(2 / 3, 4))]
    text = agreement_markdown(rows)
    assert "| coherence | coherence (own aspect) | 0.500 [n/a] † | 2 | 1 | 1 | 1 | 1 | 1 |" in text
    assert "fewer than 30 questions" in text
    with pytest.raises(ConfigError, match="split 'dev' has no pairs"):
        aspect_agreement_from_table(table, split="dev")
