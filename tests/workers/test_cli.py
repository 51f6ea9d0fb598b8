"""The command line end to end on the bundled sample, with the CPU rubrics (fast), and its error exits."""

import json
from importlib import resources

import pyarrow.parquet as pq
import pytest

from workers.cli import main

SAMPLE = str(resources.files("rubric") / "data" / "sample_pairs.jsonl")


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    out = tmp_path_factory.mktemp("scored")
    assert main(["score", SAMPLE, "--format", "lfqa-hp", "--rubrics", "conciseness,grammar",
                 "--out", str(out), "--quiet"]) == 0
    return out


def test_score_writes_tables_and_accounts_for_every_row(scored):
    manifest = json.loads((scored / "manifest.json").read_text())
    c = manifest["counts"]
    rejects = (scored / "rejects.jsonl").read_text().splitlines()
    pairs = pq.read_table(scored / "pairs.parquet")
    answers = pq.read_table(scored / "answers.parquet")
    assert c["rows_in"] == pairs.num_rows + len(rejects) == 33
    assert c["unique_answers"] == answers.num_rows < 2 * pairs.num_rows  # shared answers scored once
    assert manifest["rubrics"]["grammar"]["rubric_version"] == "grammar.harper.v1"
    assert set(pairs.column("split").to_pylist()) <= {"train", "dev", "test"}
    assert all(1.0 <= v <= 5.0 for v in answers.column("conciseness").to_pylist())


def test_fit_evaluate_export(scored, tmp_path, capsys):
    model = tmp_path / "m.json"
    assert main(["fit", str(scored), "--out", str(model)]) == 0
    # Harper finds no grammar error in the sample: a constant rubric is left out, with its reason
    assert json.loads(model.read_text())["features"] == ["conciseness"]
    report = tmp_path / "r.md"
    assert main(["evaluate", str(scored), "--model", str(model), "--split", "all", "--report", str(report),
                 "--n-boot", "50"]) == 0
    text = report.read_text()
    assert "baseline: longer answer wins" in text and "baseline: always a" in text
    # the bundled sample's labels were written by the project, and the report says so beside its source
    assert "lfqa-rubric-sample (" in text and "not human preference data" in text
    assert (tmp_path / "r.png").stat().st_size > 1000
    for ext in ("csv", "jsonl", "parquet"):
        assert main(["export", str(scored), "--to", str(tmp_path / f"p.{ext}")]) == 0
    assert len((tmp_path / "p.jsonl").read_text().splitlines()) == 30


@pytest.mark.parametrize("argv,msg", [
    (["score", "/nonexistent.jsonl", "--format", "lfqa-hp", "--out", "X"], "does not exist"),
    (["score", SAMPLE, "--format", "lfqa-hp", "--rubrics", "beauty", "--out", "X"], "unknown rubric 'beauty'"),
    (["fit", "/nonexistent-dir", "--out", "m.json"], "not found"),
    (["export", "/nonexistent-dir", "--to", "x.csv"], "not found"),
])
def test_clear_error_exits(argv, msg, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert msg in capsys.readouterr().err


def test_unknown_format_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["score", SAMPLE, "--format", "yaml", "--out", "X"])
    assert e.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_export_to_unknown_suffix(scored, tmp_path, capsys):
    assert main(["export", str(scored), "--to", str(tmp_path / "x.xlsx")]) == 2
    assert "use .parquet, .csv or .jsonl" in capsys.readouterr().err


def test_fitted_rescale_uses_train_bounds(tmp_path):
    from rubric.scoring.rescale import FittedMinMax

    out = tmp_path / "o"
    assert main(["score", SAMPLE, "--format", "lfqa-hp", "--rubrics", "conciseness", "--rescale", "fitted",
                 "--out", str(out), "--quiet"]) == 0
    bounds = FittedMinMax.from_json(out / "rescale.json").bounds["conciseness"]
    pairs = pq.read_table(out / "pairs.parquet").to_pylist()
    answers = {r["answer_id"]: r for r in pq.read_table(out / "answers.parquet").to_pylist()}
    train = {p[k] for p in pairs if p["split"] == "train" for k in ("answer_id_a", "answer_id_b")}
    raws = [answers[a]["conciseness_raw"] for a in train]
    assert bounds == (min(raws), max(raws))
    lo = next(a for a in train if answers[a]["conciseness_raw"] == bounds[0])
    assert answers[lo]["conciseness"] == 1.0
    assert json.loads((out / "manifest.json").read_text())["rescale"] == "fitted"


def _graded_file(path):
    data = {f"question number {q}?": [{"passage": f"Answer {g} to question {q}, with some words.", "label": g}
                                      for g in (0, 1, 2)] for q in range(3)}
    path.write_text(json.dumps(data))
    return str(path)


def test_score_max_questions_reads_a_slice_and_is_part_of_the_score_key(tmp_path):
    data, out = _graded_file(tmp_path / "g.json"), str(tmp_path / "o")
    base = ["score", data, "--format", "graded", "--rubrics", "conciseness", "--out", out, "--quiet"]

    def run(*extra):
        assert main([*base, *extra]) == 0
        manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
        pairs = pq.read_table(tmp_path / "o" / "pairs.parquet").to_pydict()
        return manifest["inputs"][0], manifest["counts"]["rows_in"], sorted(set(pairs["question"]))

    inp, rows_in, questions = run("--max-questions", "2")
    assert inp["options"]["max_questions"] == 2 and inp["status"] == "scored"
    assert rows_in == 6 and questions == ["question number 0?", "question number 1?"]
    assert run("--max-questions", "2")[0]["status"] == "reused"
    # without the cap the key differs: the three questions are scored, not the capped store reused
    inp, rows_in, questions = run()
    assert "max_questions" not in inp["options"] and inp["status"] == "scored"
    assert rows_in == 9 and len(questions) == 3


def test_score_max_questions_needs_graded_lists(capsys, tmp_path):
    assert main(["score", SAMPLE, "--format", "lfqa-hp", "--max-questions", "2", "--out", str(tmp_path / "o")]) == 2
    assert "--max-questions reads a slice of graded lists (--format graded), not 'lfqa-hp'" in capsys.readouterr().err
