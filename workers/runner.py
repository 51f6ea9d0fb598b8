"""The one job runner: every kind of job (score answers, judge pairs, LINKAGE lists) on one straight line::

    check backends -> list shards -> plan units (a shard, or a block of one: name, uri, sha256 and
      score store, each computed once) -> resume (a finished store is reused, a changed key starts
      the unit over, a partial store keeps its scores) -> the step (in this process, :func:`local_step`,
      or on Ray, :class:`workers.cluster.pipeline.RayStep`) -> every store merged (a score made two
      ways is refused) -> the kind's assemble step (its tables) -> manifest.json (last)

A job kind is a small object (:class:`JobKind`) that says only what differs: as values, its store
folder, the fields of its store key, its score names, its item type (the Ray codec is read from it),
checkpoint size and the files it publishes (an OUT holding another kind's files is refused); as
methods, the backend check, a unit's work items with their store ids, the scorer it needs (an
object that scores a chunk and says how: :class:`StepScorer`) and its assemble step, which hands its
tables, rejects and report to the run's staging (``JobRun.output``, a :class:`workers.storage.outdir.Staging`)
and returns its manifest fields (:class:`Assembled`). The runner alone opens the output folder,
stages, writes and publishes: no kind writes a file. The runner merges the stores before the
assemble step and closes them after it. The runner and both steps are the same code for every kind,
so the single-process and Ray paths, and the kinds, cannot drift apart.

At ~600 lines this module still holds the contract types, the local step and the run together: the
retry of failed cells (:func:`_retry_unit`) reads all three, and splitting them into contract, local
step and run modules is issue 46's, not a move made here to shave a count.
"""

from __future__ import annotations

import logging
import os
import platform
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rubric.config import ScoringConfig
from rubric.errors import BatchMismatchError, ConfigError, FailureBudgetError, InputError
from rubric.io import Block, record_from_json, record_json
from rubric.scoring import Provenance, Score
from rubric.tables import (COST_FILE, DEFAULT_MAX_FAILED, budget_lines, check_max_failed, cost_line, cost_summary,
                           cost_table, over_budget)
from workers.storage.shards import plan_inputs, shard_sha256
from workers.storage.outdir import OutputFolder, Staging
from workers.storage.run_scores import RunScores
from workers.storage.store import ShardStore, encode_provenance, score_key

__all__ = ["Unit", "Work", "StepResult", "StepScorer", "FunctionScorer", "prebuilt", "JobKind", "JobRun", "Assembled",
           "RunScores", "run", "local_step", "check_results", "checkpoints"]

log = logging.getLogger(__name__)


@dataclass
class Unit:
    """One unit of a job's plan: a whole shard or one block of it, with its score store.

    Attributes:
        name: the store folder (``<shard>`` or ``<shard>@<block>``).
        uri: the shard as given.
        sha: the shard's sha256 (computed once, at planning).
        shard: the shard's name (the manifest counts per input).
        block: the block, or None for the whole shard.
        store: the unit's score store, opened for the job's key.
    """

    name: str
    uri: str
    sha: str
    shard: str
    block: Block | None
    store: ShardStore


@dataclass
class Work:
    """What a unit still needs: the items without every score stored, and the unit's stored-id count."""

    todo: list
    ids: list[list[str]]  # each todo item's store ids
    n_ids: int


@dataclass
class StepResult:
    """What a step reports back to the runner.

    Attributes:
        failed: shard uri -> why it could not be read.
        scored: store ids scored by this run (resumed ones excluded).
        seconds: seconds per scorer or pool.
        info: step-specific facts for the manifest (pools, dedupe).
        retried: (store id, name) cells that had failed, scored again by ``--retry-failed``, per name.
    """

    failed: dict[str, str] = field(default_factory=dict)
    scored: int = 0
    retried: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    info: dict = field(default_factory=dict)


class StepScorer(Protocol):
    """What ``JobKind.scorer`` returns: it scores a chunk of items and says how.

    Attributes:
        provenance: score name -> how its scores are made (fixed when the scorer is built).
        seconds: seconds per scorer or pool, summed over every :meth:`score` call.
    """

    provenance: Mapping[str, Provenance]
    seconds: Mapping[str, float]

    def score(self, items: Sequence[Any], only: Sequence[str] | None = None) -> list[list[dict[str, Score]]]:
        """Per item, per store id, name -> Score (checked by :func:`check_results`). ``only``: the names
        needed (a retry of failed cells); a scorer may skip the others' work, or make them anyway."""
        ...


@dataclass
class FunctionScorer:
    """A :class:`StepScorer` made of a function (items -> per item, per store id, name -> Score) and the
    provenance of the scorer it calls: what the judge and LINKAGE kinds hand the runner."""

    function: Callable[[Sequence[Any]], list[list[dict[str, Score]]]]
    provenance: Mapping[str, Provenance]
    seconds: dict[str, float] = field(default_factory=dict)

    def score(self, items: Sequence[Any], only: Sequence[str] | None = None) -> list[list[dict[str, Score]]]:
        return self.function(items)  # every name: a retry keeps only the failed ones


