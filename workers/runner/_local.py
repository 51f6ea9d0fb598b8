"""The local step: a job's pending units scored in this process, one at a time, a store checkpoint per
chunk (what :class:`workers.cluster.pipeline.RayStep` does on a Ray pool), and the retry of failed cells.

An item an earlier unit of this run scored is copied from the run's scratch lookup
(``workers.storage.run_scores.RunScores``, on disk) instead of being scored again."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from rubric.errors import BatchMismatchError, InputError
from rubric.scoring import Score
from workers.runner._contract import JobKind, StepResult, StepScorer, Unit, Work, check_results, checkpoints
from workers.storage.run_scores import RunScores
from workers.storage.store import encode_provenance

__all__ = ["work", "local_step"]

log = logging.getLogger(__name__)


def work(kind: JobKind, unit: Unit) -> Work:
    """Read a unit and keep the items with an id not yet in its store (InputError when it cannot be read)."""
    items, ids = kind.work_items(unit.uri, unit.block)
    done = unit.store.scored_ids()
    todo = [k for k, i in enumerate(ids) if not all(a in done for a in i)]
    return Work([items[k] for k in todo], [ids[k] for k in todo], sum(len(i) for i in ids))


def _retry_unit(kind: JobKind, unit: Unit, scorer_of: Callable[[], StepScorer], result: StepResult) -> None:
    """Score again exactly the (id, name) cells of ``unit`` whose newest stored score failed.

    Each retried item goes into a new store part with every name: the retried cells' new scores, the
    others' stored scores as they were (their cost kept and marked reused). Readers keep an id's newest
    part (``ShardStore.parts(latest_first=True)``), so the tables are those of a run where these cells
    were made now. A scorer that makes several names in one call (the LLM rubrics) may make a retried
    item's other names too; only the failed ones are kept and counted.
    """
    from workers.storage.store import decode_score, encode_score

    names = kind.names
    failed = unit.store.failed_ids(names)
    if not failed:
        return
    items, ids = kind.work_items(unit.uri, unit.block)
    keep = [k for k, i in enumerate(ids) if any(a in failed for a in i)]
    todo, todo_ids = [items[k] for k in keep], [ids[k] for k in keep]
    stored = unit.store.newest(names, [a for i in todo_ids for a in i])
    scorer = scorer_of()
    for chunk, chunk_ids in checkpoints(todo, todo_ids, kind.checkpoint):
        only = sorted({r for each in chunk_ids for a in each for r in failed.get(a, ())}, key=names.index)
        got = scorer.score(chunk, only=only)
        if len(got) != len(chunk_ids) or any(len(g) != len(i) for g, i in zip(got, chunk_ids)):
            raise BatchMismatchError(f"the scorer returned {len(got)} results for {len(chunk_ids)} items on a retry")
        flat_ids: list[str] = []
        cols: dict[str, list[str]] = {r: [] for r in names}
        for each, results in zip(chunk_ids, got):
            for a, new in zip(each, results):
                flat_ids.append(a)
                for r in names:
                    if r in failed.get(a, ()):
                        if r not in new:
                            raise BatchMismatchError(f"the scorer returned no {kind.what} {r!r} for {a} on a retry")
                        cols[r].append(encode_score(new[r]))
                        result.retried[r] = result.retried.get(r, 0) + 1
                    else:
                        old = decode_score(stored[a][r])
                        cols[r].append(encode_score(Score(old.raw, old.error, old.extras, {**old.cost, "reused": True})))
        unit.store.append_encoded(flat_ids, cols, {r: encode_provenance(scorer.provenance[r]) for r in names})
        result.scored += len(flat_ids)


def local_step(kind: JobKind, pending: Sequence[Unit], *, progress: bool, scorer: StepScorer | None = None,
               retry: bool = False) -> StepResult:
    """Score the pending units in this process, one at a time, a store checkpoint per chunk.

    An item that an earlier unit of this run scored is copied into the later unit's store instead of
    being scored again (the lookup is on disk). Nothing read is kept by the step.

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
    run_scores = RunScores(pending[0].store.dir.parent)
    try:
        for unit in pending:
            try:
                w = work(kind, unit)
            except InputError as e:
                log.error("input %s cannot be read: %s", unit.uri, e)
                result.failed[unit.uri] = str(e)
                continue
            todo, todo_ids = w.todo, w.ids
            if todo:  # copy what an earlier unit of this run scored
                known = run_scores.get([i for ids in todo_ids for i in ids])
                copied = [i for ids in todo_ids if all(a in known for a in ids) for i in ids]
                if copied:
                    unit.store.append(copied, {r: [known[i][r] for i in copied] for r in names},
                                      run_scores.provenance)
                    keep = [k for k, ids in enumerate(todo_ids) if not all(a in known for a in ids)]
                    todo, todo_ids = [todo[k] for k in keep], [todo_ids[k] for k in keep]
            if todo and scorer is None:
                t0 = time.perf_counter()
                scorer = kind.scorer()
                result.seconds["load_backends"] = round(time.perf_counter() - t0, 3)
            n_todo = sum(len(ids) for ids in todo_ids)
            if n_todo < w.n_ids:
                log.info("%s: %d of %d already scored (resumed, or scored in an earlier unit)", unit.name,
                         w.n_ids - n_todo, w.n_ids)
            with tqdm(total=n_todo, desc=f"{kind.status_done} {unit.name}", disable=not progress,
                      mininterval=2.0) as bar:
                for chunk, chunk_ids in checkpoints(todo, todo_ids, kind.checkpoint):
                    got = scorer.score(chunk)
                    check_results(kind, chunk_ids, got, names)
                    ids = [i for each in chunk_ids for i in each]
                    flat = [r for g in got for r in g]
                    prov = dict(scorer.provenance)
                    encoded = unit.store.append(ids, {r: [x[r] for x in flat] for r in names}, prov)
                    run_scores.provenance.update(prov)
                    run_scores.put_encoded(ids, encoded)
                    bar.update(len(ids))
            unit.store.finish(w.n_ids)
            result.scored += n_todo
    finally:
        run_scores.close()
    if scorer is not None:
        for k, v in scorer.seconds.items():
            result.seconds[k] = round(v, 3)
    return result
