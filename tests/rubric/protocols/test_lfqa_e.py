"""LFQA-E: accuracy and macro-F1 over {a, b, tie}, and the breakdown by pair type."""

from __future__ import annotations

import math

import pytest
from sklearn.metrics import f1_score

from rubric.errors import ConfigError
from rubric.protocols.lfqa_e import CLASSES, breakdown_by_pair_type, pair_type, three_way_metrics
from rubric.io.records import PairRecord

# tie is true twice but never predicted
Y_TRUE = ["a", "a", "a", "b", "b", "tie", "tie", "a"]
Y_PRED = ["a", "b", "a", "b", "a", "a", "b", "a"]
GROUPS = ["q1", "q1", "q2", "q2", "q3", "q3", "q4", "q4"]


def test_three_way_metrics_hand_computed_with_a_class_never_predicted():
    got = three_way_metrics(Y_TRUE, Y_PRED, groups=GROUPS, system="judge", n_boot=200)
    # tp a 3, b 1, tie 0; true a 4, b 2, tie 2; predicted a 5, b 3, tie 0
    assert got.accuracy == pytest.approx(4 / 8)
    assert got.f1 == pytest.approx({"a": 6 / 9, "b": 2 / 5, "tie": 0.0})
    assert got.macro_f1 == pytest.approx((6 / 9 + 2 / 5 + 0.0) / 3)
    assert got.macro_f1 == pytest.approx(f1_score(Y_TRUE, Y_PRED, labels=list(CLASSES), average="macro",
                                                  zero_division=0))
    assert (got.n, got.n_questions, got.n_undecided, got.n_unlabeled, got.system) == (8, 4, 0, 0, "judge")
    for m in ("accuracy", "macro_f1"):
        lo, hi = got.ci[m]
        assert lo <= getattr(got, m) <= hi


def test_macro_f1_always_averages_three_classes():
    # no tie anywhere: LFQA-E's |C| = 3 still divides by three (scikit-learn's default would give 1.0)
    got = three_way_metrics(["a", "b"], ["a", "b"], groups=["q1", "q2"], n_boot=10)
    assert got.accuracy == 1.0 and got.macro_f1 == pytest.approx(2 / 3)


def test_undecided_counts_wrong_or_is_dropped():
    y_true, y_pred, groups = Y_TRUE + ["tie", None], Y_PRED + [None, "a"], GROUPS + ["q5", "q5"]
    wrong = three_way_metrics(y_true, y_pred, groups=groups, n_boot=10)
    assert (wrong.n, wrong.n_undecided, wrong.n_unlabeled) == (9, 1, 1)
    assert wrong.accuracy == pytest.approx(4 / 9)
    assert wrong.f1 == pytest.approx({"a": 6 / 9, "b": 2 / 5, "tie": 0.0})
    dropped = three_way_metrics(y_true, y_pred, groups=groups, undecided="drop", n_boot=10)
    assert (dropped.n, dropped.n_undecided, dropped.accuracy) == (8, 1, pytest.approx(0.5))


def test_three_way_metrics_errors_and_empty():
    with pytest.raises(ConfigError, match="'a', 'b', 'tie' or None"):
        three_way_metrics(["A"], ["a"], groups=["q"])
    with pytest.raises(ConfigError, match="one entry per pair"):
        three_way_metrics(["a"], ["a", "b"], groups=["q"])
    with pytest.raises(ConfigError, match="'undecided'"):
        three_way_metrics(["a"], ["a"], groups=["q"], undecided="skip")
    empty = three_way_metrics([None], ["a"], groups=["q"])
    assert empty.n == 0 and math.isnan(empty.accuracy) and empty.n_unlabeled == 1
    one_q = three_way_metrics(["a"], ["a"], groups=["q"])
    assert one_q.accuracy == 1.0 and all(math.isnan(x) for x in one_q.ci["accuracy"])


@pytest.mark.parametrize("a, b, expected", [
    ("human", "gpt3", "human-model"),
    ("gpt-4o", "Human", "human-model"),
    ("human_expert", "human", "human-human"),
    ("gpt3", "llama-3", "model-model"),
    ("", "human", None),
    ("human", "  ", None),
])
def test_pair_type(a, b, expected):
    assert pair_type(a, b) == expected


def _pair(i: int, label: str | None, ta: str, tb: str, q: str) -> PairRecord:
    return PairRecord(pair_id=f"p{i}", question=q, answer_a=f"A{i}", answer_b=f"B{i}", label=label,
                      answer_type_a=ta, answer_type_b=tb)


def test_breakdown_by_pair_type():
    pairs = [
        _pair(0, "a", "human", "human", "Q1?"), _pair(1, "tie", "human", "human", "Q2?"),
        _pair(2, "b", "human", "gpt3", "Q1?"), _pair(3, "a", "gpt3", "human", "Q3?"),
        _pair(4, "b", "gpt3", "llama", "Q4?"),
        _pair(5, "a", "", "gpt3", "Q5?"),          # unknown type: overall only
        _pair(6, None, "human", "gpt3", "Q6?"),    # unlabelled
    ]
    decisions = ["a", "a", "b", "b", None, "a", "a"]
    got = breakdown_by_pair_type(pairs, decisions, system="j", n_boot=20)
    assert got.overall.n == 6 and got.overall.accuracy == pytest.approx(3 / 6) and got.n_unknown_type == 1
    assert set(got.by_type) == {"human-human", "human-model", "model-model"}
    hh, hm, mm = got.by_type["human-human"], got.by_type["human-model"], got.by_type["model-model"]
    assert (hh.n, hh.accuracy) == (2, 0.5)
    assert (hm.n, hm.accuracy, hm.n_unlabeled) == (2, 0.5, 1)
    assert (mm.n, mm.accuracy, mm.n_undecided) == (1, 0.0, 1)
    with pytest.raises(ConfigError, match="one entry per pair"):
        breakdown_by_pair_type(pairs, decisions[:3])
