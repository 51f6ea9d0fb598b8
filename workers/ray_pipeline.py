"""The Ray Data pipeline: shards -> unique answers -> actor pools -> one output folder per shard.

One input file is one shard. For every shard that has no complete output yet::

    read the shard (rubric.readers) -> explode unique answers (rubric.records.explode)
      -> map_batches over one fixed-size ScorerActor pool per resource
         (text, classifier, factuality, llm)
      -> the driver collects each shard's scores (every answer row carries shard + input index)
      -> rubric.features tables + splits, written by workers.local.write_outputs into OUT/<stem>/

A shard is written as soon as its last answer comes back, so a killed job loses at most the shards
in flight. ``manifest.json`` is written last (temp file + rename); a re-run skips a shard whose
manifest exists, names the same input, format, options, seed and rubric versions, and whose table
row counts match it (:func:`completed_manifest`).

Differences from the single-process path, by design:

- Deduplication and the train/dev/test split are per shard: the same answer in two shards is
  scored twice (unless ``global_dedupe``), and splits keep questions together only inside a shard.
  Put all pairs of a question in one shard, or merge the outputs and re-split.
- The driver reads each shard twice (in a read task, and again when writing), so that it never
  holds more than the shards in flight; readers are deterministic, and the answer ids that come
  back are checked against the re-read.

No scoring logic lives here: actors call ``models.backends.build_scorers`` and
``workers.local.score_items``; tables come from ``rubric.features`` via ``workers.local.write_outputs``.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from rubric.config import ScoringConfig
from rubric.errors import BatchMismatchError, ConfigError, InputError, RubricError
from rubric.readers import ReadResult, read_input
from rubric.records import AnswerItem, explode
from rubric.scoring import Provenance, Score
from rubric.specs import RubricSpec
from workers.actors import (ScorerActor, decode_provenance, decode_score, provenance_column,
                            score_column)
from workers.local import ScoreRun, atomic_write_bytes, write_outputs

__all__ = ["PoolConfig", "DEFAULT_POOLS", "SHARD_EXTENSIONS", "pool_of_backend", "list_shards", "shard_name",
           "read_shard", "completed_manifest", "init_local_ray", "run_ray_job", "add_ray_arguments",
           "pools_from_args", "config_for_pools", "read_job_table"]

log = logging.getLogger(__name__)

#: File extensions taken as shards when an input is a directory.
SHARD_EXTENSIONS: tuple[str, ...] = (".jsonl", ".json", ".parquet", ".csv")

_TEXT_BACKENDS = frozenset({"spacy", "harper", "languagetool"})
_TEXT_COLUMNS = ("question", "answer", "docs")
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
    """

    size: int = 1
    num_cpus: float = 0.5
    num_gpus: float | None = None
    batch_size: int | None = None
    max_restarts: int = 2
    max_task_retries: int = 2

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


#: Pool per resource kind. "classifier" hosts any backend that is neither text nor an engine (specificity).
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
# Shards: discovery, reading, completed outputs
# ---------------------------------------------------------------------------------------------


def _is_uri(s: str) -> bool:
    return "://" in s


def list_shards(inputs: Sequence[str | Path]) -> list[str]:
    """Expand inputs into shard paths: files, directories (their shard files), globs, or URIs.

    A URI is anything pyarrow's ``FileSystem.from_uri`` understands (``s3://``, ``gs://``,
    ``file://``, ...); a URI naming a directory lists its shard files (not recursively).

    Raises:
        InputError: an input matches nothing, or two shards would share an output folder name.
    """
    shards: list[str] = []
    for raw in inputs:
        s = str(raw)
        if _is_uri(s):
            found = _list_uri(s)
        elif Path(s).is_dir():
            found = sorted(str(p) for p in Path(s).iterdir() if p.is_file() and p.suffix.lower() in SHARD_EXTENSIONS)
        elif any(c in s for c in "*?["):
            found = sorted(p for p in glob.glob(s) if Path(p).is_file())
        elif Path(s).is_file():
            found = [s]
        else:
            raise InputError(f"input {s!r} does not exist")
        if not found:
            raise InputError(f"input {s!r} holds no shard files ({', '.join(SHARD_EXTENSIONS)})")
        shards.extend(found)
    names: dict[str, str] = {}
    for sh in shards:
        name = shard_name(sh)
        if name in names:
            raise InputError(f"shards {names[name]!r} and {sh!r} would both write to output folder {name!r}; "
                             "rename one")
        names[name] = sh
    return shards


