"""The job's step on Ray, for every kind of job: pending units -> work items -> actor pools -> each unit's store.

The job itself (planning, resume, assembly, outputs) is :func:`workers.runner.run`, the same as the
single-process path; only scoring is distributed here, the same way for every kind (score, judge,
LINKAGE)::

    the items: read tasks, one per unit (the score job: rubric.io on a shard or a block), or
      built on the driver (judges and LINKAGE read their units for assembly anyway); a partial
      store's stored ids are left out, so only what is missing is sent
      -> [global dedupe: a hash shuffle by the kind's item key, so an item shared by units is scored once]
      -> map_batches over one fixed-size pool of :class:`workers.cluster.actors.StageActor` per stage of the kind
         (the score job: a pool per resource its rubrics' backends declared; judges and LINKAGE: the llm pool)
      -> the driver appends each unit's rows to its store as they come (:class:`workers.cluster.collect.ShardCollector`),
         a bounded buffer at a time, and finishes a store when its last item is in

A unit's store is finished as soon as its last item comes back, so a killed job loses at most the
units in flight. No scoring logic lives here: the actors build the kind's scorer and call its
``score``, the same call the single-process step makes.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rubric.config import check_range
from rubric.errors import BatchMismatchError, ConfigError, InputError, RubricError
from rubric.io import Block
from workers.cluster.actors import StageActor
from workers.cluster.collect import ShardCollector
from workers.runner import JobKind, StepResult, Unit, work

__all__ = ["PoolConfig", "RayStep", "NodeWatch", "init_local_ray", "shutdown_ray", "ray_session", "add_pool_stage",
           "item_rows"]

log = logging.getLogger(__name__)

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
        max_task_retries: times a batch whose actor died or became unreachable is sent again; -1 (the
            default): as long as the actor can be restarted, i.e. bounded by ``max_restarts`` (a batch
            that kills its actor every time uses up the restarts, then the job stops). A bounded count is
            used up while the cluster has not yet noticed a lost node: Ray retries an unreachable
            actor with backoff, each try counting, and the job failed with 2 (docs/ray.md).
        batches_in_flight: Ray batches each actor scores at once (engine pools only). 1 is one
            synchronous engine call per batch; above 1, Ray Data sends that many batches to an actor,
            which runs them in threads on one kept-busy engine (see docs/ray.md, "Engines kept busy").
    """

    size: int = 1
    num_cpus: float = 0.5
    num_gpus: float | None = None
    batch_size: int | None = None
    max_restarts: int = 2
    max_task_retries: int = -1
    batches_in_flight: int = 1

    def __post_init__(self) -> None:
        check_range("size", self.size, low=1)
        check_range("num_cpus", self.num_cpus, low=0)
        check_range("num_gpus", self.num_gpus, low=0, optional=True)
        check_range("batch_size", self.batch_size, low=1, optional=True)
        if self.max_restarts < 0:
            raise ConfigError(f"'max_restarts' must be >= 0 (bounded retries), got {self.max_restarts}")
        if self.max_task_retries < -1:
            raise ConfigError(f"'max_task_retries' must be >= 0, or -1 (while the actor can be restarted), got "
                              f"{self.max_task_retries}")
        check_range("batches_in_flight", self.batches_in_flight, low=1)


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


def shutdown_ray() -> None:
    """Disconnect this process from Ray (``ray.shutdown()``), the garbage collector run first while connected.

    Ray ends a process with exit status 1 when anything in it calls into Ray's core worker after
    ``ray.shutdown()``: one ERROR line in the driver's log, "The core worker has already been shutdown ... The
    process will exit", and nothing on the terminal (ray-project/ray#19115). Ray objects in unreachable
    cycles are finalized by Python's cyclic collector in whichever thread next allocates, a daemon thread
    (tqdm's monitor, Ray Data's metrics poller) included, so they can be finalized after the shutdown. The
    pytest process of the multinode tests ended that way once in three runs, 0.14 s after a shutdown, from a
    thread started early in the session; what it touched was not identified, and finalizers run by the
    collector are the one such path we could name. Collecting first runs them while Ray is still connected.
    """
    import gc

    import ray

    if ray.is_initialized():
        gc.collect()
    ray.shutdown()


@contextmanager
def ray_session(address: str | None) -> Iterator[None]:
    """Join or start Ray (:func:`_connect`); shut down what was started here."""
    started, temp_dir = _connect(address)
    try:
        yield
    finally:
        if started:
            shutdown_ray()
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)


