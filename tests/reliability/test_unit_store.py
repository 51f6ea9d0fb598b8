"""The store per unit over the job's index: how often a score is written, which score of an id the index keeps,
and a score made two ways refused.

How often the runner writes a score: once to its unit's store part, once to the job's index, no more. The store's
two writers are wrapped: the Parquet writer of a part (``pyarrow.parquet.write_table`` under
``OUT/scores/<unit>/``, the ids of each part counted) and the index's one writer (``ScoreIndex.put``: the ids
offered, and the rows SQLite really wrote, from its change count, since a row the index holds from an earlier
unit is not replaced). Two inputs share answers, so the second unit copies what the first scored.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rubric.errors import ConfigError, EngineError
from rubric.scoring import Provenance, Score
from tests.reliability.test_job import SPEC, LengthScorer, _records, _run, _write
from workers.runner import ScoreIndex
from workers.storage.codec import encode_score
from workers.storage.index import rank


class _Writes:
    def __init__(self, monkeypatch, out: Path) -> None:
        self.parts: dict[str, Counter] = {}  # unit -> id -> times written to one of its parts
        self.offered: Counter = Counter()  # id -> times offered to the index
        self.index_rows = 0  # rows the index really wrote
        real_write, real_put = pq.write_table, ScoreIndex.put
        scores = out / "scores"

        def write_table(table, where, *args, **kwargs):
            if isinstance(where, (str, Path)) and Path(where).parent.parent == scores:
                where = Path(where)
                self.parts.setdefault(where.parent.name, Counter()).update(table.column("answer_id").to_pylist())
            return real_write(table, where, *args, **kwargs)

        def put(index, ids, rows, **kwargs):
            before = index.db.total_changes
            real_put(index, ids, rows, **kwargs)
            self.offered.update(ids)
            self.index_rows += index.db.total_changes - before

        monkeypatch.setattr(pq, "write_table", write_table)
        monkeypatch.setattr(ScoreIndex, "put", put)

    def in_parts(self) -> Counter:
        return sum(self.parts.values(), Counter())


def test_a_score_is_written_to_its_part_and_the_index_once_each(tmp_path, monkeypatch):
    recs = _records()
    a = _write(tmp_path / "a.jsonl", recs[:6])
    b = _write(tmp_path / "b.jsonl", recs[3:10])  # three records (their answers) shared with a
    out = tmp_path / "out"
    writes = _Writes(monkeypatch, out)
    scorer = LengthScorer()
    m = _run([a, b], out, scorer)
    n = m["counts"]["unique_answers"]
    assert scorer.scored == n == m["job"]["answers_scored_now"]  # a shared answer is scored once
    in_a, in_b = set(writes.parts["a"]), set(writes.parts["b"])
    shared = in_a & in_b
    assert shared and len(in_a | in_b) == n
    # every score made: one part, one index row; a copy into the second unit: its part only
    assert all(c == 1 for c in writes.parts["a"].values()) and all(c == 1 for c in writes.parts["b"].values())
    assert writes.offered == Counter({i: 1 for i in in_a | in_b}) and writes.index_rows == n
    assert sum(writes.in_parts().values()) + writes.index_rows == 2 * n + len(shared)

    # a run that reuses both stores writes no part; each id's one row is the index's
    again = _Writes(monkeypatch, out)
    m2 = _run([a, b], out, LengthScorer())
    assert m2["job"]["answers_scored_now"] == 0 and not again.parts
    assert again.index_rows == n  # the shared ids offered by both units, written once
    assert again.offered == Counter({i: 1 + (i in shared) for i in in_a | in_b})
    for t in ("answers.parquet", "pairs.parquet", "costs.parquet"):
        assert (out / t).is_file()


def test_the_index_keeps_the_first_units_newest_score_whatever_the_order_rows_came_in(tmp_path):
    def row(x: float) -> dict:
        return {"c": encode_score(Score.ok(x))}

    puts = [(0, 1, 1.0, False), (0, 2, 2.0, False), (1, 5, 3.0, False), (0, 0, 0.5, True)]  # (unit, part, raw, earlier)
    for order in (puts, puts[::-1], puts[1:] + puts[:1]):
        with ScoreIndex(tmp_path / "scores") as index:
            for unit, part, raw, earlier in order:
                index.put(["x"], [row(raw)], rank=rank(unit, part), earlier=earlier)
            index.put(["y"], [row(9.0)], rank=rank(1, 0))
            got = index.get(["x", "y", "z"])
            assert {a: s["c"].raw for a, s in got.items()} == {"x": 2.0, "y": 9.0}  # unit 0, its newest part
            assert index.made_now(["x"]) == {"x": row(2.0)}
            assert [(r.id, r.reused) for r in index.cost_rows(["c"])] == [("x", False), ("y", False)]
        assert not (tmp_path / "scores").exists()  # closed: the index and its emptied folder are gone


class _OtherWay(LengthScorer):
    """The same scores, said to be made by another model revision."""

    def provenance(self, rubric):
        return Provenance(SPEC.version, "test-length", "len", "2")


def test_a_score_made_two_ways_is_refused_across_units_and_within_one(tmp_path, monkeypatch):
    recs = _records()
    a, b = _write(tmp_path / "a.jsonl", recs[:5]), _write(tmp_path / "b.jsonl", recs[5:10])
    out = tmp_path / "out"
    _run(a, out, LengthScorer())
    # a's stored scores (revision 1) beside b's made now (revision 2): refused, nothing published
    with pytest.raises(ConfigError, match="scored two ways in one job: unit a by .*'1'.*, unit b by .*'2'"):
        _run([a, b], out, _OtherWay())
    assert [i["name"] for i in json.loads((out / "manifest.json").read_text())["inputs"]] == ["a"]  # the earlier run's
    # a unit killed half-way (revision 1) and resumed by revision 2: its parts disagree, refused
    monkeypatch.setattr("workers.jobs.score.CHECKPOINT_ANSWERS", 4)
    c = _write(tmp_path / "c.jsonl", recs)
    with pytest.raises(EngineError):
        _run(c, tmp_path / "out2", LengthScorer(die_after=1))
    with pytest.raises(ConfigError, match="stored 'conciseness' scores were made two ways"):
        _run(c, tmp_path / "out2", _OtherWay())
