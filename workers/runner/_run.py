"""The run: plan the units once, resume, the step, every store merged, the kind's assemble step, the
manifest and the publish (the face's docstring tells the line)."""

from __future__ import annotations

import logging
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rubric.errors import BatchMismatchError, ConfigError, FailureBudgetError, InputError
from rubric.tables import COST_FILE, budget_lines, check_max_failed, cost_line, cost_summary, cost_table, over_budget
from workers.runner._contract import JobKind, JobRun, StepResult, StepScorer, Unit
from workers.runner._local import local_step
from workers.storage.outdir import OutputFolder, Staging
from workers.storage.shards import plan_inputs, shard_sha256
from workers.storage.index import ScoreIndex
from workers.storage.store import UnitStore, score_key

__all__ = ["run"]

log = logging.getLogger(__name__)


def _plan(kind: JobKind, inputs, folder: OutputFolder, *,
          retry: bool = False) -> tuple[list[str], list[Unit], ScoreIndex]:
    """The units, each with its store opened over the job's index (an earlier store of another key is emptied
    then), and the index (the caller closes it). For a retry, every unit's store must hold a finished run of the
    same key, which is checked before any store or the index is opened or made, so a refused retry changes
    nothing (no store made, none emptied).

    Raises:
        ConfigError: a retry with a unit that has no finished run of the same key.
    """
    out = folder.path
    plans = plan_inputs(inputs, kind.fmt, kind.options, blocks=kind.blocks)
    shards = list(plans)
    kind.prepare(shards, out)
    root = out / kind.store_dir
    planned = []
    for uri, plan in plans.items():
        for name, block in plan.units:
            key = score_key(path=uri, sha256=plan.sha, fmt=kind.fmt, options=kind.options, config=kind.config,
                            block=None if block is None else block.bounds(), extra=kind.unit_key(uri))
            planned.append((name, uri, plan, block, key))
    if retry:
        _refuse_unfinished(out, [name for name, *_, key in planned if not UnitStore.finished(root, name, key)])
    folder.dir(kind.store_dir)
    index = ScoreIndex(root)
    try:
        units = [Unit(name, uri, plan.sha, plan.name, block, UnitStore(root, name, key, index, kind.names, position))
                 for position, (name, uri, plan, block, key) in enumerate(planned)]
    except BaseException:
        index.close()
        raise
    return shards, units, index


def _refuse_unfinished(out: Path, unfinished: Sequence[str]) -> None:
    """``--retry-failed`` retries a finished earlier run only: refused in one line when a unit has none."""
    if unfinished:
        raise ConfigError(f"--retry-failed retries a finished run of the same inputs, settings and versions into "
                          f"{out}, but {len(unfinished)} unit(s) have none ({', '.join(unfinished[:3])}"
                          f"{', ...' if len(unfinished) > 3 else ''}): run the job without --retry-failed first")


def run(kind: JobKind, inputs: str | Path | Sequence[str | Path], out: str | Path, *, progress: bool = True,
        step: Callable[..., StepResult] | None = None, scorer: StepScorer | None = None, check: bool = True,
        force: bool = False, retry_failed: bool = False) -> dict:
    """Run one job of ``kind`` over ``inputs`` into ``out`` (see the module docstring).

    Args:
        step: ``step(kind, pending, progress=) -> StepResult``, the Ray step (``workers.cluster.pipeline.RayStep``);
            default :func:`local_step`. The manifest's ``job.runner`` says which: "ray" or "local".
        scorer: a prebuilt scorer for the local step (tests).
        check: check the backends first (off when a test's scorer stands in).
        force: write into a folder that is not an lfqa-rubric output (``workers.storage.outdir.OutputFolder``).
        retry_failed: score again exactly the (id, name) cells whose stored score failed, in a finished
            earlier run of the same inputs and settings into ``out`` (in this process); nothing else.

    Returns:
        The manifest (also ``OUT/manifest.json``), with ``cost`` (``rubric.tables.cost_summary``).

    Raises:
        FailureBudgetError: after publishing, a name's failed fraction is over ``kind.max_failed``.
        BackendUnavailableError: a backend is missing (before any data is read).
        InputError: an input does not exist or cannot be read (the other units' scores are kept).
        ConfigError: another process is writing into ``out``, ``out`` is not ours, holds another kind
            of job's output, or overlaps an input (``workers.storage.outdir.OutputFolder``).
    """
    given = [inputs] if isinstance(inputs, (str, Path)) else list(inputs)
    check_max_failed(kind.max_failed)
    if retry_failed and step is not None:
        raise ConfigError("--retry-failed runs in this process (the failed cells are few); leave out --ray")
    with OutputFolder(out, outputs=kind.outputs, own=kind.own_files, stores=(kind.store_dir,), inputs=given,
                      force=force) as folder:
        return _run(kind, given, folder, progress=progress, step=step, runner="local" if step is None else "ray",
                    scorer=scorer, check=check, retry=retry_failed)


def _run(kind: JobKind, inputs, folder: OutputFolder, *, progress: bool, step, runner: str, scorer: Any,
         check: bool, retry: bool = False) -> dict:
    t_start = time.perf_counter()
    if check:
        kind.check()
    shards, units, index = _plan(kind, inputs, folder, retry=retry)
    with index:
        return _step(kind, folder, shards, units, index, progress=progress, step=step, runner=runner, scorer=scorer,
                     retry=retry, t_start=t_start)