_ROW_TYPES = (("unit", "int64"), ("index", "int64"), ("n_items", "int64"), ("n_ids", "int64"), ("ids", "string"),
              ("key", "string"), ("record", "string"))


def item_rows(kind: JobKind, items: Sequence[Any], ids: Sequence[Sequence[str]], unit: int = 0,
              n_ids: int | None = None):
    """The Arrow rows the pools score: one per item, with its unit, its index among the unit's items sent,
    how many were sent, the unit's stored-id count, its store ids (JSON), its dedupe key and its record."""
    import pyarrow as pa

    n = len(items)
    cols = {"unit": [unit] * n, "index": list(range(n)), "n_items": [n] * n,
            "n_ids": [sum(len(i) for i in ids) if n_ids is None else n_ids] * n,
            "ids": [json.dumps(i, ensure_ascii=False) for i in ids], "key": [kind.dedupe_key(it) for it in items],
            "record": [kind.encode_item(it) for it in items]}
    return pa.table({name: pa.array(cols[name], getattr(pa, t)()) for name, t in _ROW_TYPES})


def _read_units(batch, *, kind_type: type, kind_args: Mapping[str, Any]):
    """Read task: unit descriptors -> the rows of each unit's items not yet in its store."""
    import pyarrow as pa

    kind = kind_type(**kind_args)
    tables = [item_rows(kind, [], [])]
    for unit_id, uri, block, done in zip(*(batch.column(c).to_pylist() for c in ("unit", "uri", "block", "done"))):
        try:
            items, ids = kind.work_items(uri, Block.from_json(block) if block else None)
        except RubricError as e:
            # an unreadable unit must not stop the others; the driver re-reads it and reports why
            log.error("input %s cannot be read: %s", uri, e)
            continue
        stored = set(json.loads(done))
        todo = [k for k, i in enumerate(ids) if not all(a in stored for a in i)]
        tables.append(item_rows(kind, [items[k] for k in todo], [ids[k] for k in todo], unit_id,
                                sum(len(i) for i in ids)))
    return pa.concat_tables(tables)


def _one_per_key(block):
    """Global dedupe of one hash partition: one row per key, with every (unit, index, n_items, n_ids, ids) it
    stands for. The partition holds every row of its keys (a hash repartition on ``key``), so keeping
    the first row of each key here is exact."""
    import pyarrow as pa

    if block.num_rows == 0:
        return block.append_column("members", pa.array([], pa.string()))
    cols = {c: block.column(c).to_pylist() for c in ("key", "unit", "index", "n_items", "n_ids", "ids")}
    first: dict[str, int] = {}
    members: dict[str, list] = {}
    for row, key in enumerate(cols["key"]):
        first.setdefault(key, row)
        members.setdefault(key, []).append([cols["unit"][row], cols["index"][row], cols["n_items"][row],
                                            cols["n_ids"][row], json.loads(cols["ids"][row])])
    keep = block.take(pa.array(list(first.values()), pa.int64()))
    return keep.append_column("members", pa.array([json.dumps(members[k]) for k in first], pa.string()))


def _resolve_gpus(pool: str, cfg: PoolConfig) -> float:
    import ray

    from models.backends import ENGINE_POOLS

    if cfg.num_gpus is not None:
        return cfg.num_gpus
    if pool in ENGINE_POOLS and ray.cluster_resources().get("GPU", 0) > 0:
        return 1.0
    return 0.0


