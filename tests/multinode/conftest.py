"""The ``multinode`` tests: real Ray clusters of several nodes on this machine (``tests/multinode/cluster.py``),
nodes removed and drivers killed mid-job, the service started and stopped as a user does.

They take minutes, so ``make test`` and a plain ``pytest tests`` leave them out (deselected here);
``pytest -m multinode tests`` (any ``-m`` expression naming ``multinode``) or ``LFQA_TEST_MULTINODE=1``
runs them. Each test starts its own cluster and stops it, checking that no process of it is left.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

import pytest

SAMPLE = resources.files("rubric") / "data" / "sample_pairs.jsonl"


def pytest_collection_modifyitems(config, items):
    if "multinode" in (config.getoption("markexpr") or "") or os.environ.get("LFQA_TEST_MULTINODE") == "1":
        return
    chosen = [i for i in items if i.get_closest_marker("multinode") is None]
    if len(chosen) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("multinode") is not None])
        items[:] = chosen


def _cluster(**kw):
    pytest.importorskip("ray")
    import ray

    from tests.multinode.cluster import LocalCluster
    from workers.cluster.pipeline import shutdown_ray

    if ray.is_initialized():  # the session's local Ray (``ray_local``) would be the driver's cluster
        shutdown_ray()
    c = LocalCluster(workers=2, worker_cpus=2, **kw).start()
    yield c
    leftovers = c.stop()
    assert not leftovers, f"processes outlived the cluster: {leftovers}"
    assert not Path(c.temp_dir).exists()


@pytest.fixture
def cluster():
    """Head (no CPUs) + two worker nodes of 2 logical CPUs; stopped after the test, nothing left running."""
    yield from _cluster()


@pytest.fixture
def job_cluster():
    """:func:`cluster` with the dashboard (``ray job submit``'s job server) on 127.0.0.1."""
    yield from _cluster(dashboard=True)
