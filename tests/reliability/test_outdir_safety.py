"""Issue 35: a command touches only what it made. One test per class of ``scripts/repro_outdir_safety.py``
(the repro runs each against the real command; here the score job runs with the fake length scorer of
test_job.py, and the CLI only where the class is the CLI's): a folder that is not ours, a store folder
that is not ours, output over input, links where our files go, ``--out '~'``, killed runs' scratch
files, the HTML report's snapshot, and commands refused in a folder another command holds. The lone
surrogates are in test_lone_surrogates.py.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rubric.config import ScoringConfig
from rubric.errors import ConfigError
from rubric.io import check_published
from tests.reliability.test_job import LengthScorer, _records, _run, _write
from workers.cli import main
from workers.storage.outdir import STAGING_MARK

LOCK = ".lfqa-rubric.lock"


def _ours(tmp_path: Path, n: int = 6, name: str = "out") -> Path:
    """A score output of ours over the sample's first ``n`` pairs (input ``in<n>.jsonl``)."""
    out = tmp_path / name
    _run(_write(tmp_path / f"in{n}.jsonl", _records()[:n]), out, LengthScorer())
    return out


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def _one_line(capsys, *words: str) -> str:
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("lfqa-rubric: error:")]
    assert len(err) == 1 and all(w in err[0] for w in words), err
    return err[0]


# --- a folder that is not ours ---------------------------------------------------------------------

def test_foreign_folder_is_refused_and_force_replaces_only_files_named_like_ours(tmp_path, caplog):
    user = tmp_path / "user"
    user.mkdir()
    for name in ("rescale.json", "claims.parquet", "answers.parquet", "notes.txt"):
        (user / name).write_text("mine")
    src = _write(tmp_path / "two.jsonl", _records()[:2])
    with pytest.raises(ConfigError, match=r"not an lfqa-rubric output folder .*--force"):
        _run(src, user, LengthScorer())
    assert _files(user) == {n: b"mine" for n in ("answers.parquet", "claims.parquet", "notes.txt", "rescale.json")}
    with caplog.at_level("WARNING", logger="workers.storage.outdir"):
        m = _run(src, user, LengthScorer(), force=True)
    assert m["counts"]["pairs"] == 2 and pq.read_table(user / "answers.parquet").num_rows == m["counts"]["unique_answers"]
    assert all((user / n).read_text() == "mine" for n in ("rescale.json", "claims.parquet", "notes.txt"))
    assert any("--force: replacing answers.parquet" in r.getMessage() for r in caplog.records)
    check_published(user)


def test_a_file_of_a_run_of_ours_may_go_a_users_file_may_not(tmp_path):
    out = _ours(tmp_path)  # ours: its manifest lists what it published
    (out / "rescale.json").write_text("a user's file, named like one of our tables")
    with pytest.raises(ConfigError, match="rescale.json, which no earlier run of ours published"):
        _run(tmp_path / "in6.jsonl", out, LengthScorer(), config=ScoringConfig(batch_size=4, rescale="fitted"))
    assert (out / "rescale.json").read_text().startswith("a user's file")


@pytest.mark.parametrize("ours", [False, True], ids=["foreign OUT", "OUT of ours"])
def test_a_store_folder_that_is_not_ours_is_never_deleted(tmp_path, ours):
    out = _ours(tmp_path, 2) if ours else tmp_path / "user2"
    thesis = out / "scores" / "in3" / "thesis.txt"
    thesis.parent.mkdir(parents=True, exist_ok=True)
    thesis.write_text("thesis")
    with pytest.raises(ConfigError, match="not an lfqa-rubric output folder" if not ours else "in3 holds files but no key"):
        _run(_write(tmp_path / "in3.jsonl", _records()[:3]), out, LengthScorer())
    assert thesis.read_text() == "thesis"
    if ours:  # a store of ours holding a user's file is not reset either (its input changed)
        (out / "scores" / "in2" / "thesis.txt").write_text("thesis")
        _write(tmp_path / "in2.jsonl", _records()[:3])
        with pytest.raises(ConfigError, match="thesis.txt, which is not part of a score store"):
            _run(tmp_path / "in2.jsonl", out, LengthScorer())
        assert (out / "scores" / "in2" / "thesis.txt").read_text() == "thesis"