def add_pool_stage(ds, kind: JobKind, pool: str, stage: Any, cfg: PoolConfig, *, batch_size: int,
                   drop_record: bool = False, fault_marker: str | None = None):
    """``ds`` followed by one fixed-size :class:`workers.cluster.actors.StageActor` pool scoring ``stage`` of ``kind``.

    Args:
        ds: a dataset of item rows (:func:`item_rows`).
        kind: the job's kind (rebuilt on each actor from its ``arguments()``).
        pool: the pool's name (``models.backends.POOLS``).
        stage: what the actors' scorer serves (``kind.scorer(stage)``).
        cfg: the pool's settings.
        batch_size: items per Ray batch.
        drop_record: leave the item records out of the output (the last pool; the driver does not need them back).
        fault_marker: testing only, see :class:`workers.cluster.actors.StageActor`.

    Raises:
        ConfigError: ``batches_in_flight > 1`` for a pool without an engine.
    """
    import ray

    from models.backends import ENGINE_POOLS

    if cfg.batches_in_flight > 1 and pool not in ENGINE_POOLS:
        raise ConfigError(f"batches_in_flight > 1 keeps an LLM engine busy; pool {pool!r} has none "
                          f"(engine pools: {list(ENGINE_POOLS)})")
    num_gpus = _resolve_gpus(pool, cfg)
    log.info("pool %s: %d actor(s) x (%.2f CPU, %.2f GPU, %d batch(es) in flight) for %s", pool, cfg.size,
             cfg.num_cpus, num_gpus, cfg.batches_in_flight, stage if stage is not None else ", ".join(kind.names))
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
            StageActor,
            fn_constructor_kwargs={"kind_type": type(kind), "kind_args": kind.arguments(), "stage": stage,
                                   "drop_record": drop_record, "fault_marker": fault_marker, "batches_in_flight": k},
            batch_size=batch_size, batch_format="pyarrow", compute=compute, num_cpus=cfg.num_cpus,
            num_gpus=num_gpus or None,
            # bounded actor fault tolerance: Ray Data's default is to restart and retry forever
            max_restarts=cfg.max_restarts, max_task_retries=cfg.max_task_retries)


class NodeWatch:
    """Watches the cluster's nodes while a job runs (a thread polling ``ray.nodes()``): logs a node that
    leaves, what it takes with it and whether the pools still fit on the nodes left, and keeps the record
    for the manifest.

    What a lost node takes: its actors (Ray restarts each on another node, at most ``max_restarts``
    times, and retries the batch it held, at most ``max_task_retries`` times), the tasks running
    there (retried) and the blocks in its object store (rebuilt from their lineage by running the
    task that made them again). Rows already stored by the driver are not touched. If the restarted
    actors do not fit on the nodes left, they wait for a node to join (Ray keeps them pending; the
    job waits too), which is logged here as an error with the numbers.

    Args:
        needs: the pools' resources (``{"CPU": ..., "GPU": ...}`` summed over every actor).
        period_s: seconds between polls.
    """

    def __init__(self, needs: Mapping[str, float], *, period_s: float = 1.0) -> None:
        import threading

        self.needs = {k: v for k, v in needs.items() if v > 0}
        self.period_s = period_s
        self.lost: list[dict[str, Any]] = []
        self._t0 = time.perf_counter()
        self._alive = {n["NodeID"]: n for n in self._nodes() if n.get("Alive")}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lfqa-node-watch", daemon=True)

    @staticmethod
    def _nodes() -> list[dict]:
        import ray

        return ray.nodes()

    def __enter__(self) -> "NodeWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.poll()  # a node lost in the last period is still reported

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            try:
                self.poll()
            except Exception as e:  # the GCS busy or restarting: try again next period
                log.debug("node watch: %s: %s", type(e).__name__, e)

    def poll(self) -> None:
        now = {n["NodeID"]: n for n in self._nodes() if n.get("Alive")}
        for node_id, node in self._alive.items():
            if node_id in now:
                continue
            res = {k: v for k, v in node.get("Resources", {}).items() if k in ("CPU", "GPU")}
            self.lost.append({"node_id": node_id, "address": node.get("NodeManagerAddress"), "resources": res,
                              "after_s": round(time.perf_counter() - self._t0, 1)})
            log.warning("node %s (%s, %s) left the cluster %.1f s into the step: its actors are restarted on "
                        "other nodes and their batches retried, its tasks retried, its stored blocks rebuilt "
                        "from their lineage; rows already stored are kept", node_id[:12], node.get("NodeManagerAddress"),
                        ", ".join(f"{v:g} {k}" for k, v in res.items()) or "no CPU", self.lost[-1]["after_s"])
            have = {k: sum(n.get("Resources", {}).get(k, 0.0) for n in now.values()) for k in self.needs}
            short = {k: (v, have[k]) for k, v in self.needs.items() if have[k] + 1e-9 < v}
            if short:
                log.error("the pools need %s but the %d node(s) left have %s: the restarted actors wait for a "
                          "node to join, and the job with them", _res(self.needs), len(now),
                          _res({k: h for k, (_, h) in short.items()}))
        for node_id in now.keys() - self._alive.keys():
            log.info("node %s (%s) joined the cluster", node_id[:12], now[node_id].get("NodeManagerAddress"))
        self._alive = now