def _list_uri(uri: str) -> list[str]:
    import pyarrow.fs as pafs

    fs, path = pafs.FileSystem.from_uri(uri)
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        raise InputError(f"input {uri!r} does not exist")
    if info.type == pafs.FileType.File:
        return [uri]
    scheme = uri.split("://", 1)[0]
    entries = fs.get_file_info(pafs.FileSelector(path, recursive=False))
    return sorted(f"{scheme}://{e.path}" for e in entries
                  if e.type == pafs.FileType.File and Path(e.path).suffix.lower() in SHARD_EXTENSIONS)


def shard_name(shard: str) -> str:
    """The output folder of a shard: its file name without the extension."""
    return Path(shard.split("://", 1)[-1]).stem


def read_shard(shard: str, fmt: str, options: Mapping[str, Any]) -> ReadResult:
    """Read one shard with ``rubric.readers``; a URI is copied to a local temp file first.

    The returned ``source_file`` (and each reject's) is the shard as given, not the temp copy.
    """
    if not _is_uri(shard):
        return read_input(shard, fmt, **options)
    import pyarrow.fs as pafs

    fs, path = pafs.FileSystem.from_uri(shard)
    with tempfile.TemporaryDirectory(prefix="lfqa-shard-") as tmp:
        # keep the file name: readers derive the extension and (graded) the source from it
        local = Path(tmp) / Path(path).name
        try:
            with fs.open_input_stream(path) as src, local.open("wb") as dst:
                shutil.copyfileobj(src, dst, length=1 << 20)
        except OSError as e:
            raise InputError(f"cannot read {shard!r}: {e}") from e
        read = read_input(local, fmt, **options)
    rejects = [replace(r, source_file=shard) for r in read.rejects]
    return replace(read, rejects=rejects, source_file=shard)


def _inputs_record(shard: str, fmt: str, options: Mapping[str, Any]) -> dict:
    # exactly what workers.local.run_score_job records, so one validator serves both
    return {"path": shard, "format": fmt, "options": dict(options)}


def _normalised(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=str, sort_keys=True))


