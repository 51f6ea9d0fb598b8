"""Nothing destroyed, nothing raced: hostile shard names, the lock on OUT, tables published together,
a damaged score-store part re-scored.

Jobs run with the fake length scorer of test_job.py; the concurrency test runs two real ``score``
commands (the cheap conciseness rubric) in two processes.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rubric.config import ScoringConfig
from rubric.errors import ConfigError, InputError
from rubric.preference import read_pairs
from rubric.io import PUBLISHING, check_published
from tests.reliability.test_job import LengthScorer, _records, _run, _write
from workers.cli import main
from workers.storage.outdir import LOCK_FILE, OutLock, inside, remove_tree
from workers.storage.shards import list_shards, safe_name, shard_name
from workers.storage.index import ScoreIndex
from workers.storage.store import UnitStore

REPO = Path(__file__).resolve().parents[2]


def _earlier_results(out: Path) -> dict[str, bytes]:
    """A score output from an ordinary input, plus the user's model.json and notes: what must survive."""
    _run(_write(out.parent / "good.jsonl", _records()), out, LengthScorer())
    (out / "model.json").write_text('{"user": "fitted model"}')
    (out / "notes.txt").write_text("mine")
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()
            and (p.parent.name == "good" or p.name in ("model.json", "notes.txt"))}


HOSTILE = ["...jsonl", "..json", ".jsonl", ".hidden.jsonl", "a\\b.jsonl", "x@00001.jsonl", "tab\there.jsonl",
           "new\nline.jsonl", "n" * 190 + ".jsonl"]


@pytest.mark.parametrize("filename", HOSTILE, ids=repr)
def test_hostile_input_name_keeps_earlier_results(tmp_path, filename):
    out = tmp_path / "out"
    kept = _earlier_results(out)
    src = tmp_path / "in" / filename
    src.parent.mkdir()
    _write(src, [{**r, "id": f"h{i}"} for i, r in enumerate(_records()[:4])])
    m = _run(src, out, LengthScorer())
    assert m["counts"]["pairs"] == 4
    for rel, data in kept.items():  # the earlier store, the model and the user's file are untouched
        assert (out / rel).read_bytes() == data, rel
    name = m["inputs"][0]["name"]
    assert name == shard_name(str(src)) and (out / "scores" / name / "key.json").is_file()
    assert (out / "scores" / name).resolve().parent == (out / "scores").resolve()
    check_published(out)  # the new tables are one complete set
    # a second run resumes from that store instead of wiping anything
    again = _run(src, out, LengthScorer())
    assert again["inputs"][0]["status"] == "reused"
    assert (out / "model.json").read_bytes() == kept["model.json"]


def test_dotdot_input_through_the_cli_twice(tmp_path, monkeypatch):
    """The issue's repro: `score ...jsonl` into an OUT holding earlier results, twice."""
    monkeypatch.chdir(tmp_path)
    row = {"question_text": "Why?", "answer_1": "Because of A.", "answer_2": "B.", "human_judgment": "answer_1"}
    Path("...jsonl").write_text(json.dumps(row) + "\n")
    Path("good.jsonl").write_text(json.dumps({**row, "id": "g"}) + "\n")
    argv = ["--format", "lfqa-hp", "--rubrics", "conciseness", "--out", "O", "--quiet"]
    for _ in range(2):  # into a fresh OUT (was: "[Errno 17] File exists", then the folder wiped)
        assert main(["score", "...jsonl", *argv[:-3], "--out", "fresh", "--quiet"]) == 0
    assert read_pairs("fresh").num_rows == 1
    assert main(["score", "good.jsonl", *argv]) == 0
    Path("O/model.json").write_text("{}")
    for _ in range(2):
        assert main(["score", "...jsonl", *argv]) == 0
    assert Path("O/model.json").is_file() and Path("O/scores/good/key.json").is_file()
    assert read_pairs("O").num_rows == 1


@pytest.mark.parametrize("filename", ["...jsonl", "..json"])
def test_hostile_name_in_the_judge_job_keeps_earlier_results(tmp_path, filename):
    from tests.workers.test_judge_job import LengthJudge
    from workers.jobs.judge import JudgeSettings, run_judge_job

    settings = JudgeSettings("plain")
    out = tmp_path / "out"
    good = _write(tmp_path / "good.jsonl", _records()[:6])
    run_judge_job(good, "lfqa-hp", settings, out, config=ScoringConfig(batch_size=4), progress=False,
                  scorer=LengthJudge([s.version for s in settings.specs]))
    (out / "notes.txt").write_text("mine")
    src = _write(tmp_path / filename, [{**r, "id": f"h{i}"} for i, r in enumerate(_records()[:4])])
    m = run_judge_job(src, "lfqa-hp", settings, out, config=ScoringConfig(batch_size=4), progress=False,
                      scorer=LengthJudge([s.version for s in settings.specs]))
    assert m["counts"]["pairs"] == 4 and (out / "notes.txt").read_text() == "mine"
    assert (out / "judge_scores" / "good" / "key.json").is_file()
    check_published(out)