# --- output over input -------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["input file in OUT", "OUT is the input folder", "OUT in the input folder"])
def test_output_over_input_is_refused_before_anything_is_read(tmp_path, layout):
    d = tmp_path / "D"
    src = _write((d.mkdir() or d) / "in.jsonl", _records()[:2])
    inputs, out = {"input file in OUT": (src, d), "OUT is the input folder": (d, d),
                   "OUT in the input folder": (d, d / "out")}[layout]
    before = _files(d)
    scorer = LengthScorer()
    with pytest.raises(ConfigError, match="overlaps input"):
        _run(inputs, out, scorer)
    assert _files(d) == before and scorer.scored == 0 and not (d / "out").exists()


@pytest.mark.parametrize("argv", [["fit", "{O}", "--out", "{O}/pairs.parquet", "--weight-boot", "0"],
                                  ["export", "{O}", "--to", "{O}/pairs.parquet"],
                                  ["export", "{O}", "--table", "answers", "--to", "{O}/answers.parquet"]],
                         ids=["fit over pairs.parquet", "export over its input", "export over answers.parquet"])
def test_a_file_writer_never_writes_over_a_published_table(tmp_path, capsys, argv):
    out = _ours(tmp_path)
    before = _files(out)
    assert main([a.replace("{O}", str(out)) for a in argv]) == 2
    _one_line(capsys)
    assert _files(out) == before
    check_published(out)


# --- never through a link ---------------------------------------------------------------------------------

@pytest.fixture
def victim(tmp_path) -> Path:
    v = tmp_path / "victim.txt"
    v.write_text("precious")
    return v


@pytest.mark.parametrize("command", ["score", "fit"])
def test_a_link_at_the_lock_is_refused(tmp_path, capsys, victim, command):
    out = _ours(tmp_path) if command == "fit" else tmp_path / "new"
    out.mkdir(exist_ok=True)
    (out / LOCK).symlink_to(victim)
    argv = (["fit", str(out), "--out", str(out / "model.json"), "--weight-boot", "0"] if command == "fit" else
            ["score", str(_write(tmp_path / "two.jsonl", _records()[:2])), "--format", "lfqa-hp", "--rubrics",
             "conciseness", "--out", str(out), "--quiet"])
    assert main(argv) == 2
    _one_line(capsys, "symbolic link", LOCK)
    assert victim.read_text() == "precious" and not (out / "model.json").exists()


def test_a_link_at_the_store_folder_is_refused(tmp_path):
    out = _ours(tmp_path, 2)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.rename(out / "scores", tmp_path / "old-scores")
    (out / "scores").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ConfigError, match="scores is a symbolic link"):
        _run(_write(tmp_path / "in3.jsonl", _records()[:3]), out, LengthScorer())
    assert not any(elsewhere.iterdir())


def test_links_at_our_temp_names_are_not_followed(tmp_path, victim):
    out = _ours(tmp_path, 2)
    for name in (f".manifest.json.tmp-{os.getpid()}", f".publishing.tmp-{os.getpid()}"):
        (out / name).symlink_to(victim)  # where a run of this process put its temp files
    m = _run(_write(tmp_path / "in3.jsonl", _records()[:3]), out, LengthScorer())
    assert victim.read_text() == "precious" and m["counts"]["pairs"] == 3
    assert not (out / "manifest.json").is_symlink()
    check_published(out)


def test_a_link_at_our_staging_folder_is_refused(tmp_path):
    out = _ours(tmp_path, 2)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / f".staging-{os.getpid()}").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ConfigError, match="symbolic link where our staging folder goes"):
        _run(_write(tmp_path / "in3.jsonl", _records()[:3]), out, LengthScorer())
    assert not any(elsewhere.iterdir())
    check_published(out)  # the earlier run's set is untouched


