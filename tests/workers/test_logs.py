"""Quiet by default: the engines' loggers at ERROR unless --verbose, set before the engines import."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from workers import logs
from workers.logs import ENGINE_LOGGERS, configure_logging, engine_env, ray_logging

REPO = Path(__file__).resolve().parents[2]
ENV_KEYS = tuple(engine_env(False))


@pytest.fixture
def clean_logging(monkeypatch):
    """No engine env vars set, and every logger level, warning filter and logs._state put back after."""
    for key in ENV_KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(logs, "_state", None)
    names = ["", *ENGINE_LOGGERS, "ray.data._internal.progress"]
    levels = {n: logging.getLogger(n).level for n in names}
    with warnings.catch_warnings():
        yield
    for n, level in levels.items():
        logging.getLogger(n).setLevel(level)


@pytest.mark.parametrize("verbose, engine_level, own_level, env_level", [
    (False, logging.ERROR, logging.INFO, "ERROR"),
    (True, logging.INFO, logging.DEBUG, "INFO"),
])
def test_engine_loggers_and_env_follow_verbose(clean_logging, verbose, engine_level, own_level, env_level):
    set_here = configure_logging(verbose)
    for name in ("vllm", "ray", "transformers", "torch", "sentence_transformers"):
        assert logging.getLogger(name).getEffectiveLevel() == engine_level, name
    assert logging.getLogger("vllm.engine.core").getEffectiveLevel() == engine_level  # children follow
    assert logging.getLogger("workers.jobs.score").getEffectiveLevel() == own_level
    assert logging.getLogger("ray.data._internal.progress").getEffectiveLevel() == logging.INFO  # progress stays
    assert os.environ["VLLM_LOGGING_LEVEL"] == env_level
    assert os.environ["VLLM_CONFIGURE_LOGGING"] == "1"
    assert os.environ["TRANSFORMERS_VERBOSITY"] == env_level.lower()
    assert os.environ["TORCH_CPP_LOG_LEVEL"] == env_level
    assert (os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS") == "1") is not verbose  # the engines' own bars
    assert ("FutureWarning" in os.environ.get("PYTHONWARNINGS", "")) is not verbose  # Ray workers' warnings
    assert set_here == {k: os.environ[k] for k in engine_env(verbose)}


def test_an_engine_variable_the_user_set_wins(clean_logging, monkeypatch):
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "DEBUG")
    set_here = configure_logging(False)
    assert os.environ["VLLM_LOGGING_LEVEL"] == "DEBUG"
    assert "VLLM_LOGGING_LEVEL" not in set_here
    # ...and is not sent to Ray either: under `ray job submit` the job's own env var would clash.
    assert "VLLM_LOGGING_LEVEL" not in ray_logging(None)["runtime_env"]["env_vars"]


def test_ray_init_arguments_unchanged_without_configure_logging(clean_logging):
    env = {"env_vars": {"PYTHONPATH": "x"}}
    assert ray_logging(env) == {"runtime_env": env}
    assert ray_logging(None) == {"runtime_env": None}


def test_ray_init_arguments_carry_the_choice_to_workers(clean_logging, monkeypatch):
    monkeypatch.setattr(logs, "_quiet_ray_data_console", lambda: None)  # ray.data is not needed here
    configure_logging(False)
    kw = ray_logging({"env_vars": {"PYTHONPATH": "x"}, "working_dir": "."})
    assert kw["logging_level"] == logging.ERROR
    assert kw["runtime_env"] == {"working_dir": ".", "env_vars": {"PYTHONPATH": "x", **engine_env(False)}}
    assert kw["runtime_env"]["env_vars"]["VLLM_LOGGING_LEVEL"] == "ERROR"
    # In a `ray job submit` driver the caller passes None: only env vars, which Ray merges into the job's.
    assert ray_logging(None)["runtime_env"] == {"env_vars": engine_env(False)}


def test_ray_data_console_shows_warnings_and_progress_only(clean_logging):
    pytest.importorskip("ray.data")
    configure_logging(False)
    ray_logging(None)
    console = [h for h in logging.getLogger("ray.data").handlers if "File" not in type(h).__name__]
    assert console, "Ray Data installed no console handler"

    def passes(handler, name, level):
        return bool(handler.filter(logging.LogRecord(name, level, __file__, 1, "m", None, None)))

    for h in console:
        assert not passes(h, "ray.data._internal.execution.streaming_executor", logging.INFO)
        assert passes(h, "ray.data._internal.execution.streaming_executor", logging.WARNING)
        assert passes(h, "ray.data._internal.progress.logging_progress", logging.INFO)
    for h in console:  # leave Ray Data's handlers as they were for the other tests
        h.filters = [f for f in h.filters if not isinstance(f, logs._ConsoleFilter)]


@pytest.mark.real_model  # imports vLLM in a fresh interpreter: ~20-50 s each
@pytest.mark.parametrize("verbose", [False, True])
def test_vllm_reads_the_level_at_import(verbose):
    # The real engine, in a fresh interpreter: configure_logging first, then vLLM's own logging
    # set-up runs on import. Its INFO and WARNING lines must be gone when quiet and there when verbose.
    pytest.importorskip("vllm")
    code = textwrap.dedent(f"""
        import logging
        from workers.logs import configure_logging
        configure_logging({verbose})
        from vllm.logger import init_logger
        log = init_logger("vllm.lfqa_test")
        log.info("INFO-LINE")
        log.warning("WARNING-LINE")
        log.error("ERROR-LINE")
        print("vllm level", logging.getLogger("vllm").level)
    """)
    env = {k: v for k, v in os.environ.items() if k not in ENV_KEYS}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert "ERROR-LINE" in out
    assert ("INFO-LINE" in out) is verbose and ("WARNING-LINE" in out) is verbose
    assert f"vllm level {logging.INFO if verbose else logging.ERROR}" in out
