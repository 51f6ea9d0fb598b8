"""The Ray score step: pending shards -> unique answers -> actor pools -> each shard's score store.

The job itself (resume, assembly, outputs) is :mod:`workers.job`, the same as the single-process
path; only scoring is distributed here::

    read tasks (one per shard: rubric.readers -> rubric.records.explode, rows carry shard + index)
      -> [optional: group by answer_id, so an answer shared by shards is scored once]
      -> map_batches over one fixed-size ScorerActor pool per resource (text, classifier, factuality, llm)
      -> the driver appends each shard's rows to its ShardStore as they come (workers.collect),
         a bounded buffer at a time, and marks the shard finished when its last answer is in

A shard's store is finished as soon as its last answer comes back, so a killed job loses at most
the shards in flight. No scoring logic lives here: actors call ``models.backends.build_scorers``
and ``workers.local.score_items``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rubric.config import ScoringConfig
from rubric.errors import BatchMismatchError, ConfigError, InputError, RubricError
from rubric.records import AnswerItem, explode
from rubric.specs import RubricSpec
from workers.actors import ScorerActor, provenance_column, score_column
from workers.collect import ShardCollector
from workers.job import PendingShard, StepResult, run_job
from rubric.readers import Block
from workers.shards import read_unit

__all__ = ["PoolConfig", "DEFAULT_POOLS", "pool_of_backend", "init_local_ray", "ray_step", "run_ray_job",
           "add_pool_stage", "answer_rows"]

log = logging.getLogger(__name__)

# Cheap CPU work without a neural model: spaCy, the grammar checkers, word counts, ROUGE-L.
_TEXT_BACKENDS = frozenset({"spacy", "harper", "languagetool", "length", "rouge"})
_TEXT_COLUMNS = ("question", "answer", "docs", "reference")
#: Pools whose actors host an LLM engine: one GPU each by default when the cluster has GPUs.
_ENGINE_POOLS = ("factuality", "llm")
_POOL_ORDER = ("text", "classifier", "factuality", "llm")
_REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class PoolConfig:
    """One fixed-size actor pool (engines start slowly, so pools do not autoscale).

    Attributes:
        size: actors in the pool.
        num_cpus: CPUs reserved per actor; fractional on small machines (a whole CPU per actor on
            2 cores starves the read tasks and hangs).
        num_gpus: GPUs per actor; None means 1 when the cluster has GPUs, else 0 (engine pools, llm
            and factuality; other pools treat None as 0). Set it to the tensor-parallel degree for a
            sharded engine.
        batch_size: answers per Ray batch; None uses ``ScoringConfig.batch_size``.
        max_restarts: times Ray restarts a dead actor (bounded: never retry forever).
        max_task_retries: times a batch is retried on a restarted actor.
        batches_in_flight: Ray batches each actor scores at once (engine pools only). 1 is one
            synchronous engine call per batch; above 1, Ray Data sends that many batches to an actor,
            which runs them in threads on one kept-busy engine (see docs/ray.md, "Engines kept busy").
    """

    size: int = 1
    num_cpus: float = 0.5
    num_gpus: float | None = None
    batch_size: int | None = None
    max_restarts: int = 2
    max_task_retries: int = 2
    batches_in_flight: int = 1

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ConfigError(f"'size' must be >= 1, got {self.size}")
        if self.num_cpus < 0:
            raise ConfigError(f"'num_cpus' must be >= 0, got {self.num_cpus}")
        if self.num_gpus is not None and self.num_gpus < 0:
            raise ConfigError(f"'num_gpus' must be >= 0 or None, got {self.num_gpus}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ConfigError(f"'batch_size' must be >= 1, got {self.batch_size}")
        for name in ("max_restarts", "max_task_retries"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name!r} must be >= 0 (bounded retries), got {getattr(self, name)}")
        if self.batches_in_flight < 1:
            raise ConfigError(f"'batches_in_flight' must be >= 1, got {self.batches_in_flight}")


#: Pool per resource kind. "classifier" hosts any backend that is neither text nor an engine
#: (specificity, MiniLM similarity).
DEFAULT_POOLS: Mapping[str, PoolConfig] = {
    "text": PoolConfig(),
    "classifier": PoolConfig(),
    "factuality": PoolConfig(),
    "llm": PoolConfig(),
}


def pool_of_backend(backend: str) -> str:
    """The pool that hosts a backend: "text", "classifier", "factuality" or "llm".

    Factuality builds an engine of its own (claim extraction + verification), so it gets its own
    GPU pool rather than a second engine inside the LLM actors' GPU.
    """
    if backend in _ENGINE_POOLS:
        return backend
    if backend in _TEXT_BACKENDS:
        return "text"
    return "classifier"


# ---------------------------------------------------------------------------------------------
# Ray
# ---------------------------------------------------------------------------------------------


def _worker_env() -> dict:
    # Workers of a local Ray import rubric/models/workers from this checkout when the package is
    # not pip-installed; under `ray job submit --working-dir .` the working dir does this instead.
    path = os.pathsep.join(p for p in (str(_REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {"env_vars": {"PYTHONPATH": path}}


def init_local_ray(*, num_cpus: int | None = None, num_gpus: int | None = None, object_store_mb: int = 512,
                   temp_dir: str | None = None) -> str:
    """Start a small local Ray (no dashboard, bounded object store, a short temp dir under /tmp).

    The temp dir must be short: Ray puts Unix sockets in it and their paths are limited to ~107 bytes.

    Returns:
        The temp dir (session files and logs), for the caller to remove after ``ray.shutdown()``.
    """
    import ray

    from workers.logs import ray_logging

    temp_dir = temp_dir or tempfile.mkdtemp(prefix="lfqa-ray-", dir="/tmp")
    ray.init(num_cpus=num_cpus, num_gpus=num_gpus, include_dashboard=False,
             object_store_memory=object_store_mb * 2**20, _temp_dir=temp_dir, **ray_logging(_worker_env()),
             log_to_driver=True)
    return temp_dir


def _connect(address: str | None) -> tuple[bool, str | None]:
    """Make sure Ray is up. Returns (started here, local temp dir): the caller shuts down what it started."""
    import ray

    if ray.is_initialized():
        return False, None
    if address is None and os.environ.get("RAY_ADDRESS"):
        address = "auto"  # `ray job submit` and `ray start` users set RAY_ADDRESS
    if address in (None, "local"):
        return True, init_local_ray(num_cpus=min(os.cpu_count() or 1, 2) if address == "local" else None)
    else:
        # Under `ray job submit` the job's own runtime env (--working-dir) already ships the code;
        # passing another would replace it. Outside a job, the PYTHONPATH only helps workers on this
        # machine (a `ray start --head` here); remote nodes need the package installed.
        in_job = "RAY_JOB_CONFIG_JSON_ENV_VAR" in os.environ
        from workers.logs import ray_logging

        ray.init(address=address, **ray_logging(None if in_job else _worker_env()))
    return True, None


def _empty_items_table():
    import pyarrow as pa

    return pa.table({"shard": pa.array([], pa.int64()), "index": pa.array([], pa.int64()),
                     "n_items": pa.array([], pa.int64()), "answer_id": pa.array([], pa.string()),
                     "question": pa.array([], pa.string()), "answer": pa.array([], pa.string()),
                     "docs": pa.array([], pa.string()), "reference": pa.array([], pa.string())})


def _explode_shards(batch, *, fmt: str, options: Mapping[str, Any]):
    """Read task: shard descriptors -> one row per unique answer, carrying shard id and index."""
    import pyarrow as pa

    tables = []
    blocks = batch.column("block").to_pylist() if "block" in batch.column_names else [None] * batch.num_rows
    for shard_id, uri, block in zip(batch.column("shard").to_pylist(), batch.column("uri").to_pylist(), blocks):
        try:
            items = explode(read_unit(uri, fmt, options, Block.from_json(block) if block else None).pairs)
        except RubricError as e:
            # an unreadable shard must not stop the others; the driver re-reads it and reports why
            log.error("shard %s cannot be read: %s", uri, e)
            continue
        tables.append(answer_rows(items, shard_id))
    return pa.concat_tables(tables) if tables else _empty_items_table()


def answer_rows(items: Sequence[AnswerItem], shard_id: int = 0):
    """The Arrow rows the pools score: one per answer, carrying its shard id and index in the shard."""
    import pyarrow as pa

    n = len(items)
    return pa.table({
        "shard": pa.array([shard_id] * n, pa.int64()),
        "index": pa.array(range(n), pa.int64()),
        "n_items": pa.array([n] * n, pa.int64()),
        "answer_id": pa.array([it.answer_id for it in items], pa.string()),
        "question": pa.array([it.question for it in items], pa.string()),
        "answer": pa.array([it.answer for it in items], pa.string()),
        "docs": pa.array([json.dumps(list(it.docs), ensure_ascii=False) for it in items], pa.string()),
        "reference": pa.array([it.reference for it in items], pa.string()),  # null: no reference answer
    })


def _one_per_answer(block):
    """Global dedupe of one hash partition: one row per answer_id, with every (shard, index, n_items) it stands for.

    The partition holds every row of its answer ids (a hash repartition on ``answer_id``), so keeping
    the first row of each id here is exact; the texts are the first occurrence's.
    """
    import pyarrow as pa

    if block.num_rows == 0:
        return block.append_column("members", pa.array([], pa.string()))
    ids = block.column("answer_id").to_pylist()
    shard, index, n_items = (block.column(c).to_pylist() for c in ("shard", "index", "n_items"))
    first: dict[str, int] = {}
    members: dict[str, list[list[int]]] = {}
    for row, answer_id in enumerate(ids):
        first.setdefault(answer_id, row)
        members.setdefault(answer_id, []).append([shard[row], index[row], n_items[row]])
    keep = block.take(pa.array(list(first.values()), pa.int64()))
    return keep.append_column("members", pa.array([json.dumps(members[a]) for a in first], pa.string()))


def _dedupe_partitions(n_units: int) -> int:
    """Hash partitions for the global dedupe: about one per read unit (a block of at most ~50k pairs), capped.

    Ray Data's default (200) starts an aggregator per partition, which stalls a small machine; a
    partition per unit keeps each near a block's size.
    """
    return max(1, min(n_units, 200))


def _group_specs(specs: Sequence[RubricSpec]) -> dict[str, list[RubricSpec]]:
    groups: dict[str, list[RubricSpec]] = {}
    for s in specs:
        groups.setdefault(pool_of_backend(s.backend), []).append(s)
    # cheap pools first, the LLM last: its batches then carry the other scores along, not the reverse
    return dict(sorted(groups.items(), key=lambda kv: _POOL_ORDER.index(kv[0])))


def _resolve_gpus(pool: str, cfg: PoolConfig) -> float:
    import ray

    if cfg.num_gpus is not None:
        return cfg.num_gpus
    if pool in _ENGINE_POOLS and ray.cluster_resources().get("GPU", 0) > 0:
        return 1.0
    return 0.0


def _build_dataset(pending: list[tuple[int, str, str]], groups: dict[str, list[RubricSpec]], *, fmt: str,
                   options: Mapping[str, Any], config: ScoringConfig, pools: Mapping[str, PoolConfig],
                   read_cpus: float, fault_marker: str | None, global_dedupe: bool,
                   read_concurrency: int | None = None):
    import ray

    # One read task per unit (a shard, or a block of one: Parquet row groups, a JSONL byte range, rows
    # of a Hugging Face dataset), each running rubric.readers on its piece; see docs/ray.md for why
    # ray.data.read_parquet / read_json / from_huggingface do not fit here.
    ds = ray.data.from_items([{"shard": i, "uri": u, "block": b} for i, u, b in pending],
                             override_num_blocks=len(pending))
    # each read task holds one block (up to ~50k rows) while it runs: read_concurrency caps how many at once
    ds = ds.map_batches(_explode_shards, batch_size=1, batch_format="pyarrow", num_cpus=read_cpus,
                        concurrency=read_concurrency,
                        fn_kwargs={"fmt": fmt, "options": dict(options)})
    if global_dedupe:
        # An all-to-all step: no shard can finish before every shard has been read.
        # (Ray's own groupby().map_groups() does the same repartition but calls Python once per group.)
        ds = ds.repartition(_dedupe_partitions(len(pending)), keys=["answer_id"], sort=True)
        ds = ds.map_batches(_one_per_answer, batch_size=None, batch_format="pyarrow", num_cpus=read_cpus)
    last = list(groups)[-1]
    for pool, group in groups.items():
        ds = add_pool_stage(ds, pool, [s.version for s in group], pools.get(pool, PoolConfig()), config,
                            drop_columns=_TEXT_COLUMNS if pool == last else (), fault_marker=fault_marker)
    return ds


def add_pool_stage(ds, pool: str, versions: Sequence[str], cfg: PoolConfig, config: ScoringConfig, *,
                   drop_columns: Sequence[str] = (), fault_marker: str | None = None):
    """``ds`` followed by one fixed-size ``ScorerActor`` pool scoring ``versions``.

    Args:
        ds: a dataset of answer rows (answer_id, question, answer, docs, reference, ...).
        pool: the pool's kind ("text", "classifier", "factuality", "llm").
        versions: rubric versions its actors serve.
        cfg: the pool's settings.
        config: the job's scoring settings, passed to every actor.
        drop_columns: input columns the actors leave out of their output.
        fault_marker: testing only, see :class:`workers.actors.ScorerActor`.

    Raises:
        ConfigError: ``batches_in_flight > 1`` for a pool without an engine.
    """
    import ray

    if cfg.batches_in_flight > 1 and pool not in _ENGINE_POOLS:
        raise ConfigError(f"batches_in_flight > 1 keeps an LLM engine busy; pool {pool!r} has none "
                          f"(engine pools: {list(_ENGINE_POOLS)})")
    num_gpus = _resolve_gpus(pool, cfg)
    log.info("pool %s: %d actor(s) x (%.2f CPU, %.2f GPU, %d batch(es) in flight) for %s", pool, cfg.size,
             cfg.num_cpus, num_gpus, cfg.batches_in_flight, ", ".join(versions))
    k = cfg.batches_in_flight
    # k > 1: Ray Data sends k batches to an actor and runs them in k threads (true multi-threading:
    # the UDF itself runs concurrently), and the actor's engine loop merges their requests.
    compute = (ray.data.ActorPoolStrategy(size=cfg.size) if k == 1 else
               ray.data.ActorPoolStrategy(size=cfg.size, max_tasks_in_flight_per_actor=k,
                                          max_concurrent_calls_per_actor=k, enable_true_multi_threading=True))
    with warnings.catch_warnings():
        # Ray 2.60 has no named parameter for max_restarts / max_task_retries yet; the
        # **ray_remote_args route is the documented one and warns that it will change in 2.64.
        warnings.filterwarnings("ignore", message=".*ray_remote_args.* is deprecated")
        return ds.map_batches(
            ScorerActor,
            fn_constructor_kwargs={"versions": list(versions), "config": config, "drop_columns": tuple(drop_columns),
                                   "fault_marker": fault_marker, "batches_in_flight": k},
            batch_size=cfg.batch_size or config.batch_size,
            batch_format="pyarrow",
            compute=compute,
            num_cpus=cfg.num_cpus,
            num_gpus=num_gpus or None,
            # bounded actor fault tolerance: Ray Data's default is to restart and retry forever
            max_restarts=cfg.max_restarts,
            max_task_retries=cfg.max_task_retries,
        )


def ray_step(pending: Sequence[PendingShard], *, fmt: str, options: Mapping[str, Any], specs: Sequence[RubricSpec],
             config: ScoringConfig, progress: bool, pools: Mapping[str, PoolConfig] | None = None,
             address: str | None = None, read_cpus: float = 0.25, read_concurrency: int | None = None,
             global_dedupe: bool = True,
             fault_marker: str | None = None) -> StepResult:
    """The job's score step on Ray (see the module docstring); arguments as :func:`run_ray_job`."""
    if read_concurrency is not None and read_concurrency < 1:
        raise ConfigError(f"'read_concurrency' must be >= 1 or None, got {read_concurrency}")
    pools = {**DEFAULT_POOLS, **(pools or {})}
    groups = _group_specs(specs)
    result = StepResult(info={"pools": {k: asdict(pools.get(k, PoolConfig())) for k in groups},
                              "global_dedupe": global_dedupe, "read_concurrency": read_concurrency})
    if not pending:
        return result
    for sh in pending:  # Ray scores a shard whole: a partial local run's chunks are not merged in
        if sh.store.scored_ids():
            log.info("shard %s: discarding a partial store; Ray scores shards whole", sh.name)
            sh.store.reset()
    started, temp_dir = _connect(address)
    t0 = time.perf_counter()
    try:
        result.answers_scored = _score_pending(pending, groups, specs, result, fmt=fmt, options=options,
                                               config=config, pools=pools, read_cpus=read_cpus,
                                               read_concurrency=read_concurrency, progress=progress,
                                               fault_marker=fault_marker, global_dedupe=global_dedupe)
    finally:
        if started:
            import ray

            ray.shutdown()
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)
    result.seconds["ray"] = round(time.perf_counter() - t0, 3)
    return result


