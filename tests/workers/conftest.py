"""Shared fixtures for the worker tests: shards cut from real graded data (``ray_local`` is in tests/conftest.py)."""

import json
from pathlib import Path

import pytest

#: Where CI mounts the public test data (never shipped with the project).
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.fixture(scope="module")
def graded_shards(tmp_path_factory):
    """Three graded-format shards of two TREC-DL questions each (10 passages per question).

    Shard 1 also carries one empty passage, so one row is rejected and row accounting is exercised.
    """
    src = DATA / "TREC-DL-NF.json"
    if not src.is_file():
        pytest.skip(f"test data not found at {src}")
    data = json.loads(src.read_text(encoding="utf-8"))
    questions = list(data)[:6]
    folder = tmp_path_factory.mktemp("shards")
    paths = []
    for k in range(3):
        shard = {q: data[q][:10] for q in questions[2 * k:2 * k + 2]}
        if k == 1:
            shard[questions[2]] = shard[questions[2]] + [{"docid": "empty", "passage": " ", "label": 1}]
        path = folder / f"trec_{k}.json"
        path.write_text(json.dumps(shard), encoding="utf-8")
        paths.append(path)
    return folder, paths


def run_ray_job(inputs, fmt, specs, out, *, pools=None, address=None, read_concurrency=None, global_dedupe=True,
                fault_marker=None, **kw):
    """The score job with its step on Ray (``workers.jobs.score.run_job(..., ray=RayStep(...))``)."""
    from workers.jobs.score import run_job
    from workers.cluster.pipeline import RayStep

    return run_job(inputs, fmt, specs, out, ray=RayStep(pools=pools or {}, address=address,
                                                          read_concurrency=read_concurrency,
                                                          global_dedupe=global_dedupe, fault_marker=fault_marker),
                   **kw)
