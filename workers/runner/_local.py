"""The local step: a job's pending units scored in this process, one at a time, a store checkpoint per
chunk (what :class:`workers.cluster.pipeline.RayStep` does on a Ray pool), and the retry of failed cells.

Both drive each unit through its store (``workers.storage.store.UnitStore``): what is to do, record a scored
chunk, the failed cells, finish. An item an earlier unit of this run scored is copied by the store from the
job's index (on disk) instead of being scored again."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from rubric.errors import BatchMismatchError, InputError
from workers.runner._contract import JobKind, StepResult, StepScorer, Unit, Work, check_results, checkpoints

__all__ = ["work", "local_step"]

log = logging.getLogger(__name__)


def work(kind: JobKind, unit: Unit, *, copy: bool = False) -> Work:
    """Read a unit and keep the items with an id not yet in its store (InputError when it cannot be read).
    ``copy``: items this run scored in an earlier unit are copied into the store and left out."""
    items, ids = kind.work_items(unit.uri, unit.block)
    todo, todo_ids = unit.store.todo(items, ids, copy=copy)
    return Work(todo, todo_ids, sum(len(i) for i in ids))


def _retry_unit(kind: JobKind, unit: Unit, scorer_of: Callable[[], StepScorer], result: StepResult) -> None:
    """Score again exactly the (id, name) cells of ``unit`` whose newest stored score failed
    (``UnitStore.record_retry`` keeps the others as they were). A scorer that makes several names in one call
    (the LLM rubrics) may make a retried item's other names too; only the failed ones are kept and counted."""
    failed = unit.store.failed_cells()
    if not failed:
        return
    todo, todo_ids = unit.store.retry_todo(*kind.work_items(unit.uri, unit.block))
    names = kind.names
    scorer = scorer_of()
    for chunk, chunk_ids in checkpoints(todo, todo_ids, kind.checkpoint):
        only = sorted({r for each in chunk_ids for a in each for r in failed.get(a, ())}, key=names.index)
        got = scorer.score(chunk, only=only)
        if len(got) != len(chunk_ids) or any(len(g) != len(i) for g, i in zip(got, chunk_ids)):
            raise BatchMismatchError(f"the scorer returned {len(got)} results for {len(chunk_ids)} items on a retry")
        ids = [a for each in chunk_ids for a in each]
        flat = [new for results in got for new in results]
        for a, new in zip(ids, flat):
            for r in failed.get(a, ()):
                if r not in new:
                    raise BatchMismatchError(f"the scorer returned no {kind.what} {r!r} for {a} on a retry")
        for r, n in unit.store.record_retry(ids, flat, scorer.provenance).items():
            result.retried[r] = result.retried.get(r, 0) + n
        result.scored += len(ids)


def local_step(kind: JobKind, pending: Sequence[Unit], *, progress: bool, scorer: StepScorer | None = None,
               retry: bool = False) -> StepResult:
    """Score the pending units in this process, one at a time, a store checkpoint per chunk.

    An item that an earlier unit of this run scored is copied into the later unit's store instead of
    being scored again (the job's index, on disk). Nothing read is kept by the step.

    Args:
        scorer: a prebuilt scorer (tests); default: ``kind.scorer()``, built once, when the first item
            needs scoring (so an unreadable input fails before any model loads).
        retry: score again only the failed cells of the (finished) units (:func:`_retry_unit`).
    """
    from tqdm.auto import tqdm

    result = StepResult()
    if not pending:
        return result
    names = kind.names
    if retry:
        built: list[StepScorer] = [] if scorer is None else [scorer]

        def scorer_of() -> StepScorer:
            if not built:
                t0 = time.perf_counter()
                built.append(kind.scorer())
                result.seconds["load_backends"] = round(time.perf_counter() - t0, 3)
            return built[0]

        for unit in pending:
            _retry_unit(kind, unit, scorer_of, result)
        for k, v in (built[0].seconds.items() if built else ()):
            result.seconds[k] = round(v, 3)
        return result
    for unit in pending:
        try:
            w = work(kind, unit, copy=True)
        except InputError as e:
            log.error("input %s cannot be read: %s", unit.uri, e)
            result.failed[unit.uri] = str(e)
            continue
        if w.todo and scorer is None:
            t0 = time.perf_counter()
            scorer = kind.scorer()
            result.seconds["load_backends"] = round(time.perf_counter() - t0, 3)
        n_todo = sum(len(ids) for ids in w.ids)
        if n_todo < w.n_ids:
            log.info("%s: %d of %d already scored (resumed, or scored in an earlier unit)", unit.name,
                     w.n_ids - n_todo, w.n_ids)
        with tqdm(total=n_todo, desc=f"{kind.status_done} {unit.name}", disable=not progress,
                  mininterval=2.0) as bar:
            for chunk, chunk_ids in checkpoints(w.todo, w.ids, kind.checkpoint):
                got = scorer.score(chunk)
                check_results(kind, chunk_ids, got, names)
                ids = [i for each in chunk_ids for i in each]
                unit.store.record(ids, [r for g in got for r in g], scorer.provenance)
                bar.update(len(ids))
        unit.store.finish(w.n_ids)
        result.scored += n_todo
    if scorer is not None:
        for k, v in scorer.seconds.items():
            result.seconds[k] = round(v, 3)
    return result
