import math

import numpy as np
import pytest

from rubric.errors import ConfigError
from rubric.tables.features import answers_table, design_matrix, pairs_table, table_rubrics
from rubric.io.records import PairRecord, explode
from rubric.scoring.scorer import Provenance, Score
from rubric.scoring.specs import RUBRICS

CONC = RUBRICS.get("conciseness.lexical_density.v1")
FLU = RUBRICS.get("fluency.geval.v1")


def _setup(fail_flu_for=()):
    pairs = [
        PairRecord("p1", "Q1?", "long answer here with words", "short", "a", source="s", domain="d"),
        PairRecord("p2", "Q1?", "short", "other answer", "b", source="s", domain="d"),
        PairRecord("p3", "Q2?", "x y", "x y z", "tie", source="s", domain="d"),
    ]
    items = explode(pairs)
    assert len(items) == 5  # "short" to Q1 is shared by p1 and p2: scored once
    conc = [Score.ok(0.1 * (i + 1), n_tokens=i) for i in range(len(items))]
    flu = [Score.failed("no score token") if it.answer in fail_flu_for else Score.ok(2.0, confidence=0.6)
           for it in items]
    prov = {"conciseness": Provenance("conciseness.lexical_density.v1", "spacy", "en_core_web_sm", "3.8.0"),
            "fluency": Provenance("fluency.geval.v1", "vllm", "smollm2", "r", "abc123")}
    answers = answers_table(items, [CONC, FLU], {"conciseness": conc, "fluency": flu}, prov)
    return pairs, items, answers


def test_answers_table_columns_and_rescale():
    _, items, answers = _setup(fail_flu_for=("short",))
    assert table_rubrics(answers) == ["conciseness", "fluency"]
    row = answers.to_pylist()
    assert row[0]["conciseness_raw"] == pytest.approx(0.1) and row[0]["conciseness"] == pytest.approx(1.4)
    assert row[0]["fluency"] == pytest.approx(3.0)  # 1-3 scale: 2 -> 3 on 1-5
    short = next(r for r in row if r["answer"] == "short")
    assert short["fluency"] is None and short["fluency_error"] == "no score token"
    assert row[0]["fluency_template_hash"] == "abc123" and row[0]["conciseness_n_tokens"] == 0
    assert row[0]["fluency_confidence"] == pytest.approx(0.6)


def test_pairs_table_differences_and_order():
    pairs, _, answers = _setup()
    t = pairs_table(pairs, ["train", "train", "test"], answers)
    rows = t.to_pylist()
    assert [r["pair_id"] for r in rows] == ["p1", "p2", "p3"]
    for r in rows:
        assert r["d_conciseness"] == pytest.approx(r["a_conciseness"] - r["b_conciseness"])
    with pytest.raises(ConfigError):
        pairs_table(pairs, ["train"], answers)


def test_design_matrix_drops_missing_and_ties_and_excludes_empty_rubrics():
    pairs, _, answers = _setup(fail_flu_for=("short",))
    t = pairs_table(pairs, ["train", "train", "train"], answers)
    dm = design_matrix(t, split="train", max_missing=1.0)
    # p1, p2 miss fluency ("short" failed); p3 is a tie
    assert dm.n_ties_dropped == 1 and dm.n_missing_rows == 2 and len(dm.y) == 0
    dm3 = design_matrix(t, split="train", keep_ties=True, max_missing=1.0)
    assert list(dm3.y) == ["tie"] and dm3.features == ["conciseness", "fluency"]
    # a rubric with no values at all is excluded, not zero-filled
    _, items, _ = _setup()
    answers2 = answers_table(items, [CONC, FLU],
                             {"conciseness": [Score.ok(0.1 * i) for i in range(5)], "fluency": [Score.failed("x")] * 5},
                             {"conciseness": Provenance("c", "spacy"), "fluency": Provenance("f", "vllm")})
    dm2 = design_matrix(pairs_table(pairs, ["train"] * 3, answers2))
    assert dm2.features == ["conciseness"] and "fluency" in dm2.excluded
    assert np.all(np.isfinite(dm2.X)) and not any(math.isnan(x) for x in dm2.X.ravel())
    with pytest.raises(ConfigError, match="not in this table"):
        design_matrix(t, features=["coherence"])


def test_mostly_missing_rubric_is_excluded_not_shrinking_the_data():
    pairs, items, _ = _setup()
    # fluency fails on the 3 answers of p1 and p2 -> missing on 2 of 3 pairs: excluded; conciseness kept
    flu = [Score.failed("no evidence")] * 3 + [Score.ok(2.0)] * 2
    answers = answers_table(items, [CONC, FLU], {"conciseness": [Score.ok(0.1 * i) for i in range(5)], "fluency": flu},
                            {"conciseness": Provenance("c", "spacy"), "fluency": Provenance("f", "vllm")})
    dm = design_matrix(pairs_table(pairs, ["train"] * 3, answers), keep_ties=True)
    assert dm.features == ["conciseness"] and "missing for" in dm.excluded["fluency"]
    assert len(dm.y) == 3 and dm.n_missing_rows == 0