def test_report_html_never_writes_through_a_link(tmp_path, victim, capsys):
    out = _ours(tmp_path)
    page = tmp_path / "H" / "page.html"
    page.parent.mkdir()
    (page.parent / "page.html.tmp").symlink_to(victim)
    assert main(["report", str(out), "--html", str(page), "--n-boot", "20"]) == 0
    assert victim.read_text() == "precious" and "<html" in page.read_text()
    os.replace(page, tmp_path / "moved.html")
    page.symlink_to(victim)  # the page itself a link: refused, not replaced or followed
    assert main(["report", str(out), "--html", str(page), "--n-boot", "20"]) == 2
    _one_line(capsys, "symbolic link")
    assert victim.read_text() == "precious" and page.is_symlink()


def test_a_reports_charts_never_go_through_a_link(tmp_path, victim, capsys):
    """evaluate writes its report with charts beside it (``R.png``, ``R_calibration.png``); a link at a
    chart's name is refused before anything is written, and without it the report and charts land."""
    out = _ours(tmp_path, n=12)
    assert main(["fit", str(out), "--split", "all", "--out", str(tmp_path / "m.json"), "--weight-boot", "0"]) == 0
    rep = tmp_path / "R" / "r.md"
    rep.parent.mkdir()
    (rep.parent / "r.png").symlink_to(victim)
    argv = ["evaluate", str(out), "--model", str(tmp_path / "m.json"), "--split", "all", "--n-boot", "20",
            "--report", str(rep)]
    assert main(argv) == 2
    _one_line(capsys, "symbolic link")
    assert victim.read_text() == "precious" and sorted(p.name for p in rep.parent.iterdir()) == ["r.png"]
    (rep.parent / "r.png").unlink()
    assert main(argv) == 0
    assert {"r.md", "r.png"} <= {p.name for p in rep.parent.iterdir()} and "![weights](r.png)" in rep.read_text()
    assert not [p for p in rep.parent.iterdir() if p.name.startswith(".")]  # no temp folder left


def test_linkages_reference_cache_never_appends_through_a_link(tmp_path, victim):
    """LINKAGE's generated-reference cache (OUT/generated_references.jsonl) is appended to run after run;
    a link planted at its name, or at its rewrite's temp name, is not followed."""
    from models.linkage.references import ReferenceCache

    path = tmp_path / "generated_references.jsonl"
    cache = ReferenceCache(path)
    path.symlink_to(victim)
    with pytest.raises(OSError):
        cache.add([{"key": "k1", "text": "1. a"}])
    path.unlink()
    path.write_text('{"key": "k0", "text": "1. b"}\n{torn\n')
    torn = ReferenceCache(path)
    assert torn.torn == 1
    (tmp_path / f".{path.name}.tmp-{os.getpid()}").symlink_to(victim)
    with pytest.raises(OSError):
        torn.add([{"key": "k1", "text": "1. a"}])
    assert victim.read_text() == "precious"


# --- '~', killed runs ------------------------------------------------------------------------------------

def test_out_tilde_is_the_home_folder_never_a_folder_named_tilde(tmp_path, monkeypatch):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    m = _run(_write(tmp_path / "two.jsonl", _records()[:2]), "~/res", LengthScorer())
    assert m["counts"]["pairs"] == 2 and (home / "res" / "manifest.json").is_file()
    assert not (cwd / "~").exists()