def _count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def completed_manifest(shard_dir: Path, *, inputs: dict, specs: Sequence[RubricSpec], seed: int) -> dict | None:
    """The manifest of a complete, matching shard output, or None if the shard must be (re)scored.

    Complete means: ``manifest.json`` parses; it records the same inputs (path, format, options),
    split seed and rubric versions; and answers.parquet, pairs.parquet and rejects.jsonl hold the
    row counts it states.
    """
    import pyarrow.parquet as pq

    path = shard_dir / "manifest.json"
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text())
        counts = manifest["counts"]
        why = None
        if _normalised(manifest["inputs"]) != _normalised(inputs):
            why = "it was made from other inputs or options"
        elif manifest.get("split_seed") != seed:
            why = f"its split seed is {manifest.get('split_seed')}"
        elif {n: r.get("rubric_version") for n, r in manifest["rubrics"].items()} != \
                {s.name: s.version for s in specs}:
            why = "it has other rubric versions"
        elif pq.ParquetFile(shard_dir / "answers.parquet").metadata.num_rows != counts["unique_answers"]:
            why = "answers.parquet row count differs from the manifest"
        elif pq.ParquetFile(shard_dir / "pairs.parquet").metadata.num_rows != counts["pairs"]:
            why = "pairs.parquet row count differs from the manifest"
        elif _count_lines(shard_dir / "rejects.jsonl") != counts["rejected"]:
            why = "rejects.jsonl line count differs from the manifest"
        elif counts.get("rows_ok", counts["rows_in"] - counts["rejected"]) + counts["rejected"] != counts["rows_in"] \
                or counts["rejected"] > counts["rows_in"]:
            why = "its row accounting is broken (rows_in != rows_ok + rejected)"
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        why = f"it cannot be read ({type(e).__name__}: {e})"
    if why is not None:
        log.warning("re-scoring %s: %s", shard_dir, why)
        return None
    return manifest


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

    temp_dir = temp_dir or tempfile.mkdtemp(prefix="lfqa-ray-", dir="/tmp")
    ray.init(num_cpus=num_cpus, num_gpus=num_gpus, include_dashboard=False,
             object_store_memory=object_store_mb * 2**20, _temp_dir=temp_dir, runtime_env=_worker_env(),
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
        ray.init(address=address, runtime_env=None if in_job else _worker_env())
    return True, None


def _empty_items_table():
    import pyarrow as pa

    return pa.table({"shard": pa.array([], pa.int64()), "index": pa.array([], pa.int64()),
                     "n_items": pa.array([], pa.int64()), "answer_id": pa.array([], pa.string()),
                     "question": pa.array([], pa.string()), "answer": pa.array([], pa.string()),
                     "docs": pa.array([], pa.string())})


def _explode_shards(batch, *, fmt: str, options: Mapping[str, Any]):
    """Read task: shard descriptors -> one row per unique answer, carrying shard id and index."""
    import pyarrow as pa

    tables = []
    for shard_id, uri in zip(batch.column("shard").to_pylist(), batch.column("uri").to_pylist()):
        try:
            items = explode(read_shard(uri, fmt, options).pairs)
        except RubricError as e:
            # an unreadable shard must not stop the others; the driver re-reads it and reports why
            log.error("shard %s cannot be read: %s", uri, e)
            continue
        n = len(items)
        tables.append(pa.table({
            "shard": pa.array([shard_id] * n, pa.int64()),
            "index": pa.array(range(n), pa.int64()),
            "n_items": pa.array([n] * n, pa.int64()),
            "answer_id": pa.array([it.answer_id for it in items], pa.string()),
            "question": pa.array([it.question for it in items], pa.string()),
            "answer": pa.array([it.answer for it in items], pa.string()),
            "docs": pa.array([json.dumps(list(it.docs), ensure_ascii=False) for it in items], pa.string()),
        }))
    return pa.concat_tables(tables) if tables else _empty_items_table()


def _one_per_answer(group):
    """Global dedupe: the first row of an answer_id group, with every (shard, index, n_items) it stands for."""
    import pyarrow as pa

    members = json.dumps([list(m) for m in zip(group.column("shard").to_pylist(), group.column("index").to_pylist(),
                                                group.column("n_items").to_pylist())])
    return group.slice(0, 1).append_column("members", pa.array([members], pa.string()))


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


def _build_dataset(pending: list[tuple[int, str]], groups: dict[str, list[RubricSpec]], *, fmt: str,
                   options: Mapping[str, Any], config: ScoringConfig, pools: Mapping[str, PoolConfig],
                   read_cpus: float, fault_marker: str | None, global_dedupe: bool):
    import ray

    ds = ray.data.from_items([{"shard": i, "uri": u} for i, u in pending], override_num_blocks=len(pending))
    ds = ds.map_batches(_explode_shards, batch_size=1, batch_format="pyarrow", num_cpus=read_cpus,
                        fn_kwargs={"fmt": fmt, "options": dict(options)})
    if global_dedupe:
        # An all-to-all step: no shard can finish before every shard has been read.
        ds = ds.groupby("answer_id").map_groups(_one_per_answer, batch_format="pyarrow", num_cpus=read_cpus)
    last = list(groups)[-1]
    for pool, group in groups.items():
        cfg = pools.get(pool, PoolConfig())
        num_gpus = _resolve_gpus(pool, cfg)
        log.info("pool %s: %d actor(s) x (%.2f CPU, %.2f GPU) for %s", pool, cfg.size, cfg.num_cpus, num_gpus,
                 ", ".join(s.version for s in group))
        with warnings.catch_warnings():
            # Ray 2.60 has no named parameter for max_restarts / max_task_retries yet; the
            # **ray_remote_args route is the documented one and warns that it will change in 2.64.
            warnings.filterwarnings("ignore", message=".*ray_remote_args.* is deprecated")
            ds = ds.map_batches(
                ScorerActor,
                fn_constructor_kwargs={"versions": [s.version for s in group], "config": config,
                                       "drop_columns": _TEXT_COLUMNS if pool == last else (),
                                       "fault_marker": fault_marker},
                batch_size=cfg.batch_size or config.batch_size,
                batch_format="pyarrow",
                compute=ray.data.ActorPoolStrategy(size=cfg.size),
                num_cpus=cfg.num_cpus,
                num_gpus=num_gpus or None,
                # bounded actor fault tolerance: Ray Data's default is to restart and retry forever
                max_restarts=cfg.max_restarts,
                max_task_retries=cfg.max_task_retries,
            )
    return ds


@dataclass
class _Pending:
    """Scores of one shard collected so far on the driver."""

    n_items: int
    rows: dict[int, tuple[str, dict[str, str], dict[str, str]]]  # index -> (answer_id, scores, provenance)


def _errors_by_reason(run: ScoreRun) -> Counter:
    c: Counter = Counter()
    for rubric, scores in run.scores.items():
        for s in scores:
            if s.error is not None:
                c[f"{rubric}: {s.error[:200]}"] += 1
    return c


def _rejects_by_field(shard_dir: Path) -> Counter:
    c: Counter = Counter()
    with (shard_dir / "rejects.jsonl").open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                c[str(json.loads(line).get("field"))] += 1
    return c


class _ShardWriter:
    """Turns a shard's collected scores into the single-process path's output files."""

    def __init__(self, out: Path, specs: Sequence[RubricSpec], *, fmt: str, options: Mapping[str, Any],
                 config: ScoringConfig, seed: int, pools_used: dict) -> None:
        self.out, self.specs, self.fmt, self.options = out, specs, fmt, options
        self.config, self.seed, self.pools_used = config, seed, pools_used
        self.known_provenance: dict[str, Provenance] = {}

    def write(self, shard_id: int, uri: str, got: _Pending | None) -> dict:
        t0 = time.perf_counter()
        read = read_shard(uri, self.fmt, self.options)
        items = explode(read.pairs)
        t_read = round(time.perf_counter() - t0, 3)
        run = self._assemble(uri, items, got)
        inputs = _inputs_record(uri, self.fmt, self.options)
        shard_dir = self.out / shard_name(uri)
        manifest = write_outputs(shard_dir, read=read, specs=self.specs, items=items, run=run, config=self.config,
                                 inputs=inputs, seed=self.seed, timings={"read": t_read})
        manifest["ray"] = {"shard_index": shard_id, "pools": self.pools_used,
                           "errors_by_reason": dict(_errors_by_reason(run))}
        atomic_write_bytes(shard_dir / "manifest.json", json.dumps(manifest, indent=2, default=str).encode())
        # what a re-run will check, checked now: a shard reported done must also be skippable
        if completed_manifest(shard_dir, inputs=inputs, specs=self.specs, seed=self.seed) is None:
            raise BatchMismatchError(f"shard {uri}: the written outputs do not match their manifest")
        return manifest

    def _assemble(self, uri: str, items: list[AnswerItem], got: _Pending | None) -> ScoreRun:
        """Order the returned scores by input index, checking one output per input."""
        rows = got.rows if got is not None else {}
        if got is not None and got.n_items != len(items):
            raise BatchMismatchError(f"shard {uri}: the read task saw {got.n_items} answers, the re-read {len(items)}")
        if sorted(rows) != list(range(len(items))):
            missing = sorted(set(range(len(items))) - set(rows))
            raise BatchMismatchError(f"shard {uri}: {len(rows)} of {len(items)} answers came back; "
                                     f"missing indices {missing[:10]}")
        scores: dict[str, list[Score]] = {s.name: [] for s in self.specs}
        provenance: dict[str, Provenance] = {}
        for i, item in enumerate(items):
            answer_id, row_scores, row_prov = rows[i]
            if answer_id != item.answer_id:
                raise BatchMismatchError(f"shard {uri}: answer {i} came back as {answer_id}, expected {item.answer_id}")
            for s in self.specs:
                scores[s.name].append(decode_score(row_scores[s.name]))
                p = decode_provenance(row_prov[s.name])
                if provenance.setdefault(s.name, p) != p:
                    raise ConfigError(f"shard {uri}: actors disagree on how {s.name!r} is made: "
                                      f"{provenance[s.name]} vs {p} (mixed model revisions?)")
        for s in self.specs:
            if s.name not in provenance:  # an empty shard: say how the job's other shards were scored
                provenance[s.name] = self.known_provenance.get(s.name, Provenance(s.version, s.backend))
        self.known_provenance.update(provenance)
        return ScoreRun(scores=scores, provenance=provenance)


def run_ray_job(inputs: Sequence[str | Path], fmt: str, specs: Sequence[RubricSpec], out: str | Path, *,
                config: ScoringConfig, reader_options: Mapping[str, Any] | None = None, seed: int = 0,
                pools: Mapping[str, PoolConfig] | None = None, address: str | None = None,
                read_cpus: float = 0.25, global_dedupe: bool = False, progress: bool = True,
                fault_marker: str | None = None) -> dict:
    """Score every shard on Ray, skipping shards already complete; write OUT/summary.json.

    Args:
        inputs: shard files, directories of shards, globs, or pyarrow filesystem URIs.
        fmt: input format (``rubric.readers.FORMATS``); every shard has the same format.
        specs: rubric specs to score.
        out: local output folder; shard ``x.jsonl`` goes to ``OUT/x/``.
        config: scoring settings passed to every actor.
        reader_options: passed to ``rubric.readers.read_input`` for every shard.
        seed: split seed (splits are assigned per shard).
        pools: pool settings by kind ("text", "classifier", "factuality", "llm"); missing kinds use
            ``PoolConfig()``.
        address: Ray address. None joins ``$RAY_ADDRESS`` when set (as under ``ray job submit``) and
            otherwise starts a local Ray; "local" starts a local Ray of at most 2 CPUs; "auto" or
            "ray://..." joins a running cluster. Ignored if Ray is already initialised.
        read_cpus: CPUs reserved per shard-read task.
        global_dedupe: score an answer that occurs in several pending shards once (a shuffle by
            answer id; shards are then written only after all have been read). Documents attached to
            such an answer are those of its first occurrence anywhere, not per shard.
        progress: show Ray Data's progress bars.
        fault_marker: testing only, see :class:`workers.actors.ScorerActor`.

    Returns:
        The job summary (also written to ``OUT/summary.json``): shards (total, scored, skipped,
        failed), rows in / ok / rejected, pairs and answers out, answers scored this run, errors
        by reason, rejects by field, seconds and throughput.

    Raises:
        InputError: an input matches no shard.
        BatchMismatchError: an answer was lost or doubled between the pools and the driver.
        RubricError: an engine-level failure in an actor (after Ray's bounded retries).
    """
    t_start = time.perf_counter()
    options = dict(reader_options or {})
    pools = {**DEFAULT_POOLS, **(pools or {})}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    shards = list_shards(inputs)
    done: dict[str, dict] = {}
    pending: list[tuple[int, str]] = []
    for i, uri in enumerate(shards):
        m = completed_manifest(out / shard_name(uri), inputs=_inputs_record(uri, fmt, options), specs=specs, seed=seed)
        if m is not None:
            done[uri] = m
        else:
            pending.append((i, uri))
    log.info("%d shards: %d already complete, %d to score", len(shards), len(done), len(pending))

    groups = _group_specs(specs)
    pools_used = {k: asdict(pools.get(k, PoolConfig())) for k in groups}
    writer = _ShardWriter(out, specs, fmt=fmt, options=options, config=config, seed=seed, pools_used=pools_used)
    scored: dict[str, dict] = {}
    failed: dict[str, str] = {}
    sent = 0
    if pending:
        started, temp_dir = _connect(address)
        try:
            sent = _score_pending(pending, groups, writer, scored, failed, fmt=fmt, options=options, config=config,
                                  pools=pools, read_cpus=read_cpus, progress=progress, fault_marker=fault_marker,
                                  global_dedupe=global_dedupe)
        finally:
            if started:
                import ray

                ray.shutdown()
            if temp_dir is not None:
                shutil.rmtree(temp_dir, ignore_errors=True)
    summary = _summary(shards, done, scored, failed, out, sent=sent, seconds=time.perf_counter() - t_start)
    atomic_write_bytes(out / "summary.json", json.dumps(summary, indent=2).encode())
    _log_summary(summary)
    return summary


def _score_pending(pending, groups, writer: _ShardWriter, scored: dict, failed: dict, *, fmt, options, config,
                   pools, read_cpus, progress, fault_marker, global_dedupe) -> int:
    """Stream the pending shards through the pools, writing each shard when complete.

    Returns:
        How many answers the pools scored (fewer than the shards' answers under global dedupe).
    """
    import ray

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = progress
    uri_of = dict(pending)
    collected: dict[int, _Pending] = {}
    ds = _build_dataset(pending, groups, fmt=fmt, options=options, config=config, pools=pools,
                        read_cpus=read_cpus, fault_marker=fault_marker, global_dedupe=global_dedupe)
    names = [s.name for g in groups.values() for s in g]
    n_scored = 0
    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
        cols = batch.to_pydict()
        n_scored += batch.num_rows
        for j in range(batch.num_rows):
            result = (cols["answer_id"][j], {n: cols[score_column(n)][j] for n in names},
                      {n: cols[provenance_column(n)][j] for n in names})
            members = json.loads(cols["members"][j]) if "members" in cols else \
                [(cols["shard"][j], cols["index"][j], cols["n_items"][j])]
            for shard_id, idx, n_items in members:
                got = collected.setdefault(shard_id, _Pending(n_items=n_items, rows={}))
                if idx in got.rows:
                    raise BatchMismatchError(f"shard {uri_of[shard_id]}: answer {idx} came back twice")
                got.rows[idx] = result
                if len(got.rows) == got.n_items:
                    uri = uri_of[shard_id]
                    scored[uri] = writer.write(shard_id, uri, collected.pop(shard_id))
                    log.info("shard %s written (%d answers)", shard_name(uri), got.n_items)
    # Shards with no answers (every row rejected) or that the read task could not read never
    # produce a row: settle them here, and fail loudly if a shard with answers is still open.
    for shard_id, uri in pending:
        if uri in scored:
            continue
        got = collected.pop(shard_id, None)
        try:
            scored[uri] = writer.write(shard_id, uri, got)
        except InputError as e:
            log.error("shard %s failed: %s", uri, e)
            failed[uri] = str(e)
    return n_scored


def _summary(shards: list[str], done: dict, scored: dict, failed: dict, out: Path, *, sent: int,
             seconds: float) -> dict:
    complete = {**done, **scored}
    counts = [m["counts"] for m in complete.values()]
    errors_by_rubric: Counter = Counter()
    errors_by_reason: Counter = Counter()
    rejects_by_field: Counter = Counter()
    for uri, m in complete.items():
        errors_by_rubric.update(m["counts"]["errors_by_rubric"])
        errors_by_reason.update(m.get("ray", {}).get("errors_by_reason", {}))
        rejects_by_field.update(_rejects_by_field(out / shard_name(uri)))
    answers_scored = sum(m["counts"]["unique_answers"] for m in scored.values())
    pairs_scored = sum(m["counts"]["pairs"] for m in scored.values())
    return {
        "shards": len(shards),
        "shards_scored": len(scored),
        "shards_skipped": len(done),
        "shards_failed": len(failed),
        "failed": failed,
        "rows_in": sum(c["rows_in"] for c in counts),
        "rows_ok": sum(c.get("rows_ok", c["rows_in"] - c["rejected"]) for c in counts),
        "rows_rejected": sum(c["rejected"] for c in counts),
        "pairs_out": sum(c["pairs"] for c in counts),
        "answers_out": sum(c["unique_answers"] for c in counts),
        "answers_scored": answers_scored,
        "answers_sent_to_pools": sent,
        "pairs_scored": pairs_scored,
        "errors_by_rubric": dict(errors_by_rubric),
        "errors_by_reason": dict(errors_by_reason.most_common()),
        "rejects_by_field": dict(rejects_by_field.most_common()),
        "seconds": round(seconds, 3),
        "answers_per_s": round(answers_scored / seconds, 3) if seconds > 0 else 0.0,
        "pairs_per_s": round(pairs_scored / seconds, 3) if seconds > 0 else 0.0,
        "per_shard": {shard_name(u): {"status": "scored" if u in scored else "skipped" if u in done else "failed",
                                      **({k: complete[u]["counts"][k] for k in ("rows_in", "pairs", "rejected",
                                                                                  "unique_answers")}
                                         if u in complete else {})}
                      for u in shards},
        "python": sys.version.split()[0],
    }


def _log_summary(s: dict) -> None:
    log.info("job summary: %d shards (%d scored, %d skipped, %d failed); %d rows in, %d rejected, %d pairs out, "
             "%d answers out (%d scored now); %.1f answers/s over %.1f s",
             s["shards"], s["shards_scored"], s["shards_skipped"], s["shards_failed"], s["rows_in"],
             s["rows_rejected"], s["pairs_out"], s["answers_out"], s["answers_scored"], s["answers_per_s"],
             s["seconds"])
    if s["errors_by_reason"]:
        log.warning("score errors by reason: %s", s["errors_by_reason"])
    for uri, why in s["failed"].items():
        log.error("shard %s failed: %s", uri, why)


def read_job_table(out: str | Path, table: str = "pairs"):
    """One table over all complete shards of a job folder, in shard order (for fit / evaluate / export).

    Raises:
        InputError: ``OUT/summary.json`` is missing, or a shard's table is.
    """
    from rubric.evaluate import read_output_table

    if not (Path(out) / "summary.json").is_file():
        raise InputError(f"{out} is not a finished Ray job folder (no summary.json)")
    return read_output_table(out, table)


# ---------------------------------------------------------------------------------------------
# Command-line plumbing shared by scripts/run_job.py and `lfqa-rubric score --ray`
# ---------------------------------------------------------------------------------------------


def add_ray_arguments(p) -> None:
    """Add the Ray options (address, pool sizes, per-actor resources) to an argparse parser."""
    g = p.add_argument_group("Ray")
    g.add_argument("--address", default=None,
                   help="Ray address: 'auto' joins a running cluster (what `ray job submit` gives), 'local' "
                        "starts a 2-CPU local Ray; default: join RAY_ADDRESS if set, else start a local Ray")
    g.add_argument("--text-actors", type=int, default=1, help="actors in the text pool (spaCy, Harper, LanguageTool)")
    g.add_argument("--classifier-actors", type=int, default=1, help="actors in the classifier pool (specificity)")
    g.add_argument("--llm-actors", type=int, default=1, help="actors in the LLM pool (one engine each)")
    g.add_argument("--factuality-actors", type=int, default=1, help="actors in the factuality pool (own engine)")
    g.add_argument("--cpus-per-actor", type=float, default=0.5, help="CPUs reserved per text/classifier actor")
    g.add_argument("--cpus-per-llm-actor", type=float, default=1.0,
                   help="CPUs reserved per engine actor (llm and factuality)")
    g.add_argument("--gpus-per-llm-actor", type=float, default=None,
                   help="GPUs per engine actor, llm and factuality (default: 1 if the cluster has GPUs, else 0)")
    g.add_argument("--tensor-parallel", type=int, default=1,
                   help="shard each LLM engine over this many GPUs of one node (sets --gpus-per-llm-actor)")
    g.add_argument("--ray-batch-size", type=int, default=None,
                   help="answers per Ray batch (default: --batch-size)")
    g.add_argument("--max-restarts", type=int, default=2, help="restarts of a dead actor (bounded)")
    g.add_argument("--max-task-retries", type=int, default=2, help="retries of a batch whose actor died")
    g.add_argument("--global-dedupe", action="store_true",
                   help="score an answer shared by several shards once (shuffle; shards finish together)")


def pools_from_args(args) -> dict[str, PoolConfig]:
    """The pool settings named by :func:`add_ray_arguments`'s options."""
    if args.tensor_parallel < 1:
        raise ConfigError(f"'--tensor-parallel' must be >= 1, got {args.tensor_parallel}")
    common = {"batch_size": args.ray_batch_size, "max_restarts": args.max_restarts,
              "max_task_retries": args.max_task_retries}
    llm_gpus = args.gpus_per_llm_actor
    if args.tensor_parallel > 1:
        llm_gpus = float(args.tensor_parallel)
    return {
        "text": PoolConfig(size=args.text_actors, num_cpus=args.cpus_per_actor, **common),
        "classifier": PoolConfig(size=args.classifier_actors, num_cpus=args.cpus_per_actor, **common),
        "factuality": PoolConfig(size=args.factuality_actors, num_cpus=args.cpus_per_llm_actor, num_gpus=llm_gpus,
                                 **common),
        "llm": PoolConfig(size=args.llm_actors, num_cpus=args.cpus_per_llm_actor, num_gpus=llm_gpus, **common),
    }


def config_for_pools(config: ScoringConfig, args) -> ScoringConfig:
    """``config`` with the engine settings tensor parallelism needs (one multi-GPU engine per actor)."""
    if args.tensor_parallel <= 1:
        return config
    # vLLM's own multiprocessing executor keeps the shards inside the actor's node and GPU reservation.
    kwargs = {"tensor_parallel_size": args.tensor_parallel, "distributed_executor_backend": "mp",
              **config.engine_kwargs}
    return replace(config, engine_kwargs=kwargs)
