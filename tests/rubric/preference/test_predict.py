"""``predict``: every pair, labeled or not, gets P(a), the style-controlled P(a), a label and the
per-feature contributions that add up to its logit; provenance is enforced as for ``evaluate``."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from rubric.errors import ProvenanceError
from rubric.preference.evaluate import fit_model, model_inputs
from rubric.preference.predict import PREDICTIONS_META_KEY, predict_pairs
from rubric.preference.model import PreferenceModel
from rubric.scoring.specs import RUBRICS
from tests.rubric.preference.test_selection import synthetic_table

LANGUAGETOOL = RUBRICS.get("grammar.languagetool.v1")


@pytest.fixture(scope="module")
def table():
    return synthetic_table(n_questions=30, w_len=2.0, unlabeled_every=5, seed=1)


@pytest.fixture(scope="module")
def model(table):
    return fit_model(table)[0]


def test_every_pair_is_predicted_labeled_or_not(table, model):
    out = predict_pairs(model, table)
    assert out.num_rows == table.num_rows
    assert out.column("pair_id").to_pylist() == table.column("pair_id").to_pylist()
    labels = out.column("label").to_pylist()
    assert labels == table.column("label").to_pylist() and labels.count(None) == table.num_rows // 5
    p_a = np.array(out.column("p_a").to_pylist())
    assert np.all((0 < p_a) & (p_a < 1)) and out.column("error").null_count == out.num_rows
    predicted = out.column("predicted").to_pylist()
    assert predicted == ["a" if p >= 0.5 else "b" for p in p_a]
    assert {"p_a_style_controlled", "contrib_style_length", "contrib_style_markdown"} <= set(out.column_names)
    # the labeled rows' P(a) is what the model gives the evaluated design matrix
    dm = model_inputs(model, table, split="test")
    by_id = dict(zip(out.column("pair_id").to_pylist(), p_a))
    np.testing.assert_allclose([by_id[p] for p in dm.pair_id], model.predict_proba(dm.X)[:, 0])
    meta = json.loads(out.schema.metadata[PREDICTIONS_META_KEY])
    assert meta["provenance_differences"] == [] and meta["n_unscored"] == 0


def test_contributions_plus_intercept_are_the_logit_of_p_a(table, model):
    out = predict_pairs(model, table, split="test").to_pydict()
    contrib = np.column_stack([out[f"contrib_{c}"] for c in model.columns_])
    p_a = np.array(out["p_a"])
    np.testing.assert_allclose(contrib.sum(axis=1) + np.array(out["intercept"]), np.log(p_a / (1 - p_a)),
                               rtol=1e-9, atol=1e-9)
    assert set(out["split"]) == {"test"}
    # style control moves P(a) towards what the rubrics alone say
    assert not np.allclose(out["p_a_style_controlled"], p_a)


def test_a_model_without_style_has_no_style_controlled_column(table):
    plain, _ = fit_model(table, style=False)
    out = predict_pairs(plain, table)
    assert "p_a_style_controlled" not in out.column_names
    assert [c for c in out.column_names if c.startswith("contrib_")] == ["contrib_conciseness", "contrib_grammar"]


def test_three_way_model_gives_every_class_probability(table):
    # the synthetic labels have no ties: make some
    t = table.set_column(table.schema.get_field_index("label"), "label",
                         [["tie" if i % 7 == 0 else x for i, x in enumerate(table.column("label").to_pylist())]])
    m, _ = fit_model(t, ties="three_way")
    out = predict_pairs(m, t)
    p = np.column_stack([out.column(c).to_numpy() for c in ("p_a", "p_b", "p_tie")])
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert not any(c.startswith("contrib_") for c in out.column_names)


def test_a_pair_with_a_missing_rubric_keeps_its_row_with_the_reason(table, model):
    import pyarrow as pa

    d = table.column("d_grammar").to_pylist()
    d[3] = None
    broken = table.set_column(table.schema.get_field_index("d_grammar"), pa.field("d_grammar", pa.float64()), [d])
    out = predict_pairs(model, broken).to_pydict()
    assert out["p_a"][3] is None and out["predicted"][3] is None and out["contrib_grammar"][3] is None
    assert out["error"][3] == "missing value for grammar"
    assert all(p is not None for i, p in enumerate(out["p_a"]) if i != 3)


def test_provenance_mismatch_is_refused_unless_allowed(table, model):
    other = synthetic_table(n_questions=30, w_len=2.0, seed=1, grammar=LANGUAGETOOL)
    with pytest.raises(ProvenanceError) as e:
        predict_pairs(model, other)
    assert "grammar: rubric_version is grammar.harper.v1 in the model, grammar.languagetool.v1 in the table" \
        in str(e.value) and "--allow-provenance-mismatch to predict anyway" in str(e.value)
    out = predict_pairs(model, other, allow_provenance_mismatch=True)
    meta = json.loads(out.schema.metadata[PREDICTIONS_META_KEY])
    assert any("grammar: backend is harper" in d for d in meta["provenance_differences"])
    # a table written before style was recorded cannot feed a style model's covariates
    no_style = table.replace_schema_metadata({k: v for k, v in table.schema.metadata.items()
                                              if k != b"lfqa_rubric.style"})
    with pytest.raises(ProvenanceError) as e:
        predict_pairs(model, no_style)
    assert "style_length: the table records no style covariates" in str(e.value) and "grammar" not in str(e.value)


def test_cli_predict(table, model, tmp_path, capsys):
    from workers.cli import main

    out_dir = tmp_path / "out"
    out_dir.mkdir()
    pq.write_table(table, out_dir / "pairs.parquet")
    model.to_json(tmp_path / "m.json")
    dest = tmp_path / "pred" / "p.parquet"
    assert main(["predict", str(out_dir), "--model", str(tmp_path / "m.json"), "--out", str(dest)]) == 0
    pred = pq.read_table(dest)
    assert pred.num_rows == table.num_rows and pred.column("label").null_count == table.num_rows // 5
    np.testing.assert_allclose(pred.column("p_a").to_numpy(), predict_pairs(model, table).column("p_a").to_numpy())
    assert main(["predict", str(out_dir), "--model", str(tmp_path / "m.json"), "--out", str(dest),
                 "--split", "test"]) == 0
    assert set(pq.read_table(dest).column("split").to_pylist()) == {"test"}
    other = synthetic_table(n_questions=30, seed=1, grammar=LANGUAGETOOL)
    pq.write_table(other, out_dir / "pairs.parquet")
    dest2 = tmp_path / "p2.parquet"
    argv = ["predict", str(out_dir), "--model", str(tmp_path / "m.json"), "--out", str(dest2)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "grammar: rubric_version is grammar.harper.v1 in the model" in err and not dest2.exists()
    assert main(argv + ["--allow-provenance-mismatch"]) == 0 and dest2.exists()
    loaded = PreferenceModel.from_json(tmp_path / "m.json")
    assert loaded.style_features_ == model.style_features_



def test_predictions_carry_the_models_training_questions_and_analyze_marks_them_by_overlap(table):
    """A model fitted on every pair predicts the test split: its predictions file says so, and `analyze` marks
    that system IN-SAMPLE on those pairs (issue 44: it was unmarked, accuracy 1.0); fitted on train, the
    test pairs are held out and unmarked."""
    from rubric.analysis import predictions_systems

    test_qids = [q for q, s in zip(table.column("question_id").to_pylist(), table.column("split").to_pylist())
                 if s == "test"]
    for split, mark in (("all", " (IN-SAMPLE)"), ("train", "")):
        m = fit_model(table, split=split)[0]
        out = predict_pairs(m, table, split="test")
        meta = json.loads(out.schema.metadata[PREDICTIONS_META_KEY])
        assert sorted(meta["fitted_on"]["question_hashes"]) == m.metadata_["fitted_on"]["question_hashes"]
        assert meta["sample"]["kind"] == ("in-sample" if split == "all" else "held-out")
        (system,) = predictions_systems(out, name="preds")
        assert system.trained_questions == frozenset(m.metadata_["fitted_on"]["question_hashes"])
        assert system.label_on(test_qids) == "preds" + mark
    bare = predictions_systems(out.replace_schema_metadata({}), name="other")[0]
    assert bare.trained_questions is None  # a predictions file we did not write: nothing recorded, nothing claimed
