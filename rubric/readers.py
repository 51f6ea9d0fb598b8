"""Dataset readers: every input format becomes a list of :class:`~rubric.records.PairRecord`.

A reader never dies on a bad row: the row becomes a :class:`~rubric.records.Reject` whose reason
names the row and the field ("row 7: field 'answer_2' is empty"). Only a file that cannot be read at
all (missing, a directory, not UTF-8 text, corrupt Parquet, JSON that does not parse, a graded file
of the wrong shape, no records at all) raises :class:`~rubric.errors.InputError`.

Text files must be UTF-8 (a UTF-8 byte-order mark is accepted). A file that is UTF-16 or UTF-32
(byte-order mark, or the NUL bytes such text has) or binary raises one InputError that says how to
convert it, instead of one "not valid JSON" reject per line. Within a UTF-8 file, stray invalid
bytes survive decoding as lone surrogates (``errors="surrogateescape"``, U+DC80..U+DCFF); a row
carrying one in any text field is rejected with the field named, and the rest of the file is read.

Records are split only where the format splits them: JSON Lines at line feeds (a carriage
return before one is dropped), CSV where the csv dialect ends a record. ``str.splitlines`` would
also split at U+2028/U+2029/U+0085 and other characters that JSON writes raw inside strings,
cutting a valid record in two.

A file that holds no records at all raises InputError: an empty input is a mistake upstream,
not a job that succeeded.

Every :class:`ReadResult` satisfies ``rows_in == rows_ok + len(rejects)``. For the pair formats the
unit is an input record and ``rows_ok == len(pairs)``; for graded lists the unit is one graded
answer and an answer that ends up in no pair is a reject too (see :func:`read_graded`).

A pair without a human judgement (the label field absent or null; in the table formats also an
empty cell, the only way CSV can leave one out) is kept as ``PairRecord(label=None)``: it can be
scored and predicted, and ``fit``/``evaluate`` leave it out. A label that is present but not a
valid value is still a reject. Graded lists always have labels.
"""

from __future__ import annotations

import csv
import functools
import inspect
import io
import itertools
import json
import logging
import math
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rubric.config import ScoringConfig
from rubric.errors import ConfigError, InputError
from rubric.records import LABELS, PairRecord, Reject, content_id, question_id

