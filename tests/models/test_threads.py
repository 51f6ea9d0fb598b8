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


def test_the_count_is_the_usable_cores(cores):
    for n in (1, 2, 16):
        cores(n)
        assert threads.cpu_threads() == n


@pytest.mark.parametrize("value,want", [("3", 3), (" 1 ", 1), ("0", None), ("two", None), ("-1", None)])
def test_the_environment_sets_the_count_for_both(cores, monkeypatch, value, want):
    cores(2)
    monkeypatch.setenv(threads.TORCH_THREADS_ENV, value)
    if want is None:
        with pytest.raises(ConfigError, match=threads.TORCH_THREADS_ENV):
            threads.cpu_threads()
    else:
        assert threads.cpu_threads() == want


#: In a fresh interpreter: build_engine with a stand-in engine class that records torch's thread count in the
#: calling thread and in a new one (an engine loop's), with 2 usable cores (torch caps a count at the machine's).
CODE = """
import os, sys, threading
os.sched_getaffinity = lambda pid: {0, 1}
import models.llm.hf_engine as hf
from models.llm import engines_cache
from rubric.config import ScoringConfig
assert "torch" not in sys.modules
seen = {}
class Recorder:
    def __init__(self, path, **kw):
        import torch
        seen["main"] = torch.get_num_threads()
        t = threading.Thread(target=lambda: seen.update(other=torch.get_num_threads())); t.start(); t.join()
hf.TransformersEngine = Recorder
engines_cache._build_engine(ScoringConfig(llm_backend="transformers", llm_model=sys.argv[1]))
print(seen["main"], seen["other"], os.environ.get("OMP_WAIT_POLICY"))
"""


@pytest.mark.parametrize("env,want", [
    ({}, "2 2 PASSIVE"),  # the two usable cores, whatever the machine has
    ({threads.TORCH_THREADS_ENV: "1", "OMP_NUM_THREADS": "2"}, "1 1 PASSIVE"),  # ours wins over OpenMP's
    ({"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "ACTIVE"}, "1 1 ACTIVE"),  # the user's environment wins over the default
])
def test_build_engine_sets_every_threads_pool_before_torch_loads(tmp_path, env, want):
    """The one place the CLI, the service and the tests get their engines from applies the thread settings."""
    pytest.importorskip("torch")
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    # LD_PRELOAD: importing vLLM in this process (an earlier test's engine) sets it to torch's libgomp, which a child
    # then loads at exec, before any OMP_NUM_THREADS it sets itself is read (a fresh CLI process has no such preload)
    base = {k: v for k, v in os.environ.items()
            if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", threads.TORCH_THREADS_ENV, "CUDA_VISIBLE_DEVICES",
                         "LD_PRELOAD")}
    base.update(env, CUDA_VISIBLE_DEVICES="", PYTHONPATH=os.pathsep.join(p for p in (str(repo), base.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, "-c", CODE, str(tmp_path)], capture_output=True, text=True, env=base,
                          cwd=repo, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == want


def test_nothing_changes_once_torch_is_loaded(cores, monkeypatch):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    monkeypatch.setenv(threads.TORCH_THREADS_ENV, str(before + 1))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert threads.use_cpu_threads() is None
    assert torch.get_num_threads() == before and "OMP_NUM_THREADS" not in os.environ
