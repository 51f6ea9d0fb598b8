"""The judge job: every pair in both orders, the score job's splits, resume, rejects and one-line errors.

The judge here is a deterministic fake (a length judge) so that the job's plumbing can be checked
exactly; the real engine judge is tested in tests/models/llm/test_judges.py.
"""

import json
from importlib import resources

import pyarrow.parquet as pq
import pytest

from rubric.config import ScoringConfig
from rubric.errors import ConfigError, EngineError
from rubric.scoring import Provenance, Score
from rubric.scoring import resolve_rubrics
from workers.jobs.judge import JudgeSettings, run_judge_job

SAMPLE = resources.files("rubric") / "data" / "sample_pairs.jsonl"
CONFIG = ScoringConfig(batch_size=4)


class LengthJudge:
    """Prefers the longer answer, a bit more so when it is shown first; can die after N calls."""

    def __init__(self, versions, die_after=None):
        self.versions, self.die_after, self.calls, self.judged = list(versions), die_after, 0, 0

    def provenance(self, version):
        return Provenance(version, "fake", "length-judge", "1", "t" * 8)

    def judge_pairs(self, pairs):
        self.calls += 1
        if self.die_after is not None and self.calls > self.die_after:
            raise EngineError("engine died")
        self.judged += len(pairs)
        out = []
        for p in pairs:
            longer_a = len(p.answer_a) >= len(p.answer_b)
            p_ab = 0.7 if longer_a else 0.4   # shown as given: a first
            p_ba = 0.6 if longer_a else 0.2   # swapped: a second, so a little less
            deb = (p_ab + p_ba) / 2
            extras = {"p_a_ab": p_ab, "p_a_ba": p_ba, "p_tie_ab": None, "p_tie_ba": None,
                      "decision_ab": "a" if p_ab > 0.5 else "b", "decision_ba": "a" if p_ba > 0.5 else "b",
                      "decision": "a" if deb > 0.5 else "b", "error_ab": None, "error_ba": None}
            out.append({v: Score.ok(deb, **extras) for v in self.versions})
        return out


