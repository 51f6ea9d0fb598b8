"""``lfqa-rubric validate`` end to end: the job on the runner and its store, the printed table, report.md,
the Parquet tables and the manifest, a re-run that reuses every score, --preset, and the HTML section."""

import json
from importlib import resources

import pyarrow.parquet as pq
import pytest

from rubric.config import ScoringConfig
from rubric.io import content_id
from rubric.scoring import Provenance, Score, resolve_rubrics
from rubric.validity import read_validity
from workers.cli import build_parser, main
from workers.cli.presets import apply_preset

SAMPLE = str(resources.files("rubric") / "data" / "sample_pairs.jsonl")
CHEAP = ["--rubrics", "conciseness,grammar,length", "--quiet"]


def _run(out, *extra):
    code = main(["validate", SAMPLE, "--format", "lfqa-hp", *CHEAP, "--out", str(out), "--n-boot", "200", *extra])
    assert code == 0
    return json.loads((out / "manifest.json").read_text())


def test_validate_prints_the_table_writes_its_report_and_reuses_the_store(tmp_path, capsys):
    out = tmp_path / "v"
    manifest = _run(out, "--max-questions", "6")
    printed = capsys.readouterr().out
    assert printed.startswith("| rubric version | family | expects | n | pass rate [95% CI] | constant | length | ties "
                              "| fails | missing | |")
    assert "| conciseness.lexical_density.v1 | filler | lower |" in printed
    assert "| grammar.harper.v1 | shuffle | same (invariance) |" in printed
    # every row beside a constant scorer and length on the same pairs: a shuffle is passed by both (every pair a
    # tie for a constant, the same words for length), so grammar passing it says nothing and is marked so
    shuffle = next(line for line in printed.splitlines() if line.startswith("| grammar.harper.v1 | shuffle |"))
    cells = [c.strip() for c in shuffle.strip("|").split("|")]
    assert cells[5:7] == ["1.000", "1.000"] and cells[-1] == "uninformative"
    filler = next(line for line in printed.splitlines() if line.startswith("| conciseness.lexical_density.v1 | filler"))
    cells = [c.strip() for c in filler.strip("|").split("|")]
    assert cells[5:7] == ["0.000", "0.000"] and cells[-1] == ""  # filler adds words: neither baseline passes
    assert "No selected family checks length.words.v1." in printed
    v = manifest["validity"]
    assert manifest["kind"] == "validate" and v["seed"] == 0 and v["max_questions"] == 6
    # by default the families that check one of the rubrics
    assert v["families"] == ["shuffle", "filler", "agreement", "typos", "drop_function_words"]
    assert v["tolerance"] == 1e-4
    assert v["rubrics"] == {"conciseness": "conciseness.lexical_density.v1", "grammar": "grammar.harper.v1",
                            "length": "length.words.v1"}
    assert manifest["counts"]["questions"] == 6
    scored = manifest["job"]["answers_scored_now"]
    assert scored == manifest["counts"]["answers"] > 6
    # the tables: one row per pair and rubric, each perturbed copy scored under its own id
    rows = pq.read_table(out / "validity_pairs.parquet").to_pylist()
    assert {r["family"] for r in rows} >= {"shuffle", "filler", "agreement", "typos"}
    for r in rows:
        # keyed like any answer: by its text and what its scores read (the original's documents, when it has some)
        assert r["perturbed_id"] != r["original_id"] and r["perturbed"] != r["original"]
        assert r["perturbed_id"] == content_id(r["question"], r["perturbed"]) or r["original_id"] != content_id(
            r["question"], r["original"])
        assert r["seed"] == 0
    filler = [r for r in rows if r["family"] == "filler"]
    assert filler and all(r["passed"] and r["difference"] < 0 for r in filler)  # filler lowers lexical density
    summary = pq.read_table(out / "validity.parquet").to_pylist()
    assert {(s["rubric"], s["family"]) for s in summary} >= {("conciseness", "filler"), ("grammar", "typos")}
    report = (out / "report.md").read_text()
    assert report.startswith("# Rubric validity: minimal pairs") and "## Families" in report
    assert printed.strip() in report  # the printed table is the report's
    # the same run again: every score from the store, the same table
    again = _run(out, "--max-questions", "6")
    assert again["job"]["answers_scored_now"] == 0 and again["inputs"][0]["status"] == "reused"
    assert capsys.readouterr().out == printed
    # another seed: other copies, so the unit is scored again; the originals are the same answers
    other = _run(out, "--max-questions", "6", "--seed", "1")
    assert other["validity"]["seed"] == 1 and other["job"]["answers_scored_now"] > 0
    rows1 = pq.read_table(out / "validity_pairs.parquet").to_pylist()
    assert {r["original_id"] for r in rows1} == {r["original_id"] for r in rows}
    assert {r["perturbed_id"] for r in rows1} != {r["perturbed_id"] for r in rows}


