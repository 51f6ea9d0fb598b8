"""A re-run into its own earlier OUT removes only what it can prove a run of ours wrote; a write that fails (a full
disk, injected as the OSError/SQLite error the kernel and SQLite give) is one line naming OUT, with nothing
half-published; ``~user`` output paths are refused in one line."""

from __future__ import annotations

import errno
import json
import sqlite3
from pathlib import Path

import pytest

from rubric.errors import ConfigError, InputError
from rubric.io import PUBLISHING, check_published, read_manifest
from tests.reliability.test_job import LengthScorer, _records, _run, _write
from tests.reliability.test_outdir_safety import _files, _ours
from workers.cli import main, run_command


def _one_line(capsys, run) -> str:
    assert run_command(run, "lfqa-rubric") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lfqa-rubric: error: "), err
    return err


def test_a_folder_at_a_published_name_is_left_and_the_rerun_refuses_in_one_line(tmp_path, capsys):
    out = _ours(tmp_path, 2)
    before = _files(out)
    (out / "pairs.parquet").unlink()
    (out / "pairs.parquet").mkdir()
    (out / "pairs.parquet" / "thesis.txt").write_text("a user's thesis")
    err = _one_line(capsys, lambda: _run(tmp_path / "in2.jsonl", out, LengthScorer()))
    assert "pairs.parquet is a folder" in err and "never deletes what it did not write" in err
    assert (out / "pairs.parquet" / "thesis.txt").read_text() == "a user's thesis"
    assert not (out / PUBLISHING).exists()  # refused before the publish began
    assert read_manifest(out)["published"] == json.loads(before["manifest.json"])["published"]
    assert not [p for p in out.iterdir() if p.name.startswith(".staging-")]


def test_a_published_file_the_user_replaced_is_not_deleted(tmp_path, capsys):
    out = _ours(tmp_path, 2)
    (out / "rejects.jsonl").write_text("a user's own notes, written over our rejects file\n")
    err = _one_line(capsys, lambda: _run(tmp_path / "in2.jsonl", out, LengthScorer()))
    assert "rejects.jsonl is not the file a run of ours published there" in err
    assert (out / "rejects.jsonl").read_text() == "a user's own notes, written over our rejects file\n"
    assert not (out / PUBLISHING).exists()


def test_a_published_file_edited_in_place_keeping_its_size_is_not_deleted(tmp_path, capsys):
    """Issue 59: a re-run proves "a run of ours wrote this" by the sha256 its manifest records, never by size: a
    number in ``rescale.json`` edited by hand, the file's size unchanged, is refused in one line and kept."""
    from rubric.config import ScoringConfig

    src = _write(tmp_path / "in6.jsonl", _records()[:6])
    out = tmp_path / "out"
    _run(src, out, LengthScorer(), config=ScoringConfig(batch_size=4, rescale="fitted"))
    path = out / "rescale.json"
    text = path.read_text()
    digit = next(i for i, c in enumerate(text) if c.isdigit() and c != "9")
    edited = text[:digit] + str(int(text[digit]) + 1) + text[digit + 1:]  # one digit up: the same size
    assert len(edited) == len(text) and edited != text
    path.write_text(edited)
    err = _one_line(capsys, lambda: _run(src, out, LengthScorer()))  # declared: rescale.json is not written
    assert "rescale.json is not the file a run of ours published there" in err and "sha256" in err
    assert path.read_text() == edited
    assert not (out / PUBLISHING).exists()


def test_a_manifest_without_digests_proves_nothing_and_force_replaces(tmp_path, capsys, caplog):
    """A manifest of an older version (sizes, no sha256) cannot prove a file ours: the re-run refuses in one line;
    under --force it replaces our outputs, saying so, and the new manifest records every file's digest."""
    from rubric.io import DIGESTS, file_sha256

    out = _ours(tmp_path, 2)
    doc = read_manifest(out)
    assert set(doc[DIGESTS]) == set(doc["published"])
    assert all(doc[DIGESTS][n] == file_sha256(out / n) for n in doc["published"])
    del doc[DIGESTS]
    (out / "manifest.json").write_text(json.dumps(doc))
    before = (out / "pairs.parquet").read_bytes()
    err = _one_line(capsys, lambda: _run(tmp_path / "in2.jsonl", out, LengthScorer()))
    assert "records no sha256 for it" in err
    assert (out / "pairs.parquet").read_bytes() == before
    with caplog.at_level("WARNING", logger="workers.storage.outdir"):
        _run(tmp_path / "in2.jsonl", out, LengthScorer(), force=True)
    assert any("has no sha256" in r.getMessage() for r in caplog.records)
    assert set(read_manifest(out)[DIGESTS]) == set(read_manifest(out)["published"])


