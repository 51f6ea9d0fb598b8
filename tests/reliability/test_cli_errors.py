"""Every command turns a bad file or a damaged artefact into one line naming it and a non-zero exit.

The damaged files are built here: a valid Parquet table cut in half, a JSON file cut short, an
output folder without its tables. No model is loaded: each command fails before it would need one.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workers.cli import main

PREFIX = "lfqa-rubric: error:"


def _pairs_table() -> pa.Table:
    n = 40
    return pa.table({
        "pair_id": [f"p{i}" for i in range(n)], "question_id": [f"q{i // 2}" for i in range(n)],
        "split": ["train"] * n, "label": ["a" if i % 2 else "b" for i in range(n)],
        "conciseness_a": [0.5 + i / 100 for i in range(n)], "conciseness_b": [0.5 - i / 100 for i in range(n)],
    })


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.fixture()
def damaged_out(tmp_path) -> Path:
    """An output folder whose pairs.parquet was cut in half (a copy interrupted, a full disk)."""
    out = tmp_path / "out"
    out.mkdir()
    pq.write_table(_pairs_table(), out / "pairs.parquet")
    _truncate(out / "pairs.parquet")
    return out


@pytest.fixture()
def model_json(tmp_path) -> Path:
    from rubric.preference.model import PreferenceModel

    X = np.array([[0.1, 0.2], [-0.3, 0.1], [0.5, -0.2], [-0.1, -0.4]])
    m = PreferenceModel(C=1.0, ties="drop", feature_names=["conciseness", "grammar"]).fit(X, np.array(list("abab")))
    path = tmp_path / "model.json"
    m.to_json(path, trained_on="synthetic")
    return path


def one_error_line(capsys, rc: int, *names: str) -> str:
    """Assert a non-zero exit and exactly one stderr line, the error, naming every one of ``names``."""
    err = capsys.readouterr().err
    assert rc != 0
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(PREFIX), lines[0]
    for n in names:
        assert n in lines[0], (n, lines[0])
    return lines[0]


@pytest.mark.parametrize("argv", [
    ["fit", "{out}", "--out", "{tmp}/m.json"],
    ["evaluate", "{out}", "--model", "{model}", "--n-boot", "10"],
    ["export", "{out}", "--to", "{tmp}/x.csv"],
    ["export", "{out}", "--to", "{tmp}/x.parquet", "--table", "pairs"],
])
def test_truncated_pairs_table(capsys, tmp_path, damaged_out, model_json, argv):
    args = [a.format(out=damaged_out, tmp=tmp_path, model=model_json) for a in argv]
    line = one_error_line(capsys, main(args), str(damaged_out))
    assert "pairs" in line


@pytest.mark.parametrize("argv", [
    ["fit", "{out}", "--out", "{tmp}/m.json"],
    ["evaluate", "{out}", "--model", "{model}"],
    ["export", "{out}", "--to", "{tmp}/x.csv"],
    ["export", "{out}", "--to", "{tmp}/x.csv", "--table", "answers"],
])
def test_output_folder_without_tables(capsys, tmp_path, model_json, argv):
    out = tmp_path / "empty-out"
    out.mkdir()
    args = [a.format(out=out, tmp=tmp_path, model=model_json) for a in argv]
    line = one_error_line(capsys, main(args), str(out))
    assert "not found" in line and "lfqa-rubric score" in line


@pytest.mark.parametrize("table", ["pairs", "answers"])
def test_a_folder_standing_at_a_table_is_called_a_folder(capsys, tmp_path, table):
    """Issue 59: on f2de0e0 ``export`` called a folder standing at ``OUT/pairs.parquet`` "not found"."""
    out = tmp_path / "out"
    (out / f"{table}.parquet").mkdir(parents=True)
    line = one_error_line(capsys, main(["export", str(out), "--table", table, "--to", str(tmp_path / "x.csv")]),
                          str(out / f"{table}.parquet"))
    assert "is a folder, not a table" in line and "not found" not in line


def test_truncated_model_json(capsys, tmp_path, model_json):
    out = tmp_path / "out"
    out.mkdir()
    pq.write_table(_pairs_table(), out / "pairs.parquet")
    _truncate(model_json)
    line = one_error_line(capsys, main(["evaluate", str(out), "--model", str(model_json)]), str(model_json))
    assert "JSON" in line


def test_export_to_unknown_format(capsys, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    pq.write_table(_pairs_table(), out / "pairs.parquet")
    line = one_error_line(capsys, main(["export", str(out), "--to", str(tmp_path / "x.xlsx")]), "x.xlsx")
    assert ".parquet, .csv or .jsonl" in line
    assert not (tmp_path / "x.xlsx").exists()


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("command", ["score", "lfq"])
def test_map_with_an_unknown_field(capsys, tmp_path, command):
    data = _jsonl(tmp_path / "in.jsonl", [{"q": "Why?", "a": "x", "b": "y", "l": 1}])
    argv = [command, str(data), "--format", "jsonl", "--out", str(tmp_path / "o"),
            "--map", "question=q,answer_a=a,answer_b=b,label=l,colour=c"]
    line = one_error_line(capsys, main(argv), "colour")
    assert "question" in line  # the message lists the known fields


def test_table_format_without_a_map(capsys, tmp_path):
    data = _jsonl(tmp_path / "in.jsonl", [{"q": "Why?"}])
    line = one_error_line(capsys, main(["score", str(data), "--format", "jsonl", "--out", str(tmp_path / "o")]),
                          "--map")
    assert "jsonl" in line


@pytest.mark.parametrize("command", ["score", "lfq"])
def test_truncated_json_input(capsys, tmp_path, command):
    data = tmp_path / "hp.json"
    data.write_text('[{"question_text": "Why is the sky blue?", "answer_a": "Rayleigh scat')
    one_error_line(capsys, main([command, str(data), "--format", "lfqa-hp", "--out", str(tmp_path / "o")]),
                   str(data))
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").glob("*.parquet"))


def test_truncated_parquet_input(capsys, tmp_path):
    data = tmp_path / "in.parquet"
    pq.write_table(pa.table({"q": ["Why?"] * 200, "a": ["x"] * 200, "b": ["y"] * 200, "l": [1] * 200}), data)
    _truncate(data)
    argv = ["lfq", str(data), "--format", "parquet", "--out", str(tmp_path / "o.parquet"),
            "--map", "question=q,answer_a=a,answer_b=b,label=l"]
    one_error_line(capsys, main(argv), str(data))


def test_missing_input_file(capsys, tmp_path):
    missing = tmp_path / "nope.jsonl"
    one_error_line(capsys, main(["lfq", str(missing), "--format", "lfqa-hp", "--out", str(tmp_path / "o.parquet")]),
                   str(missing))


def test_missing_factuality_corpus_fails_at_start(capsys, tmp_path):
    data = _jsonl(tmp_path / "hp.jsonl", [{"question_text": "Why is the sky blue?", "answer_a": "Rayleigh.",
                                           "answer_b": "Because.", "label": "a"}])
    corpus = tmp_path / "no-corpus.jsonl"
    out = tmp_path / "o"
    argv = ["score", str(data), "--format", "lfqa-hp", "--out", str(out), "--rubrics", "factuality",
            "--factuality-corpus", str(corpus), "--llm-backend", "transformers"]
    one_error_line(capsys, main(argv), str(corpus))
    assert not out.exists() or not any(out.iterdir())  # nothing was read or written


def test_lfq_missing_engine_package_fails_before_reading(capsys, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a, **k: None if n == "vllm" else real(n, *a, **k))
    data = tmp_path / "hp.json"
    data.write_text("[{")  # damaged too: the missing package must be reported first
    line = one_error_line(capsys, main(["lfq", str(data), "--format", "lfqa-hp", "--out", str(tmp_path / "o.parquet"),
                                        "--llm-backend", "vllm"]), "vllm")
    assert "--llm-backend transformers" in line and str(data) not in line


def test_invalid_question_limit(capsys, tmp_path):
    data = _jsonl(tmp_path / "hp.jsonl", [{"question_text": "Why?", "answer_a": "x", "answer_b": "y", "label": "a"}])
    one_error_line(capsys, main(["lfq", str(data), "--format", "lfqa-hp", "--out", str(tmp_path / "o.parquet"),
                                 "--max-question-chars", "0"]), "max_question_chars")


def test_multi_line_message_becomes_one_line(capsys, tmp_path, monkeypatch):
    from dataclasses import replace

    import workers.cli as cli
    from rubric.errors import InputError

    def broken(args):
        raise InputError(f"{args.outdir} is damaged:\n- first problem\n- second problem\n")

    monkeypatch.setattr(cli, "COMMANDS", [replace(c, run=broken) if c.name == "export" else c for c in cli.COMMANDS])
    line = one_error_line(capsys, main(["export", str(tmp_path), "--to", "x.csv"]), str(tmp_path))
    assert line.endswith("is damaged:; - first problem; - second problem")


@pytest.mark.parametrize("command", ["score", "lfq"])
def test_question_limit_reaches_the_config_and_the_reader(command):
    from workers.cli import build_parser, reader_options, scoring_config

    args = build_parser().parse_args([command, "in.jsonl", "--format", "lfqa-hp", "--out", "o",
                                      "--max-question-chars", "7"])
    assert scoring_config(args).max_question_chars == 7
    assert reader_options(args)["max_question_chars"] == 7


def test_the_dispatch_is_the_one_place_a_run_over_budget_exits_3(capsys):
    """A command only runs its job; ``run_command`` (``lfqa-rubric`` and ``scripts/run_job.py``) maps a run over its
    failure budget to its lines and status 3, a project or OS error to one line and status 2, whatever the command."""
    from rubric.errors import FailureBudgetError, InputError
    from workers.cli import run_command

    def over():
        raise FailureBudgetError(["rubric conciseness: 2 of 3 rows failed (67%; --max-failed 5%)",
                                  "rubric grammar: 3 of 3 rows failed (100%; --max-failed 5%)"])

    def bad():
        raise InputError("no such file\nsecond line")

    assert run_command(over, "run_job") == 3
    assert capsys.readouterr().err.splitlines() == [
        "run_job: over budget: rubric conciseness: 2 of 3 rows failed (67%; --max-failed 5%)",
        "run_job: over budget: rubric grammar: 3 of 3 rows failed (100%; --max-failed 5%)"]
    assert run_command(bad, "lfqa-rubric") == 2
    assert capsys.readouterr().err == "lfqa-rubric: error: no such file; second line\n"
    assert run_command(lambda: 0, "lfqa-rubric") == 0