def prebuilt(scorer: Any) -> Callable[..., Any]:
    """A kind's ``scorer_factory`` that returns ``scorer``, built beforehand (tests: a fake judge)."""
    return lambda *args, **kwargs: scorer


class JobKind:
    """What one kind of job supplies to the runner; subclasses override the methods that differ.

    Attributes:
        kind: the manifest's ``kind`` (None: none, the score job's manifest).
        store_dir: the stores' folder under OUT.
        what: a score name's noun in messages ("rubric", "judge", "LINKAGE system").
        status_done: an input's manifest status when it was (re)scored by this run.
        fmt: the input format (``rubric.readers.FORMATS``).
        blocks: plan large inputs as blocks (``rubric.readers.plan_blocks``).
        read_on_driver: on Ray, the driver builds the items (they are read for assembly anyway);
            otherwise Ray read tasks read the units.
        config: the engine settings.
        options: the reader options (in every store key).
        key_fields: the kind's own fields of every unit's store key (besides the input, its reader
            options and the config: ``workers.storage.store.score_key``).
        names: the score names every stored id carries (set by the kind's ``__init__``).
        item_type: the dataclass of the work items: they travel to Ray as its JSON
            (``rubric.io.record_json``; :meth:`encode_item`, :meth:`decode_item`).
        checkpoint: store ids per checkpoint (one store part) in the local step; the runner cuts the
            items in order, never splitting one (:func:`checkpoints`).
        outputs: every file the kind may publish into OUT (the manifest besides). One the earlier run
            published and this run does not stage is removed when the run publishes (no earlier run's
            table stays); an OUT whose manifest lists a file outside them holds another kind of job's
            output and is refused (``workers.storage.outdir.OutputFolder``).
        own_files: files the kind writes into OUT before it publishes (generated references; RAG-QA
            Arena's joined pairs, its input): a folder holding them without a manifest is still ours.
    """

    kind: str | None = None
    store_dir = "scores"
    what = "rubric"
    status_done = "scored"
    blocks = False
    read_on_driver = True
    fmt: str | None = None
    config: ScoringConfig
    options: dict
    key_fields: Mapping[str, Any] = {}
    names: list[str]
    item_type: type
    checkpoint: int
    outputs: tuple[str, ...] = ()
    own_files: tuple[str, ...] = ()
    #: The failure budget (``--max-failed``): a name with a larger fraction of failed rows makes the run
    #: exit non-zero after it published (:class:`rubric.errors.FailureBudgetError`).
    max_failed: float = DEFAULT_MAX_FAILED

    # --- planning ---
    def arguments(self) -> dict:
        """Plain data that rebuilds this kind (``type(kind)(**kind.arguments())``, on a Ray worker)."""
        raise NotImplementedError

    def check(self) -> None:
        """Fail before any data is read when a backend is missing."""

    def prepare(self, shards: Sequence[str], out: Path) -> None:
        """Anything the store keys need before the stores open (read on the driver, generated references)."""

    def unit_key(self, uri: str) -> Mapping[str, Any]:
        """The kind's fields of one input's store key: :attr:`key_fields` unless the input adds its own."""
        return self.key_fields

    # --- work ---
    def work_items(self, uri: str, block: Block | None) -> tuple[list, list[list[str]]]:
        """A unit's items and, per item, the store ids its scores are kept under (in the order the
        scorer returns them); InputError when the unit cannot be read."""
        raise NotImplementedError

    def stages(self) -> list[tuple[str, Any]]:
        """(pool, stage) in order: the Ray pools the items pass through, each building ``scorer(stage)``."""
        return [("llm", None)]

    def scorer(self, stage: Any = None) -> StepScorer:
        raise NotImplementedError

    def encode_item(self, item: Any) -> str:
        return record_json(item)

    def decode_item(self, text: str) -> Any:
        return record_from_json(self.item_type, text)

    def dedupe_key(self, item: Any) -> str:
        """Items with one key are scored once per job on Ray (their texts are the same)."""
        import hashlib

        return hashlib.sha256(self.encode_item(item).encode()).hexdigest()

    # --- after the step ---
    def assemble(self, job: "JobRun", scores: "RunScores", provenance: Mapping[str, Provenance]) -> "Assembled":
        """Hand the kind's tables, rejects and report to ``job.output`` (the manifest excepted) and say
        what the manifest records. ``scores`` is every unit's stores merged (the runner closes it),
        ``provenance`` one per name."""
        raise NotImplementedError


@dataclass
class Assembled:
    """What a kind's assemble step returns besides the files it staged.

    Attributes:
        fields: the manifest's top-level fields of the kind (counts, settings, ``protocol``...).
        per_input: an input's name -> the extra fields of its ``inputs`` entry (its counts).
        job: the manifest's ``job`` fields besides the runner's.
        failed: the job has no result: what was staged (the reasons) is published with the manifest,
            which records this, and the run then fails with it (InputError).
    """

    fields: dict
    per_input: dict = field(default_factory=dict)
    job: dict = field(default_factory=dict)
    failed: str | None = None


