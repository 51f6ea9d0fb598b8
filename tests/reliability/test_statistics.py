"""Statistics reported honestly: CIs from a bootstrap over questions, small samples flagged, in-sample
numbers labelled, and rubrics with nothing to learn from left out instead of weighted."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rubric.errors import ConfigError
from rubric.preference.evaluate import evaluate_model, fit_model, write_report
from rubric.tables.features import answers_table, pairs_table
from rubric.preference.metrics import METRICS, evaluate_predictions
from rubric.preference.model import PreferenceModel
from rubric.io.records import PairRecord, explode
from rubric.preference.report import render_report
from rubric.scoring.scorer import Provenance, Score
from rubric.scoring.specs import RUBRICS

CONC = RUBRICS.get("conciseness.lexical_density.v1")
HARPER = RUBRICS.get("grammar.harper.v1")


def _clustered(n_questions=20, per_question=50, n_right=12):
    """Every pair of a question has the same outcome: right on ``n_right`` questions, wrong on the rest."""
    groups = np.repeat([f"q{i}" for i in range(n_questions)], per_question)
    y = np.array(["a", "b"] * (n_questions * per_question // 2), dtype=object)
    right = np.repeat(np.arange(n_questions) < n_right, per_question)
    flipped = np.where(y == "a", "b", "a").astype(object)
    return y, np.where(right, y, flipped).astype(object), groups


def _width(row, m="accuracy"):
    lo, hi = row.ci[m]
    return hi - lo


def test_question_clustered_ci_is_much_wider_than_a_pair_bootstrap_on_clustered_outcomes():
    y, p, groups = _clustered()
    clustered = evaluate_predictions("x", y, p, groups=groups, n_boot=2000, seed=0)
    # one question per pair is the pair bootstrap the report used to show
    per_pair = evaluate_predictions("x", y, p, groups=np.arange(len(y)), n_boot=2000, seed=0)
    assert clustered.values["accuracy"] == per_pair.values["accuracy"] == pytest.approx(0.6)
    assert clustered.n == 1000 and clustered.n_questions == 20 and per_pair.n_questions == 1000
    # 20 independent outcomes, not 1000: SE ~ sqrt(.24/20) = .11 against sqrt(.24/1000) = .015
    assert _width(per_pair) < 0.08
    assert _width(clustered) > 0.3 and _width(clustered) > 4 * _width(per_pair)
    for m in METRICS:
        lo, hi = clustered.ci[m]
        assert lo <= clustered.values[m] <= hi


def test_bootstrap_is_deterministic_under_a_seed():
    y, p, groups = _clustered()
    a = evaluate_predictions("x", y, p, groups=groups, n_boot=300, seed=7)
    b = evaluate_predictions("x", y, p, groups=groups, n_boot=300, seed=7)
    c = evaluate_predictions("x", y, p, groups=groups, n_boot=300, seed=8)
    assert a == b
    assert a.ci != c.ci


def test_two_pairs_give_na_cis_and_a_warning_in_the_report():
    y = np.array(["a", "b"], dtype=object)
    row = evaluate_predictions("model", y, y, groups=["q1", "q1"], n_boot=100)
    assert row.n == 2 and row.n_questions == 1
    assert all(math.isnan(lo) and math.isnan(hi) for lo, hi in row.ci.values())
    text = render_report(title="t", split="test", rows=[row], weights=None, counts={}, excluded={}, chart=None)
    assert "| model | 2 | 1 | 1.0000 [n/a] |" in text
    assert "CIs from 1 questions are unreliable" in text
    # two questions: the CI exists but rests on two clusters, and the warning stays
    two = evaluate_predictions("model", y, y, groups=["q1", "q2"], n_boot=100)
    assert not math.isnan(two.ci["accuracy"][0])
    assert "CIs from 2 questions are unreliable" in render_report(title="t", split="test", rows=[two], weights=None,
                                                                 counts={}, excluded={}, chart=None)


def test_report_heading_says_clustered_and_in_sample():
    y, p, groups = _clustered(n_questions=40, per_question=2, n_right=30)
    row = evaluate_predictions("model", y, p, groups=groups, n_boot=100)
    test = render_report(title="t", split="test", rows=[row], weights=None, counts={}, excluded={}, chart=None)
    assert "## Metrics (macro-averaged; question-clustered bootstrap 95% CI in brackets)" in test
    assert "| system | n pairs | n questions |" in test and "| model | 80 | 40 |" in test
    assert "unreliable" not in test and "IN-SAMPLE" not in test
    for split in ("train", "all"):
        text = render_report(title="t", split=split, rows=[row], weights=None, counts={}, excluded={}, chart=None)
        assert "## Metrics — IN-SAMPLE (macro-averaged; question-clustered bootstrap 95% CI" in text
    assert "(includes the training pairs: in-sample)" in render_report(
        title="t", split="all", rows=[row], weights=None, counts={}, excluded={}, chart=None)
    few_pairs = evaluate_predictions("model", y[:40], p[:40], groups=groups[:40], n_boot=50)
    assert few_pairs.n_questions == 20 and "CIs from 20 questions are unreliable" in render_report(
        title="t", split="test", rows=[few_pairs], weights=None, counts={}, excluded={}, chart=None)


@pytest.mark.parametrize("groups", [["q1"] * 3, ["q1"] * 5])
def test_groups_length_mismatch_is_a_config_error(groups):
    y = np.array(["a", "b", "a", "b"], dtype=object)
    with pytest.raises(ConfigError, match="one entry per pair"):
        evaluate_predictions("x", y, y, groups=groups)


def test_groups_are_required():
    with pytest.raises(TypeError):
        evaluate_predictions("x", ["a"], ["a"])  # no silent pair bootstrap


def _constant_grammar_job():
    rng = np.random.default_rng(0)
    pairs, conc = [], {}
    for q in range(30):
        for k in range(3):
            a, b = f"q{q} answer {k} one", f"q{q} answer {k} two"
            conc[a], conc[b] = rng.uniform(0.2, 0.8, size=2)
            pairs.append(PairRecord(f"{q}-{k}", f"Question {q}?", a, b, "a" if conc[a] > conc[b] else "b"))
    items = explode(pairs)
    answers = answers_table(
        items, [CONC, HARPER],
        {"conciseness": [Score.ok(conc[it.answer]) for it in items], "grammar": [Score.ok(5.0)] * len(items)},
        {"conciseness": Provenance(CONC.version, "spacy"), "grammar": Provenance(HARPER.version, "harper")})
    return pairs_table(pairs, ["train" if i < 60 else "test" for i in range(len(pairs))], answers)


def test_a_constant_rubric_is_left_out_with_its_reason_not_weighted(tmp_path, caplog):
    table = _constant_grammar_job()
    with caplog.at_level("WARNING", logger="rubric.tables.features"):
        model, dm = fit_model(table)
    reason = "constant on the train split (every difference is 0): nothing to learn"
    assert model.features_ == ["conciseness"] and dm.excluded == {"grammar": reason}
    assert "grammar" in caplog.text and "grammar" not in model.weights()
    model.to_json(tmp_path / "m.json", excluded=dm.excluded)
    loaded = PreferenceModel.from_json(tmp_path / "m.json")
    ev = evaluate_model(loaded, table, split="test", n_boot=100)
    assert ev.rows[0].n == 30 and ev.rows[0].n_questions == 10
    text = write_report(ev, loaded, tmp_path / "r.md")
    assert f"- grammar: {reason}" in text and "| grammar |" not in text
    assert "CIs from 10 questions are unreliable" in text
