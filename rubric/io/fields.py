"""The field-check toolkit every reader uses, the protocols' readers included.

A reader turns one bad row into a :class:`~rubric.io.records.Reject` by raising :class:`RowError`
(field, reason) from these checks: text fields (:func:`text_field`: present, a string, valid Unicode
(no lone surrogate: invalid UTF-8 bytes, or a JSON escape such as ``"\\ud800"``), within the length
limits), labels (:func:`label_table`, :func:`label_key`), splits, metadata, expert
flags, documents and integers. :class:`ReadResult` is what every reader returns.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rubric.config import DEFAULT_MAX_ANSWER_CHARS, DEFAULT_MAX_QUESTION_CHARS, check_range
from rubric.errors import ConfigError
from rubric.io.records import LABELS, PairRecord, Reject

__all__ = ["ReadResult", "RowError", "DEFAULT_MAX_ANSWER_CHARS", "DEFAULT_MAX_QUESTION_CHARS", "DEFAULT_LABEL_VALUES", "SPLIT_VALUES", "text_field", "check_text", "check_max_chars", "label_table", "label_key", "read_item"]

logger = logging.getLogger(__name__)



#: Label spellings ``read_table`` accepts when no ``label_values`` is given (matched case-insensitively).
#: "1"/"2" mean answer 1 / answer 2 here, not lfqa_eval's -1/0/1 (use ``read_lfqa_eval`` for that).
DEFAULT_LABEL_VALUES: Mapping[str, str] = {
    "a": "a", "answer_a": "a", "answer_1": "a", "1": "a",
    "b": "b", "answer_b": "b", "answer_2": "b", "2": "b",
    "tie": "tie", "0": "tie", "draw": "tie",
}

#: Split names an input may publish (matched case-insensitively) -> our split name.
SPLIT_VALUES: Mapping[str, str] = {
    "train": "train", "dev": "dev", "test": "test", "validation": "dev", "valid": "dev", "val": "dev",
}


_TRUE = frozenset({"true", "yes", "1", "t", "y"})
_FALSE = frozenset({"false", "no", "0", "f", "n"})


@dataclass(frozen=True)
class ReadResult:
    """What a reader returns.

    Attributes:
        pairs: the valid pairs, in input order; those without a human judgement have ``label`` None.
        rejects: one entry per input row (in the unit of ``rows_in``) that could not be used.
        rows_in: input rows read: records for the pair formats, graded answers for ``read_graded``.
            Blank JSONL lines are not rows.
        source_file: the path that was read, as given.
        rows_ok: input rows (same unit) that were accepted; ``rows_in == rows_ok + len(rejects)``.
            Left as None it is derived from the other fields.
    """

    pairs: list[PairRecord]
    rejects: list[Reject]
    rows_in: int
    source_file: str
    rows_ok: int | None = None

    def __post_init__(self) -> None:
        if self.rows_ok is None:
            object.__setattr__(self, "rows_ok", self.rows_in - len(self.rejects))
        if self.rows_ok + len(self.rejects) != self.rows_in or self.rows_ok < 0:
            raise ValueError(
                f"row accounting is broken for {self.source_file}: rows_in={self.rows_in}, "
                f"rows_ok={self.rows_ok}, rejects={len(self.rejects)}"
            )

    @property
    def n_unlabeled(self) -> int:
        """Pairs read without a human judgement (``label`` None); they are part of ``rows_ok``."""
        return sum(1 for p in self.pairs if p.label is None)


class RowError(Exception):
    """One row (or answer) is unusable: a reader raises it from a field check and turns it into a
    :class:`~rubric.io.records.Reject` ("row N: " + ``reason``, naming ``field``)."""

    def __init__(self, field: str | None, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Field validation
# ---------------------------------------------------------------------------------------------


# Lone surrogates: no Unicode text holds one, and nothing downstream can encode it (SQLite, Arrow,
# JSON files all refuse). U+DC80-U+DCFF are the bytes that surrogateescape decodes invalid UTF-8 to;
# the rest come from JSON escapes such as "\ud800" (half of an emoji pair, common in scraped data).
# A regex scans a long answer in C rather than one Python step per character.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_bad_bytes(s: str) -> bool:
    return _SURROGATE.search(s) is not None


def _bad_text(value: str, shown: str) -> str | None:
    """Why ``value`` is not valid Unicode text (naming the first bad code point), or None."""
    m = _SURROGATE.search(value)
    if m is None:
        return None
    ch = m.group()
    if "\udc80" <= ch <= "\udcff":
        return f"field {shown} contains bytes that are not valid UTF-8"
    return (f"field {shown} holds U+{ord(ch):04X} at character {m.start() + 1}, a lone surrogate (half of a "
            "UTF-16 pair): not valid Unicode text")


def check_text(value: str, name: str, label: str | None = None) -> str:
    """``value``, checked to be valid Unicode text (no lone surrogate), for a field that is not read with
    :func:`text_field` (an id, a name).

    Raises:
        RowError: it holds a lone surrogate (the code point and its place named).
    """
    why = _bad_text(value, label or repr(name))
    if why:
        raise RowError(name, why)
    return value


_check_utf8 = check_text


def text_field(
    rec: Mapping[str, Any],
    name: str,
    max_chars: int | None = None,
    label: str | None = None,
    option: str = "max_answer_chars",
) -> str:
    """A required string field with at least one letter.

    Args:
        rec: the record.
        name: the field (column) to read.
        max_chars: longer values are rejected; None for no limit.
        label: how the field is named in the message (default its repr).
        option: the option that raises ``max_chars``, named in the message.

    Returns:
        The value, unchanged.

    Raises:
        RowError: the field is missing, not a string, holds invalid bytes, is empty, has no
            letters, or is too long.
    """
    shown = label or repr(name)
    if name not in rec:
        raise RowError(name, f"missing field {shown}")
    if rec[name] is None:
        raise RowError(name, f"field {shown} is null; expected a string")
    value = rec[name]
    if not isinstance(value, str):
        raise RowError(name, f"field {shown} must be a string, got {type(value).__name__}")
    why = _bad_text(value, shown)
    if why:
        raise RowError(name, why)
    if not value.strip():
        raise RowError(name, f"field {shown} is empty")
    # "...", "42", "\u200b\u200b": nothing for a rubric to read, and such an answer otherwise
    # gets scores (and wins pairs) on its form alone.
    if not any(ch.isalpha() for ch in value):
        raise RowError(name, f"field {shown} has no letters (only punctuation, digits, symbols or "
                              "invisible characters)")
    if max_chars is not None and len(value) > max_chars:
        raise RowError(
            name,
            f"field {shown} is {len(value):,} characters long, over the limit of {max_chars:,} "
            f"(raise it with --{option.replace('_', '-')} / {option})",
        )
    return value


def _reference(rec: Mapping[str, Any], name: str | None) -> str | None:
    """An optional reference answer: None when absent, null or blank; a string otherwise."""
    if name is None or rec.get(name) is None:
        return None
    value = rec[name]
    if not isinstance(value, str):
        raise RowError(name, f"field {name!r} must be a string (a reference answer), got {type(value).__name__}")
    _check_utf8(value, name)
    return value if value.strip() else None


def _split(rec: Mapping[str, Any], name: str | None, label: str | None = None) -> str | None:
    """The split an input publishes for a record: "train", "dev", "test" or None (none given)."""
    if name is None or rec.get(name) is None:
        return None
    value = rec[name]
    if isinstance(value, str):
        if not value.strip():
            return None
        split = SPLIT_VALUES.get(value.strip().lower())
        if split is not None:
            return split
    raise RowError(name, f"field {label or repr(name)} has value {value!r}; expected train, dev or test "
                          "(validation, valid and val also mean dev)")


def _meta(rec: Mapping[str, Any], name: str | None, default: str = "") -> str:
    """An optional metadata string (source, domain, id); numbers are stringified."""
    if name is None or rec.get(name) is None:
        return default
    value = rec[name]
    if isinstance(value, (list, dict)):
        raise RowError(name, f"field {name!r} must be a string, got {type(value).__name__}")
    return _check_utf8(str(value), name)


def _expert(rec: Mapping[str, Any], *names: str) -> bool | None:
    for name in names:
        if name not in rec:
            continue
        value = rec[name]
        if value is None or value == "":
            return None
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise RowError(name, f"field {name!r} must be a boolean, got {value!r}")
    return None


def _docs(rec: Mapping[str, Any], name: str | None) -> tuple[str, ...]:
    """Evidence documents: a string, or a list of strings / dicts with a 'text' or 'content' field."""
    if name is None or rec.get(name) is None:
        return ()
    value = rec[name]
    items = [value] if isinstance(value, (str, dict)) else value
    if not isinstance(items, (list, tuple)):
        raise RowError(name, f"field {name!r} must be a string or a list of strings, got {type(value).__name__}")
    out: list[str] = []
    for item in items:
        if isinstance(item, dict):
            item = item.get("text", item.get("content", str(item)))
        if item is None:
            continue
        if not isinstance(item, str):
            item = str(item)
        _check_utf8(item, name)
        if item.strip():
            out.append(item)
    return tuple(out)


def check_max_chars(max_answer_chars: int, max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS) -> None:
    """Raise ConfigError unless both length limits are integers >= 1."""
    for name, value in (("max_answer_chars", max_answer_chars), ("max_question_chars", max_question_chars)):
        check_range(name, value, low=1, integer=True)


def _as_int(value: Any) -> int | None:
    """An integer label from an int, an integral float or a numeric string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None



