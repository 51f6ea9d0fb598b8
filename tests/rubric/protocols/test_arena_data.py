"""RAG-QA Arena readers: LFRQA annotations, system answers, the join, with row-level rejects."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rubric.protocols.arena_data import (
    REFERENCE_SYSTEM,
    join_arena,
    read_arena_annotations,
    read_arena_answers,
    to_pair_records,
)
from rubric.errors import ConfigError, InputError

SHARED = Path(__file__).resolve().parents[4] / "shared" / "data" / "rag-qa-arena"


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _annotation(qid, question="What is X?", answer="X is a thing.") -> dict:
    return {"qid": qid, "question": question, "answer": answer, "citation_numbers": [[1]],
            "faithful_answer_w_citation": answer + " [1]", "gold_doc_ids": [7]}


def test_read_annotations_and_rejects(tmp_path):
    path = _jsonl(tmp_path / "annotations_science_with_citation.jsonl", [
        _annotation(1093),
        _annotation("science-search-test-1", answer="Answer two."),
        _annotation("science-search-test-1", answer="A repeat."),   # repeated qid
        {"qid": "q4", "question": "Why?"},                          # no answer
        _annotation(True),                                          # a bool is not an id
        _annotation(" "),                                           # empty id
        _annotation("q7", answer="42"),                             # no letters
        "{not json",
        [1, 2],
        '{"qid": "q10", "qid": "q11", "question": "Q?", "answer": "A."}',
    ])
    got = read_arena_annotations(path)
    assert [(q.qid, q.reference, q.domain, q.row) for q in got.questions] == [
        ("1093", "X is a thing.", "science", 0), ("science-search-test-1", "Answer two.", "science", 1)]
    assert got.rows_in == 10 and len(got.rejects) == 8
    by_row = {r.row: r for r in got.rejects}
    assert by_row[2].field == "qid" and "repeats row 1" in by_row[2].reason
    assert by_row[3].field == "answer" and by_row[3].reason == "row 3: missing field 'answer'"
    assert by_row[4].field == "qid" and "must be an integer or a string, got bool" in by_row[4].reason
    assert by_row[5].field == "qid" and "is empty" in by_row[5].reason
    assert by_row[6].field == "answer" and "no letters" in by_row[6].reason
    assert "not valid JSON" in by_row[7].reason
    assert "expected an object" in by_row[8].reason
    assert by_row[9].field == "qid" and "more than once" in by_row[9].reason
    assert all(r.source_file == str(path) for r in got.rejects)


def test_read_annotations_domain_and_file_errors(tmp_path):
    path = _jsonl(tmp_path / "lfrqa_slice.jsonl", [_annotation("a")])
    assert read_arena_annotations(path).questions[0].domain == ""
    assert read_arena_annotations(path, domain="fiqa").questions[0].domain == "fiqa"
    with pytest.raises(InputError, match="not found"):
        read_arena_annotations(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match="holds no records"):
        read_arena_annotations(tmp_path / "empty.jsonl")


def test_read_answers_with_a_mapping_and_labels(tmp_path):
    path = _jsonl(tmp_path / "gpt.jsonl", [
        {"id": 1093, "response": "Mine is longer.", "human": "Win"},
        {"id": "q2", "response": "Another.", "human": None},
        {"id": "q3", "response": "Third.", "human": "maybe"},   # unknown judgement
        {"id": "q2", "response": "Again.", "human": "tie"},     # repeated qid
        {"response": "No id."},
        {"id": "q6", "response": "", "human": "loss"},
        {"id": "q7", "response": "Sixth.", "human": " "},       # blank: no judgement
    ])
    got = read_arena_answers(path, "gpt", "qid=id,answer=response,label=human")
    assert [(a.qid, a.human, a.row) for a in got.answers] == [("1093", "a", 0), ("q2", None, 1), ("q7", None, 6)]
    assert got.rows_in == 7 and got.system == "gpt"
    by_row = {r.row: r for r in got.rejects}
    assert set(by_row) == {2, 3, 4, 5}
    assert by_row[2].field == "human" and "'label' (column 'human') has value 'maybe'" in by_row[2].reason
    assert by_row[3].field == "id" and "repeats row 1" in by_row[3].reason and by_row[3].pair_id == "gpt:q2"
    assert by_row[4].field == "id" and "missing field 'qid' (column 'id')" in by_row[4].reason
    assert by_row[5].field == "response" and "is empty" in by_row[5].reason


def test_read_answers_parquet_and_config_errors(tmp_path):
    path = tmp_path / "sys.parquet"
    pq.write_table(pa.table({"qid": ["a", "b"], "answer": ["Yes it is.", "No."], "judge": ["1", "0"]}), path)
    got = read_arena_answers(path, "sys", {"label": "judge"}, label_values={"1": "a", "0": "tie"})
    assert [(a.qid, a.answer, a.human) for a in got.answers] == [("a", "Yes it is.", "a"), ("b", "No.", "tie")]
    with pytest.raises(ConfigError, match="must not be 'lfrqa'"):
        read_arena_answers(path, REFERENCE_SYSTEM)
    with pytest.raises(ConfigError, match="unknown mapping field"):
        read_arena_answers(path, "sys", "qid=qid,question=q")
    with pytest.raises(ConfigError, match="needs a label column"):
        read_arena_answers(path, "sys", label_values={"1": "a"})
    with pytest.raises(ConfigError, match="must be one of a, b, tie"):
        read_arena_answers(path, "sys", {"label": "judge"}, label_values={"1": "win"})


def test_join_pairs_and_rejects_unknown_and_missing_qids(tmp_path):
    ann1 = read_arena_annotations(_jsonl(tmp_path / "annotations_fiqa_with_citation.jsonl",
                                         [_annotation(1, "Q1?", "R1."), _annotation(2, "Q2?", "R2.")]))
    ann2 = read_arena_annotations(_jsonl(tmp_path / "annotations_writing_with_citation.jsonl",
                                         [_annotation("w1", "W1?", "RW."), _annotation(2, "Again?", "Dup.")]))
    a = read_arena_answers(_jsonl(tmp_path / "a.jsonl", [
        {"qid": 2, "answer": "A2."}, {"qid": "1", "answer": "A1."}, {"qid": "zz", "answer": "Unknown."}]), "sys_a")
    b = read_arena_answers(_jsonl(tmp_path / "b.jsonl", [{"qid": "w1", "answer": "B-w1."}]), "sys_b")
    got = join_arena([ann1, ann2], [a, b])
    assert got.n_questions == 3
    assert [(p.pair_id, p.question, p.answer, p.reference, p.domain) for p in got.pairs] == [
        ("sys_a:2", "Q2?", "A2.", "R2.", "fiqa"), ("sys_a:1", "Q1?", "A1.", "R1.", "fiqa"),
        ("sys_b:w1", "W1?", "B-w1.", "RW.", "writing")]
    reasons = [r.reason for r in got.rejects]
    assert any("qid '2' is already in" in r and r.startswith("row 1:") for r in reasons)
    assert "row 2: qid 'zz' is not in the annotations" in reasons
    assert "system 'sys_a' has no answer for qid 'w1'" in reasons
    assert "system 'sys_b' has no answer for qid '1'" in reasons
    assert "system 'sys_b' has no answer for qid '2'" in reasons
    assert len(got.rejects) == 1 + 1 + 1 + 2
    with pytest.raises(ConfigError, match="more than one answers file"):
        join_arena(ann1, [a, a])


def test_to_pair_records(tmp_path):
    ann = read_arena_annotations(_jsonl(tmp_path / "annotations_fiqa_with_citation.jsonl", [_annotation(5)]))
    ans = read_arena_answers(_jsonl(tmp_path / "s.jsonl", [{"qid": 5, "answer": "Sys.", "label": "loss"}]), "s",
                             "qid=qid,answer=answer,label=label")
    (rec,) = to_pair_records(join_arena(ann, ans).pairs)
    assert (rec.pair_id, rec.answer_a, rec.answer_b, rec.label, rec.reference) == (
        "s:5", "Sys.", "X is a thing.", "b", "X is a thing.")
    assert (rec.source, rec.domain, rec.answer_type_a, rec.answer_type_b) == ("s", "fiqa", "s", REFERENCE_SYSTEM)


def test_shared_annotations_read_cleanly():
    path = SHARED / "annotations_science_with_citation.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not present")
    got = read_arena_annotations(path)
    assert got.rows_in == len(got.questions) + len(got.rejects) and len(got.questions) > 1000
    assert all(q.domain == "science" and "[1]" not in q.reference[-4:] for q in got.questions[:50])
