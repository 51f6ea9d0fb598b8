"""Per-answer human ratings: one record -> one rated answer (``validate --human``).

People's ratings of an aspect of each answer (SummEval's experts rate coherence, consistency, fluency and relevance
of each summary; USR's raters the naturalness and coherence of each dialogue reply; a graded answer list's grade is
a rating of relevance or of overall quality). A rubric is then compared with the ratings of its own aspect, across
the answers of one source (a document, a question), as SummEval and G-Eval report it.

Two readers, one result:

- :func:`read_ratings`: a JSONL / JSON-list / Parquet / CSV table through a column mapping (``--map``): ``question``
  and ``answer`` required; ``source`` (the group the answers are compared within: a document id; default: the
  question), ``system`` (who wrote the answer), ``reference``, ``docs`` and ``id`` optional. The ratings are the
  columns named by ``--aspects`` (``coherence,fluency,factuality=consistency``: the aspect ``factuality`` read from
  the column ``consistency``); a rating is a finite number (a CSV cell's text is parsed as one), null or blank when
  the answer was not rated on that aspect.
- :func:`read_graded_ratings`: a graded answer list (TREC-DL, WebGLM): each graded answer, its grade the rating of
  the one aspect named (``--aspects relevance``), its question its source.

A row that cannot be read is a :class:`~rubric.io.records.Reject` naming the row and the field, never the whole file;
a row with no rating at all is one too.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rubric.errors import ConfigError
from rubric.io.fields import (DEFAULT_MAX_ANSWER_CHARS, DEFAULT_MAX_QUESTION_CHARS, RowError, _docs, _meta, _reference,
                              check_max_chars, text_field)
from rubric.io.files import RepeatedKeys, check_path, kind_of, load_records
from rubric.io.graded import graded_item, load_graded
from rubric.io.mapping import check_mapped_columns, check_mapping, mapping_entries
from rubric.io.records import AnswerItem, Reject, content_id, question_id

__all__ = ["RATING_FIELDS", "RatedAnswer", "RatingsRead", "parse_aspects", "read_ratings", "read_graded_ratings"]

log = logging.getLogger(__name__)

#: Our field names that ``read_ratings`` maps onto a file's columns (``--map``).
RATING_FIELDS: tuple[str, ...] = ("question", "answer", "source", "system", "reference", "docs", "id")
_RATING_REQUIRED: tuple[str, ...] = ("question", "answer")


@dataclass(frozen=True)
class RatedAnswer:
    """One answer with people's ratings of it.

    Attributes:
        item: the answer to score (its id is :func:`rubric.io.content_id`'s: one text read twice is scored once).
        source: the group its ratings are compared within (a document, a question).
        system: who wrote it ("" when the input does not say).
        ratings: aspect -> the rating (people's mean where several rated it); an aspect not rated is absent.
        row: the input record it came from.
        row_id: the record's id (``id`` column), or ``<file stem>:row<N>``.
    """

    item: AnswerItem
    source: str
    system: str
    ratings: Mapping[str, float]
    row: int
    row_id: str


@dataclass(frozen=True)
class RatingsRead:
    """What a ratings reader returns: the rated answers in input order, the rejected rows, the aspects."""

    answers: list[RatedAnswer]
    rejects: list[Reject]
    rows_in: int
    source_file: str
    aspects: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.answers) + len(self.rejects) != self.rows_in:
            raise ValueError(f"row accounting is broken for {self.source_file}: rows_in={self.rows_in}, "
                             f"answers={len(self.answers)}, rejects={len(self.rejects)}")


def parse_aspects(text: str | Sequence[str] | Mapping[str, str]) -> dict[str, str]:
    """``"coherence,fluency,factuality=consistency"`` -> aspect -> column (``{"factuality": "consistency", ...}``).

    Raises:
        ConfigError: empty, malformed, or an aspect named twice.
    """
    if isinstance(text, Mapping):
        out = dict(text)
    else:
        parts = text.split(",") if isinstance(text, str) else list(text)
        out = {}
        for part in (p.strip() for p in parts):
            if not part:
                continue
            name, sep, col = (x.strip() for x in part.partition("="))
            col = col if sep else name
            if not name or not col:
                raise ConfigError(f"--aspects entry {part!r} must be ASPECT or ASPECT=COLUMN")
            if name in out:
                raise ConfigError(f"--aspects names {name!r} twice")
            out[name] = col
    if not out:
        raise ConfigError("--aspects is empty: name the rating columns, e.g. coherence,fluency,factuality=consistency")
    return out


def _rating(rec: Mapping[str, Any], aspect: str, col: str) -> float | None:
    value = rec.get(col)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise RowError(col, f"rating {aspect!r} (column {col!r}) is {value!r}, not a number")
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise RowError(col, f"rating {aspect!r} (column {col!r}) is {value!r}, not a number") from None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RowError(col, f"rating {aspect!r} (column {col!r}) is {value!r}, not a finite number")
    return float(value)


def _accounted(src: str, answers: list[RatedAnswer], rejects: list[Reject], rows_in: int,
               aspects: Sequence[str]) -> RatingsRead:
    result = RatingsRead(answers, rejects, rows_in, src, tuple(aspects))
    log.info("read %d rated answers from %s (%d rows in, %d rejected; aspects: %s)", len(answers), src, rows_in,
             len(rejects), ", ".join(aspects))
    if rejects:
        log.warning("%d rows of %s rejected; first: %s", len(rejects), src, rejects[0].reason)
    return result


def read_ratings(path: str | Path, mapping: Mapping[str, str] | str, aspects: str | Mapping[str, str], *,
                 fmt: str | None = None, max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
                 max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS) -> RatingsRead:
    """Read a table of rated answers through a column mapping (see the module docstring).

    Args:
        path: the file; its extension (.jsonl, .json, .parquet, .csv) picks the parser unless ``fmt``.
        mapping: our field -> the file's column (:data:`RATING_FIELDS`; question and answer required), or the
            ``--map`` text.
        aspects: aspect -> rating column, or the ``--aspects`` text (:func:`parse_aspects`).
        fmt: "jsonl", "parquet" or "csv" to override the extension.
        max_answer_chars / max_question_chars: longer texts are rejected.

    Raises:
        ConfigError: a bad mapping, aspect list or limit.
        InputError: the file cannot be read at all, or a mapped column is in no record.
    """
    check_max_chars(max_answer_chars, max_question_chars)
    cols = check_mapping(mapping_entries(mapping) if isinstance(mapping, str) else mapping, RATING_FIELDS,
                         _RATING_REQUIRED)
    wanted = parse_aspects(aspects)
    p = check_path(path)
    src = str(p)
    records = load_records(p, kind_of(p, fmt))
    check_mapped_columns(p, records, {**cols, **{f"aspect {a}": c for a, c in wanted.items()}})
    answers: list[RatedAnswer] = []
    rejects: list[Reject] = []
    for row, rec in enumerate(records):
        try:
            if not isinstance(rec, Mapping):
                raise RowError(None, f"record is a JSON {type(rec).__name__}, expected an object")
            if isinstance(rec, RepeatedKeys):
                raise RowError(rec.repeated[0], f"field {rec.repeated[0]!r} appears more than once in the record")
            question = text_field(rec, cols["question"], max_question_chars, option="max_question_chars")
            answer = text_field(rec, cols["answer"], max_answer_chars)
            docs, reference = _docs(rec, cols.get("docs")), _reference(rec, cols.get("reference"))
            ratings = {a: r for a, c in wanted.items() if (r := _rating(rec, a, c)) is not None}
            if not ratings:
                raise RowError(None, f"no rating on any aspect ({', '.join(f'{a} (column {c!r})' for a, c in wanted.items())})")
            item = AnswerItem(content_id(question, answer, docs, reference), question, answer, docs, reference)
            answers.append(RatedAnswer(item, _meta(rec, cols.get("source")) or question_id(question),
                                       _meta(rec, cols.get("system")), ratings, row,
                                       _meta(rec, cols.get("id")) or f"{p.stem}:row{row}"))
        except RowError as e:
            rejects.append(Reject(row=row, field=e.field, reason=f"row {row}: {e.reason}", source_file=src))
    return _accounted(src, answers, rejects, len(records), list(wanted))


def read_graded_ratings(path: str | Path, aspects: str | Mapping[str, str] = "grade", *,
                        max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS, include_references: bool = False,
                        **_ignored: Any) -> RatingsRead:
    """Read a graded answer list as rated answers: each answer's grade is its rating of the one aspect named.

    Args:
        path: the graded file (``rubric.io.read_graded``'s shapes).
        aspects: the one aspect the grades rate (``relevance`` for TREC-DL's passages); its column part, if any, is
            ignored (a graded answer has one grade, ``label``).
        max_answer_chars: longer answers are rejected.
        include_references: also read WebGLM's reference answers with their grades.

    Raises:
        ConfigError: not exactly one aspect.
        InputError: the file cannot be read as a graded list.
    """
    wanted = list(parse_aspects(aspects))
    if len(wanted) != 1:
        raise ConfigError(f"a graded list rates one aspect (its grades); --aspects names {len(wanted)}: {wanted}")
    aspect = wanted[0]
    p, questions = load_graded(path, include_references)
    src = str(p)
    answers: list[RatedAnswer] = []
    rejects: list[Reject] = []
    rows_in = 0
    for q in questions:
        for key, raw in q.items:
            rows_in += 1
            reason, field = None, None
            if q.repeats is not None:
                reason = f"its question repeats question {q.repeats}"
            else:
                try:
                    text, grade = graded_item(raw, max_answer_chars)
                except RowError as e:
                    reason, field = e.reason, e.field
            if reason is not None:
                rejects.append(Reject(row=q.index, field=field, source_file=src,
                                      reason=f"question {q.index} ({q.question[:60]!r}) answer {key}: {reason}",
                                      extra={"answer": key}))
                continue
            item = AnswerItem(content_id(q.question, text, (), q.reference), q.question, text, (), q.reference)
            answers.append(RatedAnswer(item, question_id(q.question), "", {aspect: float(grade)}, q.index,
                                       f"{p.stem}:q{q.index}:{key}"))
    return _accounted(src, answers, rejects, rows_in, [aspect])
