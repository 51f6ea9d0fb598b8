"""A rubric missing on one answer of a pair is read by the model, never a reason to lose the pair (issue 56)."""

import json
import math

import numpy as np
import pytest

from rubric.errors import ConfigError, InputError
from rubric.io.records import PairRecord, explode
from rubric.preference import PreferenceModel, evaluate_model, fit_model, predict_pairs
from rubric.scoring.scorer import Provenance, Score
from rubric.scoring.specs import RUBRICS
from rubric.tables import MissingRule, design_matrix, fit_missing_rule, indicator_column
from rubric.tables.features import answers_table, pairs_table

COH = RUBRICS.get("coherence.minilm.v7")
CONC = RUBRICS.get("conciseness.lexical_density.v1")
PROV = {"coherence": Provenance("coherence.minilm.v7", "cpu_text", "minilm", "r"),
        "conciseness": Provenance("conciseness.lexical_density.v1", "spacy", "en_core_web_sm", "3.8.0")}


@pytest.mark.parametrize("mode, a, b, d, expected", [
    ("mean", 4.0, 2.0, 2.0, (2.0, 0)),          # both there: the table's difference
    ("mean", None, 2.0, None, (3.0 - 2.0, 1)),  # a missing: a reads as the mean 3.0, indicator +1
    ("mean", 4.0, None, None, (4.0 - 3.0, -1)),
    ("mean", None, None, 0.0, (0.0, 0)),        # both abstained: nothing to compare
    ("mean", None, None, None, (0.0, 0)),       # both failed: the same
    ("zero", None, 2.0, None, (0.0, 1)),
    ("zero", float("nan"), 2.0, None, (0.0, 1)),
    ("drop", None, 2.0, None, (None, 0)),       # the pair leaves
    ("drop", None, None, 0.0, (0.0, 0)),        # both abstained stays a difference of 0, as before
    ("drop", None, None, None, (None, 0)),
])
def test_a_missing_side_is_read_by_the_rule(mode, a, b, d, expected):
    rule = MissingRule(mode=mode, fill={"coherence": 3.0} if mode == "mean" else {})
    assert rule.difference("coherence", a, b, d) == expected


def test_rules_refuse_what_they_cannot_mean():
    with pytest.raises(ConfigError, match="one of mean, zero, drop"):
        MissingRule(mode="median")
    with pytest.raises(ConfigError, match="takes no fill values"):
        MissingRule(mode="zero", fill={"x": 1.0})
    with pytest.raises(ConfigError, match="finite numbers"):
        MissingRule(fill={"x": float("nan")})
    with pytest.raises(ConfigError, match="no indicator columns"):
        MissingRule(mode="drop", indicators=("x",))
    rule = MissingRule(fill={"coherence": 2.5}, indicators=("coherence",))
    assert MissingRule.from_dict(json.loads(json.dumps(rule.to_dict()))) == rule
    assert rule.columns == [indicator_column("coherence")] == ["missing_coherence"]


def _table(n_q=12, one_sentence_share=0.0, seed=0, split="train"):
    """Pairs of answers to ``n_q`` questions; coherence abstains on the answers that are one sentence. The answer
    preferred is the longer one and the more coherent one, so both rubrics carry signal."""
    rng = np.random.default_rng(seed)
    pairs, coh, conc, order = [], {}, {}, []
    for q in range(n_q):
        for k in range(4):
            long_ = f"Answer {q}-{k} explains it. It then gives a reason. And one more point."
            short = f"Answer {q}-{k} in one line." if rng.random() < one_sentence_share else \
                f"Answer {q}-{k} says little. It stops there."
            a, b, label = (long_, short, "a") if rng.random() < 0.5 else (short, long_, "b")
            if rng.random() < 0.15:  # some noise in the labels
                label = "b" if label == "a" else "a"
            pairs.append(PairRecord(f"q{q}p{k}", f"Question {q}?", a, b, label, source="t"))
            for text in (a, b):
                sentences = text.count(".")
                coh[text] = (Score.abstain("one sentence: no link between sentences to judge") if sentences == 1
                             else Score.ok(0.2 + 0.2 * sentences + 0.05 * rng.random()))
                conc[text] = Score.ok(0.3 + 0.4 * rng.random())
    items = explode(pairs)
    answers = answers_table(items, [COH, CONC], {"coherence": [coh[it.answer] for it in items],
                                                 "conciseness": [conc[it.answer] for it in items]}, PROV)
    return pairs_table(pairs, [split] * len(pairs), answers)


def test_every_pair_of_a_table_with_one_sentence_answers_gets_a_row():
    t = _table(one_sentence_share=0.8)
    dropped = design_matrix(t, split="train", missing="drop", max_missing=1.0)
    read = design_matrix(t, split="train", missing="mean", max_missing=1.0)
    assert dropped.n_missing_rows > 0.5 * t.num_rows  # the old rule chose its own pairs
    assert read.n_missing_rows == 0 and len(read.y) == t.num_rows
    assert read.features == ["coherence", "conciseness"] and read.missing.indicators == ("coherence",)
    assert read.columns == ["coherence", "conciseness", "missing_coherence"]
    assert read.n_filled["coherence"] == dropped.n_missing_rows
    # the indicator says which side lacks the value, antisymmetric: +1 when only a lacks it
    a_gone = np.array([x is None for x in t.column("a_coherence").to_pylist()])
    b_gone = np.array([x is None for x in t.column("b_coherence").to_pylist()])
    np.testing.assert_array_equal(read.X[:, 2], a_gone.astype(float) - b_gone.astype(float))
    # the fill is the mean over the training answers that have a value
    scored = [x for x in set(t.column("a_coherence").to_pylist() + t.column("b_coherence").to_pylist())
              if x is not None]
    assert read.missing.fill["coherence"] == pytest.approx(np.mean(scored))


