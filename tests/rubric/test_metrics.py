import numpy as np
import pytest

from rubric.metrics import always_a, evaluate_predictions, longer_answer_wins


def test_perfect_and_ci_contains_point():
    y = np.array(["a", "b"] * 50, dtype=object)
    row = evaluate_predictions("x", y, y, groups=np.arange(100) // 4, n_boot=200)
    assert row.values == {"accuracy": 1.0, "precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert row.ci["accuracy"] == (1.0, 1.0)
    assert row.n == 100 and row.n_questions == 25


def test_known_values():
    y = np.array(["a", "a", "b", "b"], dtype=object)
    p = np.array(["a", "b", "b", "b"], dtype=object)
    row = evaluate_predictions("x", y, p, groups=["q1", "q2", "q3", "q4"], n_boot=300, seed=1)
    assert row.values["accuracy"] == pytest.approx(0.75)
    # macro precision: a 1/1, b 2/3 ; macro recall: a 1/2, b 1
    assert row.values["precision"] == pytest.approx((1 + 2 / 3) / 2)
    assert row.values["recall"] == pytest.approx(0.75)
    lo, hi = row.ci["accuracy"]
    assert lo <= 0.75 <= hi


@pytest.mark.parametrize("labels", [("a", "b"), ("a", "b", "tie")])
def test_bootstrap_metrics_match_sklearn_on_each_replicate(labels):
    # The vectorised bootstrap computes metrics from summed confusion counts; with every question drawn
    # once it must equal scikit-learn's macro metrics, including labels never predicted.
    from rubric.metrics import METRICS, _confusion_metrics

    rng = np.random.default_rng(3)
    y = rng.choice(labels, 300).astype(object)
    p = rng.choice(["a", "b"], 300).astype(object)
    conf = np.zeros((len(set(y) | set(p)),) * 2)
    names = sorted(set(y) | set(p))
    for t, q in zip(y, p):
        conf[names.index(t), names.index(q)] += 1
    got = _confusion_metrics(conf[None])
    for m, fn in METRICS.items():
        assert got[m][0] == pytest.approx(fn(y.astype(str), p.astype(str)))


def test_baselines():
    assert list(longer_answer_wins([10, 3, 5], [2, 9, 5])) == ["a", "b", "a"]
    assert list(always_a(2)) == ["a", "a"]


def test_per_question_kendall():
    from rubric.metrics import per_question_kendall

    groups = {
        "q1": [(3, 5.0), (2, 4.0), (1, 1.0)],      # perfectly concordant: 1.0
        "q2": [(3, 1.0), (1, 5.0)],                # discordant: -1.0
        "q3": [(2, 3.0), (2, 4.0)],                # one grade only: undefined
        "q4": [(3, 2.0), (1, 2.0)],                # constant score: undefined
        "q5": [(3, None), (1, 2.0)],               # a missing score leaves one answer: undefined
    }
    out = per_question_kendall(groups)
    assert out["mean_tau"] == pytest.approx(0.0) and out["n_questions"] == 2 and out["n_undefined"] == 3
