"""LINKAGE's score step on Ray: pending questions -> a pool of LINKAGE actors -> each shard's store.

The job itself (reading, generated reference lists, stores, signals, report, manifest) is
:func:`workers.protocol_job.run_linkage_job`, the same as the single-process path; only scoring is
distributed here, on the judge actors' pattern (:mod:`workers.ray_judges`)::

    the driver's pending questions (whole questions: LINKAGE ranks a candidate among its question's)
      -> ray.data.from_items, one row per question (shard id, question id, the question as JSON)
      -> map_batches over one fixed-size LinkageActor pool (one engine per actor; GPUs when the cluster has them)
      -> the driver appends every returned batch to its shard's store (a checkpoint per Ray batch),
         and finishes a shard's store when its last question is back

Resume rules are the local step's: a finished store is reused, a changed key starts the shard over,
and a partial store keeps its answers (only questions with a missing candidate are sent out). No
scoring logic lives here: the actors build :class:`models.protocols.LinkageScorer` exactly as the
local step does (``workers.protocol_job._linkage_scorer``).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from rubric.config import ScoringConfig
from rubric.errors import ConfigError
from rubric.protocols import LinkageCandidate, LinkageQuestion
from workers.protocol_job import (LinkagePending, LinkageSettings, check_linkage_batch, linkage_chunks,
                                  run_linkage_job, store_linkage_batch)
from workers.ray_judges import _NoLocalScorer
from workers.ray_pipeline import PoolConfig
from workers.ray_pools import checked_batches, keyed_pool, ray_session
from workers.store import decode_provenance, decode_score, encode_provenance, encode_score

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["LinkageActor", "ray_linkage_step", "run_ray_linkage_job", "question_to_json", "question_from_json"]

log = logging.getLogger(__name__)


def question_to_json(q: LinkageQuestion) -> str:
    """A LINKAGE question as JSON text (exact round trip with :func:`question_from_json`)."""
    return json.dumps(asdict(q), ensure_ascii=False)


def question_from_json(text: str) -> LinkageQuestion:
    """The question of :func:`question_to_json` (lists back to the record's tuples)."""
    d = json.loads(text)
    d["references"] = tuple(d["references"])
    d["candidates"] = tuple(LinkageCandidate(**c) for c in d["candidates"])
    return LinkageQuestion(**d)


class LinkageActor:
    """Builds one LINKAGE scorer (its engine) once, then scores Arrow batches of whole questions.

    Args:
        settings: ``LinkageSettings.arguments()`` (plain data).
        config: engine settings; a Ray batch is scored in the local step's chunks.
        scorer_factory: testing only: ``factory(settings, config)`` builds the scorer instead of the
            engine's (it must be importable on the workers).
    """

    def __init__(self, settings: dict, config: ScoringConfig, scorer_factory=None) -> None:
        from workers.protocol_job import _linkage_scorer

        self._settings = LinkageSettings(**settings)
        self._config = config
        self._scorer = (scorer_factory or _linkage_scorer)(self._settings, config)
        self._prov = json.dumps({s: encode_provenance(self._scorer.provenance(s)) for s in self._settings.systems})
        log.info("LINKAGE actor pid %d ready for %s", os.getpid(), ", ".join(self._settings.systems))

    def __call__(self, batch: "pa.Table") -> "pa.Table":
        import pyarrow as pa

        questions = [question_from_json(t) for t in batch.column("record").to_pylist()]
        got: list = []
        for chunk in linkage_chunks(questions, self._config):
            part = self._scorer.score_questions(chunk)
            check_linkage_batch(chunk, part)
            got.extend(part)
        scores = [json.dumps({s: [encode_score(r[s]) for r in g] for s in self._settings.systems}) for g in got]
        out = batch.drop_columns(["record"])
        out = out.append_column("scores", pa.array(scores, pa.string()))
        return out.append_column("provenance", pa.array([self._prov] * len(questions), pa.string()))


def ray_linkage_step(pending: Sequence[LinkagePending], *, settings: LinkageSettings, config: ScoringConfig,
                     progress: bool, pool: PoolConfig | None = None, address: str | None = None,
                     scorer_factory=None) -> int:
    """Score the pending questions on a Ray actor pool; returns how many answers were scored.

    Every question sent out comes back exactly once with one score per candidate, or the step fails
    (BatchMismatchError); a shard's store is finished only when all its questions are stored.
    """
    pool = pool or PoolConfig()
    todo = [(i, q) for i, sh in enumerate(pending) for q in sh.todo]
    if not todo:
        for sh in pending:
            sh.store.finish(sh.n_candidates)
        return 0
    t0 = time.perf_counter()
    with ray_session(address):
        # a Ray batch is questions; size it so it holds about a batch of candidates
        per_question = max(1, round(sum(len(q.candidates) for _, q in todo) / len(todo)))
        batch_size = max(1, (pool.batch_size or config.batch_size) // per_question)
        log.info("LINKAGE pool: %d actor(s) x (%.2f CPU) for %s", pool.size, pool.num_cpus,
                 ", ".join(settings.systems))
        ds = keyed_pool([{"shard": i, "question_id": q.question_id, "record": question_to_json(q)} for i, q in todo],
                        LinkageActor, {"settings": settings.arguments(), "config": config,
                                       "scorer_factory": scorer_factory},
                        pool=pool, batch_size=batch_size, progress=progress)
        by_id = [{q.question_id: q for q in sh.todo} for sh in pending]
        scored = 0
        for cols, by_shard, complete in checked_batches(ds, {i: set(q) for i, q in enumerate(by_id)}, "question_id",
                                                         what="question", uris=[sh.uri for sh in pending]):
            for shard, rows in by_shard.items():
                prov: dict = {}
                for text in {cols["provenance"][j] for j in rows}:
                    for s, p in json.loads(text).items():
                        p = decode_provenance(p)
                        if prov.setdefault(s, p) != p:
                            raise ConfigError(f"LINKAGE actors disagree on how {s!r} is made: {prov[s]} vs {p}")
                questions = [by_id[shard][cols["question_id"][j]] for j in rows]
                got = []
                for j in rows:
                    enc = json.loads(cols["scores"][j])
                    got.append([dict(zip(settings.systems, vals)) for vals in
                                zip(*([decode_score(t) for t in enc[s]] for s in settings.systems), strict=True)])
                scored += store_linkage_batch(pending[shard].store, questions, got, settings.systems, prov)
            for shard in complete:
                pending[shard].store.finish(pending[shard].n_candidates)
                log.info("shard %s scored (%d questions)", pending[shard].name, len(by_id[shard]))
        for i, sh in enumerate(pending):
            if not by_id[i]:
                sh.store.finish(sh.n_candidates)
    log.info("scored %d LINKAGE answers on Ray in %.1f s", scored, time.perf_counter() - t0)
    return scored


def run_ray_linkage_job(inputs: str | Path | Sequence[str | Path], out: str | Path, *, config: ScoringConfig,
                        pool: PoolConfig | None = None, address: str | None = None, scorer_factory=None,
                        **kwargs) -> dict:
    """LINKAGE with its score step on Ray; the same outputs as :func:`workers.protocol_job.run_linkage_job`.

    Args:
        pool: the LINKAGE actor pool (actors, CPUs/GPUs per actor, Ray batch size in candidates,
            bounded restarts).
        address: as :func:`workers.ray_pipeline.run_ray_job`.
        scorer_factory: testing only, see :class:`LinkageActor`.
        kwargs: :func:`workers.protocol_job.run_linkage_job`'s other options (with ``--references
            generated`` the lists are written on the driver, before the step).
    """
    def step(pending, **kw) -> int:
        return ray_linkage_step(pending, pool=pool, address=address, scorer_factory=scorer_factory, **kw)

    if scorer_factory is not None:
        kwargs.setdefault("scorer", _NoLocalScorer())
    return run_linkage_job(inputs, out, config=config, step=step, runner="ray", **kwargs)