def _records():
    return [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").split("\n") if line.strip()]


def _write(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


class Const:
    """A conciseness scorer for the score job beside the judge job."""

    specs = tuple(resolve_rubrics("conciseness"))

    def provenance(self, r):
        return Provenance("conciseness.lexical_density.v1", "const")

    def score_batch(self, items):
        return [{"conciseness": Score.ok(0.5 + 0.001 * len(it.answer) % 0.4)} for it in items]


@pytest.fixture()
def settings():
    return JudgeSettings("plain,rubrics")


def test_every_pair_in_both_orders_with_the_score_jobs_splits(tmp_path, settings):
    src = _write(tmp_path / "in.jsonl", _records())
    judge = LengthJudge([s.version for s in settings.specs])
    m = run_judge_job(src, "lfqa-hp", settings, tmp_path / "j", config=CONFIG, progress=False, scorer=judge)
    t = pq.read_table(tmp_path / "j" / "judgments.parquet").to_pylist()
    n_pairs = m["counts"]["pairs"]
    assert len(t) == n_pairs * 2 * 2 == m["counts"]["judgment_rows"]
    by = {}
    for r in t:
        by.setdefault((r["pair_id"], r["judge"]), []).append(r["order"])
    assert all(sorted(v) == ["ab", "ba"] for v in by.values()) and len(by) == n_pairs * 2
    assert m["counts"]["rows_in"] == m["counts"]["rows_ok"] + m["counts"]["rejected"]
    # the same splits as the score job on the same inputs and seed: analyze joins the two on pair_id
    from workers.jobs.score import run_job
    run_job(src, "lfqa-hp", list(Const.specs), tmp_path / "s", config=CONFIG, progress=False,
            scorers=[Const()])
    score_split = {r["pair_id"]: r["split"] for r in pq.read_table(tmp_path / "s" / "pairs.parquet").to_pylist()}
    assert {r["pair_id"]: r["split"] for r in t} == score_split
    row = next(r for r in t if r["order"] == "ba")
    assert row["p_a_debiased"] == pytest.approx((next(x["p_a"] for x in t if x["pair_id"] == row["pair_id"]
                                                      and x["judge"] == row["judge"] and x["order"] == "ab")
                                                 + row["p_a"]) / 2)


def test_engine_failure_resumes_from_finished_chunks(tmp_path, settings, monkeypatch):
    monkeypatch.setattr("workers.jobs.judge.CHECKPOINT_PAIRS", 8)
    src = _write(tmp_path / "in.jsonl", _records())
    versions = [s.version for s in settings.specs]
    with pytest.raises(EngineError):
        run_judge_job(src, "lfqa-hp", settings, tmp_path / "j", config=CONFIG, progress=False,
                      scorer=LengthJudge(versions, die_after=3))  # 2 batches of 4 = one 8-pair chunk stored
    again = LengthJudge(versions)
    m = run_judge_job(src, "lfqa-hp", settings, tmp_path / "j", config=CONFIG, progress=False, scorer=again)
    assert again.judged == m["counts"]["pairs"] - 8 == m["job"]["pairs_judged_now"]
    # other judge settings are another key: everything is judged again, and the manifest says why
    other = JudgeSettings("plain,rubrics", mode="vote")
    third = LengthJudge(versions)
    m2 = run_judge_job(src, "lfqa-hp", other, tmp_path / "j", config=CONFIG, progress=False, scorer=third)
    assert third.judged == m2["counts"]["pairs"]
    assert "judge.mode: 'logprob' -> 'vote'" in m2["inputs"][0]["rescored_because"]


def test_one_folder_holds_one_kind_of_jobs_output(tmp_path, settings):
    """A score job refuses a judge output's folder (its judgments would stay beside the new tables, and
    analyze would read both); a judge run without a protocol page drops the page an earlier run published."""
    from rubric.io import check_published
    from workers.jobs.score import run_job
    from workers.jobs.judge import JudgeKind, ProtocolPage
    from workers.runner import prebuilt, run

    class Paged(JudgeKind):  # a protocol's judge kind: its page is published with the judgments
        protocol = "arena"

        def page(self, **_):
            return ProtocolPage("# a protocol's page\n")

    src = _write(tmp_path / "in.jsonl", _records()[:6])
    versions = [s.version for s in settings.specs]
    out = tmp_path / "j"
    run(Paged("lfqa-hp", {}, settings, CONFIG, 0, prebuilt(LengthJudge(versions))), src, out, progress=False,
        check=False)
    assert (out / "report.md").is_file()
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(ConfigError, match=r"holds another kind of job's output \(arena: judgments.parquet, report.md"):
        run_job(src, "lfqa-hp", list(Const.specs), out, config=CONFIG, progress=False, scorers=[Const()])
    assert sorted(p.name for p in out.iterdir()) == before  # refused before anything was written
    run_judge_job(src, "lfqa-hp", settings, out, config=CONFIG, progress=False, scorer=LengthJudge(versions))
    assert not (out / "report.md").exists()
    check_published(out)
    assert set(json.loads((out / "manifest.json").read_text())["published"]) == {"judgments.parquet",
                                                                                 "rejects.jsonl", "costs.parquet"}


def test_refuses_a_score_output_folder_and_bad_settings(tmp_path, settings):
    out = tmp_path / "out"  # a score output of an older version (its manifest lists no files)
    out.mkdir()
    (out / "answers.parquet").write_text("x")
    (out / "manifest.json").write_text('{"tool": "lfqa-rubric"}')
    src = _write(tmp_path / "in.jsonl", _records()[:3])
    with pytest.raises(ConfigError, match="score job's tables"):
        run_judge_job(src, "lfqa-hp", settings, out, config=CONFIG, progress=False, scorer=object())
    with pytest.raises(ConfigError, match="'mode'"):
        JudgeSettings("plain", mode="coin")
    with pytest.raises(ConfigError, match="'n_votes'"):
        JudgeSettings("plain", n_votes=0)
