"""Issue 35's classes, each run against the real ``lfqa-rubric`` command in a temp folder; one line per class.

Usage::

    python scripts/repro_outdir_safety.py          # PASS/FAIL per class; exit 1 when any fails

Each class is what a careless user or an attacker does to an output folder (a user's folder given as
``--out``, a link planted where our lock or temp file goes, output over input, a lone surrogate in the
data, ...). A class passes when the run ends in a one-line refusal (exit 2) or a per-row reject, with
nothing outside ``OUT`` changed and nothing in ``OUT`` deleted that a run of ours did not publish.
The commands run in this process (``workers.cli.main``: the same entry point as the installed
command) with the CPU rubric ``conciseness``; the first one loads spaCy (~10 s). It uses nothing but
the command line and the file system, so it runs on any version: on one before issue 35 it shows
which classes failed. ``tests/reliability/test_outdir_safety.py`` pins each class as a fast test.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import logging
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LOCK = ".lfqa-rubric.lock"
SCORE = ("--format", "lfqa-hp", "--rubrics", "conciseness", "--quiet")


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")


def cli(*argv: str | Path) -> tuple[int, list[str]]:
    """``lfqa-rubric ARGV`` in this process: exit status, and its warnings and the lines it wrote to stderr."""
    from workers.cli import main

    err, logged = io.StringIO(), _Lines()
    logging.getLogger().addHandler(logged)
    try:
        with contextlib.redirect_stderr(err):
            rc = main([str(a) for a in argv])
    except BaseException as e:  # a traceback is a failure of the class, not of this script
        return -1, [f"{type(e).__name__}: {e}"]
    finally:
        logging.getLogger().removeHandler(logged)
    return rc, logged.lines + [line for line in err.getvalue().splitlines() if line.strip()]


def refused(rc: int, err: list[str], *words: str) -> bool:
    """Exit 2 with one line of ours, naming ``words``."""
    mine = [line for line in err if line.startswith("lfqa-rubric: error:")]
    return rc == 2 and len(mine) == 1 and all(w in mine[0] for w in words)


def sample(path: Path, n: int = 3, edit: Callable[[list[dict]], None] | None = None) -> Path:
    rows = [json.loads(line) for line in
            (resources.files("rubric") / "data" / "sample_pairs.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()][:n]
    if edit:
        edit(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def scored(w: Path, name: str = "O", n: int = 3) -> Path:
    """A score output of ours (the sample's first ``n`` pairs)."""
    out = w / name
    rc, err = cli("score", sample(w / f"in{n}.jsonl", n), *SCORE, "--out", out)
    assert rc == 0, err
    return out


@contextlib.contextmanager
def held(folder: Path, pid: int = 1):
    """Another command holding ``folder``'s lock: an flock on a second open of the lock file."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    os.write(fd, json.dumps({"pid": pid, "host": socket.gethostname(), "started": time.time(),
                             "command": "lfqa-rubric score x --out o"}).encode())
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        (folder / LOCK).unlink(missing_ok=True)


# --- the classes -------------------------------------------------------------------------------------

def foreign_out(w: Path) -> tuple[bool, str]:
    user = w / "user"
    user.mkdir()
    (user / "rescale.json").write_text("mine")
    (user / "claims.parquet").write_text("mine")
    (user / "answers.parquet").write_text("mine")
    before = snapshot(user)
    rc, err = cli("score", sample(w / "two.jsonl", 2), *SCORE, "--out", user)
    ok = refused(rc, err, "not an lfqa-rubric output folder", "--force") and snapshot(user) == before
    rc2, err2 = cli("score", w / "two.jsonl", *SCORE, "--out", user, "--force")
    forced = (rc2 == 0 and (user / "rescale.json").read_text() == "mine"
              and (user / "claims.parquet").read_text() == "mine" and (user / "answers.parquet").read_bytes() != b"mine"
              and any("answers.parquet" in line and "--force" in line for line in err2))
    return ok and forced, f"refused: rc {rc} {err[-1:]}; --force: rc {rc2}, replaced answers.parquet only: {forced}"


def foreign_store(w: Path) -> tuple[bool, str]:
    user = w / "user2"
    (user / "scores" / "two").mkdir(parents=True)
    (user / "scores" / "two" / "thesis.txt").write_text("thesis")
    rc, err = cli("score", sample(w / "two.jsonl", 2), *SCORE, "--out", user)
    first = refused(rc, err) and (user / "scores" / "two" / "thesis.txt").read_text() == "thesis"
    out = scored(w, "O", 2)  # ours; then a user's file in a store folder of it, and a changed input
    thesis = out / "scores" / "in2" / "thesis.txt"
    thesis.write_text("thesis")
    rc2, err2 = cli("score", sample(w / "in2.jsonl", 3), *SCORE, "--out", out)
    second = refused(rc2, err2, "thesis.txt") and thesis.read_text() == "thesis"
    return first and second, f"foreign OUT: rc {rc} {err[-1:]}; store of ours with a user's file: rc {rc2} {err2[-1:]}"


def output_over_input(w: Path) -> tuple[bool, str]:
    d = w / "D"
    src = sample(d / "in.jsonl", 2)
    results = []
    for argv in (("score", src, *SCORE, "--out", d), ("score", d, *SCORE, "--out", d),
                 ("score", d, *SCORE, "--out", d / "out")):
        before = snapshot(d)
        rc, err = cli(*argv)
        results.append(refused(rc, err, "overlaps") and snapshot(d) == before)
    out = scored(w, "O", 3)
    pairs = (out / "pairs.parquet").read_bytes()
    for argv in (("fit", out, "--out", out / "pairs.parquet", "--weight-boot", "0"),
                 ("export", out, "--to", out / "pairs.parquet")):
        rc, err = cli(*argv)
        results.append(rc == 2 and (out / "pairs.parquet").read_bytes() == pairs)
    return all(results), f"input in OUT, OUT == input folder, OUT in input folder, fit/export over a table: {results}"


def link_at_lock(w: Path) -> tuple[bool, str]:
    victim = w / "victim.txt"
    victim.write_text("precious")
    out = w / "O"
    out.mkdir()
    (out / LOCK).symlink_to(victim)
    rc, err = cli("score", sample(w / "two.jsonl", 2), *SCORE, "--out", out)
    first = rc == 2 and victim.read_text() == "precious"
    done = scored(w, "S", 2)
    (done / LOCK).symlink_to(victim)
    rc2, err2 = cli("fit", done, "--out", done / "model.json", "--weight-boot", "0")
    second = rc2 == 2 and victim.read_text() == "precious"
    return first and second, f"score: rc {rc} {err[-1:]}; fit: rc {rc2} {err2[-1:]}"


def link_at_scores(w: Path) -> tuple[bool, str]:
    elsewhere = w / "elsewhere"
    elsewhere.mkdir()
    out = scored(w, "O", 2)  # ours, with its store replaced by a link out of it
    os.rename(out / "scores", w / "old-scores")
    (out / "scores").symlink_to(elsewhere, target_is_directory=True)
    rc, err = cli("score", sample(w / "in3.jsonl", 3), *SCORE, "--out", out)
    ok = refused(rc, err, "symbolic link") and not any(elsewhere.iterdir())
    return ok, f"rc {rc} {err[-1:]}; written outside: {sorted(os.listdir(elsewhere))}"


def link_at_temp(w: Path) -> tuple[bool, str]:
    victim = w / "victim.txt"
    victim.write_text("precious")
    out = scored(w, "O", 2)
    for name in (f".manifest.json.tmp-{os.getpid()}", f".publishing.tmp-{os.getpid()}"):
        (out / name).symlink_to(victim)  # where a run of this process put its temp files
    rc, err = cli("score", sample(w / "in3.jsonl", 3), *SCORE, "--out", out)
    intact = victim.read_text() == "precious"
    return rc == 0 and intact, f"rc {rc} {err[-1:]}; victim intact: {intact}"


def link_at_report_tmp(w: Path) -> tuple[bool, str]:
    victim = w / "victim.txt"
    victim.write_text("precious")
    out = scored(w, "O", 3)
    page = w / "H" / "page.html"
    page.parent.mkdir()
    (page.parent / "page.html.tmp").symlink_to(victim)
    rc, err = cli("report", out, "--html", page, "--n-boot", "20")
    return (victim.read_text() == "precious" and page.is_file() and not page.is_symlink(),
            f"rc {rc} {err[-1:]}; victim intact: {victim.read_text() == 'precious'}")


def out_tilde(w: Path) -> tuple[bool, str]:
    home, cwd = w / "home", w / "cwd"
    home.mkdir()
    cwd.mkdir()
    src = sample(w / "two.jsonl", 2)
    old_home, old_cwd = os.environ.get("HOME"), os.getcwd()
    os.environ["HOME"] = str(home)
    os.chdir(cwd)
    try:
        rc, err = cli("score", src, *SCORE, "--out", "~/res")
    finally:
        os.chdir(old_cwd)
        if old_home is None:
            os.environ.pop("HOME")
        else:
            os.environ["HOME"] = old_home
    ok = rc == 0 and (home / "res" / "manifest.json").is_file() and not (cwd / "~").exists()
    return ok, f"rc {rc} {err[-1:]}; in home: {(home / 'res' / 'manifest.json').is_file()}; ./~ made: {(cwd / '~').exists()}"


def leftovers(w: Path) -> tuple[bool, str]:
    out = scored(w, "O", 2)
    planted = [out / "scores" / ".index-scores-999999.sqlite", out / "scores" / ".run-scores-999999.sqlite",
               out / "scores" / ".merged-scores-999999.sqlite",
               out / ".staging-999999" / "pairs.parquet", out / "scores" / "in2" / ".part-00009.parquet.tmp-999999",
               out / ".manifest.json.tmp-999999"]
    for p in planted:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("left by a killed run")
    rc, err = cli("score", w / "in2.jsonl", *SCORE, "--out", out)
    left = [str(p.relative_to(out)) for p in planted if p.exists()] + (
        [".staging-999999"] if (out / ".staging-999999").exists() else [])
    return rc == 0 and not left, f"rc {rc}; still there: {left}"


def lone_surrogate(w: Path) -> tuple[bool, str]:
    def edit(rows):
        rows[0]["answer_1"] = rows[0]["answer_1"][:40] + "\ud800" + rows[0]["answer_1"][40:]

    src = sample(w / "sur.jsonl", 3, edit)
    out = w / "O"
    rc, err = cli("score", src, *SCORE, "--out", out)
    if rc != 0:
        return False, f"rc {rc} {err[-1:]}"
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text(encoding="utf-8").splitlines()]
    manifest = json.loads((out / "manifest.json").read_text())
    ok = (len(rejects) == 1 and rejects[0]["row"] == 0 and rejects[0]["field"] == "answer_1"
          and "U+D800" in rejects[0]["reason"] and manifest["counts"]["pairs"] == 2)
    return ok, f"rejects: {[r['reason'] for r in rejects]}; pairs {manifest['counts']['pairs']}"


def report_snapshot(w: Path) -> tuple[bool, str]:
    """A score run publishes into the folder while its page is built: the page is of one run, not a mix."""
    import rubric.html_report._build as build

    out = scored(w, "O", 8)
    real, calls = build.score_summary, []

    def summary_then_rescore(folder, **kw):
        s = real(folder, **kw)
        calls.append(s.n_pairs)
        if len(calls) == 1:  # a re-score with fewer pairs publishes now, between the page's reads
            rc, err = cli("score", sample(w / "in4.jsonl", 4), *SCORE, "--out", out)
            assert rc == 0, err
        return s

    build.score_summary = summary_then_rescore
    try:
        rc, err = cli("report", out, "--html", w / "page.html", "--n-boot", "20")
    finally:
        build.score_summary = real
    html = (w / "page.html").read_text(encoding="utf-8") if rc == 0 else ""
    # the page's pair browser holds the new run's 4 pairs; its summary must count them too
    ok = rc == 0 and calls[-1] == 4 and html.count("sample-0") > 0
    return ok, f"rc {rc}; pairs seen by each build's summary: {calls} (the new run has 4)"


def held_folder(w: Path) -> tuple[bool, str]:
    out = scored(w, "O", 3)
    results = {}
    with held(out):
        for name, argv in {"score": ("score", w / "in3.jsonl", *SCORE, "--out", out),
                           "fit": ("fit", out, "--out", out / "model.json", "--weight-boot", "0"),
                           "encoder": ("encoder", out, "--quiet"),
                           "perturb": ("perturb", w / "in3.jsonl", "--format", "lfqa-hp", "--attack", "deepwordbug",
                                       "--victim", out / "model.json", "--out", out / "perturbed.jsonl"),
                           "lfq": ("lfq", w / "in3.jsonl", "--format", "lfqa-hp", "--out", out / "lfq.parquet")}.items():
            rc, err = cli(*argv)
            results[name] = refused(rc, err, "is in use by pid 1")
    return all(results.values()), f"refused while another command holds OUT: {results}"


CLASSES: dict[str, Callable[[Path], tuple[bool, str]]] = {
    "--out into a foreign non-empty folder": foreign_out,
    "an OUT/scores/<stem>/ that is not ours": foreign_store,
    "output over input": output_over_input,
    "a symlink at the lock": link_at_lock,
    "a symlink at OUT/scores": link_at_scores,
    "a symlink at a staging/temp name": link_at_temp,
    "a symlink at report --html FILE.tmp": link_at_report_tmp,
    "--out '~'": out_tilde,
    "scratch files of killed runs": leftovers,
    "a lone surrogate in a text field": lone_surrogate,
    "report reads one published snapshot": report_snapshot,
    "encoder/perturb/lfq into a folder held by another command": held_folder,
}


def main() -> int:
    logging.basicConfig(handlers=[logging.NullHandler()])  # the commands' log lines are collected by cli()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="repro35-") as tmp:
        for i, (name, check) in enumerate(CLASSES.items()):
            w = Path(tmp) / f"c{i}"
            w.mkdir()
            try:
                ok, detail = check(w)
            except Exception as e:  # a crash of the scenario is a failure of its class
                ok, detail = False, f"{type(e).__name__}: {e}"
            failed += not ok
            sys.stdout.write(f"{'PASS' if ok else 'FAIL'} {name}: {detail}\n")
            sys.stdout.flush()
    sys.stdout.write(f"{len(CLASSES) - failed} of {len(CLASSES)} classes pass\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
