"""How torch's thread pool is set for work on the CPU: one place for the CLI, the service and the tests.

Two settings, both applied by the code that builds a CPU model (the LLM engines, ``models.llm.engines_cache``;
the CPU profile's scorers, ``models.backends.build_scorers``), so a command, a service deployment and a test
get the same ones:

- :func:`prefer_passive_omp`: OpenMP's wait policy PASSIVE, set before torch is first imported (the variable
  is read once, when the runtime loads): a thread waiting for the others sleeps instead of spinning, so it
  does not burn the core another job needs.
- :func:`cpu_threads` / :func:`use_cpu_threads`: torch's intra-op threads (``OMP_NUM_THREADS``, set before
  torch loads, so that every thread of the process runs the same count): the usable cores.
  ``LFQA_RUBRIC_TORCH_THREADS`` (an integer >= 1) sets another count. Beside a job that holds one of two cores,
  every parallel region ends when the thread sharing that core does; with PASSIVE waits the embedded judge ran
  as fast there with two threads as with one (1.30 against 1.27 answers/s) and 1.8x faster on idle cores
  (2.32 against 1.28; DEVELOPERS.md, "Engines beside another job"), so no core is held back by default.
"""

from __future__ import annotations

import logging
import os
import sys

from rubric.errors import ConfigError

__all__ = ["OMP_WAIT_POLICY", "TORCH_THREADS_ENV", "prefer_passive_omp", "cpu_threads", "use_cpu_threads",
           "pool_threads"]

log = logging.getLogger(__name__)

#: OpenMP's wait policy for torch's thread pool, set before torch is first imported. On a machine shared
#: with other jobs, spinning threads burn the cores the others need: MiniLM's share of the CPU profile took
#: 34.4 CPU-seconds for 320 TREC passages with the default, 12.1 with PASSIVE (docs/cpu-profile.md, "Speed").
#: A value already in the environment wins.
OMP_WAIT_POLICY = "PASSIVE"

#: Environment variable: torch's intra-op threads for CPU work (default: :func:`cpu_threads`).
TORCH_THREADS_ENV = "LFQA_RUBRIC_TORCH_THREADS"


def prefer_passive_omp() -> bool:
    """Set ``OMP_WAIT_POLICY`` (unless already set) while torch is not imported yet; whether it can still act."""
    if "torch" in sys.modules:
        log.debug("torch is already imported: OMP_WAIT_POLICY stays %s", os.environ.get("OMP_WAIT_POLICY"))
        return False
    os.environ.setdefault("OMP_WAIT_POLICY", OMP_WAIT_POLICY)
    return True


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def cpu_threads() -> int:
    """torch's intra-op threads for CPU work: ``$LFQA_RUBRIC_TORCH_THREADS``, else the usable cores.

    Raises:
        ConfigError: ``$LFQA_RUBRIC_TORCH_THREADS`` is not an integer >= 1.
    """
    value = os.environ.get(TORCH_THREADS_ENV, "").strip()
    if value:
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n < 1:
            raise ConfigError(f"{TORCH_THREADS_ENV}={value!r}: give an integer >= 1 (torch's CPU threads)")
        return n
    return _usable_cores()


def use_cpu_threads() -> int | None:
    """Apply both settings to this process while torch is not imported yet; the thread count set, or None.

    The count goes to ``OMP_NUM_THREADS`` (unless the environment sets it; ``$LFQA_RUBRIC_TORCH_THREADS`` wins
    over it), which OpenMP and torch read when they load: every thread of the process then runs that many.
    Once torch is loaded nothing is changed: ``torch.set_num_threads`` acts on the calling thread's OpenMP
    pool only, and vLLM-CPU's attention refuses a pool whose size differs between the thread that plans a
    step and the one that runs it (an engine kept busy by ``models.llm.engine_loop`` runs in its own thread).
    """
    prefer_passive_omp()
    if "torch" in sys.modules:
        log.debug("torch is already imported: its thread count stays (OMP_NUM_THREADS=%s)",
                  os.environ.get("OMP_NUM_THREADS"))
        return None
    n = cpu_threads()
    if os.environ.get(TORCH_THREADS_ENV, "").strip():
        os.environ["OMP_NUM_THREADS"] = str(n)
    else:
        os.environ.setdefault("OMP_NUM_THREADS", str(n))
    return int(os.environ["OMP_NUM_THREADS"])


def pool_threads() -> int:
    """The threads a CPU model's pool runs that is not torch's (ONNX Runtime's): ``$LFQA_RUBRIC_TORCH_THREADS``,
    else ``OMP_NUM_THREADS`` (what :func:`use_cpu_threads` or the user set torch's pool to), else the usable cores.

    Raises:
        ConfigError: ``$LFQA_RUBRIC_TORCH_THREADS`` is not an integer >= 1.
    """
    if os.environ.get(TORCH_THREADS_ENV, "").strip():
        return cpu_threads()
    try:
        n = int(os.environ.get("OMP_NUM_THREADS", ""))
    except ValueError:
        n = 0
    return n if n >= 1 else cpu_threads()
