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

import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rubric.tables import JobInput, StreamAssembled, TableFiles, assemble_stream
from rubric.config import ScoringConfig
from rubric.errors import BatchMismatchError
from rubric.io import Block
from rubric.io import AnswerItem, explode
from rubric.scoring import Provenance, Score
from rubric.scoring import RUBRICS, RubricSpec
from workers.runner import JobKind, JobRun, Unit, run
from workers.shards import read_unit
from workers.outdir import atomic_write_bytes, remove_tree
from workers.store import score_key

__all__ = ["ScoreKind", "run_job"]

log = logging.getLogger(__name__)


class ScoreKind(JobKind):
    """The score job: items are the unique answers of a unit, stored by answer id, one score per rubric.

    Args:
        fmt: input format; options: reader options; specs: the rubrics; config: scoring settings;
        seed: the split seed.
    """

    blocks = True
    read_on_driver = False

    def __init__(self, fmt: str, options: Mapping[str, Any], specs: Sequence[RubricSpec | str], config: ScoringConfig,
                 seed: int = 0) -> None:
        self.fmt, self.options, self.config, self.seed = fmt, dict(options), config, seed
        self.specs = [RUBRICS.get(s) if isinstance(s, str) else s for s in specs]
        self.names = [s.name for s in self.specs]
        from workers import local

        self.checkpoint = max(local.CHECKPOINT_ANSWERS, config.batch_size)

    def arguments(self) -> dict:
        return {"fmt": self.fmt, "options": self.options, "specs": [s.version for s in self.specs],
                "config": self.config, "seed": self.seed}

    def check(self) -> None:
        from models.backends import check_backends

        check_backends(self.specs, self.config)

    def key(self, uri: str, sha: str, block: Block | None) -> dict:
        return score_key(path=uri, sha256=sha, fmt=self.fmt, options=self.options, specs=self.specs,
                         config=self.config, block=None if block is None else block.bounds())

    def read(self, unit: Unit):
        return read_unit(unit.uri, self.fmt, self.options, unit.block)

    def items(self, read) -> list:
        return explode(read.pairs)

    def item_ids(self, items: Sequence[AnswerItem]) -> list[list[str]]:
        return [[it.answer_id] for it in items]

    def dedupe_key(self, item: AnswerItem) -> str:
        return item.answer_id

    def stages(self) -> list[tuple[str, Any]]:
        from models.backends import POOLS, pool_of_backend

        groups: dict[str, list[str]] = {}
        for s in self.specs:
            groups.setdefault(pool_of_backend(s.backend), []).append(s.version)
        # cheap pools first, the LLM last: its batches then carry the other scores along, not the reverse
        return sorted(groups.items(), key=lambda kv: POOLS.index(kv[0]))

    def build_scorer(self, stage: Sequence[str] | None = None):
        from models.backends import build_scorers

        specs = self.specs if stage is None else [RUBRICS.get(v) for v in stage]
        return build_scorers(specs, self.config)

    def provenance(self, scorer) -> dict[str, Provenance]:
        return {s.name: sc.provenance(s.name) for sc in scorer for s in sc.specs}

    def score(self, scorer, items: Sequence[AnswerItem], seconds: dict[str, float]) -> list[list[dict[str, Score]]]:
        from workers.local import score_items

        run_ = score_items(items, scorer, batch_size=self.config.batch_size, progress=False)
        for k, v in run_.seconds.items():
            seconds[k] = seconds.get(k, 0.0) + v
        names = list(run_.scores)
        return [[{n: run_.scores[n][i] for n in names}] for i in range(len(items))]

    def encode_item(self, item: AnswerItem) -> str:
        return json.dumps([item.answer_id, item.question, item.answer, list(item.docs), item.reference],
                          ensure_ascii=False)

    def decode_item(self, text: str) -> AnswerItem:
        a, q, t, d, r = json.loads(text)
        return AnswerItem(answer_id=a, question=q, answer=t, docs=tuple(d), reference=r)

    def assemble(self, job: JobRun) -> dict:
        scores, provenance = job.merged()
        for s in self.specs:  # a job whose every answer was rejected still says how it would have scored
            provenance.setdefault(s.name, Provenance(s.version, s.backend))

        def read_inputs():
            for u in job.units:  # one unit at a time: nothing of an earlier unit is kept
                yield JobInput(name=u.name if u.block is None else u.shard, read=self.read(u), fmt=self.fmt,
                               sha256=u.sha, group=None if u.block is None else u.shard)

        try:
            writer = _TableWriter(job.out)
        except BaseException:
            scores.close()
            raise
        job.scratch.append(writer.tmpdir)  # removed after the publish: the staged tables are moved out first
        files = writer.files
        try:
            assembled = assemble_stream(read_inputs, scores, provenance, self.specs, write_pairs=files.pairs,
                                        write_rejects=files.rejects, write_answers=files.answers,
                                        write_claims=files.claims, rescale=self.config.rescale, seed=self.seed,
                                        workdir=str(writer.tmpdir))
        except BaseException:
            files.close()  # the tables begun stay in the staging folder, which the runner removes
            raise
        finally:
            scores.close()
        writer.stage(assembled, job)
        from rubric.tables import rubric_provenance

        counts = dict(assembled.counts)
        per_input = counts.pop("per_input")
        c = counts
        seconds = job.timings.get("score", 0.0)
        log.info("wrote %s: %d rows in, %d pairs, %d rejected, %d unique answers (%d scored now); errors by rubric: "
                 "%s", job.out, c["rows_in"], c["pairs"], c["rejected"], c["unique_answers"], job.step.scored,
                 c["errors_by_rubric"])
        return {"counts": counts,
                "rubrics": {s.name: {**rubric_provenance(provenance[s.name], s, assembled.fitted),
                                     "raw_range": [s.raw_min, s.raw_max]} for s in self.specs},
                "split_seed": self.seed, "split_source": assembled.split_source, "rescale": self.config.rescale,
                "per_input": per_input,
                "job": {"answers_scored_now": job.step.scored,
                        "answers_per_s": round(job.step.scored / seconds, 3) if seconds > 0 else None,
                        "score_seconds": job.step.seconds}}


