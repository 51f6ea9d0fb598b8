"""The pair formats: one record -> one pair (LFQA-HP-1M, lfqa_eval, and a table with a column mapping)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rubric.errors import ConfigError
from rubric.io.records import PairRecord, Reject
from rubric.io.fields import DEFAULT_MAX_ANSWER_CHARS, DEFAULT_MAX_QUESTION_CHARS, ReadResult, RowError, _as_int, _docs, _expert, _meta, _reference, _split, check_max_chars, label_key, label_table, text_field
from rubric.io.files import RepeatedKeys, check_path, kind_of, load_records
from rubric.io.mapping import check_mapped_columns, check_mapping, parse_mapping

__all__ = ["TABLE_OPTIONS", "read_lfqa_hp", "read_lfqa_eval", "read_table"]

logger = logging.getLogger(__name__)

#: The options every table format (jsonl, parquet, csv with a column mapping) accepts.
TABLE_OPTIONS: tuple[str, ...] = ("mapping", "label_values", "max_answer_chars", "max_question_chars")


_HP_LABELS: Mapping[str, str] = {"answer_1": "a", "answer_2": "b", "tie": "tie"}
_EVAL_LABELS: Mapping[int, str] = {-1: "a", 0: "tie", 1: "b"}
#: lfqa_eval's overall judgement; every other ``<aspect>_preference`` field is a per-aspect one.
_EVAL_OVERALL = "overall_preference"
_PREFERENCE_SUFFIX = "_preference"

# ---------------------------------------------------------------------------------------------
# Pair formats: one record -> one pair
# ---------------------------------------------------------------------------------------------


def _refuse_self_reference(pair: PairRecord) -> None:
    """A reference answer that is one of the compared answers judges that answer against itself: the row is refused.

    Raises:
        RowError: the reference equals answer_a or answer_b (whitespace-normalised).
    """
    if pair.reference is None:
        return
    ref = " ".join(pair.reference.split())
    for side, answer in (("answer_a", pair.answer_a), ("answer_b", pair.answer_b)):
        if ref == " ".join(answer.split()):
            raise RowError("reference", f"the reference answer equals {side}: a compared answer cannot be its own "
                                        "reference (map another column to reference, or none)")


def _read_pairs(
    p: Path,
    records: list[Any],
    build: Callable[[Mapping[str, Any], int], PairRecord],
    id_fields: tuple[str, ...] = ("pair_id", "id"),
    row_offset: int = 0,
) -> ReadResult:
    """Run ``build`` over records, turning failures and duplicate ids into rejects.

    ``row_offset`` is the file row of ``records[0]`` (a block of a larger file): rows, default pair ids
    and reject messages are the file's, as if it had been read whole.
    """
    src = str(p)
    pairs: list[PairRecord] = []
    rejects: list[Reject] = []
    first_row: dict[str, int] = {}
    for row, rec in enumerate(records, start=row_offset):
        try:
            if isinstance(rec, RowError):
                raise rec
            if not isinstance(rec, Mapping):
                raise RowError(None, f"record is a JSON {type(rec).__name__}, expected an object")
            if isinstance(rec, RepeatedKeys):
                # json keeps the last value silently; which one the writer meant is unknowable
                key = rec.repeated[0]
                raise RowError(key, f"field {key!r} appears more than once in the record")
            pair = build(rec, row)
            _refuse_self_reference(pair)
            # Only accepted rows claim an id: a good row is not lost to a broken earlier one.
            if pair.pair_id in first_row:
                raise RowError(
                    "pair_id", f"duplicate pair_id {pair.pair_id!r} (first seen at row {first_row[pair.pair_id]})"
                )
        except RowError as e:
            pid = next((rec[f] for f in id_fields if isinstance(rec, Mapping) and rec.get(f) is not None), None)
            rejects.append(Reject(
                row=row, field=e.field, reason=f"row {row}: {e.reason}",
                pair_id=None if pid is None else str(pid), source_file=src,
            ))
            continue
        first_row[pair.pair_id] = row
        pairs.append(pair)
    result = ReadResult(pairs=pairs, rejects=rejects, rows_in=len(records), source_file=src, rows_ok=len(pairs))
    _log_result(result)
    return result


def _log_result(result: ReadResult) -> None:
    logger.info("read %d pairs from %s (%d rows in, %d rejected, %d without a label)",
                len(result.pairs), result.source_file, result.rows_in, len(result.rejects), result.n_unlabeled)
    if result.rejects:
        logger.warning("%d rows of %s rejected; first: %s",
                       len(result.rejects), result.source_file, result.rejects[0].reason)


def _default_pair_id(p: Path, row: int) -> str:
    # The file's stem is part of a derived id so that two inputs of one job without ids do not
    # collide (the job rejects a pair id that an earlier input already used).
    return f"{p.stem}:row{row}"


def _check_id_number(value: Any, name: str) -> None:
    """An id that is a float must be finite (JSON's NaN would otherwise become the id "nan")."""
    if isinstance(value, float) and not math.isfinite(value):
        raise RowError(name, f"field {name!r} is {value!r}, which is not an id; use a string or an integer")


def _pair_id(rec: Mapping[str, Any], row: int, p: Path, *names: str) -> str:
    for name in names:
        if rec.get(name) is not None:
            _check_id_number(rec[name], name)
            pid = _meta(rec, name)
            if not pid.strip():
                raise RowError(name, f"field {name!r} is empty")
            return pid
    return _default_pair_id(p, row)


def read_lfqa_hp(
    path: str | Path,
    *,
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS,
) -> ReadResult:
    """Read LFQA-HP-1M records (JSONL, a JSON list, or Parquet).

    Fields: ``question_text``, ``answer_1``, ``answer_2``, ``human_judgment`` ("answer_1", "answer_2"
    or "tie" -> label "a", "b", "tie"; absent or null -> an unlabeled pair, label None), optional
    ``human_expert``, ``domain``, ``source``, ``id`` or
    ``pair_id`` (default ``f"{file stem}:row{index}"``), ``doc_1``/``doc_2`` (a string or a list of strings),
    ``split`` (train/dev/test; validation/valid/val mean dev), ``reference`` (a reference answer).

    Args:
        path: a ``.jsonl``, ``.json`` or ``.parquet`` file.
        max_answer_chars: longer answers are rejected.
        max_question_chars: longer questions are rejected.

    Returns:
        The pairs and rejects; ``rows_in`` counts records (non-blank lines for JSONL).

    Raises:
        InputError: the file is missing, a directory, not UTF-8 text, corrupt Parquet, JSON that
            does not parse, or holds no records.
        ConfigError: ``max_answer_chars`` or ``max_question_chars`` is not a positive integer.
    """
    check_max_chars(max_answer_chars, max_question_chars)
    p = check_path(path)
    records = load_records(p, "parquet" if p.suffix.lower() == ".parquet" else "jsonl")
    return _read_pairs(p, records, _hp_builder(p, max_answer_chars, max_question_chars))


def _hp_builder(p: Path, max_answer_chars: int, max_question_chars: int) -> Callable[[Mapping[str, Any], int], PairRecord]:
    """One LFQA-HP-1M record -> a pair (see :func:`read_lfqa_hp`); ``p``'s stem makes default pair ids."""

    def build(rec: Mapping[str, Any], row: int) -> PairRecord:
        question = text_field(rec, "question_text", max_question_chars, option="max_question_chars")
        answer_a = text_field(rec, "answer_1", max_answer_chars)
        answer_b = text_field(rec, "answer_2", max_answer_chars)
        judgment = rec.get("human_judgment")
        label = None
        if judgment is not None:  # absent or null: a pair nobody judged, kept unlabeled
            label = _HP_LABELS.get(judgment) if isinstance(judgment, str) else None
            if label is None:
                raise RowError("human_judgment", f"field 'human_judgment' has value {judgment!r}; "
                                                  "expected 'answer_1', 'answer_2' or 'tie' (or null for no judgement)")
        return PairRecord(
            pair_id=_pair_id(rec, row, p, "pair_id", "id"), question=question, answer_a=answer_a,
            answer_b=answer_b, label=label, source=_meta(rec, "source"), domain=_meta(rec, "domain"),
            expert=_expert(rec, "human_expert"), docs_a=_docs(rec, "doc_1"), docs_b=_docs(rec, "doc_2"),
            row=row, split=_split(rec, "split"), reference=_reference(rec, "reference"),
        )

    return build


def read_lfqa_eval(
    path: str | Path,
    *,
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS,
) -> ReadResult:
    """Read the lfqa_eval format of Xu et al. (JSONL or a JSON list).

    Fields: ``question``, ``answer_a``, ``answer_b``, ``overall_preference`` (-1: a wins, 0: tie,
    1: b wins; absent or null -> an unlabeled pair, label None), optional ``doc_a``/``doc_b`` (a
    string, a list of strings, or a list of dicts whose ``text``/``content`` is taken), ``source``
    (default "lfqa_eval"), ``expert``/``human_expert``, ``domain``, ``pair_id``/``id``, ``split``
    (train/dev/test; validation/valid/val mean dev), ``answer_a_type``/``answer_b_type`` (who wrote
    each answer: a model name or "human"; into ``answer_type_a``/``answer_type_b``).

    Every other ``<aspect>_preference`` field (lfqa_eval has ``coherence_preference`` and
    ``factuality_preference``; any other name is read the same way) is a per-aspect judgement on the
    same -1/0/1 scale, kept in ``PairRecord.aspects`` as ``(aspect, "a"/"b"/"tie")`` sorted by aspect;
    a null one is left out. An aspect value that is present but not -1, 0 or 1 rejects the row,
    naming the field.

    Args:
        path: a ``.jsonl`` or ``.json`` file.
        max_answer_chars: longer answers are rejected.
        max_question_chars: longer questions are rejected.

    Returns:
        The pairs and rejects; ``rows_in`` counts records.

    Raises:
        InputError: the file is missing, a directory, not UTF-8 text, JSON that does not parse,
            or holds no records.
        ConfigError: ``max_answer_chars`` or ``max_question_chars`` is not a positive integer.
    """
    check_max_chars(max_answer_chars, max_question_chars)
    p = check_path(path)
    records = load_records(p, "jsonl")
    return _read_pairs(p, records, _eval_builder(p, max_answer_chars, max_question_chars))


def _eval_builder(p: Path, max_answer_chars: int, max_question_chars: int) -> Callable[[Mapping[str, Any], int], PairRecord]:
    """One lfqa_eval record -> a pair (see :func:`read_lfqa_eval`)."""

    def build(rec: Mapping[str, Any], row: int) -> PairRecord:
        question = text_field(rec, "question", max_question_chars, option="max_question_chars")
        answer_a = text_field(rec, "answer_a", max_answer_chars)
        answer_b = text_field(rec, "answer_b", max_answer_chars)
        label = _eval_preference(rec, _EVAL_OVERALL)
        aspects = []
        for name in sorted(rec):
            if name == _EVAL_OVERALL or not name.endswith(_PREFERENCE_SUFFIX) or len(name) == len(_PREFERENCE_SUFFIX):
                continue
            value = _eval_preference(rec, name)
            if value is not None:
                aspects.append((name[: -len(_PREFERENCE_SUFFIX)], value))
        return PairRecord(
            pair_id=_pair_id(rec, row, p, "pair_id", "id"), question=question, answer_a=answer_a,
            answer_b=answer_b, label=label, source=_meta(rec, "source", "lfqa_eval"),  # type: ignore[arg-type]
            domain=_meta(rec, "domain"), expert=_expert(rec, "expert", "human_expert"),
            docs_a=_docs(rec, "doc_a"), docs_b=_docs(rec, "doc_b"), row=row, split=_split(rec, "split"),
            reference=_reference(rec, "reference"),
            aspects=tuple(aspects), answer_type_a=_meta(rec, "answer_a_type"),
            answer_type_b=_meta(rec, "answer_b_type"),
        )

    return build


def _eval_preference(rec: Mapping[str, Any], name: str) -> str | None:
    """An lfqa_eval -1/0/1 preference field as "a"/"tie"/"b"; None when absent or null (no judgement).

    Raises:
        RowError: the field is present with any other value (``True`` is not 1 here).
    """
    raw = rec.get(name)
    if raw is None:
        return None
    label = _EVAL_LABELS.get(_as_int(raw))  # type: ignore[arg-type]
    if label is None:
        raise RowError(name, f"field {name!r} has value {raw!r}; expected -1, 0 or 1 (or null for no judgement)")
    return label



def read_table(
    path: str | Path,
    mapping: Mapping[str, str] | str,
    label_values: Mapping[str, str] | None = None,
    *,
    fmt: str | None = None,
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS,
) -> ReadResult:
    """Read a generic JSONL / JSON-list / Parquet / CSV table through a column mapping.

    Args:
        path: the file; its extension (.jsonl, .json, .parquet, .csv) picks the parser unless ``fmt``.
        mapping: our field name -> the file's column name. Required: question, answer_a, answer_b;
            optional: label, pair_id, source, domain, expert, docs_a, docs_b, split (the split the
            file assigns: train/dev/test, validation/valid/val mean dev). A string is parsed with
            :func:`parse_mapping`. Without a label column every pair is unlabeled (label None);
            with one, a null or blank cell leaves that pair unlabeled.
        label_values: file label value (as a string, matched case-insensitively) -> "a"/"b"/"tie".
            Default :data:`DEFAULT_LABEL_VALUES`; only with a label column.
        fmt: "jsonl", "parquet" or "csv" to override the extension.
        max_answer_chars: longer answers are rejected.
        max_question_chars: longer questions are rejected.

    Returns:
        The pairs and rejects; ``rows_in`` counts records.

    Raises:
        ConfigError: the mapping, ``label_values`` or a length limit is invalid, or ``label_values``
            is given without a label column.
        InputError: the file is missing, a directory, not UTF-8 text, unparseable, of an unknown
            extension, or holds no records.
    """
    check_max_chars(max_answer_chars, max_question_chars)
    cols = parse_mapping(mapping) if isinstance(mapping, str) else check_mapping(mapping)
    if label_values is not None and "label" not in cols:
        raise ConfigError("'label_values' (--labels) needs a label column in the mapping (label=COLUMN)")
    labels = label_table(label_values)
    if fmt is not None and fmt not in ("jsonl", "parquet", "csv"):
        raise ConfigError(f"'fmt' must be 'jsonl', 'parquet' or 'csv', got {fmt!r}")
    p = check_path(path)
    records = load_records(p, kind_of(p, fmt))
    check_mapped_columns(p, records, cols)
    build, id_fields = _table_builder(p, cols, labels, max_answer_chars, max_question_chars)
    return _read_pairs(p, records, build, id_fields)


def _table_builder(p: Path, cols: Mapping[str, str], labels: Mapping[str, str], max_answer_chars: int,
                   max_question_chars: int) -> tuple[Callable[[Mapping[str, Any], int], PairRecord], tuple[str, ...]]:
    """One mapped table record -> a pair (see :func:`read_table`), and the id fields rejects name."""
    expected = ", ".join(repr(k) for k in labels)

    def build(rec: Mapping[str, Any], row: int) -> PairRecord:
        def named(f: str) -> str:
            return f"{f!r}" if cols[f] == f else f"{f!r} (column {cols[f]!r})"

        question = text_field(rec, cols["question"], max_question_chars, label=named("question"),
                         option="max_question_chars")
        answer_a = text_field(rec, cols["answer_a"], max_answer_chars, label=named("answer_a"))
        answer_b = text_field(rec, cols["answer_b"], max_answer_chars, label=named("answer_b"))
        label = None
        raw = rec.get(cols["label"]) if "label" in cols else None
        # null, or an empty cell (CSV cannot write a null): a pair nobody judged, kept unlabeled
        if raw is not None and not (isinstance(raw, str) and not raw.strip()):
            label = labels.get(label_key(raw))
            if label is None:
                raise RowError(cols["label"], f"field {named('label')} has value {raw!r}; expected one of "
                                               f"{expected} (or an empty cell for no judgement)")
        pid_col = cols.get("pair_id")
        return PairRecord(
            pair_id=_pair_id(rec, row, p, pid_col) if pid_col else _default_pair_id(p, row),
            question=question, answer_a=answer_a, answer_b=answer_b, label=label,  # type: ignore[arg-type]
            source=_meta(rec, cols.get("source"), p.stem), domain=_meta(rec, cols.get("domain")),
            expert=_expert(rec, cols["expert"]) if "expert" in cols else None,
            docs_a=_docs(rec, cols.get("docs_a")), docs_b=_docs(rec, cols.get("docs_b")), row=row,
            split=_split(rec, cols.get("split"), named("split") if "split" in cols else None),
            reference=_reference(rec, cols.get("reference")),
        )
    return build, ((cols["pair_id"],) if "pair_id" in cols else ())
