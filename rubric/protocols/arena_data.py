"""RAG-QA Arena's inputs: the LFRQA annotation files, one answers file per system, and their join.

RAG-QA Arena (seed 004) judges each system's answer against the LFRQA reference answer of the same
question. Its annotation files (``annotations_<domain>_with_citation.jsonl``) hold one question per
line: ``qid`` (an integer in fiqa, a string such as ``"science-search-test-510"`` elsewhere),
``question``, ``answer`` (the LFRQA reference), ``faithful_answer_w_citation`` (the same answer with
``[k]`` citation marks), ``citation_numbers`` and ``gold_doc_ids``. The reference is ``answer``: the
citation marks would tell the judge which answer is the reference.

As everywhere in :mod:`rubric.io.readers`, a bad row never kills a file: it becomes a
:class:`~rubric.io.records.Reject` naming the row and the field, and every result satisfies
``rows_in == rows_ok + len(rejects)``. A file that cannot be read at all raises
:class:`~rubric.errors.InputError`. The join (:func:`join_arena`) rejects an answer whose qid the
annotations do not have, and reports every annotated question a system did not answer.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rubric.errors import ConfigError
from rubric.io import (
    DEFAULT_MAX_ANSWER_CHARS,
    DEFAULT_MAX_QUESTION_CHARS,
    check_max_chars,
    check_path,
    kind_of,
    label_key,
    label_table,
    load_records,
    RepeatedKeys,
    RowError,
    text_field,
    check_text,
    mapping_entries,
    check_mapping,
)
from rubric.io import PairRecord, Reject

__all__ = [
    "REFERENCE_SYSTEM",
    "ANSWER_FIELDS",
    "DEFAULT_OUTCOME_VALUES",
    "ArenaQuestion",
    "ArenaQuestions",
    "SystemAnswer",
    "ArenaAnswers",
    "ArenaPair",
    "ArenaJoin",
    "read_arena_annotations",
    "read_arena_answers",
    "join_arena",
    "to_pair_records",
]

logger = logging.getLogger(__name__)

#: The name the LFRQA reference answers take as a system (in the pairs and the ratings).
REFERENCE_SYSTEM = "lfrqa"
#: Our fields of an answers file: ``qid`` and ``answer`` required, ``label`` (a human judgement) optional.
ANSWER_FIELDS: tuple[str, ...] = ("qid", "answer", "label")
#: A human judgement of a system's answer against the reference (matched case-insensitively) -> our
#: label, with the system's answer as ``a`` and the reference as ``b``.
DEFAULT_OUTCOME_VALUES: Mapping[str, str] = {
    "win": "a", "better": "a", "a": "a",
    "tie": "tie", "not sure": "tie",
    "loss": "b", "lose": "b", "worse": "b", "b": "b",
}

_DOMAIN_RE = re.compile(r"^annotations_(.+?)_with_citation$")


@dataclass(frozen=True)
class ArenaQuestion:
    """One LFRQA question with its reference answer.

    Attributes:
        qid: the question id, as a string (fiqa's integer ids are written in decimal).
        question: the question.
        reference: the LFRQA answer (``answer``, without citation marks).
        domain: the domain, from the file name ``annotations_<domain>_with_citation.jsonl`` unless given.
        row: the record's index in its file.
        source_file: the file it was read from.
    """

    qid: str
    question: str
    reference: str
    domain: str
    row: int
    source_file: str


def _accounting(name: str, rows_in: int, rows_ok: int, rejects: Sequence[Reject]) -> None:
    if rows_ok + len(rejects) != rows_in:
        raise ValueError(f"row accounting is broken for {name}: rows_in={rows_in}, rows_ok={rows_ok}, "
                         f"rejects={len(rejects)}")


@dataclass(frozen=True)
class ArenaQuestions:
    """What :func:`read_arena_annotations` returns.

    Attributes:
        questions: the valid questions, in file order.
        rejects: one per unusable record.
        rows_in: records read (non-blank lines).
        source_file: the path read.
    """

    questions: list[ArenaQuestion]
    rejects: list[Reject]
    rows_in: int
    source_file: str

    def __post_init__(self) -> None:
        _accounting(self.source_file, self.rows_in, len(self.questions), self.rejects)


@dataclass(frozen=True)
class SystemAnswer:
    """One system's answer to one question.

    Attributes:
        qid: the question id, as a string.
        answer: the answer.
        human: a human judgement of this answer against the reference: ``a`` (the system's is
            better), ``b`` (the reference is) or ``tie``; None when the file has none.
        row: the record's index in its file.
    """

    qid: str
    answer: str
    human: str | None
    row: int


@dataclass(frozen=True)
class ArenaAnswers:
    """What :func:`read_arena_answers` returns.

    Attributes:
        system: the system's name.
        answers: the valid answers, in file order.
        rejects: one per unusable record.
        rows_in: records read.
        source_file: the path read.
    """

    system: str
    answers: list[SystemAnswer]
    rejects: list[Reject]
    rows_in: int
    source_file: str

    def __post_init__(self) -> None:
        _accounting(self.source_file, self.rows_in, len(self.answers), self.rejects)


@dataclass(frozen=True)
class ArenaPair:
    """A system's answer against the reference answer of the same question.

    Attributes:
        pair_id: ``f"{system}:{qid}"``.
        qid: the question id.
        question: the question.
        system: the system's name.
        answer: the system's answer (``a``).
        reference: the LFRQA reference answer (``b``).
        domain: the question's domain.
        human: the human judgement (``a``/``b``/``tie``, ``a`` = the system's answer), or None.
    """

    pair_id: str
    qid: str
    question: str
    system: str
    answer: str
    reference: str
    domain: str
    human: str | None = None


@dataclass(frozen=True)
class ArenaJoin:
    """The pairs of every system against the reference, and what could not be paired.

    Attributes:
        pairs: system by system (in the order given), each in its answers file's order.
        rejects: answers whose qid the annotations lack or that repeat a qid (``source_file`` the answers
            file), annotated questions a system did not answer (``row`` None, ``pair_id`` the would-be
            pair id), and annotation records whose qid an earlier annotation file already had.
        n_questions: distinct annotated questions.
    """

    pairs: list[ArenaPair]
    rejects: list[Reject]
    n_questions: int


def _qid(rec: Mapping[str, Any], name: str, label: str | None = None) -> str:
    shown = label or repr(name)
    if name not in rec or rec[name] is None:
        raise RowError(name, f"missing field {shown}")
    value = rec[name]
    # a bool is an int in Python, and a float id (1093.0) is a different string than 1093
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise RowError(name, f"field {shown} must be an integer or a string, got {type(value).__name__} {value!r}")
    qid = check_text(str(value).strip(), name, shown)
    if not qid:
        raise RowError(name, f"field {shown} is empty")
    return qid


def _row_reject(src: str, row: int, e: RowError, qid: str | None = None) -> Reject:
    return Reject(row=row, field=e.field, reason=f"row {row}: {e.reason}", pair_id=qid, source_file=src)


def _record(rec: Any) -> Mapping[str, Any]:
    if isinstance(rec, RowError):
        raise rec
    if not isinstance(rec, Mapping):
        raise RowError(None, f"record is a JSON {type(rec).__name__}, expected an object")
    if isinstance(rec, RepeatedKeys):
        raise RowError(rec.repeated[0], f"field {rec.repeated[0]!r} appears more than once in the record")
    return rec


def read_arena_annotations(path: str | Path, *, domain: str | None = None,
                           max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
                           max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS) -> ArenaQuestions:
    """Read one LFRQA annotation file: (qid, question, reference answer) per record.

    A record is rejected, naming its row and field, when ``qid`` is missing, empty or neither an
    integer nor a string, when it repeats an earlier record's qid, or when ``question`` or ``answer``
    is missing, not a string, empty, without letters or too long.

    Args:
        path: an ``annotations_<domain>_with_citation.jsonl`` file (or a JSON list, or Parquet).
        domain: the questions' domain; by default taken from the file name (else "").
        max_answer_chars: longer reference answers are rejected.
        max_question_chars: longer questions are rejected.

    Returns:
        An :class:`ArenaQuestions`.

    Raises:
        InputError: the file is missing, a directory, not UTF-8 text, unparseable, or holds no records.
        ConfigError: a length limit is not a positive integer.
    """
    check_max_chars(max_answer_chars, max_question_chars)
    p = check_path(path)
    records = load_records(p, kind_of(p))
    src = str(p)
    if domain is None:
        m = _DOMAIN_RE.match(p.stem)
        domain = m.group(1) if m else ""
    questions: list[ArenaQuestion] = []
    rejects: list[Reject] = []
    first: dict[str, int] = {}
    for row, rec in enumerate(records):
        qid = None
        try:
            rec = _record(rec)
            qid = _qid(rec, "qid")
            if qid in first:
                raise RowError("qid", f"qid {qid!r} repeats row {first[qid]}")
            question = text_field(rec, "question", max_question_chars, option="max_question_chars")
            reference = text_field(rec, "answer", max_answer_chars)
        except RowError as e:
            rejects.append(_row_reject(src, row, e, qid))
            continue
        first[qid] = row
        questions.append(ArenaQuestion(qid=qid, question=question, reference=reference, domain=domain, row=row,
                                       source_file=src))
    result = ArenaQuestions(questions=questions, rejects=rejects, rows_in=len(records), source_file=src)
    logger.info("read %d LFRQA questions from %s (%d rows, %d rejected)", len(questions), src, len(records),
                len(rejects))
    return result


def _answer_mapping(mapping: Mapping[str, str] | str | None) -> dict[str, str]:
    if mapping is None:
        return {"qid": "qid", "answer": "answer"}
    if isinstance(mapping, str):
        mapping = mapping_entries(mapping)
    mapping = check_mapping(mapping, ANSWER_FIELDS, required=())
    out = {"qid": "qid", "answer": "answer"}
    out.update(mapping)
    return out


def read_arena_answers(path: str | Path, system: str, mapping: Mapping[str, str] | str | None = None, *,
                       label_values: Mapping[str, str] | None = None, fmt: str | None = None,
                       max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS) -> ArenaAnswers:
    """Read one system's answers, keyed by qid, through a column mapping.

    Args:
        path: a JSONL / JSON-list / Parquet / CSV file (its extension picks the parser unless ``fmt``).
        system: the system's name (not :data:`REFERENCE_SYSTEM`, which the reference answers use).
        mapping: our field -> the file's column: ``qid`` and ``answer`` (default: columns of those
            names) and optionally ``label``, a human judgement of the answer against the reference. A
            string ``"qid=id,answer=response,label=human"`` is parsed.
        label_values: the file's judgement value (matched case-insensitively) -> ``a`` (the system's
            answer is better), ``b`` (the reference is) or ``tie``; default :data:`DEFAULT_OUTCOME_VALUES`.
        fmt: ``jsonl``, ``parquet`` or ``csv`` to override the extension.
        max_answer_chars: longer answers are rejected.

    Returns:
        An :class:`ArenaAnswers`. A record is rejected, naming its row and field, when its qid is
        missing, empty or not an integer or string, repeats an earlier record's qid, when its answer
        is missing, not a string, empty, without letters or too long, or when its judgement is not
        one of ``label_values`` (a null or blank judgement is no judgement).

    Raises:
        ConfigError: the system name, mapping, ``label_values`` or ``fmt`` is invalid.
        InputError: the file cannot be read at all.
    """
    if not isinstance(system, str) or not system.strip() or system != system.strip():
        raise ConfigError(f"'system' must be a non-empty name without surrounding spaces, got {system!r}")
    if system == REFERENCE_SYSTEM:
        raise ConfigError(f"'system' must not be {REFERENCE_SYSTEM!r}: the reference answers use that name")
    check_max_chars(max_answer_chars)
    cols = _answer_mapping(mapping)
    if label_values is not None and "label" not in cols:
        raise ConfigError("'label_values' needs a label column in the mapping (label=COLUMN)")
    values = label_table(label_values, default=DEFAULT_OUTCOME_VALUES)
    if fmt is not None and fmt not in ("jsonl", "parquet", "csv"):
        raise ConfigError(f"'fmt' must be 'jsonl', 'parquet' or 'csv', got {fmt!r}")
    p = check_path(path)
    records = load_records(p, kind_of(p, fmt))
    src = str(p)

    def named(f: str) -> str:
        return f"{f!r}" if cols[f] == f else f"{f!r} (column {cols[f]!r})"

    answers: list[SystemAnswer] = []
    rejects: list[Reject] = []
    first: dict[str, int] = {}
    for row, rec in enumerate(records):
        qid = None
        try:
            rec = _record(rec)
            qid = _qid(rec, cols["qid"], named("qid"))
            if qid in first:
                raise RowError(cols["qid"], f"qid {qid!r} repeats row {first[qid]}")
            answer = text_field(rec, cols["answer"], max_answer_chars, label=named("answer"))
            human = None
            raw = rec.get(cols["label"]) if "label" in cols else None
            if raw is not None and not (isinstance(raw, str) and not raw.strip()):
                human = values.get(label_key(raw))
                if human is None:
                    raise RowError(cols["label"], f"field {named('label')} has value {raw!r}; expected one of "
                                                   f"{', '.join(map(repr, values))} (or null for no judgement)")
        except RowError as e:
            rejects.append(_row_reject(src, row, e, None if qid is None else f"{system}:{qid}"))
            continue
        first[qid] = row
        answers.append(SystemAnswer(qid=qid, answer=answer, human=human, row=row))
    logger.info("read %d answers of %s from %s (%d rows, %d rejected)", len(answers), system, src, len(records),
                len(rejects))
    return ArenaAnswers(system=system, answers=answers, rejects=rejects, rows_in=len(records), source_file=src)


def join_arena(questions: ArenaQuestions | Sequence[ArenaQuestions],
               answers: ArenaAnswers | Sequence[ArenaAnswers]) -> ArenaJoin:
    """Pair every system's answers with the reference answers of the same questions.

    Args:
        questions: one or more read annotation files. A qid that an earlier file already had is
            rejected (the first file keeps it).
        answers: one read answers file per system; system names must differ.

    Returns:
        An :class:`ArenaJoin`: a pair per (system, qid) present on both sides, a reject per answer
        whose qid is not annotated, and a reject per annotated question a system did not answer.

    Raises:
        ConfigError: two answers files carry the same system name.
    """
    q_files = [questions] if isinstance(questions, ArenaQuestions) else list(questions)
    a_files = [answers] if isinstance(answers, ArenaAnswers) else list(answers)
    names = [a.system for a in a_files]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"system name(s) {', '.join(map(repr, dup))} given for more than one answers file")
    rejects: list[Reject] = []
    by_qid: dict[str, ArenaQuestion] = {}
    for qf in q_files:
        for q in qf.questions:
            if q.qid in by_qid:
                first = by_qid[q.qid]
                rejects.append(Reject(row=q.row, field="qid", source_file=q.source_file, pair_id=q.qid,
                                      reason=f"row {q.row}: qid {q.qid!r} is already in {first.source_file} "
                                             f"(row {first.row})"))
                continue
            by_qid[q.qid] = q
    pairs: list[ArenaPair] = []
    for af in a_files:
        answered: set[str] = set()
        for a in af.answers:
            q = by_qid.get(a.qid)
            if q is None:
                rejects.append(Reject(row=a.row, field="qid", source_file=af.source_file,
                                      pair_id=f"{af.system}:{a.qid}",
                                      reason=f"row {a.row}: qid {a.qid!r} is not in the annotations"))
                continue
            answered.add(a.qid)
            pairs.append(ArenaPair(pair_id=f"{af.system}:{a.qid}", qid=a.qid, question=q.question, system=af.system,
                                   answer=a.answer, reference=q.reference, domain=q.domain, human=a.human))
        missing = [qid for qid in by_qid if qid not in answered]
        for qid in missing:
            rejects.append(Reject(row=None, field="qid", source_file=af.source_file, pair_id=f"{af.system}:{qid}",
                                  reason=f"system {af.system!r} has no answer for qid {qid!r}"))
        if missing:
            logger.warning("system %s has no answer for %d of %d annotated questions", af.system, len(missing),
                           len(by_qid))
    return ArenaJoin(pairs=pairs, rejects=rejects, n_questions=len(by_qid))


def to_pair_records(pairs: Sequence[ArenaPair]) -> list[PairRecord]:
    """The pairs as :class:`~rubric.io.records.PairRecord`: the system's answer as ``a``, the reference as ``b``.

    ``label`` is the human judgement (None without one), ``source`` the system, ``reference`` the
    reference answer, and ``answer_type_a``/``answer_type_b`` the system and :data:`REFERENCE_SYSTEM`,
    so that a judge job can run the arena judge on them in both orders.
    """
    return [PairRecord(pair_id=p.pair_id, question=p.question, answer_a=p.answer, answer_b=p.reference,
                       label=p.human, source=p.system, domain=p.domain, reference=p.reference,
                       answer_type_a=p.system, answer_type_b=REFERENCE_SYSTEM)  # type: ignore[arg-type]
            for p in pairs]