def test_a_users_folder_at_our_staging_name_is_refused_not_emptied(tmp_path, capsys, monkeypatch):
    out = _ours(tmp_path, 2)
    monkeypatch.setattr("os.getpid", lambda: 424242)
    (out / ".staging-424242").mkdir()
    (out / ".staging-424242" / "notes.txt").write_text("mine")
    err = _one_line(capsys, lambda: _run(tmp_path / "in2.jsonl", out, LengthScorer()))
    assert ".staging-424242 is where this run stages its files, and no run of ours made it" in err
    assert (out / ".staging-424242" / "notes.txt").read_text() == "mine"


def test_a_full_disk_while_writing_a_table_is_one_line_and_nothing_is_published(tmp_path, capsys, monkeypatch):
    out = _ours(tmp_path, 2)
    before = _files(out)
    import pyarrow.parquet as pq

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq, "write_table", full)
    err = _one_line(capsys, lambda: _run(_write(tmp_path / "in4.jsonl", _records()[:4]), out, LengthScorer()))
    assert "No space left on device" in err and str(out) in err
    assert {k: v for k, v in _files(out).items() if not k.startswith("scores/")} == \
        {k: v for k, v in before.items() if not k.startswith("scores/")}  # the earlier run's set, untouched
    check_published(out)


def test_a_full_disk_in_the_scratch_database_is_one_line_naming_out(tmp_path, capsys, monkeypatch):
    from workers.runner import ScoreIndex

    def full(self, ids, rows, **kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(ScoreIndex, "put", full)
    out = tmp_path / "out"
    err = _one_line(capsys, lambda: _run(_write(tmp_path / "in.jsonl", _records()[:3]), out, LengthScorer()))
    assert "scratch database of the run could not be written (database or disk is full)" in err and str(out) in err
    assert "[Errno 28]" in err and not (out / "manifest.json").exists()


def test_a_full_disk_while_publishing_leaves_no_half_published_folder(tmp_path, capsys, monkeypatch):
    """The manifest cannot be written after the tables moved: readers refuse the folder (its publish marker
    stays) until the next run, which completes it."""
    from workers.storage.outdir import _folder

    out = _ours(tmp_path, 2)
    real = _folder.atomic_write_bytes

    def full(path, data):
        if Path(path).name == "manifest.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(_folder, "atomic_write_bytes", full)
    src4 = _write(tmp_path / "in4.jsonl", _records()[:4])
    err = _one_line(capsys, lambda: _run(src4, out, LengthScorer()))
    assert "No space left on device" in err and str(out) in err
    with pytest.raises(InputError, match="is being written, or a job was killed while writing"):
        check_published(out)
    monkeypatch.setattr(_folder, "atomic_write_bytes", real)
    m = _run(src4, out, LengthScorer())
    assert m["counts"]["pairs"] == 4 and not (out / PUBLISHING).exists()
    check_published(out)


@pytest.mark.parametrize("given", ["~nosuchuser-of-this-machine/x", "~nosuchuser-of-this-machine"])
def test_an_out_of_no_users_home_is_one_line(tmp_path, capsys, given):
    src = _write(tmp_path / "in.jsonl", _records()[:2])
    assert main(["score", str(src), "--format", "lfqa-hp", "--rubrics", "conciseness", "--out", given,
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'~nosuchuser-of-this-machine' names no user whose home folder it could be" \
        in err, err


def test_an_input_of_no_users_home_is_not_an_overlap_traceback(tmp_path):
    from workers.storage.outdir import check_overlap

    check_overlap(["~nosuchuser-of-this-machine/in.jsonl"], tmp_path / "out")  # nothing there: no overlap
    with pytest.raises(ConfigError, match="names no user"):
        check_overlap([], "~nosuchuser-of-this-machine/out")
