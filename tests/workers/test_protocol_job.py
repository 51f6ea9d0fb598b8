"""The protocol jobs (LINKAGE, RAG-QA Arena, LFQA-E) on a fake engine: outputs, resume, rejects, reports,
and the judge command's --protocol flag errors in one line."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from models.judging import ProtocolJudgeScorer
from models.linkage import LinkageScorer
from rubric.config import ScoringConfig
from rubric.errors import ConfigError, EngineError, InputError
from rubric.protocols import protocol_judge
from tests.models.test_protocols import FakeEngine
from workers.cli import main
from workers.protocols.linkage import LinkageSettings, run_linkage_job
from workers.protocols.arena import run_arena_job
from workers.protocols.lfqa_e import run_lfqa_e_job

CONFIG = ScoringConfig(batch_size=4)


def _webglm(tmp_path, n=3):
    data = {}
    for i in range(n):
        data[f"question number {i}?"] = {
            "doc_list": [{"answer": f"answer BEST {i} one", "model": "m1", "label": 3},
                         {"answer": f"answer GOOD {i} two", "model": "m2", "label": 2},
                         {"answer": f"answer POOR {i} three", "model": "m3", "label": 1}],
            "ground3": f"REFTEXT gold {i}", "ground2": f"ref two {i}", "ground1": f"ref one {i}",
            "ground0": f"ref zero {i}"}
    path = tmp_path / "webglm.json"
    path.write_text(json.dumps(data))
    return path


class Counting(LinkageScorer):
    """A LinkageScorer on the fake engine that counts questions and can die after N calls."""

    def __init__(self, die_after=None):
        super().__init__(FakeEngine(), ("listwise", "point_no_ref", "pairwise_candidates"))
        self.die_after, self.n_calls, self.n_questions = die_after, 0, 0

    def score_questions(self, questions):
        self.n_calls += 1
        if self.die_after is not None and self.n_calls > self.die_after:
            raise EngineError("engine died")
        self.n_questions += len(questions)
        return super().score_questions(questions)


SETTINGS = LinkageSettings("listwise,point_no_ref,pairwise")


def test_linkage_job_outputs_and_report(tmp_path):
    src = _webglm(tmp_path)
    out = tmp_path / "out"
    m = run_linkage_job(src, out, config=CONFIG, settings=SETTINGS, signals=False, n_boot=50, scorer=Counting(),
                        progress=False, command="lfqa-rubric judge x --protocol linkage")
    t = pq.read_table(out / "linkage.parquet").to_pydict()
    assert len(t["answer_id"]) == 3 * 3 * 3  # questions x candidates x systems
    assert set(t["system"]) == {"listwise", "point_no_ref", "pairwise_candidates"}
    assert all(e is None for e in t["error"]) and set(t["model"]) == {"fake/protocols"}
    # the fake ranks BEST > GOOD > POOR: every system orders each question's answers as the labels do
    for s in ("listwise", "point_no_ref", "pairwise_candidates"):
        assert m["metrics"][s]["kendall"] == pytest.approx(1.0) and m["metrics"][s]["n_undefined"] == 0
    report = (out / "report.md").read_text()
    assert "| listwise | 1.000" in report and "Command: `lfqa-rubric judge x --protocol linkage`" in report
    assert (out / "rejects.jsonl").read_text() == ""
    assert m["inputs"][0]["status"] == "scored" and m["job"]["answers_scored_now"] == 9


def test_linkage_job_resumes_and_keeps_finished_chunks(tmp_path):
    src = _webglm(tmp_path, n=30)  # 90 candidates: 3 chunks of 32 answers (whole questions)
    out = tmp_path / "out"
    dying = Counting(die_after=1)
    with pytest.raises(EngineError, match="engine died"):
        run_linkage_job(src, out, config=CONFIG, settings=SETTINGS, signals=False, n_boot=20, scorer=dying,
                        progress=False)
    assert not (out / "manifest.json").exists()
    again = Counting()
    m = run_linkage_job(src, out, config=CONFIG, settings=SETTINGS, signals=False, n_boot=20, scorer=again,
                        progress=False)
    assert again.n_questions == 30 - dying.n_questions  # the first chunk was kept
    third = Counting(die_after=0)  # everything stored: the scorer is never called
    m2 = run_linkage_job(src, out, config=CONFIG, settings=SETTINGS, signals=False, n_boot=20, scorer=third,
                         progress=False)
    assert m2["inputs"][0]["status"] == "reused" and m2["metrics"] == m["metrics"]
    # another system list is another key: scored again
    m3 = run_linkage_job(src, out, config=CONFIG, settings=LinkageSettings("listwise"), signals=False, n_boot=20,
                         scorer=Counting(), progress=False)
    assert m3["inputs"][0]["status"] == "scored" and "systems" in m3["inputs"][0]["rescored_because"]


def test_linkage_job_rejects_questions_without_a_reference_list(tmp_path):
    data = {"q one?": [{"docid": "d1", "passage": "answer BEST a", "label": 3},
                       {"docid": "d2", "passage": "answer POOR b", "label": 0},
                       {"docid": "d3", "passage": "answer GOOD c", "label": 3},
                       {"docid": "d4", "passage": "answer POOR d", "label": 0}],
            "q two?": [{"docid": "d1", "passage": "answer GOOD x", "label": 1},
                       {"docid": "d2", "passage": "answer GOOD y", "label": 1}],
            "q three?": [{"docid": "d1", "passage": "no label"}]}
    src = tmp_path / "trec.json"
    src.write_text(json.dumps(data))
    out = tmp_path / "out"
    m = run_linkage_job(src, out, config=CONFIG, settings=LinkageSettings("listwise"), signals=False, n_boot=20,
                        scorer=Counting(), progress=False)
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    assert len(rejects) == 3
    assert sum("two distinct grades" in r["reason"] for r in rejects) == 2
    assert any(r["field"] == "label" for r in rejects)
    # q one: d1 (grade 3) and d2 (grade 0) are the references, d3 and d4 the candidates
    assert m["inputs"][0] == {**m["inputs"][0], "rows_in": 7, "candidates": 2, "references": 2, "rejected": 3}
    assert m["metrics"]["listwise"]["n_defined"] == 1


def _arena_files(tmp_path, n=4):
    ann = tmp_path / "annotations_science_with_citation.jsonl"
    ann.write_text("\n".join(json.dumps({"qid": f"s-{i}", "question": f"why {i}?", "answer": f"answer BEST ref {i}"})
                             for i in range(n)) + "\n")
    files = {}
    for name, marker in (("copy", "BEST ref"), ("worse", "GOOD"), ("worst", "POOR")):
        path = tmp_path / f"{name}.jsonl"
        rows = [{"qid": f"s-{i}", "answer": f"answer {marker} {i}",
                 "human": "tie" if name == "copy" else "loss"} for i in range(n)]
        if name == "worst":
            rows.append({"qid": "nope", "answer": "answer POOR x"})
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        files[name] = path
    return ann, files


def test_arena_job_win_rates_ratings_and_rejects(tmp_path):
    ann, files = _arena_files(tmp_path)
    out = tmp_path / "out"
    scorer = ProtocolJudgeScorer(FakeEngine(), [protocol_judge("arena.pairwise.v1")])
    m = run_arena_job(ann, files, out, config=CONFIG, n_boot=50, scorer=scorer, progress=False,
                      answer_mapping="qid=qid,answer=answer,label=human")
    t = pq.read_table(out / "judgments.parquet").to_pydict()
    assert len(t["pair_id"]) == 3 * 4 * 2 and set(t["judge"]) == {"arena.pairwise.v1"}
    report = (out / "report.md").read_text()
    assert "| copy | 0.000 [0.000, 0.000] | 1.000 [1.000, 1.000] | 4 | 0 |" in report  # itself: always a tie
    assert "| worse | 0.000 [0.000, 0.000] | 0.000 [0.000, 0.000] | 4 | 0 |" in report
    assert "Elo (online, K=4)" in report and "| lfrqa | 1016" in report
    assert "Bradley-Terry ratings are unbounded" in report  # the reference never lost: said, not hidden
    assert "| 12 | 1.000 | 1.000 | 1.000 |" in report  # kappa against the human labels
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    assert [r["pair_id"] for r in rejects] == ["worst:nope"]
    assert m["protocol"] == "arena" and m["counts"]["rejected"] == 1
    # resume: the same pairs file (same bytes) reuses the store
    m2 = run_arena_job(ann, files, out, config=CONFIG, n_boot=50, scorer=scorer, progress=False,
                       answer_mapping="qid=qid,answer=answer,label=human")
    assert m2["inputs"][0]["status"] == "reused"


def test_arena_job_with_the_judges_own_reasoning(tmp_path):
    from rubric.judging import resolve_judges

    ann, files = _arena_files(tmp_path)
    out = tmp_path / "out"
    spec = resolve_judges("arena.pairwise_reasoning.v1")[0]
    eng = FakeEngine(texts={"Now compare": "I compare them.</thinking>"})
    m = run_arena_job(ann, files, out, config=CONFIG, n_boot=20, progress=False, reasoning_tokens=16,
                      scorer=ProtocolJudgeScorer(eng, [spec], max_reasoning_tokens=16))
    t = pq.read_table(out / "judgments.parquet").to_pydict()
    assert set(t["judge"]) == {"arena.pairwise_reasoning.v1"} and set(t["text"]) == {"I compare them.</thinking>"}
    assert m["settings"]["max_reasoning_tokens"] == 16
    assert sum(n for c, n in eng.calls if c == "generate") == sum(n for c, n in eng.calls if c == "score") == 24
    report = (out / "report.md").read_text()
    assert "Judge: arena.pairwise_reasoning.v1" in report and "at most 16 tokens" in report
    assert "| worse | 0.000 [0.000, 0.000] | 0.000 [0.000, 0.000] | 4 | 0 |" in report
    # the option is in the store key: without it (or with another budget) the pairs are judged again
    again = run_arena_job(ann, files, out, config=CONFIG, n_boot=20, progress=False,
                          scorer=ProtocolJudgeScorer(FakeEngine(), [protocol_judge("arena.pairwise.v1")]))
    assert again["inputs"][0]["status"] == "judged" and set(
        pq.read_table(out / "judgments.parquet").column("judge").to_pylist()) == {"arena.pairwise.v1"}
    other = run_arena_job(ann, files, out, config=CONFIG, n_boot=20, progress=False, reasoning_tokens=8,
                          scorer=ProtocolJudgeScorer(eng, [spec], max_reasoning_tokens=8))
    assert other["inputs"][0]["status"] == "judged"
    with pytest.raises(ConfigError, match="'reasoning_tokens' must be an integer >= 0"):
        run_arena_job(ann, files, out, config=CONFIG, reasoning_tokens=-1)


def test_lfqa_e_job_three_way_report(tmp_path):
    src = _webglm(tmp_path)
    out = tmp_path / "out"
    scorer = ProtocolJudgeScorer(FakeEngine(), [protocol_judge("lfqa_e.reference_tie.v1")])
    m = run_lfqa_e_job(src, "graded", out, config=CONFIG, n_boot=50, scorer=scorer, progress=False)
    report = (out / "report.md").read_text()
    assert "| lfqa_e.reference_tie.v1 | 1.000" in report  # the fake is always right; no tie label
    # the graded reader carries each WebGLM answer's "model" into its type: one model-model row
    assert "macro-F1" in report and "| lfqa_e.reference_tie.v1 | model-model | 1.000" in report
    assert "unknown (an answer type is empty)" not in report
    assert m["protocol"] == "lfqa-e" and m["counts"]["pairs"] == 9


@pytest.mark.parametrize("argv, message", [
    (["judge", "x", "--out", "o"], "judge needs --format"),
    (["judge", "x", "--out", "o", "--protocol", "arena"], "--protocol arena needs --systems NAME=FILE"),
    (["judge", "x", "--out", "o", "--protocol", "arena", "--systems", "a"], "must look like NAME=FILE"),
    (["judge", "x", "--out", "o", "--protocol", "arena", "--systems", "a=f", "a=g"], "names 'a' twice"),
    (["judge", "x", "--out", "o", "--protocol", "linkage", "--systems", "a=f"], "--systems applies to --protocol arena"),
    (["judge", "x", "--out", "o", "--format", "lfqa-eval", "--max-questions", "3"], "the pairwise judges"),
    (["judge", "x", "--out", "o", "--protocol", "linkage", "--format", "lfqa-eval"], "graded answer lists"),
    (["judge", "x", "--out", "o", "--protocol", "lfqa-e"], "--protocol lfqa-e needs --format"),
    (["judge", "x", "--out", "o", "--protocol", "arena", "--systems", "a=f", "--references", "generated"],
     "--references applies to --protocol linkage"),
    (["judge", "x", "--out", "o", "--protocol", "linkage", "--reference-max-tokens", "64"],
     "--reference-max-tokens applies to --references generated"),
    (["judge", "x", "--out", "o", "--protocol", "linkage", "--references", "generated", "--reference-max-tokens",
      "0"], "'reference_max_tokens' must be an integer in 1..4096, got 0"),
    (["judge", "x", "--out", "o", "--protocol", "arena", "--judges", "cot"], "runs its own judge"),
    (["judge", "x", "--out", "o", "--protocol", "linkage", "--reference-template",
      "linkage.create_multi_step_answer.v2"], "--reference-template applies to --references generated"),
    (["judge", "x", "--out", "o", "--protocol", "linkage", "--reasoning-tokens", "64"],
     "--reasoning-tokens applies to --protocol arena"),
    (["judge", "x", "--out", "o", "--protocol", "lfqa-e", "--format", "graded", "--tie"], "always offer one"),
    (["judge", "x", "--out", "o", "--protocol", "lfqa-e", "--format", "lfqa-eval", "--max-questions", "2"],
     "--max-questions reads a slice of graded lists"),
])
def test_protocol_flag_errors_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lfqa-rubric: error: ") and message in err


def test_protocol_judges_travel_to_ray_actors_by_name(monkeypatch):
    """The Ray judge actors rebuild JudgeSettings from plain data; the protocol spec and its scorer survive."""
    import models.llm as llm_scorer  # the face models.backends builds engines through
    from workers.jobs.judge import JudgeSettings, _scorer

    settings = JudgeSettings("arena.pairwise.v1,lfqa_e.reference_tie.v1")
    again = JudgeSettings(**json.loads(json.dumps(settings.arguments())))
    assert [s.version for s in again.specs] == ["arena.pairwise.v1", "lfqa_e.reference_tie.v1"]
    assert again.key() == settings.key()
    monkeypatch.setattr(llm_scorer, "build_engine", lambda config, logprobs_k=None: FakeEngine())
    assert type(_scorer(again, CONFIG)) is ProtocolJudgeScorer
    assert type(_scorer(JudgeSettings("plain"), CONFIG)).__name__ == "JudgeScorer"


def protocol_factory(settings, config):
    """The protocol judge scorer on the fake engine, built on a Ray worker (the checkout is on its path)."""
    return ProtocolJudgeScorer(FakeEngine(), settings.specs)


# --- LINKAGE with reference lists generated from one golden answer --------------------------------

GEN = "Answer1: a fair reply\nAnswer2: a weak reply\nAnswer3: an unrelated reply"


def _generator(texts):
    from models.linkage.references import ReferenceGenerator

    return ReferenceGenerator(FakeEngine(texts=texts), max_tokens=64)


def test_linkage_job_generated_references_cache_and_rejects(tmp_path):
    src = _webglm(tmp_path)
    out = tmp_path / "out"
    settings = LinkageSettings("listwise,point_no_ref", references="generated", reference_max_tokens=64)
    # question 1's generation has two answers only: its three candidates are rejects with the reason
    gen = _generator({"question number 0?": GEN, "question number 1?": "Answer1: x\nAnswer2: y",
                      "question number 2?": GEN})
    m = run_linkage_job(src, out, config=CONFIG, settings=settings, signals=False, n_boot=20, scorer=Counting(),
                        reference_generator=gen, progress=False)
    assert gen.engine.calls == [("generate", 3)]
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    assert len(rejects) == 3 and {r["row"] for r in rejects} == {1}
    assert all("question number 1?" in r["reason"] and "too short, 2 of 3" in r["reason"] for r in rejects)
    assert m["counts"]["rejected"] == 3 and m["inputs"][0]["candidates"] == 6
    assert m["generated_references"] == {**m["generated_references"], "questions": 3, "generated_now": 3,
                                         "from_cache": 0, "failed": 1, "answers_rejected": 3}
    report = (out / "report.md").read_text()
    assert "2 of 3 questions got a list (3 generated now, 0 from the cache); 1 failed, their 3 answers" in report
    assert "too short, 2 of 3" in report
    t = pq.read_table(out / "linkage.parquet").to_pydict()
    assert set(t["n_references"]) == {4} and len(t["answer_id"]) == 2 * 3 * 2
    # the golden answer is ground3 and heads the list the judge saw
    lines = [json.loads(x) for x in (out / "generated_references.jsonl").read_text().splitlines()]
    assert [x["question"] for x in lines] == [f"question number {i}?" for i in range(3)]

    # resume: nothing generated, nothing scored
    gen2 = _generator({"question number": GEN})
    m2 = run_linkage_job(src, out, config=CONFIG, settings=settings, signals=False, n_boot=20,
                         scorer=Counting(die_after=0), reference_generator=gen2, progress=False)
    assert gen2.engine.calls == [] and m2["inputs"][0]["status"] == "reused"
    assert m2["generated_references"]["from_cache"] == 3 and m2["metrics"] == m["metrics"]

    # another model revision: generated again; the lists differ (question 1 now parses), so the store is rescored
    gen3 = _generator({"question number": GEN})
    gen3.engine.revision = "r2"
    m3 = run_linkage_job(src, out, config=CONFIG, settings=settings, signals=False, n_boot=20, scorer=Counting(),
                         reference_generator=gen3, progress=False)
    assert gen3.engine.calls == [("generate", 3)] and m3["generated_references"]["failed"] == 0
    assert m3["inputs"][0]["status"] == "scored" and m3["counts"]["rejected"] == 0
    assert "reference_lists" in m3["inputs"][0]["rescored_because"]


def test_linkage_job_generated_references_golden_is_the_best_graded_answer(tmp_path):
    data = {"q one?": [{"docid": "d1", "passage": "answer GOOD a", "label": 2},
                       {"docid": "d2", "passage": "answer BEST b", "label": 3},
                       {"docid": "d3", "passage": "answer POOR c", "label": 0},
                       {"docid": "d4", "passage": "answer BEST d", "label": 3}],
            "q two?": [{"docid": "d1", "passage": "alone", "label": 1}]}
    src = tmp_path / "trec.json"
    src.write_text(json.dumps(data))
    seen = []

    class Spy(Counting):
        def score_questions(self, questions):
            seen.extend(questions)
            return super().score_questions(questions)

    settings = LinkageSettings("listwise", references="generated")
    m = run_linkage_job(src, tmp_path / "out", config=CONFIG, settings=settings, signals=False, n_boot=20,
                        scorer=Spy(), reference_generator=_generator({"q one?": GEN}), progress=False)
    (q,) = seen
    assert q.golden == "answer BEST b" and q.references == ("answer BEST b", "a fair reply", "a weak reply",
                                                             "an unrelated reply")
    assert [c.key for c in q.candidates] == ["0", "2", "3"]  # list keys; the golden answer (1) is taken out
    rejects = [json.loads(line) for line in (tmp_path / "out" / "rejects.jsonl").read_text().splitlines()]
    assert len(rejects) == 1 and "only answer" in rejects[0]["reason"]
    assert m["inputs"][0] == {**m["inputs"][0], "rows_in": 5, "candidates": 3, "references": 1, "rejected": 1}


def test_linkage_job_all_generations_fail_writes_rejects(tmp_path):
    src = _webglm(tmp_path)
    out = tmp_path / "out"
    with pytest.raises(InputError, match="3 of 3 generated reference lists failed"):
        run_linkage_job(src, out, config=CONFIG, settings=LinkageSettings("listwise", references="generated"),
                        signals=False, n_boot=20, scorer=Counting(), reference_generator=_generator({}),
                        progress=False)
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    assert len(rejects) == 9 and all("no 'Answer1:' label" in r["reason"] for r in rejects)
    report = (out / "report.md").read_text()
    assert "0 of 3 questions got a list (3 generated now, 0 from the cache); 3 failed, their 9 answers" in report
    # the failure is its own published set: the files above, no table (issue 35: OUT stays ours)
    assert set(json.loads((out / "manifest.json").read_text())["published"]) == {"rejects.jsonl", "report.md"}


def test_linkage_failed_rerun_replaces_the_earlier_runs_set(tmp_path):
    """The failure files of a re-run never sit beside an earlier run's table, nor under its manifest."""
    src = _webglm(tmp_path)
    out = tmp_path / "out"
    run_linkage_job(src, out, config=CONFIG, settings=SETTINGS, signals=False, n_boot=20, scorer=Counting(),
                    progress=False)
    assert (out / "linkage.parquet").is_file() and (out / "manifest.json").is_file()
    with pytest.raises(InputError, match="3 of 3 generated reference lists failed"):
        run_linkage_job(src, out, config=CONFIG, settings=LinkageSettings("listwise", references="generated"),
                        signals=False, n_boot=20, scorer=Counting(), reference_generator=_generator({}),
                        progress=False)
    assert not (out / "linkage.parquet").exists()
    assert set(json.loads((out / "manifest.json").read_text())["published"]) == {"rejects.jsonl", "report.md"}
    assert "3 failed" in (out / "report.md").read_text()
    assert len((out / "rejects.jsonl").read_text().splitlines()) == 9


