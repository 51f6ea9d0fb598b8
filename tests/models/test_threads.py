"""torch's CPU threads, set in one place (models.threads) by whatever builds an LLM engine or the CPU profile."""

from __future__ import annotations

import os

import pytest

from models import threads
from rubric.config import ScoringConfig
from rubric.errors import ConfigError


@pytest.fixture
def cores(monkeypatch):
    monkeypatch.delenv(threads.TORCH_THREADS_ENV, raising=False)

    def set_cores(n: int) -> None:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(n)))
    return set_cores


def test_engines_leave_one_usable_core_free_and_the_profile_takes_them_all(cores):
    for n, engine, profile in ((1, 1, 1), (2, 1, 2), (16, 15, 16)):
        cores(n)
        assert (threads.cpu_threads(), threads.cpu_threads(reserve=0)) == (engine, profile)


@pytest.mark.parametrize("value,want", [("3", 3), (" 1 ", 1), ("0", None), ("two", None), ("-1", None)])
def test_the_environment_sets_the_count_for_both(cores, monkeypatch, value, want):
    cores(2)
    monkeypatch.setenv(threads.TORCH_THREADS_ENV, value)
    if want is None:
        with pytest.raises(ConfigError, match=threads.TORCH_THREADS_ENV):
            threads.cpu_threads()
    else:
        assert threads.cpu_threads() == threads.cpu_threads(reserve=0) == want


def test_build_engine_sets_the_pool_before_the_engine_is_built(cores, monkeypatch, tmp_path):
    """The one place the CLI, the service and the tests get their engines from applies the thread settings."""
    torch = pytest.importorskip("torch")
    import models.llm.hf_engine as hf
    from models.llm import engines_cache

    if torch.cuda.is_available():  # pragma: no cover - a GPU machine keeps torch's own pool
        pytest.skip("CUDA visible: the CPU settings do not apply")
    seen = {}

    class Recorder:
        def __init__(self, path, **kw):
            seen.update(path=path, threads=torch.get_num_threads())

    before = torch.get_num_threads()
    cores(5)
    monkeypatch.setattr(hf, "TransformersEngine", Recorder)
    try:
        engines_cache._build_engine(ScoringConfig(llm_backend="transformers", llm_model=str(tmp_path)))
        assert seen == {"path": str(tmp_path), "threads": 4}  # 5 usable cores, one left free
        monkeypatch.setenv(threads.TORCH_THREADS_ENV, "1")
        engines_cache._build_engine(ScoringConfig(llm_backend="transformers", llm_model=str(tmp_path)))
        assert seen["threads"] == 1
    finally:
        torch.set_num_threads(before)
    assert os.environ.get("OMP_WAIT_POLICY")  # PASSIVE unless the environment said otherwise before torch loaded
