"""What each answer cost and what failed (issue 45): per-row cost kept with the score, reused rows counted as
reused, the failure budget, and ``--retry-failed`` re-scoring exactly the failed cells.

The scorers are deterministic fakes injected through the job function (as in test_job.py), so a failure can
be put on chosen rows; the real engines' token counts are checked in tests/models/llm/test_usage.py.
"""

import json
from importlib import resources

import pyarrow.parquet as pq
import pytest

from models.scorer_set import share_seconds
from rubric.config import ScoringConfig
from rubric.errors import ConfigError, FailureBudgetError
from rubric.scoring import RUBRICS, Provenance, Score
from rubric.tables import (COST_COLUMNS, CostRow, budget_lines, check_max_failed, cost_summary, over_budget,
                           roofline_estimate)
from workers.jobs.score import run_job
from workers.storage.codec import decode_score, encode_score

CONCISE = RUBRICS.get("conciseness.lexical_density.v1")
LENGTH = RUBRICS.get("length.words.v1")
SAMPLE = resources.files("rubric") / "data" / "sample_pairs.jsonl"


class TokenScorer:
    """One rubric, scored from the answer's length, with made-up token counts; fails on the answers in ``bad``."""

    def __init__(self, spec, bad=frozenset()):
        self.specs, self.bad = (spec,), set(bad)
        self.scored: list[str] = []

    def provenance(self, rubric):
        return Provenance(self.specs[0].version, "test", "fake-model", "1")

    def score_batch(self, items):
        if any(it.answer_id in self.bad for it in items):
            raise ValueError("chosen to fail")
        self.scored += [it.answer_id for it in items]
        name = self.specs[0].name
        return [{name: Score(raw=min(1.0, len(it.answer) / 1000), cost={
            "prompt_tokens": 100 + len(it.answer) // 10, "cached_prompt_tokens": 20, "generated_tokens": 1})}
            for it in items]


def _input(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(SAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    return path


def _run(src, out, scorers, specs=(CONCISE,), **kw):
    return run_job(src, "lfqa-hp", list(specs), out, config=ScoringConfig(batch_size=4), progress=False,
                   scorers=list(scorers), **kw)


def _answer_ids(out):
    return sorted(pq.read_table(out / "answers.parquet", columns=["answer_id"]).column("answer_id").to_pylist())


def test_every_row_has_its_cost_and_the_manifest_per_1000_is_the_sum_of_the_rows(tmp_path):
    src = _input(tmp_path)
    manifest = _run(src, tmp_path / "out", [TokenScorer(CONCISE)])
    costs = pq.read_table(tmp_path / "out" / "costs.parquet").to_pylist()
    assert tuple(pq.read_schema(tmp_path / "out" / "costs.parquet").names) == COST_COLUMNS
    ids = _answer_ids(tmp_path / "out")
    assert [r["id"] for r in costs] == ids and {r["name"] for r in costs} == {"conciseness"}
    assert all(r["engine_seconds"] is not None and r["engine_seconds"] >= 0 and not r["reused"] for r in costs)
    e = manifest["cost"]["per_name"]["conciseness"]
    assert e["rows"] == len(ids) == e["scored_now"] and e["reused"] == 0 and e["failed"] == 0
    for k in ("prompt_tokens", "cached_prompt_tokens", "generated_tokens"):
        assert e[k] == sum(r[k] for r in costs)
        assert e["per_1000"][k] == pytest.approx(sum(r[k] for r in costs) * 1000 / len(costs))
    assert e["per_1000"]["seconds"] == pytest.approx(sum(r["engine_seconds"] for r in costs) * 1000 / len(costs))
    # the rows' seconds are the scorer's time, shared: they add up to what the step measured for it
    assert sum(r["engine_seconds"] for r in costs) == pytest.approx(manifest["job"]["score_seconds"]["conciseness"],
                                                                    abs=1e-3)  # the manifest rounds to ms
    assert e["estimate"] is None  # a model of unknown size gets no estimate


def test_a_second_run_reuses_every_row_at_its_original_cost(tmp_path):
    src = _input(tmp_path)
    _run(src, tmp_path / "out", [TokenScorer(CONCISE)])
    first = pq.read_table(tmp_path / "out" / "costs.parquet").to_pylist()
    again = TokenScorer(CONCISE)
    manifest = _run(src, tmp_path / "out", [again])
    second = pq.read_table(tmp_path / "out" / "costs.parquet").to_pylist()
    assert again.scored == []
    assert [r["reused"] for r in second] == [True] * len(first)
    assert [{**r, "reused": None} for r in second] == [{**r, "reused": None} for r in first]  # the cost kept
    e = manifest["cost"]["per_name"]["conciseness"]
    assert e["reused"] == e["rows"] == len(first) and e["scored_now"] == 0
    assert e["seconds"] == pytest.approx(sum(r["engine_seconds"] for r in first)) and e["seconds"] > 0


def _chosen_third(src, tmp_path):
    _run(src, tmp_path / "probe", [TokenScorer(CONCISE)])
    ids = _answer_ids(tmp_path / "probe")
    return set(ids[::3]), ids


def test_over_the_failure_budget_the_run_publishes_then_fails_with_one_line_per_rubric(tmp_path):
    src = _input(tmp_path)
    bad, ids = _chosen_third(src, tmp_path)
    with pytest.raises(FailureBudgetError) as err:
        _run(src, tmp_path / "out", [TokenScorer(CONCISE, bad), TokenScorer(LENGTH)], specs=(CONCISE, LENGTH))
    assert err.value.lines == [f"rubric conciseness: {len(bad)} of {len(ids)} rows failed "
                               f"({len(bad) / len(ids):.1%}, over the --max-failed budget of 5.0%); "
                               f"commonest: ValueError ({len(bad)})"]
    out = tmp_path / "out"
    manifest = json.loads((out / "manifest.json").read_text())  # published before failing
    assert manifest["cost"]["over_budget"] == ["conciseness"] and manifest["cost"]["max_failed"] == 0.05
    answers = pq.read_table(out / "answers.parquet").to_pylist()
    assert sorted(a["answer_id"] for a in answers if a["conciseness_error"]) == sorted(bad)
    # a budget that allows it: the same run succeeds
    _run(src, tmp_path / "ok", [TokenScorer(CONCISE, bad), TokenScorer(LENGTH)], specs=(CONCISE, LENGTH),
         max_failed=0.5)


def test_retry_failed_rescores_exactly_the_failed_cells_and_equals_a_clean_run(tmp_path):
    src = _input(tmp_path)
    bad, ids = _chosen_third(src, tmp_path)
    out = tmp_path / "out"
    with pytest.raises(FailureBudgetError):
        _run(src, out, [TokenScorer(CONCISE, bad), TokenScorer(LENGTH)], specs=(CONCISE, LENGTH))
    concise, length = TokenScorer(CONCISE), TokenScorer(LENGTH)
    manifest = _run(src, out, [concise, length], specs=(CONCISE, LENGTH), retry_failed=True)
    assert sorted(concise.scored) == sorted(bad) and length.scored == []  # nothing else computed again
    assert manifest["job"]["retry_failed"] == {"cells_retried": {"conciseness": len(bad), "length": 0},
                                               "cells_failed_after": {"conciseness": 0, "length": 0}}
    assert {i["status"] for i in manifest["inputs"]} == {"retried"}
    e = manifest["cost"]["per_name"]
    assert (e["conciseness"]["scored_now"], e["conciseness"]["reused"]) == (len(bad), len(ids) - len(bad))
    assert (e["length"]["scored_now"], e["length"]["reused"]) == (0, len(ids))
    _run(src, tmp_path / "clean", [TokenScorer(CONCISE), TokenScorer(LENGTH)], specs=(CONCISE, LENGTH))
    for table in ("answers.parquet", "pairs.parquet"):
        assert pq.read_table(out / table).equals(pq.read_table(tmp_path / "clean" / table)), table
    # and a plain re-run afterwards reads the retried scores, not the failed ones
    again = _run(src, out, [TokenScorer(CONCISE), TokenScorer(LENGTH)], specs=(CONCISE, LENGTH))
    assert again["cost"]["per_name"]["conciseness"]["failed"] == 0
    assert pq.read_table(out / "answers.parquet").equals(pq.read_table(tmp_path / "clean" / "answers.parquet"))


def test_retry_failed_needs_a_finished_run(tmp_path):
    with pytest.raises(ConfigError, match="run the job without --retry-failed first"):
        _run(_input(tmp_path), tmp_path / "out", [TokenScorer(CONCISE)], retry_failed=True)


def test_seconds_are_shared_by_tokens_computed_or_evenly():
    def s(p=None, c=None, g=None):
        return Score(raw=1.0, cost={} if p is None else {"prompt_tokens": p, "cached_prompt_tokens": c,
                                                          "generated_tokens": g})

    got = share_seconds([{"a": s(100, 0, 0), "b": s(50, 20, 10)}], 3.0)
    assert got[0]["a"].cost["seconds"] == pytest.approx(3.0 * 100 / 140)
    assert got[0]["b"].cost["seconds"] == pytest.approx(3.0 * 40 / 140)
    even = share_seconds([{"a": s()}, {"a": s(10, 0, 1)}], 2.0)  # one row counted none: evenly
    assert [r["a"].cost["seconds"] for r in even] == [1.0, 1.0]


def test_a_stored_score_keeps_its_cost_which_is_not_part_of_its_value():
    score = Score(raw=0.5, extras={"x": 1}, cost={"prompt_tokens": 7, "seconds": 0.25})
    back = decode_score(encode_score(score))
    assert back == score and dict(back.cost) == {"prompt_tokens": 7, "seconds": 0.25}
    assert Score(raw=0.5, extras={"x": 1}) == score  # equal values, different costs
    assert "cost" not in json.loads(encode_score(Score(raw=0.5)))  # no cost: stored as before


def test_summary_counts_reused_and_failed_rows_and_the_reasons():
    rows = [CostRow("a", "r", {"prompt_tokens": 10, "seconds": 1.0}, False, None),
            CostRow("b", "r", {"prompt_tokens": 30, "seconds": 3.0}, True, None),
            CostRow("c", "r", {"seconds": 0.5}, False, "ValueError: row c"),
            CostRow("c", "q", {"seconds": 0.5}, False, None)]
    summary = cost_summary(rows, ["r", "q"])
    r = summary["per_name"]["r"]
    assert (r["rows"], r["scored_now"], r["reused"], r["failed"]) == (3, 2, 1, 1)
    assert r["prompt_tokens"] == 40 and r["per_1000"]["prompt_tokens"] == pytest.approx(40000 / 3)
    assert r["reasons"] == [["ValueError", 1]] and r["reused_seconds"] == 3.0
    assert r["share_of_seconds"] == pytest.approx(4.5 / 5.0)
    assert summary["per_name"]["q"]["prompt_tokens"] is None  # no row counted tokens
    assert list(over_budget(summary, 0.3)) == ["r"] and over_budget(summary, 1 / 3) == {}
    assert budget_lines(over_budget(summary, 0.3), 0.3, "judge")[0].startswith("judge r: 1 of 3 rows failed (33.3%")


def test_the_roofline_estimate_is_docs_ray_arithmetic_and_labelled():
    # docs/ray.md: R_max = 790e12 / (2 x 7.6e9) ~ 52,000 prompt tokens/s for Qwen2.5-7B on one H100
    est = roofline_estimate({"prompt_tokens": 52_000.0, "cached_prompt_tokens": 0, "generated_tokens": 0},
                            "Qwen/Qwen2.5-7B-Instruct")
    assert est["seconds_per_1000"] == pytest.approx(52_000 / (790e12 / (2 * 7.6e9)))
    assert est["seconds_per_1000"] == pytest.approx(1.0, rel=0.01) and "estimate" in est["label"]
    # decode: 128 sequences per step, each step reading the bf16 weights once
    dec = roofline_estimate({"prompt_tokens": 0, "cached_prompt_tokens": 0, "generated_tokens": 28_000.0},
                            "Qwen/Qwen2.5-7B-Instruct")
    assert dec["seconds_per_1000"] == pytest.approx(28_000 / (128 * 3.35e12 / (2 * 7.6e9)))
    assert roofline_estimate({"prompt_tokens": 1.0}, "some/unknown-model") is None


@pytest.mark.parametrize("value", [-0.1, 1.5, True, "0.1"])
def test_max_failed_must_be_a_fraction(value):
    with pytest.raises(ConfigError, match="'max_failed' must be a fraction"):
        check_max_failed(value)


def _cli_scorer(monkeypatch, *scorers):
    from models.scorer_set import ScorerSet
    from workers.jobs.score import ScoreKind

    monkeypatch.setattr(ScoreKind, "check", lambda self: None)
    monkeypatch.setattr(ScoreKind, "scorer", lambda self, stage=None: ScorerSet(list(scorers), 4))


def test_the_commands_exit_3_over_budget_retry_and_fit_refuses_until_told(tmp_path, monkeypatch, capsys):
    from workers.cli import main

    src = _input(tmp_path)
    bad, ids = _chosen_third(src, tmp_path)
    out = tmp_path / "out"
    argv = ["score", str(src), "--format", "lfqa-hp", "--rubrics", "conciseness,length", "--out", str(out), "--quiet"]
    _cli_scorer(monkeypatch, TokenScorer(CONCISE, bad), TokenScorer(LENGTH))
    assert main(argv) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"lfqa-rubric: over budget: rubric conciseness: {len(bad)} of {len(ids)} rows failed "
                       f"({len(bad) / len(ids):.1%}, over the --max-failed budget of 5.0%); "
                       f"commonest: ValueError ({len(bad)})")
    model = str(tmp_path / "model.json")
    assert main(["fit", str(out), "--out", model, "--split", "all", "--weight-boot", "0"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"lfqa-rubric: error: {out}: conciseness ({len(bad)} of {len(ids)} rows failed) over the run's failure budget "
        "of 5.0%; re-score the failed cells (score ... --retry-failed), leave the rubric out (--features), or fit "
        "anyway (--allow-over-budget)")
    assert main(["fit", str(out), "--out", model, "--split", "all", "--weight-boot", "0", "--features", "length"]) == 0
    assert main(["fit", str(out), "--out", model, "--split", "all", "--weight-boot", "0", "--allow-over-budget"]) == 0
    healthy = TokenScorer(CONCISE)
    _cli_scorer(monkeypatch, healthy, TokenScorer(LENGTH))
    assert main([*argv, "--retry-failed"]) == 0
    assert sorted(healthy.scored) == sorted(bad)
    assert main(["fit", str(out), "--out", model, "--split", "all", "--weight-boot", "0"]) == 0


def test_max_failed_flag_refuses_a_value_outside_0_1(capsys):
    from workers.cli import main

    with pytest.raises(SystemExit) as e:
        main(["score", "x.jsonl", "--format", "lfqa-hp", "--out", "o", "--max-failed", "1.5"])
    assert e.value.code == 2 and "a fraction between 0 and 1" in capsys.readouterr().err


def test_an_abstention_is_neither_a_failure_nor_over_any_budget():
    """The cpu preset's factuality abstains on every answer without a reference (issue 44): missing, counted apart,
    never over --max-failed, never retried."""
    from rubric.scoring import Score
    from rubric.tables import CostRow, cost_summary, cost_table, over_budget

    rows = [CostRow(id=f"a{i}", name="factuality", cost={"seconds": 0.1}, reused=False,
                    error=Score.abstain("no reference answer").error) for i in range(4)]
    rows.append(CostRow(id="a9", name="factuality", cost={"seconds": 0.1}, reused=False, error="engine died"))
    summary = cost_summary(rows, ["factuality"])
    entry = summary["per_name"]["factuality"]
    assert (entry["rows"], entry["abstained"], entry["failed"]) == (5, 4, 1)
    assert entry["reasons"] == [["engine died", 1]]
    assert cost_table(rows).column("failed").to_pylist() == [False] * 4 + [True]
    assert over_budget(summary, 0.25) == {}


def test_transfer_refuses_an_over_budget_training_table_like_fit(tmp_path, monkeypatch, capsys):
    """Issue 59: on f2de0e0 ``transfer --train OVER`` fitted on a table over its failure budget without a word, though
    ``fit OVER`` refuses it; now it refuses in the same line, and the same flag lets it through."""
    from workers.cli import main

    src = _input(tmp_path)
    bad, ids = _chosen_third(src, tmp_path)
    out = tmp_path / "out"
    _cli_scorer(monkeypatch, TokenScorer(CONCISE, bad), TokenScorer(LENGTH))
    assert main(["score", str(src), "--format", "lfqa-hp", "--rubrics", "conciseness,length", "--out", str(out),
                 "--quiet"]) == 3
    capsys.readouterr()
    argv = ["transfer", "--train", str(out), "--eval", str(out), "--split", "test", "--n-boot", "20",
            "--out", str(tmp_path / "t.md")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{out}: conciseness ({len(bad)} of {len(ids)} rows failed) over the run's failure " \
                            "budget" in err[0] and "--allow-over-budget" in err[0], err
    assert not (tmp_path / "t.md").exists()
    assert main([*argv, "--allow-over-budget"]) == 0 and (tmp_path / "t.md").is_file()


def test_the_judges_budget_line_names_the_commonest_reason_not_the_order():
    """Issue 59: a judge's failed pair reads "judge.plain.v1: order ab: no parseable vote in 3: ...; order ba: ...";
    the budget line named its commonest reason "order ab"."""
    from rubric.judging.verdicts import VerdictProbs, pair_outcome

    def failed(both: bool) -> str:
        bad = VerdictProbs(None, None, None, 0.0, error="no parseable vote in 3: no verdict (answer_1/answer_2) in 'x'")
        good = VerdictProbs(0.7, 0.3, None, 1.0, verdict="1")
        return "judge.plain.v1: " + pair_outcome(bad, bad if both else good, tie=False).error

    rows = [CostRow(id=f"p{i}", name="judge.plain.v1", cost={}, reused=False, error=failed(i % 2 == 0))
            for i in range(6)]
    summary = cost_summary(rows, ["judge.plain.v1"])
    assert summary["per_name"]["judge.plain.v1"]["reasons"] == [["no parseable vote in 3", 6]]
    (line,) = budget_lines(over_budget(summary, 0.05), 0.05, "judge")
    assert line.endswith("commonest: no parseable vote in 3 (6)"), line


def test_a_refused_retry_leaves_no_store_skeleton_behind(tmp_path, capsys):
    """Issue 59: on f2de0e0 ``score --retry-failed`` into a folder with no finished run refused, but left
    ``OUT/scores/<stem>/key.json`` behind (a store opened, keyed and emptied before the check)."""
    from workers.cli import main

    src = _input(tmp_path)
    out = tmp_path / "out"
    argv = ["score", str(src), "--format", "lfqa-hp", "--rubrics", "length", "--out", str(out), "--quiet",
            "--retry-failed"]
    assert main(argv) == 2
    assert "run the job without --retry-failed first" in capsys.readouterr().err
    assert not (out / "scores").exists()
    assert main(argv[:-1]) == 0  # a finished run of another setting: a retry of this one is refused, nothing reset
    before = sorted(p.relative_to(out).as_posix() for p in (out / "scores").rglob("*"))
    assert main([*argv, "--batch-size", "3", "--max-answer-chars", "5000"]) == 2
    assert sorted(p.relative_to(out).as_posix() for p in (out / "scores").rglob("*")) == before