# --- LINKAGE on Ray --------------------------------------------------------------------------------

def linkage_factory(settings, config):
    """The LINKAGE scorer on the fake engine, built on a Ray worker (the checkout is on its path)."""
    return LinkageScorer(FakeEngine(), settings.systems, mode=settings.mode,
                         max_pairwise_candidates=settings.max_pairwise_candidates)


def test_run_job_script_linkage_on_ray_resumes_a_partial_store_and_writes_the_single_process_tables(
        ray_local, tmp_path, monkeypatch):
    """``scripts/run_job.py --protocol linkage`` (the ``ray job submit`` entry point) on Ray, after a run that died
    with a partial store: only the missing questions are sent out, and the tables and report are the
    single-process job's."""
    import functools

    import workers.protocols.linkage as lj
    from tests.workers.test_ray_judges import _run_job_script
    from rubric.io import record_from_json, record_json
    from rubric.protocols import LinkageQuestion

    src = _webglm(tmp_path, n=12)  # 36 candidates: a local chunk of 32 answers is 10 questions
    local = run_linkage_job(src, tmp_path / "local", config=CONFIG, settings=SETTINGS, signals=False, n_boot=20,
                            scorer=Counting(), progress=False)
    out = tmp_path / "ray"
    job = [str(src), "--protocol", "linkage", "--linkage-systems", "listwise,point_no_ref,pairwise", "--no-signals",
           "--n-boot", "20", "--out", str(out), "--quiet"]
    dying = Counting(die_after=1)  # the same command in one process, dying after its first chunk: a partial store
    run_linkage = lj.run_linkage_job
    monkeypatch.setattr(lj, "run_linkage_job", functools.partial(run_linkage, scorer=dying))
    assert main(["judge", *job]) != 0
    assert 0 < dying.n_questions < 12
    monkeypatch.setattr(lj, "run_linkage_job", functools.partial(run_linkage, scorer_factory=linkage_factory))
    argv = [*job, "--llm-actors", "1", "--cpus-per-llm-actor", "0.5", "--ray-batch-size", "4"]
    assert _run_job_script().main(argv) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert (m["job"]["answers_scored_now"], m["job"]["runner"]) == (3 * (12 - dying.n_questions), "ray")
    assert m["metrics"] == local["metrics"] and m["inputs"][0]["status"] == "scored"
    report = (out / "report.md").read_text()
    assert "Command: `python scripts/run_job.py " in report and "| listwise | 1.000" in report
    cols = ("question_id", "answer_id", "label", "system", "score", "rank", "mass", "error", "template_hash")

    def rows(folder):
        t = pq.read_table(folder / "linkage.parquet").to_pylist()
        return [{k: r[k] for k in cols} for r in t]

    assert rows(out) == rows(tmp_path / "local")
    # everything stored: no question is sent out again (Ray is not even started)
    assert _run_job_script().main(argv) == 0
    again = json.loads((out / "manifest.json").read_text())
    assert again["inputs"][0]["status"] == "reused" and again["job"]["answers_scored_now"] == 0
    from rubric.protocols import read_linkage

    q = read_linkage(src).questions[0]
    assert record_from_json(LinkageQuestion, record_json(q)) == q


