"""The score job: answers of pair inputs -> every rubric -> answers.parquet, pairs.parquet and the rest::

    check backends -> list shards -> plan units (a shard, or a block of a large one) with their score
      stores (resume or re-score, and why) -> score the pending units' unique answers (single
      process, or Ray pools) -> assemble the whole job once (rubric.tables)
      -> write OUT/answers.parquet, pairs.parquet, [claims.parquet], rejects.jsonl, [rescale.json],
         manifest.json (last)

The line is :func:`workers.runner.run`'s, shared with the judge and LINKAGE jobs; :class:`ScoreKind`
supplies what is the score job's own. Only the step differs between the single-process path and
Ray, so both give the same tables in the same layout.

A shard that cannot be read does not stop the others from being scored (their scores are kept
in ``OUT/scores/``), but the job then stops before assembling: tables missing an input would
have other splits and rescaling than the whole job, so none are written.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from models.backends import POOLS, check_backends, pool_of_backend
from models.scorer_set import ScorerSet
from rubric.config import ScoringConfig
from rubric.io import AnswerItem, answer_work
from rubric.scoring import EVIDENCE_CUT, RUBRICS, RubricSpec
from rubric.tables import ANSWER_TABLE_FILES, write_answer_tables
from workers.runner import KindManifest, JobKind, JobRun, ScoreIndex, run
from workers.storage.store import rubrics_key

__all__ = ["ScoreKind", "run_job", "CHECKPOINT_ANSWERS"]

log = logging.getLogger(__name__)

#: Answers per checkpoint (one store part) in the single-process path, at least one batch.
CHECKPOINT_ANSWERS = 256


class ScoreKind(JobKind):
    """The score job: items are the unique answers of a unit, stored by answer id, one score per rubric.

    Its step is handed off whole: the backend check (``models.backends.check_backends``), the work items
    (``rubric.io.answer_work``) and the scorer (``models.scorer_set.ScorerSet``); the assemble step is
    ``rubric.tables.write_answer_tables`` into the run's staging, plus the manifest's fields.

    Args:
        fmt: input format; options: reader options; specs: the rubrics; config: scoring settings;
        seed: the split seed.
    """

    blocks = True
    read_on_driver = False
    outputs = ANSWER_TABLE_FILES
    item_type = AnswerItem

    def __init__(self, fmt: str, options: Mapping[str, Any], specs: Sequence[RubricSpec | str], config: ScoringConfig,
                 seed: int = 0) -> None:
        self.fmt, self.options, self.config, self.seed = fmt, dict(options), config, seed
        self.specs = [RUBRICS.get(s) if isinstance(s, str) else s for s in specs]
        self.names = [s.name for s in self.specs]
        self.key_fields = rubrics_key([s.version for s in self.specs])
        self.checkpoint = max(CHECKPOINT_ANSWERS, config.batch_size)

    def arguments(self) -> dict:
        return {"fmt": self.fmt, "options": self.options, "specs": [s.version for s in self.specs],
                "config": self.config, "seed": self.seed}

    def check(self) -> None:
        check_backends(self.specs, self.config)

    def work_items(self, uri: str, block) -> tuple[list, list[list[str]]]:
        return answer_work(uri, block, fmt=self.fmt, options=self.options)

    def scorer(self, stage=None) -> ScorerSet:
        return ScorerSet.build(self.specs, self.config, stage)

    def dedupe_key(self, item: AnswerItem) -> str:
        return item.answer_id

    def stages(self) -> list[tuple[str, Any]]:
        groups: dict[str, list[str]] = {}
        for s in self.specs:
            groups.setdefault(pool_of_backend(s.backend), []).append(s.version)
        # cheap pools first, the LLM last: its batches then carry the other scores along, not the reverse
        return sorted(groups.items(), key=lambda kv: POOLS.index(kv[0]))

    def assemble(self, job: JobRun, scores: ScoreIndex, provenance) -> KindManifest:
        tables = write_answer_tables(job.units, scores, provenance, self.specs, fmt=self.fmt, options=self.options,
                                     rescale=self.config.rescale, seed=self.seed, sink=job.output,
                                     split_fractions=self.config.split_fractions)
        counts = dict(tables.counts)
        per_input = counts.pop("per_input")
        c = counts
        seconds = job.timings.get("score", 0.0)
        log.info("wrote %s: %d rows in, %d pairs, %d rejected, %d unique answers (%d scored now); errors by rubric: "
                 "%s", job.out, c["rows_in"], c["pairs"], c["rejected"], c["unique_answers"], job.step.scored,
                 c["errors_by_rubric"])
        for rubric, n in (c.get("evidence_cut_by_rubric") or {}).items():
            log.warning("%s: the evidence of %d answers was cut at its scorer's cap and only its start was read (the "
                        "%s_%s column of answers.parquet names them)", rubric, n, rubric, EVIDENCE_CUT)
        return KindManifest({"counts": counts, "rubrics": tables.rubrics,
                             "split_seed": self.seed, "split_fractions": list(self.config.split_fractions),
                             "split_source": tables.split_source, "rescale": self.config.rescale},
                            per_input=per_input,
                            job={"answers_scored_now": job.step.scored,
                                 "answers_per_s": round(job.step.scored / seconds, 3) if seconds > 0 else None,
                                 "score_seconds": job.step.seconds})


def run_job(inputs: str | Path | Sequence[str | Path], fmt: str, specs: Sequence[RubricSpec], out: str | Path, *,
            config: ScoringConfig, reader_options: Mapping[str, Any] | None = None, seed: int = 0,
            progress: bool = True, ray=None, scorers=None, force: bool = False, max_failed: float | None = None,
            retry_failed: bool = False) -> dict:
    """Score every input and write the job's tables (see the module docstring).

    Args:
        inputs: a file, or a list of files, directories, globs or URIs (one file = one shard).
        fmt: input format (``rubric.io.readers.FORMATS``), the same for every input.
        specs: the rubrics to score.
        out: output folder.
        config: scoring settings.
        reader_options: passed to the reader of every input.
        seed: split seed.
        progress: show progress bars.
        ray: a :class:`workers.cluster.pipeline.RayStep` to score on Ray; default: in this process.
        scorers: prebuilt scorers for the local step (tests; run as a ``models.scorer_set.ScorerSet``).
        force: write into a folder that is not an lfqa-rubric output (``workers.storage.outdir.OutputFolder``).
        max_failed: the failure budget (``JobKind.max_failed``; default ``rubric.tables.DEFAULT_MAX_FAILED``).
        retry_failed: score again only the cells that failed in the earlier run into ``out``.

    Returns:
        The manifest (also written to ``OUT/manifest.json``).

    Raises:
        FailureBudgetError: a rubric's failed fraction is over ``max_failed`` (after publishing).
        BackendUnavailableError: a backend's package or model is missing (before any data is read).
        InputError: an input does not exist, cannot be read, or the job has no usable pair.
    """
    kind = ScoreKind(fmt, dict(reader_options or {}), list(specs), config, seed)
    if max_failed is not None:
        kind.max_failed = max_failed
    return run(kind, inputs, out, progress=progress, step=ray,
               scorer=None if scorers is None else ScorerSet(scorers, config.batch_size), force=force,
               retry_failed=retry_failed)
