import numpy as np
import pytest

from rubric.preference.metrics import always_a, evaluate_predictions, longer_answer_wins


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
    from rubric.preference.metrics import METRICS, _confusion_metrics

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
    from rubric.preference.metrics import per_question_kendall

    groups = {
        "q1": [(3, 5.0), (2, 4.0), (1, 1.0)],      # perfectly concordant: 1.0
        "q2": [(3, 1.0), (1, 5.0)],                # discordant: -1.0
        "q3": [(2, 3.0), (2, 4.0)],                # one grade only: undefined
        "q4": [(3, 2.0), (1, 2.0)],                # constant score: undefined
        "q5": [(3, None), (1, 2.0)],               # a missing score leaves one answer: undefined
    }
    out = per_question_kendall(groups)
    assert out["mean_tau"] == pytest.approx(0.0) and out["n_questions"] == 2 and out["n_undefined"] == 3


def test_brier_score_by_hand():
    from rubric.preference.metrics import brier_score

    y = ["a", "b", "a", "b"]
    p = [0.8, 0.3, 0.4, 0.0]
    assert brier_score(y, p) == pytest.approx((0.2 ** 2 + 0.3 ** 2 + 0.6 ** 2 + 0.0) / 4)
    assert brier_score(["a", "b"], [0.5, 0.5]) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="a/b labels"):
        brier_score(["a", "tie"], [0.5, 0.5])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        brier_score(["a"], [1.2])


def test_reliability_bins_count_every_pair_once():
    from rubric.preference.metrics import reliability_bins

    y = ["a", "b", "a", "a", "b", "a"]
    p = [0.0, 0.05, 0.15, 0.95, 1.0, 0.55]
    bins = reliability_bins(y, p)
    assert [b.n for b in bins] == [2, 1, 0, 0, 0, 1, 0, 0, 0, 2]  # 1.0 falls in the last bin
    assert bins[0].mean_p == pytest.approx(0.025) and bins[0].frac_a == pytest.approx(0.5)
    assert bins[9].frac_a == pytest.approx(0.5) and np.isnan(bins[2].mean_p)
    assert (bins[0].lo, bins[9].hi) == (0.0, 1.0)


def test_paired_accuracy_delta_resamples_questions_once_for_both_systems():
    from rubric.preference.metrics import paired_accuracy_delta

    groups = np.repeat([f"q{i}" for i in range(20)], 5)
    y = np.array(["a", "b"] * 50, dtype=object)
    same = paired_accuracy_delta(y, y, y, groups=groups, n_boot=200)
    assert same.value == 0.0 and same.ci == (0.0, 0.0)
    # "other" is right everywhere, "base" wrong on questions q0..q9: +0.5, and on every resample the
    # difference is the share of drawn pairs from q0..q9, never below 0
    wrong = np.where(np.isin(groups, [f"q{i}" for i in range(10)]), np.where(y == "a", "b", "a"), y)
    d = paired_accuracy_delta(y, wrong, y, groups=groups, n_boot=500, seed=1)
    assert d.value == pytest.approx(0.5) and 0 < d.ci[0] < 0.5 < d.ci[1] < 1
    assert d.n == 100 and d.n_questions == 20
    # deterministic under a seed
    assert paired_accuracy_delta(y, wrong, y, groups=groups, n_boot=500, seed=1) == d


def test_clustered_mean_ci():
    from rubric.preference.metrics import clustered_mean

    values = np.r_[np.zeros(50), np.ones(50)]
    groups = np.repeat(np.arange(10), 10)
    m = clustered_mean(values, groups=groups, n_boot=300)
    assert m.value == 0.5 and m.ci[0] < 0.5 < m.ci[1] and m.n_questions == 10
    one = clustered_mean([1.0, 0.0], groups=["q", "q"])
    assert one.value == 0.5 and all(np.isnan(one.ci))