def _score_pending(pending: Sequence[PendingShard], groups, specs, result: StepResult, *, fmt, options, config,
                   pools, read_cpus, progress, fault_marker, global_dedupe, read_concurrency=None) -> int:
    """Stream the pending shards through the pools into the shards' stores (:class:`workers.collect.ShardCollector`).

    Returns:
        How many answers the pools scored (fewer than the shards' answers under global dedupe).
    """
    import ray

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = progress
    by_id = dict(enumerate(pending))
    ds = _build_dataset([(i, sh.uri, sh.block.to_json() if sh.block is not None else "") for i, sh in by_id.items()],
                        groups, fmt=fmt, options=options, config=config,
                        pools=pools, read_cpus=read_cpus, fault_marker=fault_marker, global_dedupe=global_dedupe,
                        read_concurrency=read_concurrency)
    names = [s.name for s in specs]
    collector = ShardCollector(by_id, names)
    n_scored = 0
    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
        cols = batch.to_pydict()
        n_scored += batch.num_rows
        for j in range(batch.num_rows):
            scores = {n: cols[score_column(n)][j] for n in names}
            prov = {n: cols[provenance_column(n)][j] for n in names}
            members = json.loads(cols["members"][j]) if "members" in cols else \
                [(cols["shard"][j], cols["index"][j], cols["n_items"][j])]
            for shard_id, idx, n_items in members:
                collector.add(shard_id, idx, n_items, cols["answer_id"][j], scores, prov)
    # A shard with no answers (every row rejected) or that its read task could not read sends no
    # row: read it here to tell the two apart; a shard with answers still open is a lost row.
    still_open = collector.still_open()
    for shard_id, sh in by_id.items():
        if shard_id in collector.finished:
            continue
        if shard_id in still_open:
            got, n = still_open[shard_id]
            raise BatchMismatchError(f"shard {sh.uri}: {got} of {n} answers came back")
        try:
            n = len(explode(read_unit(sh.uri, fmt, options, sh.block).pairs))
        except InputError as e:
            log.error("input %s cannot be read: %s", sh.uri, e)
            result.failed[sh.uri] = str(e)
            continue
        if n:
            raise BatchMismatchError(f"shard {sh.uri}: none of its {n} answers came back")
        sh.store.finish(0)
    return n_scored


