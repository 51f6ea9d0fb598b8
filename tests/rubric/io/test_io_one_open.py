"""A table reader reads one open file: a publish that renames a new table over the path while it reads
cannot make it read two files (pyarrow, given the path, opened it twice: footer of one, pages of the other)."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rubric.errors import InputError
from rubric.io import read_parquet
from rubric.judging import read_judgments
from rubric.preference import read_pairs


def _table(n: int, tag: str) -> pa.Table:
    return pa.table({"pair_id": [f"{tag}{i}" for i in range(n)], "x": [float(i) for i in range(n)]})


def _swap_after_open(monkeypatch, path, new: pa.Table):
    """Every ParquetFile made while reading: the file at ``path`` is replaced by rename first (a publish)."""
    real = pq.ParquetFile
    seen = []

    def swapping(source, *a, **k):
        seen.append(source)
        tmp = path.with_name(".swap.parquet")
        pq.write_table(new, tmp)
        os.replace(tmp, path)
        return real(source, *a, **k)

    monkeypatch.setattr(pq, "ParquetFile", swapping)
    return seen


def test_the_table_read_is_the_file_opened_whatever_replaces_the_path(tmp_path, monkeypatch):
    path = tmp_path / "pairs.parquet"
    pq.write_table(_table(50, "old"), path)
    seen = _swap_after_open(monkeypatch, path, _table(7, "new"))
    got = read_parquet(path)
    assert got.column("pair_id").to_pylist() == [f"old{i}" for i in range(50)]  # one file, whole
    assert len(seen) == 1 and not isinstance(seen[0], (str, os.PathLike))  # an open file, not the path
    assert pq.read_table(path).num_rows == 7  # the publish did happen


def test_output_readers_go_through_one_open_file(tmp_path, monkeypatch):
    pq.write_table(_table(5, "p"), tmp_path / "pairs.parquet")
    opened = []
    real = pq.ParquetFile
    monkeypatch.setattr(pq, "ParquetFile", lambda source, *a, **k: opened.append(source) or real(source, *a, **k))
    monkeypatch.setattr(pq, "read_table", lambda *a, **k: pytest.fail("read by path"))
    assert read_pairs(tmp_path).num_rows == 5
    with pytest.raises(InputError):  # not a judgments table; read all the same through the open file
        read_judgments(_judgments_dir(tmp_path))
    assert len(opened) == 2 and all(hasattr(s, "read") for s in opened)


def _judgments_dir(tmp_path):
    d = tmp_path / "j"
    d.mkdir()
    pq.write_table(_table(3, "j"), d / "judgments.parquet")
    return d


def test_a_damaged_table_is_one_line_naming_it(tmp_path):
    path = tmp_path / "pairs.parquet"
    path.write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match=r"cannot read .*pairs.parquet \(damaged or not Parquet\)"):
        read_parquet(path)


def test_every_table_of_ours_is_read_through_the_one_guarded_reader():
    """Issue 59: validate's tables were read by path (``pq.read_table``), so a publish racing the read made intact
    files read as corrupt, and a damaged one was a traceback. No module reads a Parquet file but through
    ``rubric.io.open_parquet`` now, except two that read the user's own files (a perturb input, an evidence corpus),
    whose errors they turn into their own lines."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    by_path = re.compile(r"\bpq\.(read_table|read_metadata|read_schema|ParquetFile|ParquetDataset)\(")
    users = {"rubric/perturbation/rewrite.py", "models/rubric_backends/evidence.py"}
    found = sorted(p.relative_to(root).as_posix() for pkg in ("rubric", "models", "workers")
                   for p in (root / pkg).rglob("*.py") if by_path.search(p.read_text(encoding="utf-8")))
    assert set(found) - users == {"rubric/io/files.py"}, found
