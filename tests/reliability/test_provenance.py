"""Provenance is enforced: results made one way are never combined with results made another way
without saying so (fit on mixed tables, a model applied to a table made differently, model.json).

Tables are built here with the real table writers from hand-made scores; no model runs.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rubric.errors import ProvenanceError, RubricError
from rubric.preference.evaluate import evaluate_model, fit_model, write_report
from rubric.tables.features import answers_table, concat_feature_tables, pairs_table
from rubric.preference.model import PreferenceModel
from rubric.tables.provenance import (PROVENANCE_INDEX_META_KEY, PROVENANCE_META_KEY, provenance_differences,
                               provenance_key, rubric_provenance, table_provenance)
from rubric.io.records import PairRecord, explode
from rubric.scoring.rescale import FittedMinMax
from rubric.scoring.scorer import Provenance, Score
from rubric.scoring.specs import RUBRICS

CONC = RUBRICS.get("conciseness.lexical_density.v1")
HARPER = RUBRICS.get("grammar.harper.v1")
LANGUAGETOOL = RUBRICS.get("grammar.languagetool.v1")
N_QUESTIONS, PER_QUESTION = 12, 4


def _job(grammar=HARPER, fitted: FittedMinMax | None = None, seed: int = 0):
    """A pairs table of 48 pairs whose labels follow conciseness (plus noise), as a score job writes it."""
    rng = np.random.default_rng(seed)
    conc_raw, gram_raw, pairs = {}, {}, []
    for q in range(N_QUESTIONS):
        for k in range(PER_QUESTION):
            a, b = f"answer {k} to question {q}, first", f"answer {k} to question {q}, second"
            for text in (a, b):
                conc_raw[text] = float(rng.uniform(0.2, 0.8))
                gram_raw[text] = float(rng.uniform(1.0, 5.0))
            better_a = conc_raw[a] - conc_raw[b] + rng.normal(0, 0.1) > 0
            pairs.append(PairRecord(f"q{q}-{k}", f"Question {q}?", a, b, "a" if better_a else "b"))
    items = explode(pairs)
    scores = {"conciseness": [Score.ok(conc_raw[it.answer]) for it in items],
              "grammar": [Score.ok(gram_raw[it.answer]) for it in items]}
    provenance = {"conciseness": Provenance(CONC.version, "spacy", "en_core_web_sm", "3.8.0"),
                  "grammar": Provenance(grammar.version, grammar.backend)}
    answers = answers_table(items, [CONC, grammar], scores, provenance, fitted=fitted)
    splits = ["train" if i < 32 else "test" for i in range(len(pairs))]
    return pairs_table(pairs, splits, answers)


def test_fit_refuses_concatenated_tables_made_with_different_grammar_backends():
    mixed = concat_feature_tables([_job(HARPER), _job(LANGUAGETOOL, seed=1)])
    with pytest.raises(ProvenanceError) as e:
        fit_model(mixed, split="all")
    msg = str(e.value)
    assert "grammar: prov_grammar holds 2 different provenances" in msg
    assert "48 rows with" in msg and "rubric_version grammar.harper.v1" in msg
    assert "rubric_version grammar.languagetool.v1" in msg and "backend languagetool" in msg
    assert "they differ in rubric_version, backend" in msg
    assert "conciseness" not in msg  # made the same way in both parts


def test_fit_refuses_a_plain_arrow_concatenation_that_dropped_the_second_metadata():
    mixed = pa.concat_tables([_job(HARPER), _job(LANGUAGETOOL, seed=1)])
    with pytest.raises(ProvenanceError, match="grammar: prov_grammar holds 2 different provenances") as e:
        fit_model(mixed, split="all")
    assert "not described in this table's metadata" in str(e.value)


def test_fit_refuses_rows_whose_key_disagrees_with_the_metadata():
    harper = _job(HARPER)
    relabelled = _job(LANGUAGETOOL).replace_schema_metadata(harper.schema.metadata)
    with pytest.raises(ProvenanceError, match="grammar: all 48 rows have prov_grammar") as e:
        fit_model(relabelled)
    assert "but the table's metadata records" in str(e.value)


def test_fit_refuses_a_table_written_before_provenance():
    t = _job()
    old = {k: v for k, v in t.schema.metadata.items() if k not in (PROVENANCE_META_KEY, PROVENANCE_INDEX_META_KEY)}
    with pytest.raises(ProvenanceError, match="re-run score"):
        fit_model(t.replace_schema_metadata(old))


def test_model_json_round_trips_provenance_and_evaluates_on_a_table_made_the_same_way(tmp_path):
    t = _job()
    model, dm = fit_model(t)
    assert model.provenance == {f: table_provenance(t)[f] for f in dm.features}
    model.to_json(tmp_path / "m.json")
    loaded = PreferenceModel.from_json(tmp_path / "m.json")
    assert loaded.provenance == model.provenance
    assert loaded.provenance["grammar"]["rubric_version"] == "grammar.harper.v1"
    ev = evaluate_model(loaded, _job(seed=3), split="test", n_boot=50)
    assert ev.provenance_differences == [] and ev.rows[0].n == 16


def test_evaluate_refuses_a_declared_rescale_model_on_a_fitted_rescale_table():
    model, _ = fit_model(_job())
    fitted = _job(fitted=FittedMinMax({"conciseness": (0.25, 0.75)}))
    with pytest.raises(ProvenanceError) as e:
        evaluate_model(model, fitted, split="test", n_boot=50)
    msg = str(e.value)
    assert "conciseness: rescale.kind is declared in the model, fitted in the table" in msg
    assert "conciseness: rescale.lo is 0.0 in the model, 0.25 in the table" in msg
    assert "--allow-provenance-mismatch" in msg and "grammar" not in msg


def test_allowed_mismatch_proceeds_and_the_report_lists_every_difference(tmp_path, caplog):
    model, _ = fit_model(_job())
    other = _job(LANGUAGETOOL, fitted=FittedMinMax({"conciseness": (0.25, 0.75)}))
    with caplog.at_level("WARNING", logger="rubric.preference.evaluate"):
        ev = evaluate_model(model, other, split="test", n_boot=50, allow_provenance_mismatch=True)
    assert "provenance difference" in caplog.text
    assert "grammar: rubric_version is grammar.harper.v1 in the model, grammar.languagetool.v1 in the table" \
        in ev.provenance_differences
    assert "grammar: backend is harper in the model, languagetool in the table" in ev.provenance_differences
    text = write_report(ev, model, tmp_path / "r.md")
    section = text.split("## Provenance differences (allowed by --allow-provenance-mismatch)")[1].split("## ")[0]
    for d in ev.provenance_differences:
        assert f"- {d}" in section
    assert "conciseness: rescale.kind is declared in the model, fitted in the table" in section


def test_a_model_without_provenance_counts_as_a_difference(tmp_path):
    t = _job()
    model, _ = fit_model(t)
    model.to_json(tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    doc["format"] = "lfqa-rubric.preference-model.v1"
    del doc["provenance"]
    (tmp_path / "v1.json").write_text(json.dumps(doc))
    v1 = PreferenceModel.from_json(tmp_path / "v1.json")
    with pytest.raises(ProvenanceError, match="the model records no provenance"):
        evaluate_model(v1, t, n_boot=50)
    ev = evaluate_model(v1, t, n_boot=50, allow_provenance_mismatch=True)
    assert len(ev.provenance_differences) == 1


def test_provenance_differences_names_missing_rubrics_on_either_side():
    rec = rubric_provenance(Provenance(HARPER.version, "harper"), HARPER)
    lines = provenance_differences({"grammar": rec}, {"conciseness": rec}, ["grammar", "conciseness"])
    assert lines == ["grammar: the table records no provenance for it",
                     "conciseness: the model records no provenance for it"]
    assert provenance_differences({"grammar": rec}, {"grammar": dict(rec)}, ["grammar"]) == []
    # the key is stable across a JSON round trip (ints and floats alike)
    assert provenance_key(json.loads(json.dumps(rec))) == provenance_key({**rec, "rescale": {**rec["rescale"],
                                                                                           "lo": 1, "hi": 5}})


def test_cli_evaluate_with_a_mismatched_model_exits_non_zero(tmp_path, capsys):
    from workers.cli import main

    model, _ = fit_model(_job())
    model.to_json(tmp_path / "m.json")
    out = tmp_path / "out"
    out.mkdir()
    pq.write_table(_job(LANGUAGETOOL), out / "pairs.parquet")
    report = tmp_path / "r.md"
    argv = ["evaluate", str(out), "--model", str(tmp_path / "m.json"), "--split", "all", "--n-boot", "50",
            "--report", str(report)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "grammar: rubric_version is grammar.harper.v1 in the model, grammar.languagetool.v1 in the table" in err
    assert "grammar: backend is harper" in err and not report.exists()
    assert main(argv + ["--allow-provenance-mismatch"]) == 0
    assert "## Provenance differences (allowed by --allow-provenance-mismatch)" in report.read_text()


def test_cli_fit_on_mixed_shards_exits_non_zero(tmp_path, capsys):
    from workers.cli import main

    out = tmp_path / "out"
    out.mkdir()
    pq.write_table(pa.concat_tables([_job(HARPER), _job(LANGUAGETOOL, seed=1)]), out / "pairs.parquet")
    assert main(["fit", str(out), "--out", str(tmp_path / "m.json")]) == 2
    assert "grammar: prov_grammar holds 2 different provenances" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()
    assert issubclass(ProvenanceError, RubricError) and issubclass(ProvenanceError, ValueError)