def run_job(inputs: str | Path | Sequence[str | Path], fmt: str, specs: Sequence[RubricSpec], out: str | Path, *,
            config: ScoringConfig, reader_options: Mapping[str, Any] | None = None, seed: int = 0,
            progress: bool = True, ray=None, scorers=None) -> dict:
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
        ray: a :class:`workers.ray_pipeline.RayStep` to score on Ray; default: in this process.
        scorers: prebuilt scorers for the local step (tests).

    Returns:
        The manifest (also written to ``OUT/manifest.json``).

    Raises:
        BackendUnavailableError: a backend's package or model is missing (before any data is read).
        InputError: an input does not exist, cannot be read, or the job has no usable pair.
    """
    kind = ScoreKind(fmt, dict(reader_options or {}), list(specs), config, seed)
    return run(kind, inputs, out, progress=progress, step=ray, runner="local" if ray is None else "ray",
               scorer=scorers)


class _TableWriter:
    """The staging folder inside OUT that the assemble step's tables stream into (``rubric.tables.TableFiles``);
    the runner publishes them together with the manifest (``workers.outdir.publish``) and then removes the
    folder (``JobRun.scratch``)."""

    def __init__(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.tmpdir = out / f".assemble-{os.getpid()}"
        remove_tree(out, self.tmpdir)
        self.tmpdir.mkdir()
        self.files = TableFiles(self.tmpdir)

    def stage(self, assembled: StreamAssembled, job: JobRun) -> None:
        """Close the tables and name them (and rescale.json) in ``job.staged``; outputs this run does not make
        go to ``job.remove``."""
        written = self.files.close()
        for name in ("pairs", "answers") + (("claims",) if assembled.has_claims else ()):
            if name not in written:  # pragma: no cover - assemble_stream raises when there is no pair
                raise BatchMismatchError(f"the assemble step wrote no {name}")
        names = ["answers.parquet", "pairs.parquet", "rejects.jsonl"]
        if assembled.has_claims:
            names.append("claims.parquet")
        if assembled.fitted is not None:
            atomic_write_bytes(self.tmpdir / "rescale.json", assembled.fitted.to_json_bytes())
            names.append("rescale.json")
        job.staged.update({n: self.tmpdir / n for n in names})
        job.remove.extend(n for n in ("claims.parquet", "rescale.json") if n not in names)
