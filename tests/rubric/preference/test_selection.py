"""Honest selection: C by GroupKFold over questions, drop-one-rubric ablation with paired CIs, calibration,
and bootstrap CIs of the weights; and the report that shows them beside the baselines.

Tables are built with the real table writers from hand-made scores: conciseness carries the signal,
grammar is pure noise.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rubric.errors import ConfigError
from rubric.preference.evaluate import (MODEL_ROW, STYLE_CONTROLLED_ROW, evaluate_model, fit_model, model_inputs,
                                       model_row_names,
                             write_report)
from rubric.tables.features import answers_table, pairs_table
from rubric.preference.metrics import brier_score
from rubric.preference.model import PreferenceModel
from rubric.io.records import PairRecord, explode
from rubric.scoring.scorer import Provenance, Score
from rubric.preference.selection import (C_GRID, bootstrap_weight_cis, calibration, cross_validate_C, drop_one_ablation,
                              question_folds)
from rubric.scoring.specs import RUBRICS
from rubric.tables.style import normalised_difference

CONC = RUBRICS.get("conciseness.lexical_density.v1")
HARPER = RUBRICS.get("grammar.harper.v1")


def synthetic_table(n_questions: int = 60, per_question: int = 6, *, seed: int = 0, w_good: float = 8.0,
                    w_len: float = 0.0, w_md: float = 0.0, unlabeled_every: int = 0, grammar=HARPER,
                    len_in_score: float = 0.0, id_prefix: str = "", question: str = "Question"):
    """A pairs table whose labels follow conciseness (plus, optionally, length and markdown).

    Answers differ in length (20-300 words) and markdown (0-4 list items). Grammar is noise. With
    ``len_in_score`` the conciseness score also rises with length (for the decorrelation). Every
    ``unlabeled_every``-th pair has no label. The first 70% of questions are train, the rest test.
    """
    rng = np.random.default_rng(seed)
    pairs, conc, gram = [], {}, {}
    for q in range(n_questions):
        for k in range(per_question):
            texts = []
            for side in "ab":
                n_words, n_md = int(rng.integers(20, 300)), int(rng.integers(0, 5))
                text = f"q{q} p{k}{side} " + " ".join(["word"] * n_words) + "".join("\n- item" for _ in range(n_md))
                good = float(rng.uniform(0, 1))
                conc[text] = min(1.0, good * (1 - len_in_score) + len_in_score * n_words / 300)
                gram[text] = float(rng.uniform(1, 5))
                texts.append((text, n_words, n_md, good))  # markdown_count(text) == n_md
            (a, la, ma, ga), (b, lb, mb, gb) = texts
            logit = (w_good * (ga - gb) + w_len * normalised_difference(la, lb).item()
                     + w_md * normalised_difference(ma, mb).item())
            label = "a" if rng.random() < 1 / (1 + math.exp(-logit)) else "b"
            i = len(pairs)
            if unlabeled_every and i % unlabeled_every == 0:
                label = None
            pairs.append(PairRecord(f"{id_prefix}q{q}-{k}", f"{question} {q}?", a, b, label))
    items = explode(pairs)
    answers = answers_table(
        items, [CONC, grammar],
        {"conciseness": [Score.ok(conc[it.answer]) for it in items],
         "grammar": [Score.ok(gram[it.answer]) for it in items]},
        {"conciseness": Provenance(CONC.version, "spacy", "en_core_web_sm", "3.8.0"),
         "grammar": Provenance(grammar.version, grammar.backend)})
    n_train = int(0.7 * n_questions) * per_question
    return pairs_table(pairs, ["train" if i < n_train else "test" for i in range(len(pairs))], answers)


@pytest.fixture(scope="module")
def table():
    return synthetic_table(w_len=2.0)


@pytest.fixture(scope="module")
def fitted(table):
    return fit_model(table, n_boot_weights=60, seed=3)


def test_group_folds_never_split_a_question():
    rng = np.random.default_rng(0)
    groups = rng.choice([f"q{i}" for i in range(23)], size=400)
    folds = question_folds(groups, n_splits=5)
    assert len(folds) == 5
    seen = []
    for tr, va in folds:
        assert set(groups[tr]).isdisjoint(groups[va])
        assert len(tr) + len(va) == len(groups)
        seen += list(set(groups[va]))
    assert sorted(seen) == sorted(set(groups))  # every question validated exactly once
    # fewer questions than folds: one fold per question
    assert len(question_folds(["q1", "q1", "q2", "q3"], n_splits=5)) == 3
    with pytest.raises(ConfigError, match="at least 2 questions"):
        question_folds(["q1"] * 4)


def test_cross_validation_chooses_C_from_the_grid_over_question_folds(table, fitted):
    _, dm = fitted
    template = PreferenceModel(feature_names=dm.features, style_features=dm.style_features)
    cv = cross_validate_C(template, dm.X, dm.y, dm.question_id, n_splits=4)
    assert cv.best_C in C_GRID and cv.n_folds == 4 and [r["C"] for r in cv.rows] == list(C_GRID)
    best = min(cv.rows, key=lambda r: r["log_loss"])
    assert best["C"] == cv.best_C and all(r["n_folds"] == 4 for r in cv.rows)
    # strong regularisation shrinks the informative weight towards 0: its held-out loss is worse
    assert cv.rows[0]["log_loss"] > best["log_loss"]
    assert cross_validate_C(template, dm.X, dm.y, dm.question_id, n_splits=4) == cv  # no hidden randomness

    grid = (C_GRID[0], cv.best_C)
    model, _ = fit_model(table, C="cv", cv_folds=4, cv_grid=grid)
    assert model.C == cv.best_C
    sel = model.metadata_["C_selection"]
    assert sel["best_C"] == cv.best_C and [r["C"] for r in sel["rows"]] == list(grid)
    assert sel["rows"][1]["log_loss"] == pytest.approx(best["log_loss"])
    with pytest.raises(ConfigError, match="'cv'"):
        fit_model(table, C="auto")


def test_ablation_of_noise_is_zero_and_of_the_signal_clearly_negative(table, fitted):
    model, _ = fitted
    train = model_inputs(model, table, split="train")
    test = model_inputs(model, table, split="test")
    rows = {r.feature: r for r in drop_one_ablation(model, train.X, train.y, test.X, test.y, test.question_id,
                                                    n_boot=500, seed=0)}
    assert set(rows) == {"conciseness", "grammar"}
    signal, noise = rows["conciseness"], rows["grammar"]
    assert signal.delta.value < -0.15 and signal.delta.ci[1] < 0
    assert abs(noise.delta.value) < 0.05 and noise.delta.ci[0] <= 0 <= noise.delta.ci[1]
    # the reference is the model itself (refitted on its own training pairs)
    assert signal.accuracy_full == pytest.approx(float(np.mean(model.predict(test.X) == test.y)))
    assert signal.accuracy_without - signal.accuracy_full == pytest.approx(signal.delta.value)
    assert signal.delta.n == len(test.y) and signal.delta.n_questions == len(set(test.question_id))


def test_calibration_brier_matches_a_hand_computation(table, fitted):
    model, _ = fitted
    dm = model_inputs(model, table, split="test")
    p = model.predict_proba(dm.X)[:, list(model.classes_).index("a")]
    cal = calibration(dm.y, p, dm.question_id, n_boot=200)
    hand = sum((pi - (1.0 if yi == "a" else 0.0)) ** 2 for pi, yi in zip(p, dm.y)) / len(p)
    assert cal.brier.value == pytest.approx(hand) == pytest.approx(brier_score(dm.y, p))
    assert cal.brier.ci[0] <= cal.brier.value <= cal.brier.ci[1] and cal.brier.value < 0.25
    assert len(cal.bins) == 10 and sum(b.n for b in cal.bins) == len(p)
    assert cal.brier_style_controlled is None


def test_weight_cis_contain_the_estimate_and_are_deterministic_under_a_seed(fitted):
    model, dm = fitted
    ci = model.metadata_["weight_ci"]
    assert ci["n_boot"] == 60 and ci["seed"] == 3 and set(ci["ci"]) == set(model.columns_)
    for col, w in model.weights().items():
        lo, hi = ci["ci"][col]
        assert lo <= w <= hi, col
    again = bootstrap_weight_cis(model, dm.X, dm.y, dm.question_id, n_boot=60, seed=3)
    assert {k: list(v) for k, v in again.ci.items()} == ci["ci"]
    other = bootstrap_weight_cis(model, dm.X, dm.y, dm.question_id, n_boot=20, seed=4)
    assert other.ci != bootstrap_weight_cis(model, dm.X, dm.y, dm.question_id, n_boot=20, seed=3).ci
    # the informative rubric's CI excludes 0
    assert ci["ci"]["conciseness"][0] > 0


def test_evaluation_reports_style_controlled_model_ablation_calibration_and_weight_cis(table, fitted, tmp_path):
    model, _ = fitted
    assert model.style_features_ == ("style_length", "style_markdown")
    model.to_json(tmp_path / "m.json")
    loaded = PreferenceModel.from_json(tmp_path / "m.json")
    ev = evaluate_model(loaded, table, split="test", n_boot=200)
    names = [r.system for r in ev.rows]
    full = "preference model (LR on rubric differences + length/markdown covariates)"  # says what it holds
    assert full.startswith(MODEL_ROW[:-1])
    assert names == [full, STYLE_CONTROLLED_ROW, "baseline: longer answer wins", "baseline: always a"]
    assert ev.rows[0].n == ev.rows[1].n == ev.rows[2].n
    # the labels follow length too: the length covariate carries positive weight
    assert loaded.weights()["style_length"] > 0
    assert ev.ablation is not None and not ev.ablation_in_sample
    assert ev.calibration is not None and ev.calibration.brier_style_controlled is not None
    text = write_report(ev, loaded, tmp_path / "r.md")
    assert "| style_length | style covariate |" in text and "| conciseness | rubric |" in text
    assert "## Drop-one-rubric ablation" in text and "| conciseness | " in text
    assert "## Calibration" in text and "| baseline: always P(a) = 0.5 | 0.2500 |" in text
    assert "95% CIs: percentile bootstrap over training questions (60 replicates, seed 3" in text
    assert "C = 1, given" in text and "IN-SAMPLE" not in text
    assert (tmp_path / "r_calibration.png").stat().st_size > 1000 and (tmp_path / "r.png").stat().st_size > 1000
    ev_all = evaluate_model(loaded, table, split="all", n_boot=50)
    text_all = write_report(ev_all, loaded, tmp_path / "all.md")
    # 'all' holds the training pairs and the others: partly in-sample, with the others' metrics beside
    assert ev_all.ablation_in_sample and ev_all.sample.kind == "partly in-sample"
    assert f"| {full} (PARTLY IN-SAMPLE) |" in text_all
    assert "## Drop-one-rubric ablation — PARTLY IN-SAMPLE" in text_all
    assert "Model: PARTLY IN-SAMPLE: the model was fitted on this table's 'train' split" in text_all
    n_out = ev_all.sample.n_pairs - ev_all.sample.n_overlap
    assert n_out == len(ev_all.dm.y) - model.metadata_["train_pairs"]["n"] > 0
    assert f"### Metrics on the {n_out} pairs whose questions the model was not fitted on (held-out)" in text_all
    assert all(r.n == n_out for r in ev_all.outside_rows) and f"| {full} | {n_out} |" in text_all
    assert "Model: held out: the model was fitted on this table's 'train' split" in text
    assert "## Calibration — PARTLY IN-SAMPLE" in text_all
    ev_train = evaluate_model(loaded, table, split="train", n_boot=20, ablation=False)
    assert ev_train.sample.kind == "in-sample" and ev_train.outside_rows is None
    assert f"| {full} (IN-SAMPLE) |" in write_report(ev_train, loaded, tmp_path / "train.md")


def test_ablation_is_not_run_on_a_table_other_than_the_training_one(fitted):
    model, _ = fitted
    other = synthetic_table(seed=9, n_questions=30, id_prefix="other-")
    ev = evaluate_model(model, other, split="test", n_boot=50)
    assert ev.ablation is None and "not the set of pairs the model was fitted on" in ev.ablation_note


def test_a_model_evaluated_on_another_table_is_transferred_not_in_sample(table, fitted, tmp_path):
    """model.json records the table it was fitted on; --split all on another table is not IN-SAMPLE."""
    from rubric.preference import pairs_table_digest, sample_status

    model, _ = fitted
    model.to_json(tmp_path / "m.json")
    loaded = PreferenceModel.from_json(tmp_path / "m.json")
    rec = loaded.metadata_["fitted_on"]
    assert rec["pairs_sha256"] == pairs_table_digest(table) and rec["split"] == "train"
    other = synthetic_table(seed=9, n_questions=30, id_prefix="other-", question="Another question")
    ev = evaluate_model(loaded, other, split="all", n_boot=50, ablation=False)
    assert rec["n_questions"] == 42 and len(rec["question_hashes"]) == 42
    assert ev.sample.kind == "transferred" and not ev.sample.in_sample
    text = write_report(ev, loaded, tmp_path / "other.md")
    assert "IN-SAMPLE" not in text and "Model: transferred: the model was fitted on another pairs table" in text
    # the same pairs re-scored (other rubric values) are the same table: in-sample on its train split
    values = [c for c in table.column_names if c.endswith("_conciseness")]
    rescored = table.drop_columns(values)
    assert values and rescored.num_columns < table.num_columns
    assert sample_status(loaded, rescored, "train").kind == "in-sample"
    assert sample_status(loaded, table, "test").kind == "held-out"
    # a model fitted before question hashes were recorded: another table's overlap is unknown, and said so
    rec_only = {k: v for k, v in rec.items() if k not in ("question_hashes", "n_questions")}
    loaded.metadata_ = {**loaded.metadata_, "fitted_on": rec_only}
    unknown = sample_status(loaded, other, "all")
    assert unknown.kind == "unrecorded" and not unknown.in_sample and "overlap them is unknown" in unknown.note
    assert sample_status(loaded, table, "train").kind == "in-sample"
    # a model written before the record: guessed from the split, and said so
    loaded.metadata_ = {k: v for k, v in loaded.metadata_.items() if k != "fitted_on"}
    old = sample_status(loaded, other, "all")
    assert old.kind == "unrecorded" and old.in_sample and "guessed from the splits" in old.note


def test_another_table_that_shares_training_questions_is_not_transferred(table, fitted, tmp_path):
    """The mislabel the digest alone made: another table (other pair ids, other answers) whose questions
    include training questions was called "transferred". Question overlap decides now: every one of
    its pairs on a training question is in-sample, and a partly overlapping one gets both sets of rows."""
    model, _ = fitted
    model.to_json(tmp_path / "m.json")
    loaded = PreferenceModel.from_json(tmp_path / "m.json")
    same_questions = synthetic_table(seed=9, n_questions=30, id_prefix="other-")  # questions 0-29: all trained on
    ev = evaluate_model(loaded, same_questions, split="all", n_boot=50, ablation=False)
    assert ev.sample.kind == "in-sample" and ev.sample.n_overlap == len(ev.dm.y) == 180
    text = write_report(ev, loaded, tmp_path / "same.md")
    assert "transferred" not in text and "Model: IN-SAMPLE: the model was fitted on another pairs table" in text
    # 50 questions: 0-41 were trained on, 42-49 were not (and sit in this table's test split)
    wider = synthetic_table(seed=9, n_questions=50, id_prefix="other-")
    ev = evaluate_model(loaded, wider, split="test", n_boot=50, ablation=False)
    assert ev.sample.kind == "partly in-sample" and ev.sample.n_pairs == 90
    assert (ev.sample.n_overlap, ev.sample.n_overlap_questions, ev.sample.n_questions) == (42, 7, 15)
    text = write_report(ev, loaded, tmp_path / "wider.md")
    assert "Model: PARTLY IN-SAMPLE: the model was fitted on another pairs table" in text
    assert "42 of the 90 evaluated pairs (7 of 15 questions of another table's 'test' split)" in text
    assert "### Metrics on the 48 pairs whose questions the model was not fitted on (transferred)" in text
    full = model_row_names(loaded)[0]
    assert f"| {full} (PARTLY IN-SAMPLE) | 90 | 15 |" in text and f"| {full} | 48 | 8 |" in text


def test_style_control_changes_what_a_length_driven_model_predicts():
    t = synthetic_table(w_good=1.0, w_len=6.0, seed=2)
    model, _ = fit_model(t)
    dm = model_inputs(model, t, split="test")
    raw = model.predict_proba(dm.X)[:, 0]
    controlled = model.predict_proba(dm.X, style_controlled=True)[:, 0]
    # as fitted, P(a) follows the length difference; controlled, it does not
    length = dm.X[:, model.columns_.index("style_length")]
    assert np.corrcoef(raw, length)[0, 1] > 0.8
    assert abs(np.corrcoef(controlled, length)[0, 1]) < 0.3


def test_decorrelation_betas_are_fitted_saved_and_applied(tmp_path):
    t = synthetic_table(len_in_score=0.6, seed=4)
    model, dm = fit_model(t, decorrelate=True, style=False)
    betas = model.length_betas
    assert set(betas) == {"conciseness", "grammar"} and betas["conciseness"] > 0
    raw = model_inputs(PreferenceModel(feature_names=dm.features).fit(dm.X, dm.y), t, split="train")
    j = dm.features.index("conciseness")
    np.testing.assert_allclose(dm.X[:, j], raw.X[:, j] - betas["conciseness"] * (dm.n_words_a - dm.n_words_b))
    model.to_json(tmp_path / "m.json")
    loaded = PreferenceModel.from_json(tmp_path / "m.json")
    assert loaded.length_betas == pytest.approx(betas)
    test = model_inputs(loaded, t, split="test")
    np.testing.assert_allclose(loaded.predict_proba(test.X),
                               model.predict_proba(model_inputs(model, t, split="test").X))
    text = write_report(evaluate_model(loaded, t, n_boot=50), loaded, tmp_path / "r.md")
    assert "## Length decorrelation" in text and "| conciseness |" in text
