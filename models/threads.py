"""How torch's thread pool is set for work on the CPU: one place for the CLI, the service and the tests.

Two settings, both applied by the code that builds a CPU model (the LLM engines, ``models.llm.engines_cache``;
the CPU profile's scorers, ``models.backends.build_scorers``), so a command, a service deployment and a test
get the same ones:

- :func:`prefer_passive_omp`: OpenMP's wait policy PASSIVE, set before torch is first imported (the variable
  is read once, when the runtime loads): a thread waiting for the others sleeps instead of spinning, so it
  does not burn the core another job needs.
- :func:`cpu_threads` / :func:`use_cpu_threads`: torch's intra-op threads. Every parallel region ends when its
  slowest thread does, so a pool as large as the machine runs at the pace of the thread that shares its core
  with another job: beside one busy core, the embedded judge and MiniLM ran several times slower than with one
  thread less (DEVELOPERS.md, "Engines beside another job"). The LLM engines keep one usable core free (the
  usable cores less one, at least one); the CPU profile's MiniLM takes them all (on two idle cores it runs 1.8x
  faster on both). ``LFQA_RUBRIC_TORCH_THREADS`` (an integer >= 1) sets the count for both instead.
"""

from __future__ import annotations

import logging
import os
import sys

from rubric.errors import ConfigError

__all__ = ["OMP_WAIT_POLICY", "TORCH_THREADS_ENV", "prefer_passive_omp", "cpu_threads", "use_cpu_threads"]

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


def cpu_threads(*, reserve: int = 1) -> int:
    """torch's intra-op threads for CPU work: ``$LFQA_RUBRIC_TORCH_THREADS``, else the usable cores less
    ``reserve`` (at least one).

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
    return max(1, _usable_cores() - reserve)


def use_cpu_threads(*, reserve: int = 1) -> int:
    """Apply both settings to this process (the wait policy only while torch is not imported yet) and return
    torch's thread count. Call before a CPU model runs its first forward pass.

    Args:
        reserve: usable cores left to other jobs (the LLM engines: 1; the CPU profile: 0, its MiniLM keeps
            both cores of an idle machine). ``$LFQA_RUBRIC_TORCH_THREADS`` wins over it.
    """
    prefer_passive_omp()
    n = cpu_threads(reserve=reserve)
    import torch

    # an in-process vLLM-CPU engine replaces torch.set_num_threads with a function that only warns: the
    # count it started with stays for the process
    if torch.get_num_threads() != n and getattr(torch.set_num_threads, "__name__", "") != "skip_set_num_threads":
        torch.set_num_threads(n)
    log.debug("torch CPU threads: %d (OMP_WAIT_POLICY=%s)", torch.get_num_threads(), os.environ.get("OMP_WAIT_POLICY"))
    return torch.get_num_threads()