def test_zero_fill_reads_a_gap_as_no_difference():
    t = _table(one_sentence_share=0.8)
    dm = design_matrix(t, split="train", missing="zero", max_missing=1.0)
    gap = dm.X[:, 2] != 0
    assert gap.any() and np.all(dm.X[gap, 0] == 0.0) and dm.missing.fill == {}


def test_a_model_fitted_on_two_sentence_answers_predicts_every_pair_of_one_sentence_answers():
    """The issue's done-when, without a model to load: trained where coherence never abstains, applied where one
    answer of most pairs has one sentence."""
    train = _table(one_sentence_share=0.0, seed=1)
    test = _table(one_sentence_share=0.8, seed=2, split="test")
    model, dm = fit_model(train, split="train", style=False)
    assert model.missing_.mode == "mean" and model.missing_.indicators == ()  # no gap seen in training
    assert set(model.missing_.fill) == {"coherence", "conciseness"}
    preds = predict_pairs(model, test)
    assert preds.num_rows == test.num_rows
    assert all(p is not None for p in preds.column("p_a").to_pylist())
    assert preds.column("error").null_count == preds.num_rows
    filled = [m for m in preds.column("missing").to_pylist() if m]
    assert len(filled) > test.num_rows // 2 and all(m.startswith("coherence (") for m in filled)
    ev = evaluate_model(model, test, split="test", n_boot=50, ablation=False)
    assert len(ev.dm.y) == test.num_rows and ev.dm.n_missing_rows == 0
    assert all(r.n == test.num_rows for r in ev.rows)  # every system on every labelled pair


def test_the_indicator_is_fitted_saved_and_shown_in_the_contributions(tmp_path):
    t = _table(one_sentence_share=0.6, seed=3)
    model, dm = fit_model(t, split="train", style=False)
    assert model.columns_ == ["coherence", "conciseness", "missing_coherence"]
    # one-sentence answers are the short, dispreferred ones: a missing coherence on a's side counts against a
    assert model.weights()["missing_coherence"] < 0
    model.to_json(tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["missing"]["indicators"] == ["coherence"] and doc["missing"]["mode"] == "mean"
    again = PreferenceModel.from_json(tmp_path / "m.json")
    assert again.missing_ == model.missing_ and again.columns_ == model.columns_
    p1, p2 = predict_pairs(model, t), predict_pairs(again, t)
    np.testing.assert_allclose(p1.column("p_a").to_numpy(), p2.column("p_a").to_numpy(), rtol=1e-12)
    contrib = p1.column("contrib_missing_coherence").to_numpy()
    assert np.any(contrib != 0)
    total = sum(p1.column(f"contrib_{c}").to_numpy() for c in model.columns_) + p1.column("intercept").to_numpy()
    p_a = p1.column("p_a").to_numpy()
    np.testing.assert_allclose(total, np.log(p_a / (1 - p_a)), rtol=1e-9, atol=1e-9)
    # an edited fill value is damage the checksum sees
    doc["missing"]["fill"]["coherence"] += 1.0
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="checksum"):
        PreferenceModel.from_json(tmp_path / "bad.json")


def test_a_v3_model_reads_no_missing_value_and_says_why_a_pair_has_no_prediction(tmp_path):
    t = _table(one_sentence_share=0.6, seed=4)
    model, _ = fit_model(t, split="train", style=False, missing="drop")
    model.to_json(tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    doc["format"] = "lfqa-rubric.preference-model.v3"
    del doc["missing"], doc["checksum"]
    (tmp_path / "v3.json").write_text(json.dumps(doc))
    old = PreferenceModel.from_json(tmp_path / "v3.json")
    assert old.missing_.mode == "drop"
    preds = predict_pairs(old, t)
    errors = [e for e in preds.column("error").to_pylist() if e]
    assert errors and all("re-fit it" in e for e in errors)


def test_ablation_drops_a_rubric_with_its_indicator():
    t = _table(one_sentence_share=0.6, seed=5)
    model, dm = fit_model(t, split="train", style=False)
    from rubric.preference import drop_one_ablation

    rows = drop_one_ablation(model, dm.X, dm.y, dm.X, dm.y, dm.question_id, n_boot=20)
    assert [r.feature for r in rows] == ["coherence", "conciseness"]
    assert all(math.isfinite(r.accuracy_without) for r in rows)


def test_fit_missing_rule_refuses_an_unknown_mode_and_feature():
    t = _table()
    with pytest.raises(ConfigError, match="one of mean, zero, drop"):
        fit_missing_rule(t, ["coherence"], range(t.num_rows), "median")
    with pytest.raises(ConfigError, match="not in this table"):
        fit_missing_rule(t, ["relevance"], range(t.num_rows))