def test_tables_record_provenance_in_metadata_and_per_row():
    from rubric.tables.provenance import provenance_key, table_provenance

    pairs, _, answers = _setup()
    records = table_provenance(answers)
    assert records["fluency"] == {"rubric_version": "fluency.geval.v1", "backend": "vllm", "model_id": "smollm2",
                                  "model_revision": "r", "template_hash": "abc123",
                                  "rescale": {"kind": "declared", "lo": 1.0, "hi": 3.0}}
    t = pairs_table(pairs, ["train", "train", "test"], answers)
    assert table_provenance(t) == records
    assert t.column("prov_fluency").to_pylist() == [provenance_key(records["fluency"])] * 3
    assert provenance_key(records["fluency"]) != provenance_key(records["conciseness"])


def test_fitted_rescale_is_recorded_with_its_bounds():
    from rubric.tables.provenance import table_provenance
    from rubric.scoring.rescale import FittedMinMax

    _, items, _ = _setup()
    conc = [Score.ok(0.1 * (i + 1)) for i in range(len(items))]
    answers = answers_table(items, [CONC], {"conciseness": conc}, {"conciseness": Provenance("c", "spacy")},
                            fitted=FittedMinMax({"conciseness": (0.1, 0.5)}))
    assert table_provenance(answers)["conciseness"]["rescale"] == {"kind": "fitted", "lo": 0.1, "hi": 0.5}
    assert answers.column("conciseness").to_pylist()[-1] == pytest.approx(5.0)


def test_design_matrix_returns_question_ids_and_drops_constant_rubrics(caplog):
    pairs, items, _ = _setup()
    answers = answers_table(items, [CONC, FLU], {"conciseness": [Score.ok(0.1 * i) for i in range(5)],
                                                 "fluency": [Score.ok(2.0)] * 5},
                            {"conciseness": Provenance("c", "spacy"), "fluency": Provenance("f", "vllm")})
    t = pairs_table(pairs, ["train"] * 3, answers)
    with caplog.at_level("WARNING", logger="rubric.tables.features"):
        dm = design_matrix(t, split="train", keep_ties=True)
    assert dm.features == ["conciseness"]
    assert dm.excluded["fluency"] == "constant on the train split (every difference is 0): nothing to learn"
    assert "fluency" in caplog.text
    assert list(dm.question_id) == [p.question_id for p in pairs] and dm.question_id[0] == dm.question_id[1]
    # a model's features are used as given, constant or not
    assert design_matrix(t, split="train", features=["fluency"]).features == ["fluency"]


def test_concat_feature_tables_keeps_every_parts_provenance():
    from rubric.tables.features import concat_feature_tables
    from rubric.tables.provenance import table_provenance, table_provenance_index

    pairs, items, answers = _setup()
    other = answers_table(items, [CONC, FLU], {"conciseness": [Score.ok(0.5)] * 5, "fluency": [Score.ok(2.0)] * 5},
                          {"conciseness": Provenance("conciseness.lexical_density.v1", "spacy", "en_core_web_md"),
                           "fluency": Provenance("fluency.geval.v1", "vllm", "smollm2", "r", "abc123")})
    t1 = pairs_table(pairs, ["train"] * 3, answers)
    t2 = pairs_table(pairs, ["train"] * 3, other)
    both = concat_feature_tables([t1, t2])
    assert both.num_rows == 6 and table_provenance(both) == table_provenance(t1)
    models = {rec["model_id"] for rec in table_provenance_index(both).values()}
    assert {"en_core_web_sm", "en_core_web_md"} <= models
    assert len(set(both.column("prov_conciseness").to_pylist())) == 2
    assert len(set(both.column("prov_fluency").to_pylist())) == 1


def test_tables_count_markdown_and_record_the_style_covariates():
    from rubric.tables.features import table_style
    from rubric.tables.style import markdown_count

    pairs = [PairRecord("p1", "Q?", "# Head\n- one\n- **two**", "plain words here", "a"),
             PairRecord("p2", "Q?", "plain words here", "1. x", "b")]
    items = explode(pairs)
    answers = answers_table(items, [CONC], {"conciseness": [Score.ok(0.5)] * len(items)},
                            {"conciseness": Provenance("c", "spacy")})
    assert answers.column("n_md").to_pylist() == [markdown_count(it.answer) for it in items] == [4, 0, 1]
    t = pairs_table(pairs, ["train", "train"], answers)
    assert t.column("n_md_a").to_pylist() == [4, 0] and t.column("n_md_b").to_pylist() == [0, 1]
    assert table_style(t) == table_style(answers) == {"style_length": "style.length_normdiff.v1",
                                                      "style_markdown": "style.markdown_normdiff.v1"}
    assert table_style(t.replace_schema_metadata({})) == {}