def test_scratch_files_of_killed_runs_go_with_the_next_run(tmp_path):
    out = _ours(tmp_path, 2)
    planted = [out / "scores" / ".index-scores-999999.sqlite", out / "scores" / ".run-scores-999999.sqlite",
               out / "scores" / ".merged-scores-999999.sqlite",
               out / ".staging-999999" / "pairs.parquet", out / ".staging-999999" / STAGING_MARK,
               out / "scores" / "in2" / ".part-00009.parquet.tmp-999999",
               out / ".manifest.json.tmp-999999", out / ".tmp-999999-0a1b2c3d-pairs.parquet"]
    for p in planted:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("left by a killed run")
    # a user's files at names like our scratch: no run of ours provably made them, so they stay
    users = [out / "notes.tmp-1", out / ".staging-1" / "notes.txt", out / ".draft.tmp-2024"]
    for p in users:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("a user's file")
    _run(tmp_path / "in2.jsonl", out, LengthScorer())
    assert [p for p in planted if p.exists()] == [] and not (out / ".staging-999999").exists()
    assert all(p.read_text() == "a user's file" for p in users)


# --- the HTML report reads one snapshot --------------------------------------------------------------------

def test_report_reads_one_published_snapshot(tmp_path, monkeypatch):
    """A score run publishes into the folder while the page is built: the page is built again, of one run."""
    import rubric.html_report._build as build

    out = _ours(tmp_path, 8)
    real, seen = build.score_summary, []

    def summary_then_rescore(folder, **kw):
        s = real(folder, **kw)
        seen.append(s.n_pairs)
        if len(seen) == 1:
            _run(_write(tmp_path / "in8.jsonl", _records()[:4]), out, LengthScorer())  # publishes 4 pairs now
        return s

    monkeypatch.setattr(build, "score_summary", summary_then_rescore)
    assert main(["report", str(out), "--html", str(tmp_path / "page.html"), "--n-boot", "20"]) == 0
    assert seen == [7, 4]  # the first build saw the folder change under it and was not written


# --- a folder another command holds ---------------------------------------------------------------------------

@contextmanager
def _held(folder: Path):
    """Another command holding ``folder``: an flock on another open of its lock file."""
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    os.write(fd, json.dumps({"pid": 1, "host": socket.gethostname(), "started": time.time()}).encode())
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        os.close(fd)
        (folder / LOCK).unlink()


@pytest.mark.parametrize("argv", [
    ["encoder", "{O}", "--quiet"],
    ["perturb", "{I}", "--format", "lfqa-hp", "--attack", "deepwordbug", "--victim", "{O}/model.json",
     "--out", "{O}/perturbed.jsonl"],
    ["lfq", "{I}", "--format", "lfqa-hp", "--out", "{O}/lfq.parquet"],
], ids=["encoder", "perturb", "lfq"])
def test_commands_into_a_folder_another_command_holds_are_refused(tmp_path, capsys, argv):
    out = _ours(tmp_path)
    before = _files(out)
    with _held(out):
        assert main([a.replace("{O}", str(out)).replace("{I}", str(tmp_path / "in6.jsonl")) for a in argv]) == 2
    _one_line(capsys, "is in use by pid 1")
    assert _files(out) == before


def test_a_file_made_from_a_runs_tables_goes_with_that_run(tmp_path):
    """``encoder``'s predictions in a score folder are recorded in its manifest and removed by its next run."""
    from workers.storage.outdir import STAGING_MARK, output_file

    out = _ours(tmp_path)
    with output_file(out / "encoder_predictions.parquet", register=True) as tmp:
        tmp.write_bytes(b"predictions of this run's pairs")
    assert json.loads((out / "manifest.json").read_text())["added"] == {"encoder_predictions.parquet": 31}
    check_published(out)
    (out / "encoder_predictions.parquet").write_bytes(b"changed")
    with pytest.raises(Exception, match="does not match"):
        check_published(out)
    with output_file(out / "encoder_predictions.parquet", register=True) as tmp:  # made again: recorded anew
        tmp.write_bytes(b"predictions of this run's pairs, again")
    check_published(out)
    with pytest.raises(ConfigError, match="published"), output_file(out / "encoder_predictions.parquet"):
        pass  # another command may not write over it
    _run(_write(tmp_path / "in6.jsonl", _records()[:5]), out, LengthScorer())  # a new run: new pairs
    assert not (out / "encoder_predictions.parquet").exists()
    assert "added" not in json.loads((out / "manifest.json").read_text())