def _step(kind: JobKind, folder: OutputFolder, shards: list[str], units: list[Unit], index: ScoreIndex, *,
          progress: bool, step, runner: str, scorer: Any, retry: bool, t_start: float) -> dict:
    """Resume, the step, and the assemble step on the job's index."""
    out = folder.path
    if retry:  # a store found damaged when opened is no longer finished
        _refuse_unfinished(out, [u.name for u in units if not u.store.done])
    pending = units if retry else [u for u in units if not u.store.done]
    status: dict[str, str] = {}
    why: dict[str, str] = {}
    for u in units:  # per input: done now if any of its units was
        done_now = not u.store.done or status.get(u.shard) == kind.status_done
        status[u.shard] = kind.status_done if done_now else "reused"
        if u.store.why and u.shard not in why:
            why[u.shard] = u.store.why
    log.info("%d input(s) in %d unit(s): %d already done, %d to do", len(shards), len(units),
             len(units) - len(pending), len(pending))
    timings = {"plan": round(time.perf_counter() - t_start, 3)}
    t0 = time.perf_counter()
    result = step(kind, pending, progress=progress) if step else local_step(kind, pending, progress=progress,
                                                                             scorer=scorer, retry=retry)
    timings["score"] = round(time.perf_counter() - t0, 3)
    if retry:  # what the retry did, for the manifest (the failed cells left after it are in its ``cost``)
        result.info["retry_failed"] = {"cells_retried": {n: result.retried.get(n, 0) for n in kind.names}}
        status = {name: "retried" for name in status}
    if result.failed:
        for u in units:  # an unreadable input's store holds nothing but its key
            if u.uri in result.failed:
                u.store.discard_if_empty()
        lines = "; ".join(f"{u}: {e}" for u, e in result.failed.items())
        kept = (f" (the other inputs' scores are kept under {out / kind.store_dir} and a re-run resumes them)"
                if len(result.failed) < len(shards) else "")
        raise InputError(f"{len(result.failed)} of {len(shards)} input(s) could not be read, so no tables were "
                         f"written{kept}: {lines}")
    for u in units:
        if not u.store.done:
            raise BatchMismatchError(f"unit {u.name} is not completely scored after the step")
    # an earlier run's manifest stays until publish replaces it: a run that fails from here on leaves
    # that run's complete set, still vouched for (``rubric.io.check_published``)
    staging = folder.staging()
    job = JobRun(kind, out, list(shards), units, result, runner, status, why, timings,
                 Staging(staging, kind.outputs), folder, index, t_start=t_start)
    try:
        return _assemble(job)
    finally:
        folder.remove(staging)


def _assemble(job: JobRun) -> dict:
    """The kind's assemble step on the job's index (every store merged into it), the inputs checked unchanged, the
    manifest, and the files published with it."""
    kind, units, status, why, timings = job.kind, job.units, job.status, job.why, job.timings
    t0 = time.perf_counter()
    scores, provenance = job.merged()
    done = kind.assemble(job, scores, provenance)
    cost = cost_summary(scores.cost_rows(kind.names), kind.names,
                        models={n: p.model_id for n, p in provenance.items() if p.model_id})
    if COST_FILE in kind.outputs:
        job.output.table(COST_FILE, cost_table(scores.cost_rows(kind.names)))
    over = over_budget(cost, kind.max_failed)
    cost["max_failed"] = kind.max_failed
    cost["over_budget"] = sorted(over)
    if "retry_failed" in job.step.info:
        job.step.info["retry_failed"]["cells_failed_after"] = {n: e["failed"] for n, e in cost["per_name"].items()}
    per_input, job_fields = done.per_input, done.job
    for u in {u.uri: u for u in units}.values():
        if shard_sha256(u.uri, kind.fmt, kind.options) != u.sha:
            raise InputError(f"{u.uri!r} changed while the job ran; run it again")
    timings["assemble"] = round(time.perf_counter() - t0, 3)
    timings["total"] = round(time.perf_counter() - job.t_start, 3)
    inputs = []
    for uri, name in {u.uri: u.shard for u in units}.items():  # the plan's names: computed once
        n_units = sum(1 for u in units if u.shard == name)
        inputs.append({"name": name, "path": uri, "format": kind.fmt, "options": kind.options, "status": status[name],
                       **({"rescored_because": why[name]} if name in why else {}),
                       **({"blocks": n_units} if n_units > 1 else {}), **per_input.get(name, {})})
    manifest = {
        "tool": "lfqa-rubric", **({"kind": kind.kind} if kind.kind else {}),
        "inputs": inputs,
        **done.fields,
        **({"failed": done.failed} if done.failed else {}),
        "config": asdict(kind.config),
        "cost": cost,
        "job": {"runner": job.runner, **job_fields, **job.step.info},
        "timings_s": timings,
        "platform": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()},
    }
    job.folder.publish(job.output.files, manifest)
    log.info("cost per 1,000 rows (manifest.json 'cost'%s): %s", f", {COST_FILE}" if COST_FILE in kind.outputs else "",
             cost_line(cost))
    if done.failed:
        raise InputError(done.failed)
    if over:
        raise FailureBudgetError(budget_lines(over, kind.max_failed, kind.what))
    return manifest