def test_design_matrix_appends_style_covariates_last():
    pairs, _, answers = _setup()
    t = pairs_table(pairs, ["train"] * 3, answers)
    both = ["conciseness", "fluency"]  # fluency is constant here: named, so it is kept
    dm = design_matrix(t, keep_ties=True, style=True, features=both)
    assert dm.style_features == ("style_length", "style_markdown") and dm.columns == ["conciseness", "fluency",
                                                                                      "style_length", "style_markdown"]
    n_a, n_b = np.array(t.column("n_words_a").to_pylist()), np.array(t.column("n_words_b").to_pylist())
    np.testing.assert_allclose(dm.X[:, 2], (n_a - n_b) / (n_a + n_b))  # p1: (5 - 1) / 6
    assert dm.X[0, 2] == pytest.approx(4 / 6)
    np.testing.assert_allclose(dm.X[:, 3], 0.0)  # no markdown anywhere: 0, not nan
    plain = design_matrix(t, keep_ties=True, features=both)
    np.testing.assert_array_equal(dm.X[:, :2], plain.X)
    assert plain.style_features == () and plain.X.shape == (3, 2)
    only_md = design_matrix(t, keep_ties=True, style=["style_markdown"], features=both)
    assert only_md.columns == ["conciseness", "fluency", "style_markdown"]
    old = t.drop_columns(["n_md_a", "n_md_b"])
    with pytest.raises(ConfigError, match="--no-style"):
        design_matrix(old, style=True)


def test_unlabeled_pairs_are_dropped_and_counted_or_kept_for_prediction():
    pairs, items, answers = _setup()
    pairs = pairs + [PairRecord("p4", "Q2?", "x y", "x y z", None, source="s", domain="d")]
    t = pairs_table(pairs, ["train"] * 4, answers)
    assert t.column("label").to_pylist() == ["a", "b", "tie", None]
    dm = design_matrix(t, keep_ties=True)
    assert dm.n_unlabeled == 1 and list(dm.pair_id) == ["p1", "p2", "p3"]
    kept = design_matrix(t, keep_ties=True, keep_unlabeled=True)
    assert kept.n_unlabeled == 0 and list(kept.pair_id) == ["p1", "p2", "p3", "p4"] and kept.y[3] is None
    assert list(kept.row_index) == [0, 1, 2, 3]
    # a table of unlabeled pairs only keeps a string-typed label column
    only = pairs_table(pairs[3:], ["test"], answers)
    assert str(only.schema.field("label").type) == "string"
    assert design_matrix(only, keep_unlabeled=True, features=["conciseness"]).y.tolist() == [None]


def test_length_betas_residualise_the_differences():
    pairs, _, answers = _setup()
    t = pairs_table(pairs, ["train"] * 3, answers)
    both = ["conciseness", "fluency"]
    plain = design_matrix(t, keep_ties=True, features=both)
    dm = design_matrix(t, keep_ties=True, features=both, length_betas={"conciseness": 0.25})
    np.testing.assert_allclose(dm.X[:, 0], plain.X[:, 0] - 0.25 * (plain.n_words_a - plain.n_words_b))
    np.testing.assert_array_equal(dm.X[:, 1], plain.X[:, 1])
    with pytest.raises(ConfigError, match="not among the used rubrics"):
        design_matrix(t, keep_ties=True, features=["conciseness"], length_betas={"fluency": 1.0})


def test_fit_length_betas_decorrelates_train_answers_from_length():
    from rubric.tables.features import fit_length_betas
    from rubric.tables.style import spearman

    rng = np.random.default_rng(5)
    pairs = []
    for q in range(40):
        for k in range(4):
            a, b = (f"q{q} {k}{s} " + "w " * int(rng.integers(5, 400)) for s in "ab")
            pairs.append(PairRecord(f"{q}-{k}", f"Question {q}?", a, b, "a"))
    items = explode(pairs)
    raw = [min(1.0, max(0.0, 0.002 * len(it.answer.split()) + rng.normal(0, 0.15))) for it in items]
    answers = answers_table(items, [CONC], {"conciseness": [Score.ok(x) for x in raw]},
                            {"conciseness": Provenance("c", "spacy")})
    t = pairs_table(pairs, ["train" if i < 100 else "test" for i in range(len(pairs))], answers)
    betas = fit_length_betas(t, ["conciseness"], split="train")
    train = {}
    for row in t.to_pylist():
        if row["split"] == "train":
            for s in "ab":
                train[row[f"answer_id_{s}"]] = (row[f"{s}_conciseness"], row[f"n_words_{s}"])
    r, n = np.array(list(train.values())).T
    assert spearman(r, n) > 0.5 and betas["conciseness"] > 0
    assert abs(spearman(r - betas["conciseness"] * n, n)) < 0.01
    with pytest.raises(ConfigError, match="not in this table"):
        fit_length_betas(t, ["fluency"])
