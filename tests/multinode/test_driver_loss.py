"""The job's driver killed (SIGKILL) mid-run under ``ray job submit``, then the same submission again: it
resumes from the units stored before the kill and re-scores none of them.

The cluster runs the dashboard (the job server) on 127.0.0.1; the job is submitted as the docs say
(``ray job submit --working-dir . -- python scripts/run_job.py ...``, here through the job server's
Python client) and its driver, a process on the head, is killed once some unit stores are finished.
Units stream through the pools one after another here (``--no-global-dedupe --read-concurrency 1``):
under global dedupe no unit is finished before the last batch, and a resubmission finds only the rows
flushed so far (``RayStep.flush_rows``, 50,000 store ids), which these small inputs never reach.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest

from rubric.config import ScoringConfig
from rubric.scoring import resolve_rubrics
from tests.multinode.cluster import write_shards

pytestmark = [pytest.mark.multinode, pytest.mark.real_model]

REPO = Path(__file__).resolve().parents[2]
N_SHARDS = 8


def _wait(client, job_id: str, states: set, timeout_s: float = 600) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = str(client.get_job_status(job_id).value)
        if status in states:
            return status
        time.sleep(0.5)
    raise TimeoutError(f"job {job_id} not in {states} after {timeout_s} s:\n{client.get_job_logs(job_id)[-3000:]}")


def _driver(out: Path) -> psutil.Process | None:
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or ())
        if "run_job.py" in cmd and str(out) in cmd and "/bin/sh" not in cmd:
            return p
    return None


def _stored(out: Path) -> tuple[set[str], set[str]]:
    """(store names with done.json, every answer id in a part file) under ``out/scores``."""
    done = {p.parent.name for p in (out / "scores").glob("*/done.json")}
    ids = {a for p in (out / "scores").glob("*/part-*.parquet") for a in pq.read_table(p).column("answer_id").to_pylist()}
    return done, ids


def test_killed_driver_resubmitted_resumes_without_rescoring(job_cluster, tmp_path):
    from ray.job_submission import JobSubmissionClient

    from workers.jobs.score import run_job

    shards = write_shards(tmp_path / "in", N_SHARDS, copies=2)
    out = tmp_path / "out"
    entrypoint = (f"{sys.executable} scripts/run_job.py {tmp_path / 'in'} --format lfqa-hp --rubrics conciseness,length "
                  f"--batch-size 8 --text-actors 2 --ray-batch-size 4 --no-global-dedupe --read-concurrency 1 "
                  f"--out {out} --quiet")
    client = JobSubmissionClient(job_cluster.dashboard_url)
    first = client.submit_job(entrypoint=entrypoint, runtime_env={"working_dir": str(REPO)})
    deadline = time.monotonic() + 600
    while not (out / "scores").is_dir() or not list((out / "scores").glob("*/done.json")):
        assert time.monotonic() < deadline, client.get_job_logs(first)[-3000:]
        assert str(client.get_job_status(first).value) in {"PENDING", "RUNNING"}, client.get_job_logs(first)[-3000:]
        time.sleep(0.05)
    driver = _driver(out)
    assert driver is not None, f"the job's driver process was not found:\n{client.get_job_logs(first)[-3000:]}"
    driver.kill()
    ended = _wait(client, first, {"FAILED", "STOPPED", "SUCCEEDED"})
    assert ended == "FAILED", (ended, client.get_job_logs(first)[-3000:])
    done, ids = _stored(out)
    assert 0 < len(done) < N_SHARDS, f"{len(done)} of {N_SHARDS} units were finished at the kill: not mid-job"
    assert not (out / "manifest.json").exists()

    again = client.submit_job(entrypoint=entrypoint, runtime_env={"working_dir": str(REPO)})
    assert _wait(client, again, {"FAILED", "STOPPED", "SUCCEEDED"}) == "SUCCEEDED", client.get_job_logs(again)[-3000:]
    import json

    m = json.loads((out / "manifest.json").read_text())
    print(f"driver killed with {len(done)} of {N_SHARDS} units finished and {len(ids)} answers stored; the "
          f"resubmission scored {m['job']['answers_scored_now']} of {m['counts']['unique_answers']}")
    # the finished units are reused, the rest scored; of those, only the answers not stored yet
    reused = {i["path"].rsplit("/", 1)[-1].split(".")[0] for i in m["inputs"] if i["status"] == "reused"}
    assert reused == done, (reused, done, client.get_job_logs(again)[-3000:])
    assert m["job"]["answers_scored_now"] == m["counts"]["unique_answers"] - len(ids), (
        m["job"], m["counts"], len(ids), client.get_job_logs(again)[-3000:])
    ref = run_job(shards, "lfqa-hp", resolve_rubrics("conciseness,length"), tmp_path / "local",
                  config=ScoringConfig(batch_size=8), progress=False)
    assert m["counts"] == ref["counts"]
    for name in ("answers.parquet", "pairs.parquet"):
        assert pq.read_table(out / name).equals(pq.read_table(tmp_path / "local" / name), check_metadata=True), name
