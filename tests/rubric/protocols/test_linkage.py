"""LINKAGE: expected rank, prompts, reference lists and the per-question correlation metric."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rubric.errors import ConfigError
from rubric.protocols.linkage import (
    GradedAnswer, expected_point_score, expected_rank, format_reference_list, graded_reference_split, listwise_prompt, pairwise_prompt, parse_point_score, parse_rank, pointwise_prompt, rank_score, references_above, webglm_references,
)
from rubric.protocols.linkage_metric import linkage_correlations, question_correlation

WEBGLM = Path(__file__).resolve().parents[4] / "shared" / "data" / "WEBGLM_50.json"


# --- expected rank and score ---------------------------------------------------------------------

def test_expected_rank_folds_spellings_and_ignores_out_of_range_digits():
    probs = {"1": 0.1, "Ġ2": 0.2, "3": 0.3, "▁3": 0.1, "5": 0.1, "6": 0.05, "The": 0.15}
    got = expected_rank(probs, 5)
    # (1*.1 + 2*.2 + 3*.4 + 5*.1) / .8
    assert got.value == pytest.approx(2.2 / 0.8) and got.mass == pytest.approx(0.8) and got.error is None
    assert got.probs["4"] == 0.0 and "6" not in got.probs


def test_expected_rank_with_logprobs():
    got = expected_rank({"1": math.log(0.5), "2": math.log(0.5)}, 3, logprobs=True)
    assert got.value == pytest.approx(1.5) and got.mass == pytest.approx(1.0)


@pytest.mark.parametrize("probs, error", [
    ({"The": 0.995, "1": 0.005}, "mass 0.005 < min_mass 0.01"),
    ({"The": 0.9, "7": 0.1}, "no rank digit in the full distribution"),
    ({"1": -0.5}, "invalid probability"),
])
def test_expected_rank_errors_instead_of_guessing(probs, error):
    got = expected_rank(probs, 5)
    assert got.value is None and error in got.error


@pytest.mark.parametrize("n", [1, 10, 2.0, True])
def test_expected_rank_needs_one_digit_positions(n):
    with pytest.raises(ConfigError, match="n_positions"):
        expected_rank({"1": 1.0}, n)


@pytest.mark.parametrize("text, n, value, error", [
    ("[[3]]", 5, 3.0, None),
    ("The candidate ranks [[ 2 ]] in the list.", 5, 2.0, None),
    ("[[2]] but maybe [[4]]", 5, 2.0, None),  # the first, as LINKAGE's code reads it
    ("[[7]]", 5, None, "outside 1..5"),
    ("[[0]]", 5, None, "outside 1..5"),
    ("rank 2", 5, None, "no [[k]] rank"),
    ("", 5, None, "no [[k]] rank"),
])
def test_parse_rank(text, n, value, error):
    got = parse_rank(text, n)
    assert got.value == value
    assert (got.error is None) if error is None else (error in got.error)


def test_rank_score_is_higher_for_better_ranks():
    assert rank_score(1.0) > rank_score(2.5) and rank_score(3) == -3.0


def test_point_score_splits_one_from_ten():
    first = {"1": 0.4, "8": 0.6}
    # without the next token "1" is read as 1
    assert expected_point_score(first).value == pytest.approx(0.4 * 1 + 0.6 * 8)
    # "[[1" continues with "0" a quarter of the time: P(10) = .1, P(1) = .3
    got = expected_point_score(first, {"0": 0.25, "]]": 0.75})
    assert got.value == pytest.approx(0.3 * 1 + 0.1 * 10 + 0.6 * 8)
    assert got.probs["10"] == pytest.approx(0.1) and got.mass == pytest.approx(1.0)
    # a tokenizer with "10" as one token
    assert expected_point_score({"10": 0.5, "9": 0.5}).value == pytest.approx(9.5)
    bad = expected_point_score(first, {"The": 1.0})
    assert bad.value is None and "cannot tell 1 from 10" in bad.error


@pytest.mark.parametrize("text, value, error", [
    ("Fluent and accurate. [[8]]", 8.0, None),
    ("[[10]]", 10.0, None),
    ("[[11]]", None, "outside 0..10"),
    ("eight", None, "no [[score]]"),
])
def test_parse_point_score(text, value, error):
    got = parse_point_score(text)
    assert got.value == value
    assert (got.error is None) if error is None else (error in got.error)


# --- prompts -------------------------------------------------------------------------------------

def test_format_reference_list_as_linkage_writes_it():
    assert format_reference_list(["best", "worse"]) == "Answer 1:best\nAnswer 2:worse\n"
    with pytest.raises(ConfigError, match="empty"):
        format_reference_list([])
    with pytest.raises(ConfigError, match="entry 2"):
        format_reference_list(["ok", "  "])


def test_listwise_prompt_places_the_candidate_after_the_ordered_list():
    refs = ["R-best", "R-good", "R-poor", "R-bad"]
    p = listwise_prompt("Q?", refs, "CAND")
    assert p.prefill == "[["
    assert "Reference answer list:{Answer 1:R-best\nAnswer 2:R-good\nAnswer 3:R-poor\nAnswer 4:R-bad\n}" in p.user
    assert p.user.endswith("Candidate answer:{CAND}")
    with pytest.raises(ConfigError, match="exactly 4"):
        listwise_prompt("Q?", refs[:3], "CAND")
    p3 = listwise_prompt("Q?", refs[:3], "CAND", version="linkage.listwise_n.v1", prefill=False)
    assert "all 3 references, output [[4]]" in p3.user and p3.prefill == ""
    with pytest.raises(ConfigError, match="1 to 8"):
        listwise_prompt("Q?", ["r"] * 9, "CAND", version="linkage.listwise_n.v1")
    with pytest.raises(ConfigError, match="not a LINKAGE listwise"):
        listwise_prompt("Q?", refs, "CAND", version="linkage.pairwise.v1")


def test_pointwise_and_pairwise_prompts():
    with_ref = pointwise_prompt("Q?", "CAND", ["R1", "R2"])
    assert "Reference answer list:{Answer 1:R1\nAnswer 2:R2\n}" in with_ref.user
    no_ref = pointwise_prompt("Q?", "CAND")
    assert "Reference answer list" not in no_ref.user and no_ref.user.endswith("Candidate answer:{CAND}")
    pair = pairwise_prompt("Q?", "FIRST", "SECOND")
    assert pair.user.index("Assistant A's Answer]:{FIRST}") < pair.user.index("Assistant B's Answer]:{SECOND}")


# --- reference lists -----------------------------------------------------------------------------

def test_webglm_references_best_first():
    entry = {"doc_list": [], "ground0": "worst", "ground1": "poor", "ground2": "good", "ground3": "best",
             "ground4": "best, again"}
    assert webglm_references(entry) == ["best", "good", "poor", "worst"]
    with pytest.raises(ConfigError, match="ground1"):
        webglm_references({"ground0": "w", "ground2": "g", "ground3": "b"})


def test_webglm_references_on_the_shared_file():
    if not WEBGLM.exists():
        pytest.skip(f"{WEBGLM} not present")
    data = json.loads(WEBGLM.read_text(encoding="utf-8"))
    entry = data["How To Cook Pork Tenderloin"]
    refs = webglm_references(entry)
    assert refs[0] == entry["ground3"] and refs[-1] == entry["ground0"]
    assert "backyard" in refs[-1]  # ground0 is the worst reference


ANSWERS = [GradedAnswer("k0", "a", 3), GradedAnswer("k1", "b", 2), GradedAnswer("k2", "c", 3),
           GradedAnswer("k3", "d", 0), GradedAnswer("k4", " b ", 2), GradedAnswer("k5", "e", 2)]


def test_graded_reference_split_one_reference_per_grade():
    split = graded_reference_split(ANSWERS)
    assert [r.key for r in split.references] == ["k0", "k1", "k3"]
    assert split.texts == ["a", "b", "d"]
    assert [c.key for c in split.candidates] == ["k2", "k5"]
    assert split.skipped == (("k4", "same text as answer k1"),)
    assert split.error is None
    one = graded_reference_split([GradedAnswer("x", "a", 1), GradedAnswer("y", "b", 1)])
    assert (one.references, one.candidates) == ((), ())
    assert one.error == "a reference list needs two distinct grades, got [1]"
    assert graded_reference_split(ANSWERS, max_references=2).error == "3 distinct grades, over max_references=2"
    with pytest.raises(ConfigError, match="max_references"):
        graded_reference_split(ANSWERS, max_references=9)


def test_references_above_and_its_label_leak():
    assert [a.key for a in references_above(ANSWERS, ANSWERS[1])] == ["k0", "k2"]
    assert references_above(ANSWERS, ANSWERS[0]) == []
    assert [a.key for a in references_above(ANSWERS, ANSWERS[3], max_references=3)] == ["k0", "k2", "k1"]
    # the warning in its docstring: a judge that always answers "last" ranks by the list length alone
    cands = [ANSWERS[0], ANSWERS[1], ANSWERS[3]]
    scores = [rank_score(len(references_above(ANSWERS, c)) + 1) for c in cands]
    got = linkage_correlations(["q"] * 3, [c.grade for c in cands], scores)
    assert got.kendall.value == pytest.approx(1.0)


# --- the metric ----------------------------------------------------------------------------------

def test_question_correlation_hand_computed():
    # labels tie twice; concordant 4, discordant 1, one pair tied in labels: tau-b = 3 / sqrt(5 * 6)
    c = question_correlation("q1", [2, 1, 1, 0], [4, 3, 1, 2])
    assert c.kendall == pytest.approx(3 / math.sqrt(30))
    # ranks (4, 2.5, 2.5, 1) vs (4, 3, 1, 2): 3 / sqrt(4.5 * 5)
    assert c.spearman == pytest.approx(3 / math.sqrt(22.5))
    # centred (1, 0, 0, -1) vs (1.5, .5, -1.5, -.5): 2 / sqrt(2 * 5)
    assert c.pearson == pytest.approx(2 / math.sqrt(10))
    assert c.undefined is None and c.n == 4


@pytest.mark.parametrize("labels, scores, why", [
    ([2, 2], [1, 3], "every answer has the grade 2"),
    ([0, 1, 2], [1, 1, 1], "every answer has the score 1"),
    ([1], [5], "1 scored answer(s)"),
])
def test_question_correlation_undefined(labels, scores, why):
    c = question_correlation("q", labels, scores)
    assert math.isnan(c.kendall) and math.isnan(c.spearman) and math.isnan(c.pearson)
    assert c.undefined == why


def test_linkage_correlations_average_defined_questions_only():
    rows = [
        ("q1", 2, 4.0), ("q1", 1, 3.0), ("q1", 1, 1.0), ("q1", 0, 2.0),
        ("q2", 1, 0.9), ("q2", 0, 0.1), ("q2", 0, 0.5),
        ("q3", 2, 1.0), ("q3", 2, 2.0),                      # one grade: undefined
        ("q4", 0, 1.0), ("q4", 1, 1.0), ("q4", 2, 1.0),      # one score: undefined
        ("q5", 1, 3.0), ("q5", 0, None),                     # one scored answer: undefined
        ("q6", 1, float("nan")), ("q6", 0, 2.0), ("q6", 2, 5.0),  # a nan score is left out
    ]
    qids, labels, scores = zip(*rows)
    got = linkage_correlations(qids, labels, scores, system="listwise", n_boot=200, seed=1)
    # q2: tau-b 2 / sqrt(2 * 3); rho = r = 1.5 / sqrt(1.5 * 2); q6 (two answers, concordant): 1, 1, 1
    tau = (3 / math.sqrt(30) + 2 / math.sqrt(6) + 1.0) / 3
    rho = (3 / math.sqrt(22.5) + 1.5 / math.sqrt(3) + 1.0) / 3
    assert got.kendall.value == pytest.approx(tau)
    assert got.spearman.value == pytest.approx(rho)
    assert got.pearson.value == pytest.approx((2 / math.sqrt(10) + 1.5 / math.sqrt(3) + 1.0) / 3)
    assert (got.n_questions, got.n_undefined, got.n_missing_scores) == (6, 3, 2)
    assert got.kendall.n_questions == 3 and got.system == "listwise"
    lo, hi = got.kendall.ci
    assert lo <= got.kendall.value <= hi and lo >= 3 / math.sqrt(30) - 1e-9 and hi <= 1.0 + 1e-9
    assert [c.question_id for c in got.per_question] == ["q1", "q2", "q3", "q4", "q5", "q6"]
    assert got.per_question[4].undefined == "1 scored answer(s)"


def test_linkage_correlations_with_no_defined_question():
    got = linkage_correlations(["q", "q"], [1, 1], [1.0, 2.0])
    assert math.isnan(got.kendall.value) and got.n_undefined == 1 and got.kendall.n_questions == 0


def test_linkage_correlations_checks_lengths():
    with pytest.raises(ConfigError, match="one entry per answer"):
        linkage_correlations(["q"], [1, 2], [1.0, 2.0])
