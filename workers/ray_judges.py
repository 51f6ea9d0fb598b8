"""The judge job's step on Ray: pending pairs -> a pool of judge actors -> each shard's judge store.

The job itself (shards, resume, splits, assembly, outputs) is :func:`workers.judge_job.run_judge_job`,
the same as the single-process path; only judging is distributed here::

    the driver's pending pairs (already read: the job reads every shard to assemble anyway)
      -> ray.data.from_items, one row per pair (shard id, the pair record as JSON)
      -> map_batches over one fixed-size JudgeActor pool (one engine per actor; GPUs when the cluster has them)
      -> the driver appends every returned batch to its shard's store (a checkpoint per Ray batch),
         and finishes a shard's store when its last pair is back

Resume rules are the local step's: a finished store is reused, a changed key starts the shard
over, and a partial store keeps its pairs (only the missing ones are sent out). No judging logic
lives here: the actors build :class:`models.judges.JudgeScorer` exactly as the local step does.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, fields
from typing import TYPE_CHECKING

from rubric.config import ScoringConfig
from rubric.errors import BatchMismatchError, ConfigError
from rubric.io import PairRecord
from workers.judge_job import JudgePending, JudgeSettings, run_judge_job
from workers.ray_pipeline import PoolConfig
from workers.ray_pools import checked_batches, keyed_pool, ray_session
from workers.store import decode_provenance, decode_score, encode_provenance, encode_score

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["JudgeActor", "ray_judge_step", "run_ray_judge_job", "pair_to_json", "pair_from_json"]

log = logging.getLogger(__name__)

_TUPLE_FIELDS = ("docs_a", "docs_b")


def pair_to_json(p: PairRecord) -> str:
    """A pair record as JSON text (exact round trip with :func:`pair_from_json`)."""
    return json.dumps(asdict(p), ensure_ascii=False)


def pair_from_json(text: str) -> PairRecord:
    """The pair record of :func:`pair_to_json` (lists back to the record's tuples)."""
    d = json.loads(text)
    known = {f.name for f in fields(PairRecord)}
    unknown = set(d) - known
    if unknown:
        raise ConfigError(f"pair record JSON has unknown fields {sorted(unknown)}")
    for f in _TUPLE_FIELDS:
        d[f] = tuple(d.get(f) or ())
    d["aspects"] = tuple(tuple(a) for a in d.get("aspects") or ())
    return PairRecord(**d)


def verdict_column(version: str) -> str:
    return f"verdict__{version}"


def provenance_column(version: str) -> str:
    return f"prov__{version}"


class JudgeActor:
    """Builds one judge scorer (its engine) once, then judges Arrow batches of pairs, both orders each.

    Args:
        settings: the judges and how they run: ``JudgeSettings.arguments()`` (plain data; the
            settings' compiled templates do not travel).
        config: engine settings; ``batch_size`` is the engine batch inside one Ray batch.
        scorer_factory: testing only: ``factory(settings, config)`` builds the scorer instead of
            the engine judge (it must be importable on the workers).
    """

    def __init__(self, settings: dict, config: ScoringConfig, scorer_factory=None) -> None:
        from workers.judge_job import _scorer

        settings = JudgeSettings(**settings)
        self._versions = [s.version for s in settings.specs]
        self._batch = config.batch_size
        self._scorer = (scorer_factory or _scorer)(settings, config)
        self._prov = {v: encode_provenance(self._scorer.provenance(v)) for v in self._versions}
        log.info("judge actor pid %d ready for %s", os.getpid(), ", ".join(self._versions))

    def __call__(self, batch: "pa.Table") -> "pa.Table":
        import pyarrow as pa

        pairs = [pair_from_json(t) for t in batch.column("record").to_pylist()]
        results = []
        for b in range(0, len(pairs), self._batch):
            chunk = pairs[b:b + self._batch]
            got = self._scorer.judge_pairs(chunk)
            if len(got) != len(chunk) or any(set(r) != set(self._versions) for r in got):
                raise BatchMismatchError(f"the judge returned {len(got)} results for {len(chunk)} pairs "
                                         "or results without every judge")
            results.extend(got)
        out = batch.drop_columns(["record"])
        for v in self._versions:
            out = out.append_column(verdict_column(v), pa.array([encode_score(r[v]) for r in results], pa.string()))
            out = out.append_column(provenance_column(v), pa.array([self._prov[v]] * len(pairs), pa.string()))
        return out


def ray_judge_step(pending: Sequence[JudgePending], *, settings: JudgeSettings, config: ScoringConfig,
                   progress: bool, pool: PoolConfig | None = None, address: str | None = None,
                   scorer_factory=None) -> int:
    """Judge the pending pairs on a Ray actor pool; returns how many pairs were judged.

    Every pair sent out comes back exactly once or the step fails (BatchMismatchError); a shard's
    store is finished only when all its pairs are stored.
    """
    pool = pool or PoolConfig()
    versions = [s.version for s in settings.specs]
    todo = [(i, p) for i, sh in enumerate(pending) for p in sh.todo]
    if not todo:
        for sh in pending:
            sh.store.finish(sh.n_pairs)
        return 0
    t0 = time.perf_counter()
    with ray_session(address):
        log.info("judge pool: %d actor(s) x (%.2f CPU) for %s", pool.size, pool.num_cpus, ", ".join(versions))
        ds = keyed_pool([{"shard": i, "pair_id": p.pair_id, "record": pair_to_json(p)} for i, p in todo], JudgeActor,
                        {"settings": settings.arguments(), "config": config, "scorer_factory": scorer_factory},
                        pool=pool, batch_size=pool.batch_size or config.batch_size, progress=progress)
        expected = {i: {p.pair_id for p in sh.todo} for i, sh in enumerate(pending)}
        for cols, by_shard, complete in checked_batches(ds, expected, "pair_id", what="pair",
                                                         uris=[sh.uri for sh in pending]):
            for shard, rows in by_shard.items():
                prov = {}
                for v in versions:
                    for text in {cols[provenance_column(v)][j] for j in rows}:
                        p = decode_provenance(text)
                        if prov.setdefault(v, p) != p:
                            raise ConfigError(f"judge actors disagree on how {v!r} is made: {prov[v]} vs {p}")
                pending[shard].store.append([cols["pair_id"][j] for j in rows],
                                            {v: [decode_score(cols[verdict_column(v)][j]) for j in rows]
                                             for v in versions}, prov)
            for shard in complete:
                pending[shard].store.finish(pending[shard].n_pairs)
                log.info("shard %s judged (%d pairs)", pending[shard].name, len(expected[shard]))
        for i, sh in enumerate(pending):
            if not expected[i]:
                sh.store.finish(sh.n_pairs)
    log.info("judged %d pairs on Ray in %.1f s", len(todo), time.perf_counter() - t0)
    return len(todo)


class _NoLocalScorer:
    """Stands in for the driver's scorer when a test factory judges on the workers (skips the backend check)."""


def run_ray_judge_job(inputs, fmt: str, settings: JudgeSettings, out, *, config: ScoringConfig,
                      reader_options=None, seed: int = 0, pool: PoolConfig | None = None,
                      address: str | None = None, progress: bool = True, scorer_factory=None) -> dict:
    """The judge job with its judging step on Ray; the same outputs as :func:`workers.judge_job.run_judge_job`.

    Args:
        pool: the judge pool (actors, CPUs/GPUs per actor, Ray batch size, bounded restarts).
        address: as :func:`workers.ray_pipeline.run_ray_job`.
        scorer_factory: testing only, see :class:`JudgeActor`.
        Others: as :func:`workers.judge_job.run_judge_job`.
    """
    def step(todo, **kw) -> int:
        return ray_judge_step(todo, pool=pool, address=address, scorer_factory=scorer_factory, **kw)

    return run_judge_job(inputs, fmt, settings, out, config=config, reader_options=reader_options, seed=seed,
                         progress=progress, step=step, runner="ray",
                         scorer=None if scorer_factory is None else _NoLocalScorer())
