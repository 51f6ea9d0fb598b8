"""One large input read in blocks: the same tables, rejects and ids as the file read whole; resume
per block; an answer shared by blocks scored once; Hugging Face datasets as input (built and saved
here, no network).

Scorers are the deterministic length fake of tests/reliability/test_job.py.
"""

import json
import shutil
from functools import partial

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import workers.storage.shards as shards
from rubric.io import plan_blocks, read_block, read_input
from tests.reliability.test_job import SPEC, LengthScorer
from rubric.config import ScoringConfig
from workers.jobs.score import run_job


def _records(n=60):
    out = []
    for i in range(n):
        r = {"question_text": f"What is thing number {i % 9}?", "answer_1": f"An answer about thing {i % 9}, take {i % 4}.",
             "answer_2": f"Another answer, variant {i % 6}.", "human_judgment": ("answer_1", "answer_2", "tie")[i % 3],
             "pair_id": None}  # null: the default id "{stem}:row{N}" (every record has the column)
        if i % 11 == 3:
            r["answer_2"] = ""  # a row reject
        if i in (5, 41):
            r["pair_id"] = "repeated"  # the second one sits in another block: rejected as inside one file
        out.append(r)
    return out


def _parquet(path, recs):
    pq.write_table(pa.Table.from_pylist(recs), path, row_group_size=5)
    return path


def _jsonl(path, recs):
    lines = []
    for i, r in enumerate(recs):
        lines.append(json.dumps(r))
        if i % 8 == 0:
            lines.append("  ")  # blank lines are not rows, but they count as lines in messages
        if i % 13 == 0:
            lines.append("{broken")
    path.write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


SMALL = partial(plan_blocks, block_rows=12, block_bytes=400)


def _job(path, out, monkeypatch, *, blocks: bool, scorer=None, fmt="lfqa-hp", options=None):
    if blocks:
        monkeypatch.setattr(shards, "plan_blocks", SMALL)
    else:
        monkeypatch.setattr(shards, "plan_blocks", lambda *a, **k: None)
    scorer = scorer or LengthScorer()
    m = run_job(path, fmt, [SPEC], out, config=ScoringConfig(batch_size=4), progress=False,
                reader_options=options, scorers=[scorer])
    return m, scorer


def _tables(out):
    return (pq.read_table(out / "answers.parquet"), pq.read_table(out / "pairs.parquet"),
            (out / "rejects.jsonl").read_text(encoding="utf-8"))


@pytest.mark.parametrize("make", [_parquet, _jsonl], ids=["parquet-row-groups", "jsonl-byte-ranges"])
def test_blocks_give_the_tables_of_the_file_read_whole(tmp_path, monkeypatch, make):
    src = make(tmp_path / ("in.parquet" if make is _parquet else "in.jsonl"), _records())
    assert len(SMALL(src, "lfqa-hp")) > 3
    whole, _ = _job(src, tmp_path / "whole", monkeypatch, blocks=False)
    blocked, _ = _job(src, tmp_path / "blocked", monkeypatch, blocks=True)
    a1, p1, r1 = _tables(tmp_path / "whole")
    a2, p2, r2 = _tables(tmp_path / "blocked")
    assert a1.equals(a2) and p1.equals(p2)
    assert r1 == r2 and "duplicate pair_id 'repeated' (first seen at row " in r2
    assert p2.column("pair_id").to_pylist()[0] == "in:row0"
    assert whole["counts"] == blocked["counts"]
    c = blocked["counts"]
    assert c["rows_in"] == c["pairs"] + c["rejected"]
    assert blocked["inputs"][0]["blocks"] > 3 and "blocks" not in whole["inputs"][0]


def test_block_reads_match_a_whole_read_row_for_row(tmp_path):
    src = _jsonl(tmp_path / "x.jsonl", _records(40))
    whole = read_input(src, "lfqa-hp")
    parts = [read_block(src, "lfqa-hp", b) for b in SMALL(src, "lfqa-hp")]
    assert sum(r.rows_in for r in parts) == whole.rows_in
    got = [p for r in parts for p in r.pairs if p.pair_id != "repeated"]
    assert got == [p for p in whole.pairs if p.pair_id != "repeated"]
    assert [j.reason for r in parts for j in r.rejects] == [j.reason for j in whole.rejects]


def test_shared_answers_are_scored_once_and_resume_is_per_block(tmp_path, monkeypatch):
    src = _parquet(tmp_path / "in.parquet", _records())
    m, scorer = _job(src, tmp_path / "out", monkeypatch, blocks=True)
    # every unique answer of the job once, though most blocks repeat the same answers
    assert scorer.scored == m["counts"]["unique_answers"] == m["job"]["answers_scored_now"]
    stores = sorted(p.name for p in (tmp_path / "out" / "scores").iterdir())
    assert len(stores) > 3 and all(s.startswith("in@") for s in stores)
    # one block's store lost: only that block is scored again
    shutil.rmtree(tmp_path / "out" / "scores" / stores[2])
    m2, scorer2 = _job(src, tmp_path / "out", monkeypatch, blocks=True)
    assert 0 < scorer2.scored < scorer.scored
    assert m2["counts"] == m["counts"]
    # a changed input never reuses scores: every block is re-scored
    recs = _records()
    recs[50]["answer_1"] = "A brand new answer about something else."
    _parquet(src, recs)
    m3, scorer3 = _job(src, tmp_path / "out", monkeypatch, blocks=True)
    assert scorer3.scored == m3["counts"]["unique_answers"]
    assert "content changed" in m3["inputs"][0]["rescored_because"]


def test_hf_save_to_disk_and_parquet_export(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    recs = _records()
    ds = datasets.Dataset.from_list(recs)
    saved = tmp_path / "lfqa-mini"
    datasets.DatasetDict({"train": ds, "test": datasets.Dataset.from_list(recs[:10])}).save_to_disk(str(saved))
    export = tmp_path / "lfqa-mini-export" / "default" / "train"
    export.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(recs[:30]), export / "0000.parquet", row_group_size=7)
    pq.write_table(pa.Table.from_pylist(recs[30:]), export / "0001.parquet", row_group_size=7)
    ref = _parquet(tmp_path / "lfqa-mini.parquet", recs)

    _job(ref, tmp_path / "ref", monkeypatch, blocks=False)
    m1, _ = _job(saved, tmp_path / "hf", monkeypatch, blocks=True, fmt="hf")
    a0, p0, r0 = _tables(tmp_path / "ref")
    a1, p1, r1 = _tables(tmp_path / "hf")
    assert a0.equals(a1) and p0.equals(p1)  # the same ids, "lfqa-mini:row{N}", and the same tables
    assert [json.loads(x)["reason"] for x in r0.splitlines()] == [json.loads(x)["reason"] for x in r1.splitlines()]
    assert m1["inputs"][0]["blocks"] > 3

    m2, _ = _job(tmp_path / "lfqa-mini-export", tmp_path / "hf2", monkeypatch, blocks=True, fmt="hf")
    assert m2["counts"]["pairs"] == m1["counts"]["pairs"]
    _a2, p2, _ = _tables(tmp_path / "hf2")
    assert p2.column("pair_id").to_pylist()[-1] == "lfqa-mini-export:row59"

    test_split = read_input(saved, "hf", split="test")
    assert test_split.rows_in == 10
    with pytest.raises(Exception, match="no split 'validation'"):
        read_input(saved, "hf", split="validation")