def test_run_job_script_protocol_options_need_the_protocol(tmp_path, capsys):
    from tests.workers.test_ray_judges import _run_job_script

    rc = _run_job_script().main(["x.json", "--format", "graded", "--judges", "plain", "--linkage-systems", "listwise",
                                 "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "--linkage-systems applies to --protocol linkage" in err and err.count("\n") == 1


def test_linkage_settings_reference_template_is_keyed_and_needs_generated_lists():
    v1 = LinkageSettings("listwise", references="generated")
    v2 = LinkageSettings("listwise", references="generated", reference_template="linkage.create_multi_step_answer.v2")
    assert "reference_template" not in v1.key() and v2.key()["reference_template"].endswith(".v2")
    assert LinkageSettings(**v2.arguments()).key() == v2.key()
    with pytest.raises(ConfigError, match="applies to references='generated'"):
        LinkageSettings("listwise", reference_template="linkage.create_multi_step_answer.v2")


def test_run_job_script_protocol_arena_on_ray_writes_the_single_process_judgments_and_report(ray_local, tmp_path, monkeypatch):
    import functools

    import workers.protocols.arena as pa
    from tests.workers.test_ray_judges import _run_job_script

    monkeypatch.setattr(pa, "run_arena_job", functools.partial(pa.run_arena_job, scorer_factory=protocol_factory))
    ann, files = _arena_files(tmp_path)
    out = tmp_path / "out"
    argv = [str(ann), "--protocol", "arena", "--systems", *(f"{n}={p}" for n, p in files.items()),
            "--answer-map", "qid=qid,answer=answer,label=human", "--n-boot", "20", "--llm-actors", "1",
            "--cpus-per-llm-actor", "0.5", "--out", str(out), "--quiet"]
    assert _run_job_script().main(argv) == 0
    report = (out / "report.md").read_text()
    assert "Command: `python scripts/run_job.py " in report
    assert "| worse | 0.000 [0.000, 0.000] | 0.000 [0.000, 0.000] | 4 | 0 |" in report
    m = json.loads((out / "manifest.json").read_text())
    assert m["protocol"] == "arena" and m["job"]["runner"] == "ray"
    assert m["counts"]["errors_by_judge"] == {"arena.pairwise.v1": 0}
    # the judgments made on Ray are the single-process job's
    run_arena_job(ann, files, tmp_path / "local", config=CONFIG, n_boot=20, progress=False,
                  answer_mapping="qid=qid,answer=answer,label=human",
                  scorer=ProtocolJudgeScorer(FakeEngine(), [protocol_judge("arena.pairwise.v1")]))
    cols = ("pair_id", "order", "p_a", "p_tie", "decision", "p_a_debiased", "decision_debiased", "template_hash")

    def rows(folder):
        t = pq.read_table(folder / "judgments.parquet").to_pylist()
        return sorted(({k: r[k] for k in cols} for r in t), key=lambda r: (r["pair_id"], r["order"]))

    assert rows(out) and rows(out) == rows(tmp_path / "local")


# --- one publish: the protocol's report and rejects are the judge job's output, under one manifest ------

def test_arena_report_and_rejects_are_published_with_the_judgments(tmp_path):
    from rubric.io import check_published

    ann, files = _arena_files(tmp_path)
    out = tmp_path / "out"
    m = run_arena_job(ann, files, out, config=CONFIG, n_boot=20, progress=False,
                      scorer=ProtocolJudgeScorer(FakeEngine(), [protocol_judge("arena.pairwise.v1")]),
                      answer_mapping="qid=qid,answer=answer,label=human")
    published = json.loads((out / "manifest.json").read_text())["published"]
    assert set(published) == {"judgments.parquet", "rejects.jsonl", "report.md", "costs.parquet"}
    assert all((out / n).stat().st_size == size for n, size in published.items())
    assert m["protocol"] == "arena" and m["arena"]["pairs"] == 12 and not (out / ".publishing").exists()
    check_published(out)
    (out / "report.md").write_text("edited by hand\n")
    with pytest.raises(InputError, match="does not match"):
        check_published(out)


def test_lfqa_e_table_counts_a_pair_rejected_as_a_duplicate_once(tmp_path):
    def pair(pid, q):
        return {"pair_id": pid, "question": f"question {q}?", "answer_a": f"answer BEST {q}",
                "answer_b": f"answer POOR {q}", "overall_preference": -1, "reference": f"REFTEXT {q}"}

    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text("".join(json.dumps(pair(p, p)) + "\n" for p in ("p1", "p2")))
    second.write_text("".join(json.dumps(pair(p, p)) + "\n" for p in ("p2", "p3")))  # p2 again: a reject
    out = tmp_path / "out"
    m = run_lfqa_e_job([first, second], "lfqa-eval", out, config=CONFIG, n_boot=20, progress=False,
                       scorer=ProtocolJudgeScorer(FakeEngine(), [protocol_judge("lfqa_e.reference_tie.v1")]))
    assert m["counts"]["pairs"] == 3 and m["counts"]["rejected"] == 1
    assert "(lfqa-eval); 3 pairs." in (out / "report.md").read_text()
    from rubric.html_report import build_report  # the HTML page's table re-reads the inputs the same way
    from workers.protocols import html_sections

    [(_, section)] = build_report([out], n_boot=20, sections=html_sections()).protocols
    assert section.breakdown.n_unknown_type == 3  # no answer types here: every labelled pair is "unknown"
    assert set(json.loads((out / "manifest.json").read_text())["published"]) == {
        "judgments.parquet", "rejects.jsonl", "report.md", "costs.parquet"}