def _res(r: Mapping[str, float]) -> str:
    return ", ".join(f"{v:g} {k}" for k, v in r.items())


@dataclass(frozen=True)
class RayStep:
    """The job's step on Ray (``run(kind, ..., step=RayStep(...))``; see the module docstring).

    Attributes:
        pools: pool settings by pool ("text", "classifier", "factuality", "llm"); missing pools use
            ``PoolConfig()``. Judges and LINKAGE run on the "llm" pool.
        address: Ray address. None joins ``$RAY_ADDRESS`` when set (as under ``ray job submit``) and
            otherwise starts a local Ray; "local" starts a local Ray of at most 2 CPUs; "auto" or
            "ray://..." joins a running cluster. Ignored if Ray is already initialised.
        read_cpus: CPUs reserved per read task.
        read_concurrency: most read tasks at once (each holds one block while it runs, so this
            bounds the read side's memory); None lets Ray run as many as the CPUs allow.
        global_dedupe: score an item that occurs in several pending units once (a hash shuffle by
            its key; no unit is complete before all have been read). False streams units through
            independently and scores a shared item in each.
        flush_rows: scored store ids the driver holds, over all units, before it appends them to the
            units' stores. A lost driver loses at most these (and the units in flight re-read); under
            global dedupe no unit is finished before the last batch, so this is what a resubmitted job
            finds stored.
        fault_marker: testing only, see :class:`workers.cluster.actors.StageActor`.
    """

    pools: Mapping[str, PoolConfig] = field(default_factory=dict)
    address: str | None = None
    read_cpus: float = 0.25
    read_concurrency: int | None = None
    global_dedupe: bool = True
    flush_rows: int = 50_000
    fault_marker: str | None = None

    def __post_init__(self) -> None:
        check_range("read_concurrency", self.read_concurrency, low=1, optional=True)
        check_range("flush_rows", self.flush_rows, low=1)

    def pool(self, name: str) -> PoolConfig:
        return self.pools.get(name) or PoolConfig()

    def __call__(self, kind: JobKind, pending: Sequence[Unit], *, progress: bool) -> StepResult:
        stages = kind.stages()
        result = StepResult(info={"pools": {p: asdict(self.pool(p)) for p, _ in stages},
                                  "global_dedupe": self.global_dedupe, "read_concurrency": self.read_concurrency})
        if not pending:
            return result
        works: dict[int, Any] = {}
        if kind.read_on_driver:  # read here: a unit with nothing to do is finished without starting Ray
            for i, unit in enumerate(pending):
                try:
                    works[i] = work(kind, unit)
                except InputError as e:
                    log.error("input %s cannot be read: %s", unit.uri, e)
                    result.failed[unit.uri] = str(e)
            for i, w in works.items():
                if not w.todo:
                    pending[i].store.finish(w.n_ids)
            if not any(w.todo for w in works.values()):
                return result
        t0 = time.perf_counter()
        with ray_session(self.address):
            result.scored = self._score(kind, pending, works, stages, result, progress)
        result.seconds["ray"] = round(time.perf_counter() - t0, 3)
        return result

    def _dataset(self, kind: JobKind, pending: Sequence[Unit], works: Mapping[int, Any], stages):
        import pyarrow as pa
        import ray

        if kind.read_on_driver:
            todo = {i: w for i, w in works.items() if w.todo}
            rows = pa.concat_tables([item_rows(kind, w.todo, w.ids, i, w.n_ids) for i, w in todo.items()]).to_pylist()
            # a Ray batch is items; size it so it holds about a batch of store ids (LINKAGE: candidates)
            per_item = max(1, round(sum(len(json.loads(r["ids"])) for r in rows) / len(rows)))
            first = self.pool(stages[0][0])
            n_blocks = max(1, min(len(rows) // max(1, (first.batch_size or kind.config.batch_size) // per_item) + 1,
                                  64 * first.size))
            ds = ray.data.from_items(rows, override_num_blocks=n_blocks)
            n_units = len(todo)
        else:
            # One read task per unit (a shard, or a block of one), each running the kind's reader on its piece;
            # see docs/ray.md for why ray.data.read_parquet / read_json / from_huggingface do not fit here.
            per_item, n_units = 1, len(pending)
            ds = ray.data.from_items([{"unit": i, "uri": u.uri, "block": u.block.to_json() if u.block else "",
                                       "done": json.dumps(sorted(u.store.scored_ids()))}
                                      for i, u in enumerate(pending)], override_num_blocks=len(pending))
            # each read task holds one block (up to ~50k rows) while it runs: read_concurrency caps how many at once
            ds = ds.map_batches(_read_units, batch_size=1, batch_format="pyarrow", num_cpus=self.read_cpus,
                                concurrency=self.read_concurrency,
                                fn_kwargs={"kind_type": type(kind), "kind_args": kind.arguments()})
        if self.global_dedupe:
            # An all-to-all step: no unit can finish before every unit has been read. About one hash
            # partition per unit, capped (Ray Data's default, 200, starts an aggregator per partition).
            ds = ds.repartition(max(1, min(n_units, 200)), keys=["key"], sort=True)
            ds = ds.map_batches(_one_per_key, batch_size=None, batch_format="pyarrow", num_cpus=self.read_cpus)
        for n, (pool, stage) in enumerate(stages):
            cfg = self.pool(pool)
            ds = add_pool_stage(ds, kind, pool, stage, cfg,
                                batch_size=max(1, (cfg.batch_size or kind.config.batch_size) // per_item),
                                drop_record=n == len(stages) - 1, fault_marker=self.fault_marker)
        return ds

    def _needs(self, stages) -> dict[str, float]:
        """CPUs and GPUs the step's actor pools hold together."""
        need = {"CPU": 0.0, "GPU": 0.0}
        for pool, _ in stages:
            cfg = self.pool(pool)
            need["CPU"] += cfg.size * cfg.num_cpus
            need["GPU"] += cfg.size * _resolve_gpus(pool, cfg)
        return need

    def _score(self, kind: JobKind, pending: Sequence[Unit], works, stages, result: StepResult,
               progress: bool) -> int:
        """Stream the items through the pools into the units' stores; returns the store ids scored."""
        import ray

        ray.data.DataContext.get_current().enable_progress_bars = progress
        ds = self._dataset(kind, pending, works, stages)
        by_id = dict(enumerate(pending))
        collector = ShardCollector(by_id, kind.names, flush_rows=self.flush_rows)
        n_scored = n_restarted = 0
        with NodeWatch(self._needs(stages)) as watch:
            for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
                cols = batch.to_pydict()
                for j in range(batch.num_rows):
                    scores, prov = json.loads(cols["scores"][j]), json.loads(cols["provenance"][j])
                    n_scored += len(scores)
                    n_restarted += len(scores) if cols["restarted"][j] else 0
                    members = (json.loads(cols["members"][j]) if "members" in cols else
                               [(cols["unit"][j], cols["index"][j], cols["n_items"][j], cols["n_ids"][j],
                                 json.loads(cols["ids"][j]))])
                    for unit_id, idx, n_items, n_ids, ids in members:
                        collector.add(unit_id, idx, n_items, ids, scores, prov, n_ids=n_ids)
        if watch.lost or n_restarted:
            # what the manifest and the log say about it: every row is still checked below, once each
            result.info["faults"] = {"nodes_lost": watch.lost, "ids_scored_by_restarted_actors": n_restarted}
            log.warning("fault report: %d node(s) lost, %d of %d store ids scored by actors Ray restarted; "
                        "%d unit(s) finished in this step, each with every item back exactly once",
                        len(watch.lost), n_restarted, n_scored, len(collector.finished))
        # A unit that sent no row: nothing to do (every row rejected, or every item stored), or its
        # read task could not read it: read it here to tell them apart; a unit still open lost a row.
        still_open = collector.still_open()
        for unit_id, unit in by_id.items():
            if unit_id in collector.finished or unit.uri in result.failed:
                continue
            if unit_id in still_open:
                got, n = still_open[unit_id]
                raise BatchMismatchError(f"unit {unit.uri}: {got} of {n} items came back")
            try:
                w = works.get(unit_id) or work(kind, unit)
            except InputError as e:
                log.error("input %s cannot be read: %s", unit.uri, e)
                result.failed[unit.uri] = str(e)
                continue
            if w.todo:
                raise BatchMismatchError(f"unit {unit.uri}: none of its {len(w.todo)} items came back")
            unit.store.finish(w.n_ids)
        return n_scored
