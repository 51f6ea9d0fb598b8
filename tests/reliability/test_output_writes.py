"""Every file a job writes under its OUT is written by the output folder (``workers.storage.outdir``): no job kind
opens, renames or deletes a file there itself.

An audit hook (``sys.addaudithook``) sees every ``open`` for writing, ``os.open`` with a write flag,
rename, remove, ``mkdir`` and SQLite connection while the jobs run; for each one under OUT it finds the
innermost frame of our code (``rubric``, ``models``, ``workers``) and checks it is one of the writers
allowed below. The jobs run on fakes (no engine), one of each kind, and the protocols with them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Our modules that may write under OUT, and why.
WRITERS = {
    "workers/storage/outdir/": "the output folder: lock, staging, publish, temp files, the one writer of outputs",
    "workers/storage/store.py": "the score stores under OUT/<store_dir>/ (the runner's, one per unit; not an output)",
    "workers/storage/index.py": "the job's on-disk score index (.index-scores-<pid>.sqlite beside the stores)",
    "models/linkage/references.py": "LINKAGE's generated-references cache (appended with O_NOFOLLOW; a store)",
}
#: A scratch folder the run's staging hands out (``workers.storage.outdir.Staging.scratch``: on-disk indexes of
#: the assemble step, removed with the staging folder, never published).
SCRATCH = "scratch-"

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_EVENTS = {"open", "os.rename", "os.remove", "os.mkdir", "os.rmdir", "shutil.rmtree", "sqlite3.connect",
           "os.truncate", "os.symlink", "os.link", "shutil.copyfile", "shutil.move"}
_active: list[tuple[Path, list[str]]] = []


def _hook(event: str, args: tuple) -> None:
    if not _active or event not in _EVENTS:
        return
    if event == "open":
        path, mode, flags = (list(args) + [None, None, None])[:3]
        if isinstance(mode, str):
            if not any(c in mode for c in "wax+"):
                return
        elif not (isinstance(flags, int) and flags & _WRITE_FLAGS):
            return
        paths = [path]
    else:
        paths = [a for a in args[:2] if isinstance(a, (str, bytes, os.PathLike))]
    for out, bad in _active:
        for p in paths:
            if isinstance(p, int):
                continue
            try:
                p = Path(os.fsdecode(p)).absolute()
            except (TypeError, ValueError):
                continue
            if not p.is_relative_to(out) or any(part.startswith(SCRATCH) for part in p.relative_to(out).parts):
                continue
            who = _writer()
            if who is None or not any(who.startswith(w) for w in WRITERS):
                bad.append(f"{event} {p.relative_to(out)} by {who}")


def _writer() -> str | None:
    """The innermost frame of our code on the stack, as a path relative to the checkout."""
    f = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if name.startswith(str(REPO)) and not name.startswith(str(REPO / "tests")):
            rel = Path(name).relative_to(REPO).as_posix()
            if rel.split("/")[0] in ("rubric", "models", "workers"):
                return rel
        f = f.f_back
    return None


sys.addaudithook(_hook)


@pytest.fixture
def audited(tmp_path, monkeypatch):
    """OUT folders under ``tmp_path/outs`` whose writes are checked; yields the list of bad writes. Arrow
    opens a path given to its Parquet writers in C++, past the audit hook: those calls are reported to it."""
    import pyarrow.parquet as pq

    def reported(fn, at):
        def call(*args, **kwargs):
            where = args[at] if len(args) > at else kwargs.get("where")
            if isinstance(where, (str, os.PathLike)):
                _hook("open", (where, "wb", 0))
            return fn(*args, **kwargs)
        return call

    monkeypatch.setattr(pq, "write_table", reported(pq.write_table, 1))
    monkeypatch.setattr(pq, "ParquetWriter", reported(pq.ParquetWriter, 0))
    outs = (tmp_path / "outs").absolute()
    outs.mkdir()
    bad: list[str] = []
    _active.append((outs, bad))
    try:
        yield outs, bad
    finally:
        _active.remove((outs, bad))


def test_a_kind_writing_a_file_itself_is_caught(audited):
    outs, bad = audited
    from workers.storage.outdir import atomic_write_bytes

    atomic_write_bytes(outs / "fine.txt", b"x")  # the output folder's writer
    assert bad == []
    (outs / "report.md").write_text("a kind's own write")  # from a test: not our code, still reported
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1]}), outs / "t.parquet")
    # code of a kind's module (compiled under its file name, as the stack shows it) writing into OUT
    exec(compile("open(path, 'w').close()", str(REPO / "workers" / "jobs" / "judge.py"), "exec"), {"path": outs / "j.md"})
    assert bad == ["open report.md by None", "open t.parquet by None", "open j.md by workers/jobs/judge.py"]


def test_every_job_kind_writes_only_through_the_output_folder(audited, tmp_path):
    import json

    from models.judging import ProtocolJudgeScorer
    from rubric.errors import InputError
    from rubric.protocols import protocol_judge
    from tests.models.test_protocols import FakeEngine
    from tests.workers.test_judge_job import CONFIG, Const, LengthJudge, _records, _write
    from tests.workers.test_protocol_job import SETTINGS, Counting, _arena_files, _generator, _webglm
    from workers.jobs.score import run_job
    from workers.jobs.validate import run_validate_job
    from workers.jobs.judge import JudgeSettings, run_judge_job
    from workers.protocols.linkage import LinkageSettings, run_linkage_job
    from workers.protocols.arena import run_arena_job
    from workers.protocols.lfqa_e import run_lfqa_e_job

    outs, bad = audited
    src = _write(tmp_path / "in.jsonl", _records()[:6])
    run_job(src, "lfqa-hp", list(Const.specs), outs / "score", config=CONFIG, progress=False, scorers=[Const()])
    run_validate_job(src, "lfqa-hp", list(Const.specs), outs / "validate", config=CONFIG, progress=False,
                     scorers=[Const()], n_boot=20)
    settings = JudgeSettings("plain")
    run_judge_job(src, "lfqa-hp", settings, outs / "judge", config=CONFIG, progress=False,
                  scorer=LengthJudge([s.version for s in settings.specs]))
    graded = _webglm(tmp_path)
    run_linkage_job(graded, outs / "linkage", config=CONFIG, settings=SETTINGS, signals=False, n_boot=20,
                    scorer=Counting(), progress=False)
    with pytest.raises(InputError):  # no list generated: the reasons are published, no table
        run_linkage_job(graded, outs / "linkage_failed", config=CONFIG,
                        settings=LinkageSettings("listwise", references="generated"), signals=False, n_boot=20,
                        scorer=Counting(), reference_generator=_generator({}), progress=False)
    ann, files = _arena_files(tmp_path)
    run_arena_job(ann, files, outs / "arena", config=CONFIG, n_boot=20, progress=False,
                  scorer=ProtocolJudgeScorer(FakeEngine(), [protocol_judge("arena.pairwise.v1")]),
                  answer_mapping="qid=qid,answer=answer,label=human")
    run_lfqa_e_job(graded, "graded", outs / "lfqa_e", config=CONFIG, n_boot=20, progress=False,
                   scorer=ProtocolJudgeScorer(FakeEngine(), [protocol_judge("lfqa_e.reference_tie.v1")]))
    made = {d.name: set(json.loads((d / "manifest.json").read_text())["published"]) for d in outs.iterdir()}
    assert made["score"] >= {"answers.parquet", "pairs.parquet", "rejects.jsonl"}
    assert made["validate"] == {"validity_pairs.parquet", "validity.parquet", "report.md"}
    assert made["linkage_failed"] == {"rejects.jsonl", "report.md"} and "report.md" in made["arena"]
    assert bad == [], "\n".join(bad)