__all__ = [
    "ReadResult",
    "DEFAULT_MAX_ANSWER_CHARS",
    "DEFAULT_MAX_QUESTION_CHARS",
    "TABLE_FIELDS",
    "DEFAULT_LABEL_VALUES",
    "SPLIT_VALUES",
    "WEBGLM_REFERENCE_GRADES",
    "read_lfqa_hp",
    "read_lfqa_eval",
    "read_graded",
    "read_graded_labels",
    "read_table",
    "parse_mapping",
    "parse_label_values",
    "READERS",
    "FORMATS",
    "read_input",
    "read_hf",
    "open_hf_dataset",
    "hf_files",
    "hf_name",
    "DEFAULT_HF_SPLIT",
    "Block",
    "BLOCK_ROWS",
    "BLOCK_BYTES",
    "plan_blocks",
    "read_block",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_ANSWER_CHARS: int = ScoringConfig().max_answer_chars
DEFAULT_MAX_QUESTION_CHARS: int = ScoringConfig().max_question_chars

#: Our field names that ``read_table`` can map onto a file's columns.
TABLE_FIELDS: tuple[str, ...] = (
    "question", "answer_a", "answer_b", "label", "pair_id", "source", "domain", "expert", "docs_a", "docs_b",
    "split", "reference",
)
#: ``label`` is optional: without it every pair of the table is unlabeled (scored, not judged).
_TABLE_REQUIRED: tuple[str, ...] = ("question", "answer_a", "answer_b")

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

#: WebGLM's reference answers: key -> the grade it stands for. Graded answers themselves may use
#: any integer scale (TREC-DL 0-3, WebGLM 1-3, ANTIQUE 1-4); higher is better.
WEBGLM_REFERENCE_GRADES: Mapping[str, int] = {"ground0": 0, "ground1": 1, "ground2": 2, "ground3": 3}

_HP_LABELS: Mapping[str, str] = {"answer_1": "a", "answer_2": "b", "tie": "tie"}
_EVAL_LABELS: Mapping[int, str] = {-1: "a", 0: "tie", 1: "b"}
#: lfqa_eval's overall judgement; every other ``<aspect>_preference`` field is a per-aspect one.
_EVAL_OVERALL = "overall_preference"
_PREFERENCE_SUFFIX = "_preference"
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


class _RowError(Exception):
    """Internal: one row (or answer) is unusable; carries the field and the reason without the prefix."""

    def __init__(self, field: str | None, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# File access
# ---------------------------------------------------------------------------------------------


def _check_path(path: str | Path) -> Path:
    p = Path(path)
    if not p.exists():
        raise InputError(f"input file not found: {str(path)!r}")
    if p.is_dir():
        raise InputError(f"input path is a directory, expected a file: {str(path)!r}")
    return p


# How much of a file's start the encoding check looks at.
_HEAD_BYTES = 4096

# Byte-order marks of the encodings we refuse, longest first (UTF-32 LE starts like UTF-16 LE).
_BOMS: tuple[tuple[bytes, str, str], ...] = (
    (b"\x00\x00\xfe\xff", "UTF-32 BE", "UTF-32"),
    (b"\xff\xfe\x00\x00", "UTF-32 LE", "UTF-32"),
    (b"\xfe\xff", "UTF-16 BE", "UTF-16"),
    (b"\xff\xfe", "UTF-16 LE", "UTF-16"),
)


def _nul_encoding(head: bytes) -> tuple[str, str] | None:
    """(name, iconv name) of the UTF-16/32 variant whose NUL-byte pattern ``head`` shows, if any.

    Mostly-ASCII text (JSON, CSV) in UTF-16 has a NUL in every other byte and in UTF-32 in three
    of every four; which positions tell the byte order.
    """
    n4 = len(head) - len(head) % 4
    if n4 >= 4:
        share = [head[i:n4:4].count(0) / (n4 // 4) for i in range(4)]
        if min(share[1:]) > 0.9 and share[0] < 0.1:
            return "UTF-32 LE", "UTF-32LE"
        if min(share[:3]) > 0.9 and share[3] < 0.1:
            return "UTF-32 BE", "UTF-32BE"
    n2 = len(head) - len(head) % 2
    if n2 >= 2:
        even, odd = head[0:n2:2].count(0) / (n2 // 2), head[1:n2:2].count(0) / (n2 // 2)
        if odd > 0.25 and even < 0.05:
            return "UTF-16 LE", "UTF-16LE"
        if even > 0.25 and odd < 0.05:
            return "UTF-16 BE", "UTF-16BE"
    return None


def _check_encoding(p: Path, data: bytes) -> None:
    """Raise one InputError for a file that is not UTF-8 text at all.

    Decoding such a file as UTF-8 would not fail: it would turn into one "not valid JSON" reject
    per line (or one per record that happens to split), which hides the real problem.
    """
    head = data[:_HEAD_BYTES]
    why = fix = None
    for bom, name, iconv in _BOMS:
        if head.startswith(bom):
            why, fix = f"looks like {name}: it starts with the byte-order mark {bom.hex(' ').upper()}", iconv
            break
    else:
        if b"\x00" in head:
            guess = _nul_encoding(head)
            if guess is not None:
                why = f"looks like {guess[0]}: NUL bytes at the positions that encoding leaves zero"
                fix = guess[1]
            elif head.startswith(b"\x1f\x8b"):
                raise InputError(f"{str(p)!r} is not UTF-8 text (looks gzip-compressed); "
                                 f"decompress it first, e.g. `gunzip -k {p.name}`")
            elif head.startswith(b"PAR1"):
                raise InputError(f"{str(p)!r} is not UTF-8 text (looks like Parquet); "
                                 "give it a .parquet extension or read it with --format parquet")
            else:
                raise InputError(f"{str(p)!r} is not UTF-8 text (it holds NUL bytes in its first "
                                 f"{len(head):,} bytes: binary or compressed data?)")
    if why is not None:
        raise InputError(f"{str(p)!r} is not UTF-8 text ({why}); convert it, "
                         f"e.g. `iconv -f {fix} -t UTF-8 {p.name} > {p.stem}.utf8{p.suffix}`")


def _read_text(p: Path) -> str:
    try:
        data = p.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read {str(p)!r}: {e}") from e
    _check_encoding(p, data)
    # surrogateescape keeps bad bytes as lone surrogates so the row holding them can be rejected
    # by name instead of the whole file failing to decode.
    return data.decode("utf-8-sig", errors="surrogateescape")


class _RepeatedKeys(dict):
    """A JSON object in which a key appears more than once; json keeps only the last value."""

    repeated: tuple[str, ...] = ()


class _ObjectHook:
    """``object_pairs_hook`` that flags repeated keys and remembers the last object's pairs.

    JSON builds an object when its closing brace is read, so after a parse ``last`` holds the
    key/value pairs of the outermost object, repeats included, in file order.
    """

    def __init__(self) -> None:
        self.last: list[tuple[str, Any]] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict:
        self.last = pairs
        out = dict(pairs)
        if len(out) == len(pairs):
            return out
        flagged = _RepeatedKeys(out)
        seen: set[str] = set()
        repeated: list[str] = []
        for key, _value in pairs:
            if key in seen and key not in repeated:
                repeated.append(key)
            seen.add(key)
        flagged.repeated = tuple(repeated)
        return flagged


def _loads(text: str, hook: _ObjectHook | None = None) -> Any:
    """``json.loads`` whose every parse failure is a ``JSONDecodeError`` (callers report those in one line).

    The parser itself can raise others: ``RecursionError`` on arrays or objects nested deeper than
    the interpreter's stack (100k ``[``), ``ValueError`` on an integer over Python's digit limit.
    """
    try:
        return json.loads(text, object_pairs_hook=hook or _ObjectHook())
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError("arrays or objects nested too deeply to parse (RecursionError)", text, 0) from None
    except ValueError as e:
        raise json.JSONDecodeError(f"a value cannot be parsed ({e})", text, 0) from None


def _lines(text: str, start_line: int = 1) -> Iterator[tuple[int, str]]:
    """(1-based line number, line), split at line feeds only as JSON Lines defines; a final CR is dropped."""
    for lineno, line in enumerate(text.split("\n"), start=start_line):
        yield lineno, line[:-1] if line.endswith("\r") else line


def _iter_jsonl(text: str, start_line: int = 1) -> Iterator[tuple[int, int, Any]]:
    """Yield (row, line_number, record-or-_RowError) for each non-blank line (rows counted from 0)."""
    row = 0
    for lineno, line in _lines(text, start_line):
        if not line.strip():
            continue
        # a byte-order mark at the start of a line: files concatenated with `cat`, each with a BOM
        line = line.removeprefix("\ufeff")
        try:
            rec: Any = _loads(line)
        except json.JSONDecodeError as e:
            rec = _RowError(None, f"line {lineno} is not valid JSON ({e.msg} at column {e.colno})")
        yield row, lineno, rec
        row += 1


def _load_json_records(p: Path) -> list[Any]:
    """Records of a .json/.jsonl file: a JSON list, or one JSON object per line."""
    text = _read_text(p)
    if p.suffix.lower() != ".jsonl":
        try:
            data = _loads(text)
        except json.JSONDecodeError as e:
            # A ".json" file that is really JSON Lines is common; anything else is a broken file.
            first = next((ln for _, ln in _lines(text) if ln.strip()), "")
            try:
                looks_jsonl = isinstance(_loads(first), dict)
            except json.JSONDecodeError:
                looks_jsonl = False
            if not looks_jsonl:
                raise InputError(
                    f"{str(p)!r} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
                ) from e
        else:
            if isinstance(data, list):
                return data
            raise InputError(
                f"{str(p)!r} must hold a JSON list of records (or one JSON object per line), "
                f"got a JSON {type(data).__name__}"
            )
    return [rec for _, _, rec in _iter_jsonl(text)]


def _load_parquet(p: Path) -> list[Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:  # pragma: no cover - pyarrow is a core dependency
        raise InputError(f"reading Parquet needs pyarrow (pip install pyarrow): {e}") from e
    try:
        return pq.read_table(p).to_pylist()
    except (pa.ArrowException, OSError, ValueError) as e:
        raise InputError(f"cannot read Parquet file {str(p)!r} (truncated or corrupt?): {e}") from e


def _load_csv(p: Path) -> list[Any]:
    text = _read_text(p)
    # Long answers exceed csv's default 128 KiB field limit; the length check below gives the
    # user the actionable message instead of a csv.Error for the whole file.
    old = csv.field_size_limit()
    csv.field_size_limit(max(old, 2**31 - 1))
    try:
        # newline="" hands every character to the csv dialect, which alone decides where a record
        # ends (a quoted field may hold newlines; U+2028 and friends are ordinary characters).
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if header is None:
            return []
        seen: dict[str, int] = {}
        for i, name in enumerate(header, start=1):
            if name.strip() and name in seen:
                raise InputError(f"the CSV header of {str(p)!r} names column {name!r} twice (columns "
                                 f"{seen[name]} and {i}); rename one so that no value is taken from "
                                 "the wrong column")
            seen.setdefault(name, i)
        records: list[Any] = []
        for fields in reader:
            if not fields:  # a blank line is not a record
                continue
            if len(fields) != len(header):
                records.append(_RowError(None, (
                    f"the record ending on line {reader.line_num} has {len(fields)} fields but the header "
                    f"has {len(header)} (an unquoted comma or quote?)"
                )))
            else:
                records.append(dict(zip(header, fields)))
        return records
    except csv.Error as e:
        raise InputError(f"cannot parse CSV file {str(p)!r}: {e}") from e
    finally:
        csv.field_size_limit(old)


def _load_records(p: Path, kind: str) -> list[Any]:
    if kind == "parquet":
        records = _load_parquet(p)
    elif kind == "csv":
        records = _load_csv(p)
    else:
        records = _load_json_records(p)
    if not records:
        raise InputError(f"{str(p)!r} holds no records")
    return records


def _kind_of(p: Path, fmt: str | None = None) -> str:
    if fmt is not None:
        return fmt
    ext = p.suffix.lower()
    if ext == ".parquet":
        return "parquet"
    if ext == ".csv":
        return "csv"
    if ext in (".json", ".jsonl"):
        return "jsonl"
    raise InputError(
        f"cannot tell the format of {str(p)!r} from its extension {ext!r}; "
        "expected .jsonl, .json, .parquet or .csv"
    )


# ---------------------------------------------------------------------------------------------
# Field validation
# ---------------------------------------------------------------------------------------------


# The lone surrogates that surrogateescape decodes invalid bytes to; a regex scans a long answer
# in C rather than one Python step per character.
_BAD_BYTE = re.compile("[\udc80-\udcff]")


def _has_bad_bytes(s: str) -> bool:
    return _BAD_BYTE.search(s) is not None


def _check_utf8(value: str, name: str) -> str:
    if _has_bad_bytes(value):
        raise _RowError(name, f"field {name!r} contains bytes that are not valid UTF-8")
    return value


def _text(
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
        _RowError: the field is missing, not a string, holds invalid bytes, is empty, has no
            letters, or is too long.
    """
    shown = label or repr(name)
    if name not in rec:
        raise _RowError(name, f"missing field {shown}")
    if rec[name] is None:
        raise _RowError(name, f"field {shown} is null; expected a string")
    value = rec[name]
    if not isinstance(value, str):
        raise _RowError(name, f"field {shown} must be a string, got {type(value).__name__}")
    if _has_bad_bytes(value):
        raise _RowError(name, f"field {shown} contains bytes that are not valid UTF-8")
    if not value.strip():
        raise _RowError(name, f"field {shown} is empty")
    # "...", "42", "\u200b\u200b": nothing for a rubric to read, and such an answer otherwise
    # gets scores (and wins pairs) on its form alone.
    if not any(ch.isalpha() for ch in value):
        raise _RowError(name, f"field {shown} has no letters (only punctuation, digits, symbols or "
                              "invisible characters)")
    if max_chars is not None and len(value) > max_chars:
        raise _RowError(
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
        raise _RowError(name, f"field {name!r} must be a string (a reference answer), got {type(value).__name__}")
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
    raise _RowError(name, f"field {label or repr(name)} has value {value!r}; expected train, dev or test "
                          "(validation, valid and val also mean dev)")


def _meta(rec: Mapping[str, Any], name: str | None, default: str = "") -> str:
    """An optional metadata string (source, domain, id); numbers are stringified."""
    if name is None or rec.get(name) is None:
        return default
    value = rec[name]
    if isinstance(value, (list, dict)):
        raise _RowError(name, f"field {name!r} must be a string, got {type(value).__name__}")
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
        raise _RowError(name, f"field {name!r} must be a boolean, got {value!r}")
    return None


def _docs(rec: Mapping[str, Any], name: str | None) -> tuple[str, ...]:
    """Evidence documents: a string, or a list of strings / dicts with a 'text' or 'content' field."""
    if name is None or rec.get(name) is None:
        return ()
    value = rec[name]
    items = [value] if isinstance(value, (str, dict)) else value
    if not isinstance(items, (list, tuple)):
        raise _RowError(name, f"field {name!r} must be a string or a list of strings, got {type(value).__name__}")
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


def _check_max(max_answer_chars: int, max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS) -> None:
    for name, value in (("max_answer_chars", max_answer_chars), ("max_question_chars", max_question_chars)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"'{name}' must be an integer >= 1, got {value!r}")


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


# ---------------------------------------------------------------------------------------------
# Pair formats: one record -> one pair
# ---------------------------------------------------------------------------------------------


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
            if isinstance(rec, _RowError):
                raise rec
            if not isinstance(rec, Mapping):
                raise _RowError(None, f"record is a JSON {type(rec).__name__}, expected an object")
            if isinstance(rec, _RepeatedKeys):
                # json keeps the last value silently; which one the writer meant is unknowable
                key = rec.repeated[0]
                raise _RowError(key, f"field {key!r} appears more than once in the record")
            pair = build(rec, row)
            # Only accepted rows claim an id: a good row is not lost to a broken earlier one.
            if pair.pair_id in first_row:
                raise _RowError(
                    "pair_id", f"duplicate pair_id {pair.pair_id!r} (first seen at row {first_row[pair.pair_id]})"
                )
        except _RowError as e:
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
        raise _RowError(name, f"field {name!r} is {value!r}, which is not an id; use a string or an integer")


def _pair_id(rec: Mapping[str, Any], row: int, p: Path, *names: str) -> str:
    for name in names:
        if rec.get(name) is not None:
            _check_id_number(rec[name], name)
            pid = _meta(rec, name)
            if not pid.strip():
                raise _RowError(name, f"field {name!r} is empty")
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
    _check_max(max_answer_chars, max_question_chars)
    p = _check_path(path)
    records = _load_records(p, "parquet" if p.suffix.lower() == ".parquet" else "jsonl")
    return _read_pairs(p, records, _hp_builder(p, max_answer_chars, max_question_chars))


def _hp_builder(p: Path, max_answer_chars: int, max_question_chars: int) -> Callable[[Mapping[str, Any], int], PairRecord]:
    """One LFQA-HP-1M record -> a pair (see :func:`read_lfqa_hp`); ``p``'s stem makes default pair ids."""

    def build(rec: Mapping[str, Any], row: int) -> PairRecord:
        question = _text(rec, "question_text", max_question_chars, option="max_question_chars")
        answer_a = _text(rec, "answer_1", max_answer_chars)
        answer_b = _text(rec, "answer_2", max_answer_chars)
        judgment = rec.get("human_judgment")
        label = None
        if judgment is not None:  # absent or null: a pair nobody judged, kept unlabeled
            label = _HP_LABELS.get(judgment) if isinstance(judgment, str) else None
            if label is None:
                raise _RowError("human_judgment", f"field 'human_judgment' has value {judgment!r}; "
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
    _check_max(max_answer_chars, max_question_chars)
    p = _check_path(path)
    records = _load_records(p, "jsonl")
    return _read_pairs(p, records, _eval_builder(p, max_answer_chars, max_question_chars))


def _eval_builder(p: Path, max_answer_chars: int, max_question_chars: int) -> Callable[[Mapping[str, Any], int], PairRecord]:
    """One lfqa_eval record -> a pair (see :func:`read_lfqa_eval`)."""

    def build(rec: Mapping[str, Any], row: int) -> PairRecord:
        question = _text(rec, "question", max_question_chars, option="max_question_chars")
        answer_a = _text(rec, "answer_a", max_answer_chars)
        answer_b = _text(rec, "answer_b", max_answer_chars)
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
        _RowError: the field is present with any other value (``True`` is not 1 here).
    """
    raw = rec.get(name)
    if raw is None:
        return None
    label = _EVAL_LABELS.get(_as_int(raw))  # type: ignore[arg-type]
    if label is None:
        raise _RowError(name, f"field {name!r} has value {raw!r}; expected -1, 0 or 1 (or null for no judgement)")
    return label


def _label_table(label_values: Mapping[str, str] | None) -> dict[str, str]:
    if label_values is None:
        return dict(DEFAULT_LABEL_VALUES)
    table: dict[str, str] = {}
    for key, value in label_values.items():
        if value not in LABELS:
            raise ConfigError(f"label_values[{key!r}] must be one of {', '.join(LABELS)}, got {value!r}")
        table[str(key).strip().lower()] = value
    if not table:
        raise ConfigError("'label_values' must not be empty")
    return table


def _label_key(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip().lower()


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
    _check_max(max_answer_chars, max_question_chars)
    cols = parse_mapping(mapping) if isinstance(mapping, str) else _check_mapping(mapping)
    if label_values is not None and "label" not in cols:
        raise ConfigError("'label_values' (--labels) needs a label column in the mapping (label=COLUMN)")
    labels = _label_table(label_values)
    if fmt is not None and fmt not in ("jsonl", "parquet", "csv"):
        raise ConfigError(f"'fmt' must be 'jsonl', 'parquet' or 'csv', got {fmt!r}")
    p = _check_path(path)
    records = _load_records(p, _kind_of(p, fmt))
    _check_mapped_columns(p, records, cols)
    build, id_fields = _table_builder(p, cols, labels, max_answer_chars, max_question_chars)
    return _read_pairs(p, records, build, id_fields)


def _table_builder(p: Path, cols: Mapping[str, str], labels: Mapping[str, str], max_answer_chars: int,
                   max_question_chars: int) -> tuple[Callable[[Mapping[str, Any], int], PairRecord], tuple[str, ...]]:
    """One mapped table record -> a pair (see :func:`read_table`), and the id fields rejects name."""
    expected = ", ".join(repr(k) for k in labels)

    def build(rec: Mapping[str, Any], row: int) -> PairRecord:
        def named(f: str) -> str:
            return f"{f!r}" if cols[f] == f else f"{f!r} (column {cols[f]!r})"

        question = _text(rec, cols["question"], max_question_chars, label=named("question"),
                         option="max_question_chars")
        answer_a = _text(rec, cols["answer_a"], max_answer_chars, label=named("answer_a"))
        answer_b = _text(rec, cols["answer_b"], max_answer_chars, label=named("answer_b"))
        label = None
        raw = rec.get(cols["label"]) if "label" in cols else None
        # null, or an empty cell (CSV cannot write a null): a pair nobody judged, kept unlabeled
        if raw is not None and not (isinstance(raw, str) and not raw.strip()):
            label = labels.get(_label_key(raw))
            if label is None:
                raise _RowError(cols["label"], f"field {named('label')} has value {raw!r}; expected one of "
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


def _check_mapping(mapping: Mapping[str, str]) -> dict[str, str]:
    unknown = sorted(set(mapping) - set(TABLE_FIELDS))
    if unknown:
        raise ConfigError(f"unknown mapping field(s) {', '.join(map(repr, unknown))}; "
                          f"known: {', '.join(TABLE_FIELDS)}")
    missing = [f for f in _TABLE_REQUIRED if f not in mapping]
    if missing:
        raise ConfigError(f"mapping is missing required field(s) {', '.join(map(repr, missing))}; "
                          f"required: {', '.join(_TABLE_REQUIRED)} (label is optional)")
    for key, col in mapping.items():
        if not isinstance(col, str) or not col.strip():
            raise ConfigError(f"mapping[{key!r}] must be a non-empty column name, got {col!r}")
    return dict(mapping)


def parse_mapping(text: str) -> dict[str, str]:
    """Parse a CLI column mapping such as ``"question=q,answer_a=resp1,answer_b=resp2,label=winner"``.

    ``label`` may be left out (a table of pairs to score or predict, nobody's judgement).

    Args:
        text: comma-separated ``field=column`` entries; spaces around names are ignored.

    Returns:
        Our field name -> the file's column name.

    Raises:
        ConfigError: an entry is malformed, a field is unknown or repeated, or a required one is missing.
    """
    return _check_mapping(mapping_entries(text))


def parse_label_values(text: str) -> dict[str, str]:
    """Parse a CLI label value mapping such as ``"1=a,2=b,0=tie"`` (``--labels``): file value -> a, b or tie.

    Raises:
        ConfigError: an entry is malformed, a value is repeated, or a label is not a, b or tie.
    """
    out: dict[str, str] = {}
    for entry in text.split(","):
        if not entry.strip():
            continue
        value, sep, label = (x.strip() for x in entry.partition("="))
        if not sep or not value or label not in LABELS:
            raise ConfigError(f"--labels entry {entry.strip()!r} must look like VALUE=LABEL with LABEL one of "
                              f"{', '.join(LABELS)} (e.g. 1=a,2=b,0=tie)")
        if value.lower() in out:
            raise ConfigError(f"--labels gives value {value!r} twice")
        out[value.lower()] = label
    if not out:
        raise ConfigError("--labels is empty; give VALUE=LABEL entries, e.g. 1=a,2=b,0=tie")
    return out


def _check_mapped_columns(p: Path, records: Sequence[Any], cols: Mapping[str, str]) -> None:
    """Refuse a mapping that names a column no record of the file has (a typo would otherwise drop
    every label, or reject every row, one by one)."""
    seen: set[str] = set()
    for rec in records:
        if isinstance(rec, Mapping):
            seen.update(rec)
            if len(seen) >= len(cols) and all(c in seen for c in cols.values()):
                return
    absent = [f"{f}={c}" for f, c in cols.items() if c not in seen]
    if absent:
        shown = ", ".join(repr(c) for c in sorted(seen, key=str)[:20]) + (", ..." if len(seen) > 20 else "")
        raise InputError(f"{str(p)!r} has no column(s) named by the mapping (--map): {', '.join(absent)}; "
                         f"its columns: {shown or 'none'}")


def mapping_entries(text: str) -> dict[str, str]:
    """The ``field=column`` entries of a comma-separated CLI mapping, unchecked against any field list.

    Raises:
        ConfigError: an entry is malformed or a field is repeated.
    """
    out: dict[str, str] = {}
    for entry in text.split(","):
        if not entry.strip():
            continue
        key, sep, col = entry.partition("=")
        key, col = key.strip(), col.strip()
        if not sep or not key or not col:
            raise ConfigError(f"mapping entry {entry.strip()!r} must look like field=column")
        if key in out:
            raise ConfigError(f"mapping field {key!r} is given twice")
        out[key] = col
    return out


# ---------------------------------------------------------------------------------------------
# Graded answer lists: one question with graded answers -> pairs of differently graded answers
# ---------------------------------------------------------------------------------------------


def _graded_answers(
    question: str, value: Any, include_references: bool, src: str,
) -> list[tuple[str, Any]]:
    """(answer key, raw item) for one question, in file order; raises InputError on a wrong shape."""
    if isinstance(value, list):  # TREC-DL style: [{"docid", "passage", "label"}, ...]
        return [(str(i), item) for i, item in enumerate(value)]
    if isinstance(value, dict) and isinstance(value.get("doc_list"), list):  # WebGLM style
        items: list[tuple[str, Any]] = [(str(i), item) for i, item in enumerate(value["doc_list"])]
        if include_references:
            for key, grade in WEBGLM_REFERENCE_GRADES.items():
                if key in value:
                    items.append((key, {"answer": value[key], "label": grade}))
        return items
    raise InputError(
        f"{src!r} is not a graded answer list: question {question[:60]!r} maps to a "
        f"{type(value).__name__}; expected a list of {{'passage', 'label'}} items or "
        "{'doc_list': [{'answer', 'label'}, ...]}"
    )


def _webglm_reference(value: Any) -> str | None:
    """The best reference answer of a WebGLM-style question (the highest-graded ``groundK``), if any.

    Used as the question's reference answer (for reference-based signals) when the references are
    not themselves paired (``include_references``): an answer compared with itself says nothing.
    """
    if not isinstance(value, dict):
        return None
    for key, _grade in sorted(WEBGLM_REFERENCE_GRADES.items(), key=lambda kv: -kv[1]):
        text = value.get(key)
        if isinstance(text, str) and text.strip() and not _has_bad_bytes(text):
            return text
    return None


_ANSWER_FIELDS: tuple[str, ...] = ("passage", "answer", "text")


def _graded_item(item: Any, max_answer_chars: int) -> tuple[str, int]:
    """The text and integer grade of one graded answer; raises _RowError naming what is wrong."""
    if not isinstance(item, Mapping):
        raise _RowError(None, f"answer is a {type(item).__name__}, expected an object")
    if isinstance(item, _RepeatedKeys):
        key = item.repeated[0]
        raise _RowError(key, f"field {key!r} appears more than once in the answer")
    name = next((n for n in _ANSWER_FIELDS if item.get(n) is not None), None)
    if name is None:
        raise _RowError("answer", "missing answer text: expected a field 'passage', 'answer' or 'text'")
    text = _text(item, name, max_answer_chars)
    raw = item.get("label")
    if raw is None:
        raise _RowError("label", "missing field 'label'")
    # Any integer scale (TREC-DL 0-3, ANTIQUE 1-4); strings ("high", even "2") and fractions are
    # not grades we can order safely, and bools are not grades at all.
    grade = None if isinstance(raw, str) else _as_int(raw)
    if grade is None:
        raise _RowError("label", f"field 'label' has value {raw!r}; expected an integer grade (higher is better)")
    return text, grade


@dataclass(frozen=True)
class _GradedQuestion:
    """One question of a graded file: its index and answers, or the earlier question it repeats."""

    index: int
    question: str
    items: list[tuple[str, Any]]
    repeats: int | None = None
    exact: bool = True
    reference: str | None = None


def _load_graded(path: str | Path, include_references: bool) -> tuple[Path, list[_GradedQuestion]]:
    """A graded file's path and questions in file order, or an InputError naming the file.

    A question that appears twice (the same key, or the same text up to whitespace, which would
    give both the same question id) is kept once: later occurrences carry ``repeats``, the index
    of the first, so that their answers can be reported instead of vanishing as ``dict`` would.
    """
    p = _check_path(path)
    src = str(p)
    hook = _ObjectHook()
    try:
        data = _loads(_read_text(p), hook)
    except json.JSONDecodeError as e:
        raise InputError(f"{src!r} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from e
    if not isinstance(data, dict):
        raise InputError(f"{src!r} is not a graded answer list: expected a JSON object mapping "
                         f"questions to graded answers, got a JSON {type(data).__name__}")
    if not data:
        raise InputError(f"{src!r} holds no records")
    first: dict[str, tuple[int, str]] = {}
    questions: list[_GradedQuestion] = []
    # the outermost object is built last, so hook.last holds its pairs, repeated keys included
    for index, (question, value) in enumerate(hook.last):
        items = _graded_answers(question, value, include_references, src)
        qid = question_id(question)
        if qid in first:
            m, text = first[qid]
            questions.append(_GradedQuestion(index, question, items, repeats=m, exact=text == question))
        else:
            first[qid] = (index, question)
            questions.append(_GradedQuestion(index, question, items,
                                             reference=None if include_references else _webglm_reference(value)))
    if not any(q.items for q in questions):
        raise InputError(f"{src!r} holds no records: none of its {len(questions)} question(s) has an answer")
    return p, questions


def _answer_reject(
    rejects: list[Reject], src: str, q_index: int, question: str, key: str, field: str | None, reason: str,
) -> None:
    """Append the reject of answer ``key`` of question ``q_index``."""
    rejects.append(Reject(
        row=q_index, field=field, source_file=src,
        reason=f"question {q_index} ({question[:60]!r}) answer {key}: {reason}", extra={"answer": key},
    ))


def _no_pair_reason(key: str, grade: int, unique: list[tuple[str, str, int]], cap: int) -> str:
    if len(unique) == 1:
        return f"answer {key} is in no pair: it is the only usable answer of the question"
    if all(g == grade for _, _, g in unique):
        return f"answer {key} is in no pair: every other usable answer of the question has grade {grade}"
    return f"answer {key} was left out by --max-pairs-per-question {cap}"


def read_graded(
    path: str | Path,
    max_pairs_per_question: int = 50,
    seed: int = 0,
    *,
    include_references: bool = False,
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS,
    max_questions: int | None = None,
) -> ReadResult:
    """Read graded answer lists and pair answers of different grades.

    Two shapes are recognised, per question: TREC-DL style ``{question: [{"docid", "passage",
    "label"}, ...]}`` and WebGLM style ``{question: {"doc_list": [{"answer", "model", "label"}, ...],
    "ground0": str, ..., "ground3": str}}`` where ``groundK`` is a reference answer of grade K
    (:data:`WEBGLM_REFERENCE_GRADES`). An answer's text is its ``passage``, ``answer`` or ``text``
    field; its grade (``label``) is an integer on any scale, higher is better.

    Every two usable answers of one question with different grades make a candidate pair labelled
    with the higher-graded one; which answer is "a" is drawn from a per-question RNG so that
    "always a" is not trivially right. More than ``max_pairs_per_question`` candidates are
    subsampled with the same RNG. The RNG is seeded from ``seed`` and the question, so a question
    gets the same pairs whatever else is in the file.

    Row accounting: the unit of ``rows_in`` is one graded answer, and ``rows_ok`` counts the
    answers that are in at least one pair. Every other answer is a reject naming the question
    index and the answer key (``Reject.row`` is the question index, the answer key is in
    ``Reject.extra["answer"]``):

    - an invalid answer (no text, no letters, too long, a grade that is not an integer), or any
      answer of a question that is itself invalid (empty, no letters, too long);
    - every answer of a question that repeats an earlier one (same key, or the same text up to
      whitespace): only the first occurrence is used;
    - an answer with the same text as an earlier answer of its question (field "pairing"): the
      same text would be scored once but counted in several pairs, perhaps with two grades;
    - an answer in no pair (field "pairing"): all other usable answers share its grade, or the
      ``max_pairs_per_question`` cap left it out.

    ``PairRecord.row`` is the question's index in the file. ``PairRecord.answer_type_a`` /
    ``answer_type_b`` are who wrote each answer: its ``model`` field (WebGLM: ``gpt``, ``llama``,
    ``mistral``), "" when it has none (TREC-DL passages, WebGLM's ``groundK`` references) or when
    the field is not a usable string.

    Args:
        path: a JSON file of one of the shapes above.
        max_pairs_per_question: cap on pairs per question (>= 1).
        seed: seed of the pair sampling and of the a/b order.
        include_references: also pair WebGLM's ``groundK`` reference answers. Without it, the
            highest-graded ``groundK`` becomes every pair's ``reference`` (for reference-based signals).
        max_answer_chars: longer answers are rejected.
        max_question_chars: all answers of a longer question are rejected.
        max_questions: read only the first N questions of the file (None: all); the others are
            not read, so they are neither pairs nor rejects (``rows_in`` counts the answers read).

    Returns:
        Pairs with ids ``f"{question_id}:{i}:{j}"`` (``i``, ``j`` the answer keys in file order:
        list indices, or ``groundK``), ``source`` the file stem and ``domain`` "".

    Raises:
        InputError: the file is missing, a directory, not UTF-8 text, not JSON, not of a graded
            shape, or holds no answers.
        ConfigError: an option is out of range.
    """
    _check_max(max_answer_chars, max_question_chars)
    if isinstance(max_pairs_per_question, bool) or not isinstance(max_pairs_per_question, int) \
            or max_pairs_per_question < 1:
        raise ConfigError(f"'max_pairs_per_question' must be an integer >= 1, got {max_pairs_per_question!r}")
    if max_questions is not None and (isinstance(max_questions, bool) or not isinstance(max_questions, int)
                                      or max_questions < 1):
        raise ConfigError(f"'max_questions' must be an integer >= 1 or None, got {max_questions!r}")
    p, questions = _load_graded(path, include_references)
    questions = questions[:max_questions]
    src = str(p)

    pairs: list[PairRecord] = []
    rejects: list[Reject] = []
    rows_in = rows_ok = 0
    for gq in questions:
        q_index, question, items = gq.index, gq.question, gq.items
        rows_in += len(items)
        reject = functools.partial(_answer_reject, rejects, src, q_index, question)
        if gq.repeats is not None:
            same = "same text" if gq.exact else "same text up to whitespace"
            for key, _item in items:
                reject(key, "question", f"question {q_index} repeats question {gq.repeats} ({same}); "
                                        f"its {len(items)} answers are not used")
            continue
        try:
            _text({"question": question}, "question", max_question_chars, option="max_question_chars")
        except _RowError as e:
            for key, _item in items:
                reject(key, e.field, e.reason)
            continue

        # usable answers in file order, each text once: (key, text, grade)
        unique: list[tuple[str, str, int]] = []
        first_with_text: dict[str, tuple[str, int]] = {}
        author: dict[str, str] = {}  # answer key -> who wrote it (WebGLM's "model"), "" when unknown
        for key, item in items:
            try:
                text, grade = _graded_item(item, max_answer_chars)
            except _RowError as e:
                reject(key, e.field, e.reason)
                continue
            try:
                author[key] = _meta(item, "model").strip()
            except _RowError:  # an unusable author field leaves the author unknown, not the answer rejected
                author[key] = ""
            if text in first_with_text:
                k0, g0 = first_with_text[text]
                grades = f" (grades {g0} and {grade})" if g0 != grade else ""
                reject(key, "pairing",
                       f"answer {key} has the same text as answer {k0}{grades}; only the first is used")
                continue
            first_with_text[text] = (key, grade)
            unique.append((key, text, grade))

        candidates = [(x, y) for x, y in itertools.combinations(unique, 2) if x[2] != y[2]]
        # Seeded per question (str seeds hash deterministically) so pairs do not shift when
        # another question is added or removed.
        qid = question_id(question)
        rng = random.Random(f"{seed}:{qid}")
        if len(candidates) > max_pairs_per_question:
            keep = sorted(rng.sample(range(len(candidates)), max_pairs_per_question))
            candidates = [candidates[k] for k in keep]
        paired = {a[0] for pair in candidates for a in pair}
        rows_ok += len(paired)
        for key, _t, grade in unique:
            if key not in paired:
                reject(key, "pairing", _no_pair_reason(key, grade, unique, max_pairs_per_question))
        for x, y in candidates:
            pid = f"{qid}:{x[0]}:{y[0]}"
            if rng.random() < 0.5:
                x, y = y, x
            pairs.append(PairRecord(
                pair_id=pid, question=question, answer_a=x[1], answer_b=y[1],
                label="a" if x[2] > y[2] else "b", source=p.stem, domain="", row=q_index,
                reference=gq.reference, answer_type_a=author[x[0]], answer_type_b=author[y[0]],
            ))
    result = ReadResult(pairs=pairs, rejects=rejects, rows_in=rows_in, source_file=src, rows_ok=rows_ok)
    _log_result(result)
    return result


def read_graded_labels(
    path: str | Path,
    *,
    include_references: bool = False,
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS,
) -> dict[str, tuple[str, int]]:
    """The grade of every usable answer of a graded file, keyed by its content id.

    Used to correlate per-answer rubric scores with graded labels (Kendall tau per question).
    Answers and questions that :func:`read_graded` rejects for what they are (invalid text or
    grade, a repeated question, a repeated text) are skipped; ``read_graded`` reports them.
    Answers in no pair are kept: their grade is still a label to correlate with.

    Args:
        path: a graded JSON file (see :func:`read_graded`).
        include_references: also label WebGLM's ``groundK`` reference answers.
        max_answer_chars: longer answers are skipped.
        max_question_chars: questions longer than this are skipped.

    Returns:
        answer_id -> (question_id, grade).

    Raises:
        InputError: as :func:`read_graded`.
        ConfigError: a length limit is not a positive integer.
    """
    _check_max(max_answer_chars, max_question_chars)
    _, questions = _load_graded(path, include_references)
    out: dict[str, tuple[str, int]] = {}
    skipped = 0
    for gq in questions:
        try:
            if gq.repeats is not None:
                raise _RowError("question", "repeated question")
            _text({"question": gq.question}, "question", max_question_chars, option="max_question_chars")
        except _RowError:
            skipped += len(gq.items)
            continue
        for _key, item in gq.items:
            try:
                text, grade = _graded_item(item, max_answer_chars)
            except _RowError:
                skipped += 1
                continue
            # the first answer with a text keeps its grade, as in read_graded
            out.setdefault(content_id(gq.question, text), (question_id(gq.question), grade))
    if skipped:
        logger.warning("%d graded answers of %s skipped (read_graded reports why)", skipped, path)
    return out


# ---------------------------------------------------------------------------------------------
# Dispatch
# ---------------------------------------------------------------------------------------------


def _read_jsonl_table(path: str | Path, mapping: Mapping[str, str] | str, **options: Any) -> ReadResult:
    return read_table(path, mapping, fmt="jsonl", **options)


def _read_parquet_table(path: str | Path, mapping: Mapping[str, str] | str, **options: Any) -> ReadResult:
    return read_table(path, mapping, fmt="parquet", **options)


def _read_csv_table(path: str | Path, mapping: Mapping[str, str] | str, **options: Any) -> ReadResult:
    return read_table(path, mapping, fmt="csv", **options)


#: Input format name -> reader, for the CLI's ``--format``.
READERS: Mapping[str, Callable[..., ReadResult]] = {
    "lfqa-hp": read_lfqa_hp,
    "lfqa-eval": read_lfqa_eval,
    "graded": read_graded,
    "jsonl": _read_jsonl_table,
    "parquet": _read_parquet_table,
    "csv": _read_csv_table,
    "hf": lambda path, **options: read_hf(path, **options),
}
FORMATS: tuple[str, ...] = tuple(READERS)

# Options each table format accepts (the wrappers above take **options, so list them here).
_TABLE_OPTIONS = ("mapping", "label_values", "max_answer_chars", "max_question_chars")


def read_input(path: str | Path, fmt: str, **options: Any) -> ReadResult:
    """Read ``path`` with the reader registered for ``fmt``.

    Args:
        path: the input file.
        fmt: one of :data:`FORMATS`.
        **options: passed to the reader (e.g. ``mapping=`` for the table formats,
            ``max_pairs_per_question=`` for "graded", ``max_answer_chars=`` and
            ``max_question_chars=`` for all).

    Returns:
        The reader's :class:`ReadResult`.

    Raises:
        ConfigError: ``fmt`` is unknown, or an option is unknown to that reader or invalid.
        InputError: the file cannot be read at all.
    """
    _check_options(fmt, options)
    return READERS[fmt](path, **options)


def _check_options(fmt: str, options: Mapping[str, Any]) -> None:
    """Raise ConfigError for an unknown format, or an option its reader does not take."""
    try:
        reader = READERS[fmt]
    except KeyError:
        raise ConfigError(f"unknown input format {fmt!r}; known: {', '.join(FORMATS)}") from None
    if fmt == "hf":
        accepted = _HF_OPTIONS
    elif reader in (_read_jsonl_table, _read_parquet_table, _read_csv_table):
        accepted = _TABLE_OPTIONS
        if "mapping" not in options:
            raise ConfigError(f"format {fmt!r} needs a column mapping (mapping='question=...,answer_a=...,"
                              "answer_b=...[,label=...]')")
    else:
        accepted = tuple(n for n in inspect.signature(reader).parameters if n != "path")
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(map(repr, unknown))} for format {fmt!r}; "
                          f"accepted: {', '.join(accepted)}")


# ---------------------------------------------------------------------------------------------
# Hugging Face datasets (--format hf)
# ---------------------------------------------------------------------------------------------

#: Split read from a Hugging Face dataset when none is named.
DEFAULT_HF_SPLIT = "train"
_HF_OPTIONS = ("split", "mapping", "label_values", "max_answer_chars", "max_question_chars")


def hf_name(source: str | Path) -> str:
    """A Hugging Face input's short name: the folder's name, or the last part of a Hub id ("org/name")."""
    return Path(str(source).rstrip("/")).name


def _hf_parquet_files(root: Path, split: str) -> list[Path]:
    """The Parquet files of one split of a Parquet-export folder, in name order.

    The Hub's exports are laid out as ``<config>/<split>/NNNN.parquet`` or ``data/<split>-NNNNN-of-NNNNN.parquet``;
    files whose path names the split are taken, and a folder whose paths name no split at all is one split.
    """
    files = sorted(f for f in root.rglob("*.parquet") if f.is_file())
    names = {f: f.relative_to(root).as_posix() for f in files}
    of_split = [f for f in files if split in re.split(r"[/_.-]", names[f])
                or any(part == split for part in names[f].split("/"))]
    if of_split:
        return of_split
    known = {s for f in files for s in re.split(r"[/_.-]", names[f]) if s in SPLIT_VALUES}
    if known:
        raise InputError(f"{str(root)!r} has no Parquet files of split {split!r} (its files name: "
                         f"{', '.join(sorted(known))}); choose one with split=...")
    return files


def _is_saved_dataset(root: Path) -> bool:
    return (root / "dataset_dict.json").is_file() or (root / "state.json").is_file()


def open_hf_dataset(source: str | Path, split: str = DEFAULT_HF_SPLIT):
    """A ``datasets.Dataset`` (memory-mapped Arrow, not loaded into memory) for a ``save_to_disk`` folder or a Hub id.

    Raises:
        InputError: the folder is not a saved dataset, the split does not exist, or the id cannot be loaded.
    """
    try:
        import datasets
    except ImportError as e:
        raise InputError(f"--format hf needs the datasets package (pip install 'datasets>=5.2,<6'): {e}") from e
    root = Path(str(source))
    try:
        if root.is_dir():
            ds = datasets.load_from_disk(str(root))
        else:  # a Hub id: downloaded once into the Hugging Face cache, then memory-mapped from there
            ds = datasets.load_dataset(str(source), split=split)
    except (OSError, ValueError, FileNotFoundError) as e:
        raise InputError(f"cannot load Hugging Face dataset {str(source)!r}: {e}") from e
    if isinstance(ds, datasets.DatasetDict):
        if split not in ds:
            raise InputError(f"Hugging Face dataset {str(source)!r} has no split {split!r} (splits: "
                             f"{', '.join(ds)}); choose one with split=...")
        ds = ds[split]
    return ds


def hf_files(source: str | Path, split: str = DEFAULT_HF_SPLIT) -> list[Path]:
    """The files that hold a Hugging Face input's rows (for content hashing), in a fixed order."""
    root = Path(str(source))
    if root.is_dir() and not _is_saved_dataset(root):
        return _hf_parquet_files(root, split)
    return sorted({Path(f["filename"]) for f in open_hf_dataset(source, split).cache_files})


def _hf_builder(name: str, options: Mapping[str, Any]) -> tuple[Callable[[Mapping[str, Any], int], PairRecord],
                                                                 tuple[str, ...]]:
    max_a = options.get("max_answer_chars", DEFAULT_MAX_ANSWER_CHARS)
    max_q = options.get("max_question_chars", DEFAULT_MAX_QUESTION_CHARS)
    _check_max(max_a, max_q)
    # default pair ids are f"{name}:row{N}": a pseudo path whose stem is the dataset's name
    p = Path(f"{name}.hf")
    if options.get("mapping") is None:
        if options.get("label_values") is not None:
            raise ConfigError("'label_values' (--labels) needs a column mapping (mapping=...) for format 'hf'")
        return _hp_builder(p, max_a, max_q), ("pair_id", "id")
    mapping = options["mapping"]
    cols = parse_mapping(mapping) if isinstance(mapping, str) else _check_mapping(mapping)
    if options.get("label_values") is not None and "label" not in cols:
        raise ConfigError("'label_values' (--labels) needs a label column in the mapping (label=COLUMN)")
    return _table_builder(p, cols, _label_table(options.get("label_values")), max_a, max_q)


def read_hf(
    path: str | Path,
    *,
    split: str = DEFAULT_HF_SPLIT,
    mapping: Mapping[str, str] | str | None = None,
    label_values: Mapping[str, str] | None = None,
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS,
) -> ReadResult:
    """Read a Hugging Face dataset whole: a ``save_to_disk`` folder, a Parquet-export folder, or a Hub id.

    Records are validated exactly as :func:`read_lfqa_hp` does (LFQA-HP-1M's field names) unless a
    ``mapping`` names other columns (then as :func:`read_table`). Default pair ids are
    ``f"{name}:row{N}"`` with ``name`` the folder's name or the id's last part. Large datasets are
    read in blocks by the job (:func:`plan_blocks`, :func:`read_block`); this reads every row.

    Raises:
        InputError: the dataset cannot be loaded, has no such split, or holds no records.
        ConfigError: an option is invalid.
    """
    options = {"split": split, "mapping": mapping, "label_values": label_values,
               "max_answer_chars": max_answer_chars, "max_question_chars": max_question_chars}
    blocks = plan_blocks(path, "hf", block_rows=2**62, **options)
    if blocks is None:  # pragma: no cover - plan_blocks always plans an hf input
        raise InputError(f"cannot plan {str(path)!r}")
    results = [read_block(path, "hf", b, **options) for b in blocks]
    if not any(r.rows_in for r in results):
        raise InputError(f"{str(path)!r} holds no records")
    pairs = [p for r in results for p in r.pairs]
    rejects = [j for r in results for j in r.rejects]
    # a pair id repeated across files of a Parquet export: rejected as inside one file
    first: dict[str, int] = {}
    kept: list[PairRecord] = []
    for pr in pairs:
        if pr.pair_id in first:
            rejects.append(Reject(row=pr.row, field="pair_id", pair_id=pr.pair_id, source_file=str(path),
                                  reason=f"row {pr.row}: duplicate pair_id {pr.pair_id!r} (first seen at row "
                                         f"{first[pr.pair_id]})"))
            continue
        first[pr.pair_id] = pr.row
        kept.append(pr)
    rejects.sort(key=lambda j: (j.row if j.row is not None else -1))
    return ReadResult(pairs=kept, rejects=rejects, rows_in=sum(r.rows_in for r in results),
                      source_file=str(path), rows_ok=len(kept))


# ---------------------------------------------------------------------------------------------
# Blocks: one large file read in parallel pieces, validated exactly as if it were read whole
# ---------------------------------------------------------------------------------------------

#: Rows per block of a Parquet file or a Hugging Face dataset (whole row groups are kept together).
BLOCK_ROWS: int = 50_000
#: Bytes per block of a JSON Lines file (a block ends at the first line feed after this many bytes).
BLOCK_BYTES: int = 32 * 2**20


@dataclass(frozen=True)
class Block:
    """A contiguous piece of one input, read and validated on its own.

    Attributes:
        index: the block's position in its input (0-based).
        kind: "parquet" (row groups ``[start, stop)`` of ``part``, or of the file itself), "jsonl"
            (bytes ``[start, stop)``, starting at a line start) or "rows" (rows ``[start, stop)`` of a
            Hugging Face dataset).
        start, stop: the bounds, in the unit of ``kind``.
        first_row: the input row of the block's first record: rows, default pair ids and reject
            messages are those of the input read whole.
        n_rows: records in the block (for JSONL: non-blank lines).
        first_line: the 1-based file line of the block's first line (JSONL messages name lines).
        part: for a Parquet-export folder, the file (relative to the folder) the row groups belong to.
    """

    index: int
    kind: str
    start: int
    stop: int
    first_row: int
    n_rows: int
    first_line: int = 1
    part: str = ""

    def bounds(self) -> dict:
        """What identifies the block inside its input (part of its score key)."""
        out = {"kind": self.kind, "start": self.start, "stop": self.stop, "first_row": self.first_row}
        if self.part:
            out["part"] = self.part
        return out

    def to_json(self) -> str:
        return json.dumps(self.__dict__, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Block":
        return cls(**json.loads(text))


def _blockable(p: Path, fmt: str, options: Mapping[str, Any]) -> str | None:
    """The block kind ``fmt`` reads ``p`` with, or None when only a whole-file read gives today's records."""
    suffix = p.suffix.lower()
    if fmt == "lfqa-hp":
        return "parquet" if suffix == ".parquet" else ("jsonl" if suffix == ".jsonl" else None)
    if fmt == "lfqa-eval":
        return "jsonl" if suffix == ".jsonl" else None
    if fmt == "parquet":
        return "parquet"
    if fmt == "jsonl":
        return "jsonl" if suffix == ".jsonl" else None
    return None  # graded lists pair answers across a question; CSV records may span lines; .json is one list


def _group_row_groups(md, block_rows: int, first_row: int, index: int, part: str = "") -> list[Block]:
    blocks: list[Block] = []
    start, rows = 0, 0
    row = first_row
    for g in range(md.num_row_groups):
        rows += md.row_group(g).num_rows
        if rows >= block_rows or g == md.num_row_groups - 1:
            blocks.append(Block(index=index + len(blocks), kind="parquet", start=start, stop=g + 1, first_row=row,
                                n_rows=rows, part=part))
            row += rows
            start, rows = g + 1, 0
    return blocks


def _parquet_metadata(p: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(p).metadata
    except (pa.ArrowException, OSError, ValueError) as e:
        raise InputError(f"cannot read Parquet file {str(p)!r} (truncated or corrupt?): {e}") from e


def _is_blank(line: bytes) -> bool:
    """A JSONL line that :func:`_iter_jsonl` skips (whitespace only, Unicode whitespace included)."""
    stripped = line.strip()
    if not stripped:
        return True
    if stripped.isascii():
        return False
    return not line.decode("utf-8", errors="surrogateescape").strip()


def _plan_jsonl(p: Path, block_bytes: int) -> list[Block]:
    blocks: list[Block] = []
    pos, row, line = 0, 0, 1
    try:
        with p.open("rb") as f:
            _check_encoding(p, f.read(_HEAD_BYTES))
            f.seek(0)
            # every pass but the last reads at least block_bytes: the file's size bounds the passes
            for _ in range(p.stat().st_size // max(1, block_bytes) + 2):
                data = f.read(block_bytes)
                if not data:
                    break
                if not data.endswith(b"\n"):
                    data += f.readline()  # extend to the end of the line: blocks start at line starts
                body = data[3:] if pos == 0 and data.startswith(b"\xef\xbb\xbf") else data
                lines = body.split(b"\n")
                if lines and lines[-1] == b"":
                    lines.pop()
                n = sum(1 for ln in lines if not _is_blank(ln))
                blocks.append(Block(index=len(blocks), kind="jsonl", start=pos, stop=pos + len(data), first_row=row,
                                    n_rows=n, first_line=line))
                pos += len(data)
                row += n
                line += data.count(b"\n")
            else:
                raise InputError(f"{str(p)!r} grew while it was being cut into blocks; score it once it is complete")
    except OSError as e:
        raise InputError(f"cannot read {str(p)!r}: {e}") from e
    return blocks


def plan_blocks(path: str | Path, fmt: str, *, block_rows: int = BLOCK_ROWS, block_bytes: int = BLOCK_BYTES,
                **options: Any) -> list[Block] | None:
    """Cut one input into blocks that read and validate exactly like the whole input.

    Parquet (``lfqa-hp``, ``parquet``): whole row groups, at least ``block_rows`` rows per block.
    JSON Lines (``.jsonl`` files of ``lfqa-hp``, ``lfqa-eval``, ``jsonl``): byte ranges of about
    ``block_bytes`` that end at a line feed. Hugging Face (``hf``): row ranges of a saved dataset, or
    each Parquet file's row groups of a Parquet-export folder. Other inputs (graded lists, CSV, a
    ``.json`` list) are read whole: their records cannot be cut without reading everything before them.

    Returns:
        The blocks in input order, or None when the input is read whole (one block, or not cuttable).
        An ``hf`` input always gets blocks (it has no whole-file reader of its own).

    Raises:
        InputError: the file's metadata cannot be read (the whole-file read would fail the same way),
            except that a Parquet or JSONL file that cannot be planned returns None, so that the
            whole-file read reports it exactly as before.
    """
    if block_rows < 1 or block_bytes < 1:
        raise ConfigError(f"'block_rows' and 'block_bytes' must be >= 1, got {block_rows}, {block_bytes}")
    if fmt == "hf":
        split = options.get("split") or DEFAULT_HF_SPLIT
        root = Path(str(path))
        if root.is_dir() and not _is_saved_dataset(root):
            files = _hf_parquet_files(root, split)
            if not files:
                raise InputError(f"{str(path)!r} holds no Parquet files and is not a save_to_disk folder")
            blocks: list[Block] = []
            row = 0
            for f in files:
                md = _parquet_metadata(f)
                if md.num_rows == 0:
                    continue
                got = _group_row_groups(md, block_rows, row, len(blocks), part=f.relative_to(root).as_posix())
                blocks.extend(got)
                row += md.num_rows
            if not blocks:
                raise InputError(f"{str(path)!r} holds no records")
            return blocks
        n = len(open_hf_dataset(path, split))
        if n == 0:
            raise InputError(f"{str(path)!r} holds no records")
        return [Block(index=i, kind="rows", start=s, stop=min(s + block_rows, n), first_row=s,
                      n_rows=min(s + block_rows, n) - s) for i, s in enumerate(range(0, n, block_rows))]
    p = Path(path)
    if not p.is_file():
        return None
    kind = _blockable(p, fmt, options)
    try:
        if kind == "parquet":
            blocks = _group_row_groups(_parquet_metadata(p), block_rows, 0, 0)
        elif kind == "jsonl":
            blocks = _plan_jsonl(p, block_bytes)
        else:
            return None
    except InputError:
        return None  # the whole-file read reports the same file the usual way
    if sum(b.n_rows for b in blocks) == 0 or len(blocks) < 2:
        return None
    return blocks


def _block_records(p: Path, kind: str, block: Block) -> list[Any]:
    if block.kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(p).read_row_groups(range(block.start, block.stop)).to_pylist()
        except (pa.ArrowException, OSError, ValueError) as e:
            raise InputError(f"cannot read Parquet file {str(p)!r} (truncated or corrupt?): {e}") from e
    if block.kind == "jsonl":
        try:
            with p.open("rb") as f:
                _check_encoding(p, f.read(_HEAD_BYTES))
                f.seek(block.start)
                data = f.read(block.stop - block.start)
        except OSError as e:
            raise InputError(f"cannot read {str(p)!r}: {e}") from e
        if block.start == 0 and data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        text = data.decode("utf-8", errors="surrogateescape")
        if text.endswith("\n"):
            text = text[:-1]  # the whole-file split sees this line feed as the start of the next line
        return [rec for _, _, rec in _iter_jsonl(text, block.first_line)]
    raise ConfigError(f"block kind {block.kind!r} does not apply to {str(p)!r}")


def read_block(path: str | Path, fmt: str, block: Block, **options: Any) -> ReadResult:
    """Read and validate one block of an input (see :func:`plan_blocks`).

    Rows, default pair ids (``f"{stem}:row{N}"``, ``N`` the input row) and reject messages are
    those of the input read whole. A pair id repeated inside the block is rejected here; one repeated
    across blocks is the job's to reject (:mod:`rubric.assemble`), with the same message.

    Raises:
        ConfigError: ``fmt`` or an option is invalid.
        InputError: the block cannot be read.
    """
    if fmt == "hf":
        unknown = sorted(set(options) - set(_HF_OPTIONS))
        if unknown:
            raise ConfigError(f"unknown option(s) {', '.join(map(repr, unknown))} for format 'hf'; "
                              f"accepted: {', '.join(_HF_OPTIONS)}")
        name = hf_name(path)
        build, id_fields = _hf_builder(name, options)
        if block.kind == "rows":
            ds = open_hf_dataset(path, options.get("split") or DEFAULT_HF_SPLIT)
            records = ds.with_format("arrow")[block.start:block.stop].to_pylist()
        else:
            records = _block_records(Path(str(path)) / block.part, "parquet", block)
        if options.get("mapping"):
            mapping = options["mapping"]
            _check_mapped_columns(Path(str(path)), records,
                                  parse_mapping(mapping) if isinstance(mapping, str) else _check_mapping(mapping))
        return _read_pairs(Path(f"{name}.hf"), records, build, id_fields, row_offset=block.first_row)
    _check_options(fmt, options)
    p = _check_path(path)
    kind = _blockable(p, fmt, options)
    if kind is None or kind != block.kind:
        raise ConfigError(f"format {fmt!r} does not read {str(p)!r} in {block.kind} blocks")
    records = _block_records(p, kind, block)
    max_a = options.get("max_answer_chars", DEFAULT_MAX_ANSWER_CHARS)
    max_q = options.get("max_question_chars", DEFAULT_MAX_QUESTION_CHARS)
    _check_max(max_a, max_q)
    if fmt == "lfqa-hp":
        build, id_fields = _hp_builder(p, max_a, max_q), ("pair_id", "id")
    elif fmt == "lfqa-eval":
        build, id_fields = _eval_builder(p, max_a, max_q), ("pair_id", "id")
    else:
        mapping = options["mapping"]
        cols = parse_mapping(mapping) if isinstance(mapping, str) else _check_mapping(mapping)
        if options.get("label_values") is not None and "label" not in cols:
            raise ConfigError("'label_values' (--labels) needs a label column in the mapping (label=COLUMN)")
        build, id_fields = _table_builder(p, cols, _label_table(options.get("label_values")), max_a, max_q)
        _check_mapped_columns(p, records, cols)
    result = _read_pairs(p, records, build, id_fields, row_offset=block.first_row)
    return result
