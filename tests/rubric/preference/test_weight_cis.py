"""Weight CIs without the artefact of degenerate bootstrap replicates.

A binary rubric difference that is non-zero on few questions (the paper's use-of-examples v2 on a small
training set) is constant in many question resamples; the refit then gives it weight exactly 0, and
those zeros pinned a CI bound at 0 (docs/paper.md's Table 3 showed ``use_of_examples -0.7140 [-1.1215,
+0.0000]``). Such replicates are now left out of that column's percentiles, counted, and the CI is
marked unreliable when they are more than the set share.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

from rubric.preference.model import PreferenceModel
from rubric.preference.report import weight_ci_cell, weights_markdown
from rubric.preference.selection import MAX_DEGENERATE_SHARE, bootstrap_weight_cis

N_Q, PER_Q, N_BOOT, SEED = 40, 4, 40, 0


def _data():
    """Column 0 drives the labels; column 1 (binary, -1/0/+1) is non-zero only on questions 0 and 1, where
    the answer with the example always loses."""
    rng = np.random.default_rng(3)
    groups = np.repeat([f"q{i}" for i in range(N_Q)], PER_Q)
    signal = rng.normal(size=len(groups))
    examples = np.where(np.isin(groups, ["q0", "q1"]), rng.choice([-1.0, 1.0], size=len(groups)), 0.0)
    logit = 2.0 * signal - 3.0 * examples
    y = np.where(rng.random(len(groups)) < 1 / (1 + np.exp(-logit)), "a", "b").astype(object)
    return np.column_stack([signal, examples]), y, groups


def _old_percentiles(model, X, y, groups):
    """The CIs as computed before: every fitted replicate's weights, degenerate ones (weight 0) included."""
    _, g = np.unique(groups, return_inverse=True)
    rows_of = [np.flatnonzero(g == q) for q in range(N_Q)]
    rng = np.random.default_rng(SEED)
    draws = []
    for _ in range(N_BOOT):
        idx = np.concatenate([rows_of[q] for q in rng.integers(0, N_Q, size=N_Q)])
        m = clone(model).fit(X[idx], y[idx])
        draws.append([m.weights()[c] for c in model.columns_])
    w = np.array(draws)
    return {c: (np.percentile(w[:, j], 2.5), np.percentile(w[:, j], 97.5)) for j, c in enumerate(model.columns_)}


def test_a_rarely_varying_binary_column_no_longer_pins_its_ci_at_zero():
    X, y, groups = _data()
    model = PreferenceModel(feature_names=["signal", "use_of_examples"]).fit(X, y)
    assert model.weights()["use_of_examples"] < 0
    old = _old_percentiles(model, X, y, groups)
    assert old["use_of_examples"][1] == 0.0  # the artefact: the upper bound pinned at exactly 0

    cis = bootstrap_weight_cis(model, X, y, groups, n_boot=N_BOOT, seed=SEED)
    n_deg = cis.n_degenerate["use_of_examples"]
    # P(neither q0 nor q1 drawn) = (38/40)^40 = 0.13: about 5 of 40
    assert 2 < n_deg < 12 and n_deg > MAX_DEGENERATE_SHARE * N_BOOT
    assert cis.n_degenerate["signal"] == 0 and cis.unreliable == ("use_of_examples",)
    lo, hi = cis.ci["use_of_examples"]
    assert hi < 0 and lo < hi  # from the replicates that could estimate it: no bound at 0
    assert cis.ci["signal"] == pytest.approx(old["signal"])  # a column never constant is as before

    record = cis.to_dict()
    assert record["n_degenerate"]["use_of_examples"] == n_deg and record["unreliable"] == ["use_of_examples"]
    cell = weight_ci_cell("use_of_examples", record)
    assert cell.startswith(f"unreliable: the column is constant in {n_deg} of {N_BOOT} replicates (over 5%)")
    assert "+0.0000]" not in cell
    assert weight_ci_cell("signal", record).startswith("[+") and "constant" not in weight_ci_cell("signal", record)
    table = weights_markdown(model.weights(), weight_ci=record)
    assert "| use_of_examples | rubric | " in table and "unreliable:" in table


def test_a_few_degenerate_replicates_are_left_out_and_counted():
    X, y, groups = _data()
    X = X.copy()
    # now the example column varies on 3 questions: (37/40)^40 = 4.4% of resamples miss them all
    X[:, 1] = np.where(np.isin(groups, [f"q{i}" for i in range(3)]), np.sign(X[:, 0] + 0.1), 0.0)
    model = PreferenceModel(feature_names=["signal", "use_of_examples"]).fit(X, y)
    cis = bootstrap_weight_cis(model, X, y, groups, n_boot=N_BOOT, seed=SEED)
    n_deg = cis.n_degenerate["use_of_examples"]
    assert 0 < n_deg <= MAX_DEGENERATE_SHARE * N_BOOT and cis.unreliable == ()
    assert weight_ci_cell("use_of_examples", cis.to_dict()).endswith(
        f" ({n_deg} of {N_BOOT} replicates constant: left out)")


def test_a_ci_saved_before_degenerate_replicates_were_checked_says_so():
    old_record = {"ci": {"x": [-1.0, 0.0]}, "n_boot": 200, "n_failed": 0, "seed": 0}
    assert weight_ci_cell("x", old_record) == ("[-1.0000, +0.0000] (degenerate replicates not checked: fitted "
                                               "before they were; re-fit)")
    assert weight_ci_cell("x", None) == "not computed"