def check_results(kind: JobKind, ids: Sequence[Sequence[str]], got: Sequence[Sequence[Mapping[str, Score]]],
                  names: Sequence[str]) -> None:
    """One result list per item, one result per store id, each with every name (others are not stored);
    or BatchMismatchError."""
    if (len(got) != len(ids) or any(len(g) != len(i) for g, i in zip(got, ids))
            or any(not set(names) <= set(r) for g in got for r in g)):
        raise BatchMismatchError(f"the scorer returned {len(got)} results for {len(ids)} items, or results without "
                                 f"every id or every {kind.what}")


def checkpoints(items: Sequence[Any], ids: Sequence[Sequence[str]], size: int) -> Iterable[tuple[list, list]]:
    """``(items, their ids)`` in order, cut where the next item would take a checkpoint past ``size`` store
    ids; an item is never split (one with more ids than ``size`` is a checkpoint of its own)."""
    start, n = 0, 0
    for k, i in enumerate(ids):
        if k > start and n + len(i) > size:
            yield list(items[start:k]), list(ids[start:k])
            start, n = k, 0
        n += len(i)
    if start < len(items):
        yield list(items[start:]), list(ids[start:])


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


@dataclass
class JobRun:
    """One run of a job, as the kind's assemble step sees it.

    The assemble step hands its files to :attr:`output` (the run's staging, in a fresh folder inside
    OUT); the runner publishes them with the manifest (``workers.storage.outdir.OutputFolder.publish``: the
    earlier run's files this run does not write are removed, no other), and removes the staging folder
    afterwards, published or not.
    """

    kind: JobKind
    out: Path
    shards: list[str]
    units: list[Unit]
    step: StepResult
    runner: str
    status: dict[str, str]
    why: dict[str, str]
    timings: dict[str, float]
    output: Staging
    folder: OutputFolder
    t_start: float = 0.0

    def merged(self) -> tuple[RunScores, dict[str, Provenance]]:
        """Every unit's store in one on-disk lookup (the first unit's score of an id wins) and one
        provenance per name; the caller closes the lookup.

        Raises:
            ConfigError: a name was scored two ways in one job.
        """
        names = self.kind.names
        merged = RunScores(self.out / self.kind.store_dir, "merged")
        prov: dict[str, tuple[Provenance, str]] = {}
        try:
            for u in self.units:  # newest part first: a retried id's new part wins over the failed one
                for ids, encoded, part_prov, earlier in u.store.parts_reused(names, latest_first=True):
                    for r, p in part_prov.items():
                        first = prov.setdefault(r, (p, u.name))
                        if first[0] != p:
                            raise ConfigError(f"{self.kind.what} {r!r} was scored two ways in one job: unit "
                                              f"{first[1]} by {first[0]}, unit {u.name} by {p}; re-score one of "
                                              f"them (delete OUT/{self.kind.store_dir}/{u.name})")
                    merged.put_encoded(ids, encoded, earlier)
        except BaseException:
            merged.close()
            raise
        return merged, {r: p for r, (p, _) in prov.items()}


def _plan(kind: JobKind, inputs, folder: OutputFolder) -> tuple[list[str], list[Unit]]:
    out = folder.path
    plans = plan_inputs(inputs, kind.fmt, kind.options, blocks=kind.blocks)
    shards = list(plans)
    kind.prepare(shards, out)
    folder.dir(kind.store_dir)
    units = []
    for uri, plan in plans.items():
        for name, block in plan.units:
            key = score_key(path=uri, sha256=plan.sha, fmt=kind.fmt, options=kind.options, config=kind.config,
                            block=None if block is None else block.bounds(), extra=kind.unit_key(uri))
            units.append(Unit(name, uri, plan.sha, plan.name, block, ShardStore(out / kind.store_dir, name, key)))
    return shards, units


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
    out = folder.path
    if check:
        kind.check()
    shards, units = _plan(kind, inputs, folder)
    if retry:
        unfinished = [u.name for u in units if not u.store.done]
        if unfinished:
            raise ConfigError(f"--retry-failed retries a finished run of the same inputs, settings and versions into "
                              f"{out}, but {len(unfinished)} unit(s) have none ({', '.join(unfinished[:3])}"
                              f"{', ...' if len(unfinished) > 3 else ''}): run the job without --retry-failed first")
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
                 Staging(staging, kind.outputs), folder, t_start=t_start)
    try:
        return _assemble(job)
    finally:
        folder.remove(staging)


def _assemble(job: JobRun) -> dict:
    """The kind's assemble step on the merged stores, the inputs checked unchanged, the manifest, and the
    files published with it."""
    kind, units, status, why, timings = job.kind, job.units, job.status, job.why, job.timings
    t0 = time.perf_counter()
    scores, provenance = job.merged()
    try:
        done = kind.assemble(job, scores, provenance)
        cost = cost_summary(scores.cost_rows(kind.names), kind.names,
                            models={n: p.model_id for n, p in provenance.items() if p.model_id})
        if COST_FILE in kind.outputs:
            job.output.table(COST_FILE, cost_table(scores.cost_rows(kind.names)))
    finally:
        scores.close()
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