def run_ray_job(inputs: str | Path | Sequence[str | Path], fmt: str, specs: Sequence[RubricSpec], out: str | Path, *,
                config: ScoringConfig, reader_options: Mapping[str, Any] | None = None, seed: int = 0,
                pools: Mapping[str, PoolConfig] | None = None, address: str | None = None,
                read_cpus: float = 0.25, read_concurrency: int | None = None, global_dedupe: bool = True,
                progress: bool = True,
                fault_marker: str | None = None) -> dict:
    """The scoring job with its score step on Ray; the same outputs as :func:`workers.job.run_job`.

    Args:
        inputs: shard files, directories of shards, globs, or pyarrow filesystem URIs.
        fmt: input format (``rubric.readers.FORMATS``); every shard has the same format.
        specs: rubric specs to score.
        out: local output folder (the driver writes it).
        config: scoring settings passed to every actor.
        reader_options: passed to ``rubric.readers.read_input`` for every shard.
        seed: split seed (splits are assigned over the whole job).
        pools: pool settings by kind ("text", "classifier", "factuality", "llm"); missing kinds use
            ``PoolConfig()``.
        address: Ray address. None joins ``$RAY_ADDRESS`` when set (as under ``ray job submit``) and
            otherwise starts a local Ray; "local" starts a local Ray of at most 2 CPUs; "auto" or
            "ray://..." joins a running cluster. Ignored if Ray is already initialised.
        read_cpus: CPUs reserved per shard-read task.
        read_concurrency: most read tasks at once (each holds one block while it runs, so this
            bounds the read side's memory); None lets Ray run as many as the CPUs allow.
        global_dedupe: score an answer that occurs in several pending shards or blocks once (a
            hash shuffle by answer id; no shard is complete before all have been read). False
            streams shards through independently and scores a shared answer in each.
        progress: show Ray Data's progress bars.
        fault_marker: testing only, see :class:`workers.actors.ScorerActor`.

    Returns:
        The job manifest (also ``OUT/manifest.json``).
    """
    def step(pending, **kw) -> StepResult:
        return ray_step(pending, pools=pools, address=address, read_cpus=read_cpus,
                        read_concurrency=read_concurrency, global_dedupe=global_dedupe,
                        fault_marker=fault_marker, **kw)

    return run_job(inputs, fmt, specs, out, config=config, reader_options=reader_options, seed=seed,
                   progress=progress, runner="ray", step=step)