@pytest.mark.parametrize("name", ["..", ".", "", "a/b", "a\\b", "x@00001", ".tmp", "é" * 100, "a\x00b"])
def test_safe_name_never_leaves_its_folder(tmp_path, name):
    safe = safe_name(name)
    assert safe and not safe.startswith(".") and not any(c in safe for c in "/\\@\x00")
    assert (tmp_path / safe).resolve().parent == tmp_path.resolve()
    assert len(safe.encode()) <= 120
    assert safe_name(safe) == safe  # a safe name is kept as it is


def test_safe_names_stay_distinct_and_readable():
    assert safe_name("webglm") == "webglm" and safe_name("données.v2") == "données.v2"
    names = ["..", ".", "...", "a/b", "a\\b", "a_b", "x@1", "x_1"]
    assert len({safe_name(n) for n in names}) == len(names)


def test_two_hostile_inputs_get_two_folders(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for d in (a, b):
        _write(d / "...jsonl", _records()[:2])
    with pytest.raises(InputError, match="would both write"):  # same stem, one folder: refused as before
        list_shards([a / "...jsonl", b / "...jsonl"])
    assert shard_name(str(a / "...jsonl")) != shard_name(str(a / "..json"))


def test_store_refuses_a_folder_outside_its_root(tmp_path):
    root = tmp_path / "out" / "scores"
    root.mkdir(parents=True)
    (tmp_path / "out" / "pairs.parquet").write_text("keep")
    with ScoreIndex(root) as index:
        for bad in ("..", ".", "../..", "/etc"):
            with pytest.raises(ConfigError, match="not inside"):
                UnitStore(root, bad, {"k": 1}, index, ["conciseness"])
    assert (tmp_path / "out" / "pairs.parquet").read_text() == "keep"


def test_inside_guard(tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "link")
    assert inside(root, root / "sub") == root / "sub"
    for bad in (root, root / "..", tmp_path / "outside", root / "link", root / "sub" / ".." / ".."):
        with pytest.raises(ConfigError):
            inside(root, bad)
    with pytest.raises(ConfigError):
        remove_tree(root, root / "link" / "x")
    assert (tmp_path / "outside").is_dir()


# --- the lock ------------------------------------------------------------------------------------

def _holder(out: Path, seconds: float = 60) -> subprocess.Popen:
    """Another process holding the lock on ``out`` until killed; returns once it holds it."""
    code = textwrap.dedent(f"""
        import sys, time
        from workers.storage.outdir import OutLock
        OutLock({str(out)!r}, command="lfqa-rubric score x --out o").acquire()
        print("held", flush=True)
        time.sleep({seconds})
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_second_writer_is_refused_naming_the_holder(tmp_path, capsys):
    out = tmp_path / "out"
    proc = _holder(out)
    try:
        with pytest.raises(ConfigError, match=rf"is in use by pid {proc.pid} \(started \d{{4}}-\d\d-\d\d .*UTC"):
            OutLock(out).acquire()
        src = _write(tmp_path / "in.jsonl", _records()[:2])
        rc = main(["score", str(src), "--format", "lfqa-hp", "--rubrics", "conciseness", "--out", str(out),
                   "--quiet"])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and f"is in use by pid {proc.pid}" in err[0], err
        assert not (out / "scores").exists()  # the refused run touched nothing
    finally:
        proc.kill()
        proc.wait()


def test_stale_lock_of_a_dead_process_is_taken_over_with_a_warning(tmp_path, caplog):
    out = tmp_path / "out"
    proc = _holder(out)
    proc.kill()  # kill -9: the lock file stays, naming a pid that no longer runs
    proc.wait()
    assert str(proc.pid) in (out / LOCK_FILE).read_text()
    with caplog.at_level(logging.WARNING, logger="workers.storage.outdir"):
        m = _run(_write(tmp_path / "in.jsonl", _records()[:3]), out, LengthScorer())
    assert m["counts"]["pairs"] == 3
    assert any(f"pid {proc.pid}" in r.getMessage() and "taking over" in r.getMessage() for r in caplog.records)
    assert not (out / LOCK_FILE).exists()  # released at the end


def test_a_forked_child_does_not_keep_a_dead_parents_lock(tmp_path):
    out = tmp_path / "out"
    code = textwrap.dedent(f"""
        import os, time
        from workers.storage.outdir import OutLock
        OutLock({str(out)!r}).acquire()
        if os.fork() == 0:  # an engine worker that outlives its parent
            print("child", flush=True)  # os.fork has returned here, so the at-fork hooks have run
            time.sleep(5)
            os._exit(0)
        print("parent", flush=True)
        os._exit(0)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    seen = ""
    while not ("parent" in seen and "child" in seen):  # the two processes' writes may interleave
        ch = proc.stdout.read(1)
        assert ch, seen
        seen += ch
    proc.wait()
    with OutLock(out):  # the parent ended; its child, still running, holds nothing
        pass


def test_lock_is_reentrant_in_one_process_and_released(tmp_path):
    out = tmp_path / "out"
    with OutLock(out):
        with OutLock(out):
            assert (out / LOCK_FILE).exists()
        assert (out / LOCK_FILE).exists()
    assert not (out / LOCK_FILE).exists()
    with OutLock(out):  # and can be taken again
        pass


def test_fit_into_a_folder_in_use_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    _run(_write(tmp_path / "in.jsonl", _records()), out, LengthScorer())
    proc = _holder(out)
    try:
        rc = main(["fit", str(out), "--out", str(out / "model.json"), "--weight-boot", "0"])
        err = capsys.readouterr().err
        assert rc == 2 and f"in use by pid {proc.pid}" in err
        assert not (out / "model.json").exists()
    finally:
        proc.kill()
        proc.wait()


_SLOW_SCORE = textwrap.dedent("""
    import os, sys, time
    import workers.runner as runner
    real = runner.local_step
    def slow(*a, **k):  # the run holding OUT stays in its score step until the test says go
        deadline = time.time() + 120
        while not os.path.exists(os.environ["GO_FILE"]) and time.time() < deadline:
            time.sleep(0.05)
        return real(*a, **k)
    runner.local_step = slow
    from workers.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def test_two_concurrent_score_runs_one_refusal_one_consistent_set(tmp_path):
    recs = _records()
    a = _write(tmp_path / "a.jsonl", recs[:20])
    b = _write(tmp_path / "b.jsonl", [{**r, "id": f"b{i}"} for i, r in enumerate(recs[20:])])
    out = tmp_path / "out"
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO), "GO_FILE": str(go)}
    procs = [subprocess.Popen([sys.executable, "-c", _SLOW_SCORE, "score", str(src), "--format", "lfqa-hp",
                               "--rubrics", "conciseness", "--out", str(out), "--quiet"],
                              cwd=REPO, stderr=subprocess.PIPE, text=True, env=env)
             for src in (a, b)]
    deadline = time.monotonic() + 120
    while all(p.poll() is None for p in procs) and time.monotonic() < deadline:  # the second one is refused
        time.sleep(0.05)
    go.write_text("")  # now the holder may finish
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    rcs = sorted(rc for rc, _ in results)
    assert rcs == [0, 2], results
    refused = next(err for rc, err in results if rc == 2)
    assert "is in use by pid" in refused and "(started" in refused
    winner = (a, b)[[rc for rc, _ in results].index(0)]
    check_published(out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert [i["path"] for i in manifest["inputs"]] == [str(winner)]
    pairs = read_pairs(out)
    assert pairs.num_rows == manifest["counts"]["pairs"] > 0
    assert manifest["counts"]["rows_in"] == len(winner.read_text().splitlines())
    answers = pq.read_table(out / "answers.parquet")
    assert set(pairs.column("answer_id_a").to_pylist()) <= set(answers.column("answer_id").to_pylist())
    assert [p.name for p in (out / "scores").iterdir()] == [winner.stem]
    assert not (out / LOCK_FILE).exists() and not (out / PUBLISHING).exists()


# --- published together ----------------------------------------------------------------------------

def test_readers_refuse_a_half_published_folder(tmp_path, capsys):
    out = tmp_path / "out"
    _run(_write(tmp_path / "in.jsonl", _records()), out, LengthScorer())
    assert "published" in json.loads((out / "manifest.json").read_text())
    (out / PUBLISHING).write_text("{}")  # a job killed between its renames
    rc = main(["fit", str(out), "--out", str(tmp_path / "m.json"), "--weight-boot", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "being written, or a job was killed" in err[0]
    (out / PUBLISHING).unlink()
    # a table from another run (a different size) under the same manifest
    other = tmp_path / "other"
    _run(_write(tmp_path / "in2.jsonl", _records()[:5]), other, LengthScorer())
    os.replace(other / "pairs.parquet", out / "pairs.parquet")
    with pytest.raises(InputError, match="does not match"):
        read_pairs(out)


def test_rerun_publishes_a_complete_set_and_drops_stale_tables(tmp_path):
    out = tmp_path / "out"
    src = _write(tmp_path / "in.jsonl", _records())
    _run(src, out, LengthScorer(), config=ScoringConfig(batch_size=4, rescale="fitted"))
    assert "rescale.json" in json.loads((out / "manifest.json").read_text())["published"]  # an earlier run's table
    m = _run(src, out, LengthScorer())
    published = json.loads((out / "manifest.json").read_text())["published"]
    assert set(published) == {"answers.parquet", "pairs.parquet", "rejects.jsonl", "costs.parquet"}
    assert not (out / "rescale.json").exists() and m["counts"]["pairs"] == read_pairs(out).num_rows
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]


def test_a_rerun_that_fails_after_scoring_keeps_the_earlier_set_vouched_for(tmp_path):
    """The input changes while the re-run scores: the run refuses, and OUT still holds the earlier run's
    tables under the earlier run's manifest (readers check it), not tables no manifest speaks for."""
    src = _write(tmp_path / "in.jsonl", _records()[:10])
    out = tmp_path / "out"
    _run(src, out, LengthScorer())
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and not p.name.startswith(".")}
    _write(src, _records())  # a new input: the re-run scores

    class Editing(LengthScorer):
        def score_batch(self, items):
            with src.open("a", encoding="utf-8") as f:
                f.write("\n")
            return super().score_batch(items)

    with pytest.raises(InputError, match="changed while the job ran"):
        _run(src, out, Editing())
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and not p.name.startswith(".")} == before
    check_published(out)
    assert read_pairs(out).num_rows == json.loads(before["manifest.json"])["counts"]["pairs"]


# --- the store verifies what it resumes from ------------------------------------------------------------

def test_truncated_store_part_is_rescored_with_a_warning(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr("workers.jobs.score.CHECKPOINT_ANSWERS", 8)
    src = _write(tmp_path / "in.jsonl", _records())
    out = tmp_path / "out"
    _run(src, out, LengthScorer())
    clean = {t: pq.read_table(out / t) for t in ("answers.parquet", "pairs.parquet")}
    part = out / "scores" / "in" / "part-00000.parquet"
    data = part.read_bytes()
    part.write_bytes(data[: len(data) // 2])
    scorer = LengthScorer()
    with caplog.at_level(logging.WARNING, logger="workers.storage.store"):
        m = _run(src, out, scorer)
    assert any("part-00000.parquet cannot be read" in r.getMessage() for r in caplog.records)
    assert scorer.scored == 8 == m["job"]["answers_scored_now"]  # only the damaged part's answers
    for t, table in clean.items():
        assert pq.read_table(out / t).equals(table), t
    parts = sorted(p.name for p in (out / "scores" / "in").glob("part-*.parquet"))
    assert len(parts) == len(set(parts)) and "part-00000.parquet" not in parts  # no part overwritten


def test_store_part_deleted_by_hand_is_rescored(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr("workers.jobs.score.CHECKPOINT_ANSWERS", 8)
    src = _write(tmp_path / "in.jsonl", _records())
    out = tmp_path / "out"
    _run(src, out, LengthScorer())
    (out / "scores" / "in" / "part-00001.parquet").unlink()
    scorer = LengthScorer()
    with caplog.at_level(logging.WARNING, logger="workers.storage.store"):
        m = _run(src, out, scorer)
    assert any("scored again" in r.getMessage() for r in caplog.records)
    assert scorer.scored == 8 and m["counts"]["pairs"] == read_pairs(out).num_rows


def test_only_input_unreadable_says_so_and_leaves_no_store(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = tmp_path / "out"
    with pytest.raises(InputError) as e:
        _run(bad, out, LengthScorer())
    assert "1 of 1 input(s) could not be read" in str(e.value) and "other inputs" not in str(e.value)
    assert not (out / "scores" / "bad").exists()
    assert not out.exists() or not any(out.rglob("*"))


def test_judge_job_with_an_unreadable_only_input_leaves_no_store(tmp_path):
    from tests.workers.test_judge_job import LengthJudge
    from workers.jobs.judge import JudgeSettings, run_judge_job

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    settings = JudgeSettings("plain")
    with pytest.raises(InputError, match="could not be read"):
        run_judge_job(bad, "lfqa-hp", settings, tmp_path / "out", config=ScoringConfig(batch_size=4),
                      progress=False, scorer=LengthJudge([s.version for s in settings.specs]))
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*"))

