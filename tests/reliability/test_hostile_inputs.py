"""Ordinary mistakes and hostile inputs: each a reject naming the row, or one line and exit 2.

--labels as the README documents it, a --map column the file lacks, JSON nested 100k levels deep,
an integer over Python's digit limit, a NaN id, a null question. Files are built here; no model loads
(the score runs use the cheap conciseness rubric).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rubric.errors import ConfigError, InputError
from rubric.readers import TABLE_FIELDS, parse_label_values, read_graded, read_lfqa_hp, read_table
from tests.reliability.test_cli_errors import one_error_line
from workers.cli import main

DEEP = "[" * 100_000 + "]" * 100_000
ROW = {"question_text": "Why is the sky blue?", "answer_1": "Rayleigh scattering of sunlight.",
       "answer_2": "Because it is.", "human_judgment": "answer_1"}
SCORE = ["--rubrics", "conciseness", "--quiet"]


def _lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _table(tmp_path: Path) -> Path:
    rows = [{"q": "Why?", "a": "Because of A.", "b": "B.", "lab": 1}, {"q": "How?", "a": "Like this.",
            "b": "Like that.", "lab": 0}, {"q": "What?", "a": "This thing.", "b": "That one.", "lab": 2}]
    return _lines(tmp_path / "f.jsonl", [json.dumps(r) for r in rows])


# --- --labels and --map ----------------------------------------------------------------------------

def test_readme_labels_example(tmp_path):
    src = _table(tmp_path)
    out = tmp_path / "o"
    rc = main(["score", str(src), "--format", "jsonl", "--map", "question=q,answer_a=a,answer_b=b,label=lab",
               "--labels", "1=a,2=b,0=tie", "--out", str(out), *SCORE])
    assert rc == 0
    assert pq.read_table(out / "pairs.parquet").column("label").to_pylist() == ["a", "tie", "b"]


def test_labels_parse_like_the_help_says():
    assert parse_label_values("1=a, 2=b ,0=tie,Yes=a") == {"1": "a", "2": "b", "0": "tie", "yes": "a"}
    for bad, words in [("1=a,2=c", "one of a, b, tie"), ("1", "VALUE=LABEL"), ("1=a,1=b", "twice"), (",", "empty")]:
        with pytest.raises(ConfigError, match=words):
            parse_label_values(bad)


def test_bad_labels_is_one_line(tmp_path, capsys):
    src = _table(tmp_path)
    rc = main(["score", str(src), "--format", "jsonl", "--map", "question=q,answer_a=a,answer_b=b,label=lab",
               "--labels", "1=first", "--out", str(tmp_path / "o"), *SCORE])
    one_error_line(capsys, rc, "--labels", "1=first")


@pytest.mark.parametrize("field", TABLE_FIELDS)
@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_map_naming_an_absent_column_is_refused_for_every_field(tmp_path, field, kind):
    rows = [{"q": "Why?", "a": "Because of A.", "b": "B."}]
    if kind == "jsonl":
        src = _lines(tmp_path / "t.jsonl", [json.dumps(r) for r in rows])
    elif kind == "csv":
        src = _lines(tmp_path / "t.csv", ["q,a,b", "Why?,Because of A.,B."])
    else:
        src = tmp_path / "t.parquet"
        pq.write_table(pa.Table.from_pylist(rows), src)
    mapping = {"question": "q", "answer_a": "a", "answer_b": "b", field: "nosuch"}
    with pytest.raises(InputError, match=rf"no column\(s\) named by the mapping \(--map\): {field}=nosuch"):
        read_table(src, mapping, fmt=kind)


def test_mistyped_label_column_through_the_cli(tmp_path, capsys):
    src = _table(tmp_path)
    out = tmp_path / "o"
    rc = main(["score", str(src), "--format", "jsonl", "--map", "question=q,answer_a=a,answer_b=b,label=nolabel",
               "--out", str(out), *SCORE])
    line = one_error_line(capsys, rc, "label=nolabel", str(src))
    assert "'lab'" in line  # the file's columns are listed
    assert rc == 2 and not (out / "pairs.parquet").exists()


# --- parser failures ----------------------------------------------------------------------------------

def test_deeply_nested_jsonl_row_is_a_reject_naming_the_row(tmp_path):
    src = _lines(tmp_path / "hp.jsonl", [json.dumps({**ROW, "id": "ok"}), DEEP, json.dumps({**ROW, "id": "ok2"})])
    res = read_lfqa_hp(src)
    assert [p.pair_id for p in res.pairs] == ["ok", "ok2"]
    (rej,) = res.rejects
    assert rej.row == 1 and rej.reason.startswith("row 1: line 2 is not valid JSON") and "nested too deeply" in \
        rej.reason


def test_huge_integer_in_a_row_is_a_reject(tmp_path):
    src = _lines(tmp_path / "hp.jsonl", [json.dumps({**ROW, "id": "ok"}), '{"id": ' + "9" * 5000 + "}"])
    res = read_lfqa_hp(src)
    assert len(res.pairs) == 1 and "cannot be parsed" in res.rejects[0].reason


@pytest.mark.parametrize("fmt, name", [("lfqa-hp", "deep.json"), ("lfqa-eval", "deep.json"), ("graded", "deep.json")])
def test_deeply_nested_file_is_one_line(tmp_path, capsys, fmt, name):
    src = tmp_path / name
    src.write_text(DEEP if fmt != "graded" else '{"Why?": ' + DEEP + "}")
    out = tmp_path / "o"
    rc = main(["score", str(src), "--format", fmt, "--out", str(out), *SCORE])
    line = one_error_line(capsys, rc, str(src))
    assert rc == 2 and "nested too deeply" in line
    assert not out.exists() or not any(out.rglob("*.parquet"))


def test_deeply_nested_graded_file_read_directly(tmp_path):
    src = tmp_path / "g.json"
    src.write_text('{"Why?": ' + DEEP + "}")
    with pytest.raises(InputError, match="nested too deeply"):
        read_graded(src)


def test_deeply_nested_linkage_file(tmp_path):
    from rubric.linkage_data import read_linkage

    src = tmp_path / "g.json"
    src.write_text(DEEP)
    with pytest.raises(InputError, match="nested too deeply"):
        read_linkage(src)


# --- the smaller ones ------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_id_is_a_reject_not_pair_id_nan(tmp_path, value):
    src = _lines(tmp_path / "hp.jsonl", [json.dumps({**ROW, "id": "ok"}),
                                         json.dumps(ROW)[:-1] + f', "id": {value}}}'])
    res = read_lfqa_hp(src)
    assert [p.pair_id for p in res.pairs] == ["ok"]
    (rej,) = res.rejects
    assert rej.field == "id" and "is not an id" in rej.reason and rej.row == 1
    assert all(p.pair_id.lower() not in ("nan", "inf", "-inf") for p in res.pairs)


def test_null_question_is_reported_as_null_not_missing(tmp_path):
    src = _lines(tmp_path / "hp.jsonl", [json.dumps({**ROW, "question_text": None, "id": "x"}),
                                         json.dumps({k: v for k, v in ROW.items() if k != "question_text"})])
    res = read_lfqa_hp(src)
    null, missing = res.rejects
    assert "field 'question_text' is null; expected a string" in null.reason
    assert "missing field 'question_text'" in missing.reason
