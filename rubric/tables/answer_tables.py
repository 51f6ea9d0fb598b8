"""The score job's assemble step, whole: its units read again, :func:`assemble_stream` over the merged
scores, the tables handed to the job's file sink (:class:`TableFiles`), and what the manifest records of them.

The job (``workers.jobs.score.ScoreKind``) hands over its units, merged scores and the run's staging (the
sink, which writes and publishes the files); everything a table holds is decided here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rubric.config import DEFAULT_SPLIT_FRACTIONS
from rubric.errors import BatchMismatchError
from rubric.io import Block, read_scored
from rubric.scoring import Provenance, RubricSpec
from rubric.tables.assemble import JobInput
from rubric.tables.assemble_stream import ScoreLookup, assemble_stream
from rubric.tables.files import FileSink, TableFiles
from rubric.tables.provenance import rubric_provenance

__all__ = ["InputUnit", "AnswerTables", "write_answer_tables", "ANSWER_TABLE_FILES"]

#: Every file the score job's assemble step may write (claims and rescale.json only when made; costs.parquet,
#: ``rubric.tables.costs``, written by the job beside them).
ANSWER_TABLE_FILES = ("answers.parquet", "pairs.parquet", "rejects.jsonl", "claims.parquet", "rescale.json",
                      "costs.parquet")


class InputUnit(Protocol):
    """One unit of a job's plan as the assemble step reads it again (``workers.runner.Unit``)."""

    name: str  # the unit's store folder
    uri: str
    sha: str
    shard: str  # the input's name
    block: Block | None


@dataclass(frozen=True)
class AnswerTables:
    """What :func:`write_answer_tables` wrote and what the manifest records.

    Attributes:
        files: the files written into the sink, in :data:`ANSWER_TABLE_FILES` order.
        counts: the job's counts (``per_input``: an input's name -> its own counts).
        rubrics: rubric name -> its provenance record and declared raw range.
        split_source: where the splits came from.
    """

    files: list[str]
    counts: dict
    rubrics: dict[str, dict]
    split_source: str


def write_answer_tables(units: Sequence[InputUnit], scores: ScoreLookup, provenance: Mapping[str, Provenance],
                        specs: Sequence[RubricSpec], *, fmt: str, options: Mapping[str, Any], rescale: str,
                        seed: int, sink: FileSink,
                        split_fractions: Sequence[float] = DEFAULT_SPLIT_FRACTIONS) -> AnswerTables:
    """Assemble a score job's tables from its units and merged scores, into ``sink``'s files.

    Units are read one at a time (nothing of an earlier unit is kept); a block counts under its input.
    A rubric with no score (every answer rejected) still says how it would have been scored.

    Raises:
        InputError: the job has no usable pair (``assemble_stream``).
    """
    provenance = dict(provenance)
    for s in specs:
        provenance.setdefault(s.name, Provenance(s.version, s.backend))

    def read_inputs() -> Iterator[JobInput]:
        for u in units:
            yield JobInput(name=u.name if u.block is None else u.shard, read=read_scored(u.uri, fmt, options, u.block),
                           fmt=fmt, sha256=u.sha, group=None if u.block is None else u.shard)

    files = TableFiles(sink)
    try:
        assembled = assemble_stream(read_inputs, scores, provenance, specs, write_pairs=files.pairs,
                                    write_rejects=files.rejects, write_answers=files.answers,
                                    write_claims=files.claims, rescale=rescale, seed=seed, workdir=sink.scratch(),
                                    fractions=split_fractions)
    finally:
        written = files.close()
    made = {"answers.parquet", "pairs.parquet", "rejects.jsonl"}
    for name in ("pairs", "answers") + (("claims",) if assembled.has_claims else ()):
        if name not in written:  # pragma: no cover - assemble_stream raises when there is no pair
            raise BatchMismatchError(f"the assemble step wrote no {name}")
    if assembled.has_claims:
        made.add("claims.parquet")
    if assembled.fitted is not None:
        sink.data("rescale.json", assembled.fitted.to_json_bytes())
        made.add("rescale.json")
    return AnswerTables(
        files=[n for n in ANSWER_TABLE_FILES if n in made], counts=dict(assembled.counts),
        rubrics={s.name: {**rubric_provenance(provenance[s.name], s, assembled.fitted),
                          "raw_range": [s.raw_min, s.raw_max]} for s in specs},
        split_source=assembled.split_source)