def test_families_and_tolerance_are_the_users(tmp_path, capsys):
    out = tmp_path / "v"
    m = _run(out, "--max-questions", "4", "--families", "filler,shuffle", "--tolerance", "10")
    printed = capsys.readouterr().out
    assert m["validity"]["families"] == ["shuffle", "filler"] and m["validity"]["tolerance"] == 10.0
    assert set(m["validity"]["pairs_by_family"]) == {"shuffle", "filler"}
    # every difference is a tie under a tolerance of 10: lower fails, same passes
    shown = read_validity(out, n_boot=50)["table"]
    by = {(r.rubric, r.family): r for r in shown.rows}
    assert by["conciseness", "filler"].passes == 0 and by["conciseness", "filler"].ties == by["conciseness", "filler"].n
    assert by["grammar", "shuffle"].pass_rate == 1.0
    assert "| grammar.harper.v1 | typos |" not in printed


@pytest.mark.parametrize("argv,msg", [
    (["--families", "echo,nope"], "unknown validity family 'nope'"),
    (["--tolerance", "-1"], "'tolerance'"),
    (["--max-questions", "0"], "'max_questions'"),
    (["--families", "echo,filler"], "--families echo: checks none of the rubrics conciseness, grammar"),
    (["--rubrics", "length"], "no family checks any of the rubrics length"),
])
def test_bad_options_are_one_line(argv, msg, tmp_path, capsys):
    assert main(["validate", SAMPLE, "--format", "lfqa-hp", "--out", str(tmp_path / "o"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "\n" not in err


def test_the_cpu_preset_takes_its_rubric_versions_and_signals():
    from rubric.presets import CPU

    args = build_parser().parse_args(["validate", SAMPLE, "--format", "lfqa-hp", "--preset", "cpu"])
    apply_preset(args, "validate")
    assert args.rubrics.split(",") == [*CPU.rubric_versions.values(), *CPU.signals.values()]
    args = build_parser().parse_args(["validate", SAMPLE, "--format", "lfqa-hp", "--preset", "cpu",
                                      "--rubrics", "coherence,grammar"])
    apply_preset(args, "validate")
    assert args.rubrics == f"{CPU.rubric_versions['coherence']},{CPU.rubric_versions['grammar']}"


def test_the_html_report_has_the_validity_section(tmp_path):
    out = tmp_path / "v"
    _run(out, "--max-questions", "4", "--families", "filler,typos")
    html = tmp_path / "r.html"
    assert main(["report", str(out), "--html", str(html), "--n-boot", "50"]) == 0
    page = html.read_text()
    assert 'id="validity"' in page and 'data-table="validity"' in page
    assert 'data-rubric="conciseness.lexical_density.v1" data-family="filler"' in page
    assert "<details class=\"validity-failing\" data-rubric=\"grammar.harper.v1\" data-family=\"typos\"" in page


@pytest.mark.real_model
def test_the_llm_rubrics_run_through_the_same_check(tmp_path, capsys):
    """The paper's G-Eval versions on the embedded judge (slow on CPU: two questions, two families)."""
    out = tmp_path / "v"
    assert main(["validate", SAMPLE, "--format", "lfqa-hp", "--rubrics", "coherence,relevance", "--out", str(out),
                 "--max-questions", "2", "--families", "echo,shuffle", "--quiet", "--n-boot", "50"]) == 0
    printed = capsys.readouterr().out
    assert "| coherence.geval.v1 | shuffle | lower |" in printed and "| relevance.geval.v1 | echo | lower |" in printed
    rows = pq.read_table(out / "validity_pairs.parquet").to_pylist()
    assert rows and all(r["outcome"] in ("pass", "tie", "fail") for r in rows)  # every side scored
    assert all(1.0 <= r["original_score"] <= 5.0 for r in rows)


class _Fake:
    """A conciseness scorer: the answer's length, and a failed score for answers with filler (a missing side)."""

    specs = tuple(resolve_rubrics("conciseness"))

    def provenance(self, r):
        return Provenance("conciseness.lexical_density.v1", "fake")

    def score_batch(self, items):
        return [{"conciseness": Score.failed("no") if "worth keeping in mind" in it.answer or "In other words" in
                 it.answer else Score.ok(len(it.answer) / 1e4)} for it in items]


def test_a_failed_score_is_missing_not_a_fail(tmp_path):
    from workers.jobs.validate import run_validate_job

    out = tmp_path / "v"
    m = run_validate_job(SAMPLE, "lfqa-hp", list(_Fake.specs), out, config=ScoringConfig(batch_size=8),
                         progress=False, scorers=[_Fake()], n_boot=20, families=["filler", "shuffle"])
    rows = {r.family: r for r in read_validity(out, n_boot=20)["table"].rows}
    filler, shuffle = rows["filler"], rows["shuffle"]
    assert filler.missing > 0 and filler.passes == 0 and filler.fails == filler.n - filler.missing > 0  # longer
    assert (shuffle.missing, shuffle.passes, shuffle.fails) == (0, shuffle.n, 0)  # the same length: a tie
    assert m["rubrics"]["conciseness"]["backend"] == "fake"


def test_copies_made_otherwise_are_scored_again_not_missing(tmp_path, monkeypatch):
    """A family's rule changed in a later release makes other copies from the same input and seed: the store,
    keyed by the items, is not taken as done."""
    import rubric.validity._families as families
    from workers.jobs.validate import run_validate_job

    def run():
        return run_validate_job(SAMPLE, "lfqa-hp", list(_Fake.specs), tmp_path / "v", config=ScoringConfig(),
                                progress=False, scorers=[_Fake()], n_boot=20, families=["filler"], max_questions=3)

    first = run()
    assert run()["job"]["answers_scored_now"] == 0
    monkeypatch.setattr(families, "_FILLER", ("That is all.", "Nothing more to add.", "Thanks for asking."))
    again = run()
    assert again["job"]["answers_scored_now"] > 0 and again["inputs"][0]["status"] == "scored"
    (row,) = read_validity(tmp_path / "v", n_boot=20)["table"].rows
    assert row.missing == 0 and row.n == first["validity"]["pairs_by_family"]["filler"]


def test_nothing_to_validate_is_exit_2_with_the_reason(tmp_path, capsys):
    """Issue 59: on f2de0e0 ``validate`` on a file whose every row is rejected exited 0 with an all-n/a report, where
    ``score`` exits 2 on the same file; now it stops in one line with the first reason, and publishes nothing."""
    rows = [json.loads(line) for line in open(SAMPLE, encoding="utf-8") if line.strip()][:4]
    for r in rows:
        r["answer_1"] = "   "
    src = tmp_path / "bad.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "v"
    assert main(["validate", str(src), "--format", "lfqa-hp", "--rubrics", "conciseness", "--quiet", "--out",
                 str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing to validate" in err[0] and "4 row(s) rejected" in err[0] \
        and "answer_1" in err[0], err
    assert not (out / "manifest.json").exists() and not (out / "report.md").exists()
    assert main(["score", str(src), "--format", "lfqa-hp", "--rubrics", "length", "--quiet",
                 "--out", str(tmp_path / "s")]) == 2


def _damage_in_place(path) -> str:
    """Four bytes of the table zeroed, its size kept (what a size check cannot see), at the first place where pyarrow
    reading it by path raises what is no OSError (an ArrowInvalid: the old reader's traceback); returns that error."""
    import io

    import pyarrow.parquet as pq

    data = path.read_bytes()
    for at in range(4, len(data) - 8, 16):
        damaged = data[:at] + bytes(4) + data[at + 4:]
        if damaged == data:
            continue
        try:
            pq.read_table(io.BytesIO(damaged))
        except OSError:
            continue
        except Exception as e:  # noqa: BLE001 - the kind the command line did not turn into one line
            path.write_bytes(damaged)
            return f"{type(e).__name__}: {e}"
    pytest.fail(f"no damage of {path} makes pyarrow raise anything but OSError")


def test_a_damaged_validity_table_of_the_recorded_size_is_one_line(tmp_path, capsys):
    """Issue 59: on f2de0e0 ``report V --html`` on a validity_pairs.parquet damaged in place (its recorded size kept)
    was a pyarrow traceback; validate's tables are read through the one guarded reader now."""
    from rubric.validity import OUTCOMES_FILE

    out = tmp_path / "v"
    _run(out, "--max-questions", "3", "--families", "filler")
    size = (out / OUTCOMES_FILE).stat().st_size
    why = _damage_in_place(out / OUTCOMES_FILE)
    assert (out / OUTCOMES_FILE).stat().st_size == size and not why.startswith("OSError")
    capsys.readouterr()
    assert main(["report", str(out), "--html", str(tmp_path / "r.html"), "--n-boot", "20"]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert "Traceback" not in err and len(lines) == 1 and str(out / OUTCOMES_FILE) in lines[0], err
    assert not (tmp_path / "r.html").exists()


def test_a_reader_racing_a_republish_of_a_validate_folder_never_reads_intact_files_as_corrupt(tmp_path):
    """Issue 59: on f2de0e0 ``read_validity`` read a table by its path (pyarrow opened it more than once), so a reader
    racing a re-publish read intact files as "Invalid column metadata (corrupt file?)" 187-309 times in 20 s. Two
    validate runs' files are published into one folder by turns while it is read: every read gives one of the two
    runs' tables, or an honest refusal that a publish is going on, never a damaged file."""
    import shutil
    import threading
    import time

    from rubric.errors import InputError
    from rubric.validity import OUTCOMES_FILE, REPORT_FILE, SUMMARY_FILE
    from workers.storage.outdir import OutputFolder

    runs = {}
    for seed in (0, 1):
        src = tmp_path / f"run{seed}"
        _run(src, "--max-questions", "4", "--families", "filler,typos", "--seed", str(seed))
        runs[seed] = (src, json.loads((src / "manifest.json").read_text()))
    names = (OUTCOMES_FILE, SUMMARY_FILE, REPORT_FILE)
    out = tmp_path / "v"
    shutil.copytree(runs[0][0], out)
    n_rows = {len(read_validity(runs[s][0], n_boot=5)["table"].rows) for s in runs}
    stop = threading.Event()
    published = [0]

    def republish():
        with OutputFolder(out, outputs=names) as folder:
            while not stop.is_set():
                src, manifest = runs[published[0] % 2]
                staging = folder.staging()
                for n in names:
                    shutil.copy(src / n, staging / n)
                folder.publish({n: staging / n for n in names}, {k: v for k, v in manifest.items()
                                                                 if k not in ("published", "sha256")})
                folder.remove(staging)
                published[0] += 1

    thread = threading.Thread(target=republish, daemon=True)
    thread.start()
    reads, refused, damaged = 0, [], []
    t_end = time.monotonic() + 5.0
    try:
        while time.monotonic() < t_end:
            try:
                got = read_validity(out, n_boot=5)
            except InputError as e:
                (damaged if "damaged" in str(e) or "corrupt" in str(e) else refused).append(str(e))
            else:
                reads += 1
                assert len(got["table"].rows) in n_rows
    finally:
        stop.set()
        thread.join(30)
    assert published[0] > 20 and reads > 20, (published[0], reads)
    assert not damaged, damaged[:3]
    assert all("is being written" in e or "does not match" in e for e in refused), refused[:3]


def test_validate_prints_the_table_its_job_published_not_a_new_summary(tmp_path, capsys, monkeypatch):
    """The command prints what its job computed: read back from ``validity.parquet`` (with the failing examples the
    job picked from its pairs), never summarised again: no bootstrap runs when the folder is read."""
    import rubric.validity._stats as stats
    from rubric.validity import summary_table, table_markdown, validity_page

    out = tmp_path / "v"
    manifest = _run(out, "--max-questions", "6", "--families", "filler,typos,shuffle")
    printed = capsys.readouterr().out

    def no_bootstrap(*args, **kwargs):
        raise AssertionError("the table was summarised again")

    monkeypatch.setattr(stats, "clustered_mean", no_bootstrap)
    shown = read_validity(out)
    assert table_markdown(shown["table"]) == printed
    assert summary_table(shown["table"]).to_pylist() == pq.read_table(out / "validity.parquet").to_pylist()
    assert any(r.examples for r in shown["table"].rows)  # the report's failing examples, as the job picked them
    v = manifest["validity"]
    page = validity_page(shown["table"], inputs=[SAMPLE], seed=v["seed"], families=v["families"], n_boot=v["n_boot"])
    assert page == (out / "report.md").read_text(encoding="utf-8")