def label_table(label_values: Mapping[str, str] | None,
                default: Mapping[str, str] = DEFAULT_LABEL_VALUES) -> dict[str, str]:
    """Label spelling (matched as :func:`label_key` makes it) -> ``"a"``/``"b"``/``"tie"``.

    Args:
        label_values: the spellings a file uses (``--labels``); None takes ``default``.
        default: the spellings when none are given (the protocols' readers pass their own).

    Raises:
        ConfigError: a value is not a label, or ``label_values`` is empty.
    """
    if label_values is None:
        return dict(default)
    table: dict[str, str] = {}
    for key, value in label_values.items():
        if value not in LABELS:
            raise ConfigError(f"label_values[{key!r}] must be one of {', '.join(LABELS)}, got {value!r}")
        table[str(key).strip().lower()] = value
    if not table:
        raise ConfigError("'label_values' must not be empty")
    return table


def label_key(value: Any) -> str:
    """How a label cell is matched against a label table: ``2.0`` as ``"2"``, trimmed, lower case."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip().lower()




def read_item(rec: Any, answer_fields: Sequence[str], *, docs_fields: Sequence[str] = (),
              max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
              max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS) -> dict[str, Any] | Reject:
    """One record that is not read from a file (a service request's item), checked field by field
    exactly as the readers check a row: ``question``, each of ``answer_fields`` (missing, not a
    string, invalid bytes, empty, no letters, too long), an optional ``reference`` and the
    optional evidence ``docs_fields``.

    Returns:
        ``{"question": ..., <answer field>: ..., "reference": str | None, <docs field>: tuple}``, or a
        :class:`~rubric.io.records.Reject` (``row`` None) naming the first bad field and why.
    """
    check_max_chars(max_answer_chars, max_question_chars)
    try:
        if not isinstance(rec, Mapping):
            raise RowError(None, f"item is a JSON {type(rec).__name__}, expected an object")
        out: dict[str, Any] = {"question": text_field(rec, "question", max_question_chars,
                                                      option="max_question_chars")}
        for name in answer_fields:
            out[name] = text_field(rec, name, max_answer_chars)
        out["reference"] = _reference(rec, "reference")
        for name in docs_fields:
            out[name] = _docs(rec, name)
    except RowError as e:
        return Reject(row=None, field=e.field, reason=e.reason)
    return out
