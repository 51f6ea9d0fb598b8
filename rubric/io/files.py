"""File access for the readers: paths, encodings (UTF-8 only, with a message for UTF-16/32 and
binary files), JSON / JSON Lines / Parquet / CSV loaders, repeated JSON keys, and the file kind."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rubric.errors import InputError
from rubric.io.fields import RowError

__all__ = ["check_path", "load_records", "kind_of", "RepeatedKeys", "read_parquet", "open_parquet"]

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# File access
# ---------------------------------------------------------------------------------------------


def check_path(path: str | Path) -> Path:
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


class RepeatedKeys(dict):
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
        flagged = RepeatedKeys(out)
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
    """Yield (row, line_number, record-or-RowError) for each non-blank line (rows counted from 0)."""
    row = 0
    for lineno, line in _lines(text, start_line):
        if not line.strip():
            continue
        # a byte-order mark at the start of a line: files concatenated with `cat`, each with a BOM
        line = line.removeprefix("\ufeff")
        try:
            rec: Any = _loads(line)
        except json.JSONDecodeError as e:
            rec = RowError(None, f"line {lineno} is not valid JSON ({e.msg} at column {e.colno})")
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


#: Bytes per read when a file is hashed.
_CHUNK = 1 << 20


def stream_sha256(f) -> str:
    """The sha256 (hex) of an open binary file's bytes from where it stands, read in chunks."""
    h = hashlib.sha256()
    while chunk := f.read(_CHUNK):
        h.update(chunk)
    return h.hexdigest()


def open_parquet(path: str | Path, read, *, message: str | None = None, sha256: str | None = None):
    """``read(pyarrow.parquet.ParquetFile)`` of ``path``, opened once: every read of the file goes through
    that one open file. (pyarrow given a path opens it more than once, so a file replaced by rename in
    between, as a publish replaces a table, was read half from each and called damaged.)

    Args:
        sha256: the digest a manifest records for the file: the open file's bytes are checked against it first,
            so tables read with one manifest's digests are that run's set, whatever is published meanwhile.

    Raises:
        InputError: the file cannot be opened or read as Parquet: ``message`` (default: it names the file,
            "damaged or not Parquet"), then pyarrow's reason; or its bytes are not the ``sha256`` given.
    """
    import pyarrow.parquet as pq

    try:
        with open(path, "rb") as f:
            if sha256 is None or stream_sha256(f) == sha256:
                f.seek(0)
                return read(pq.ParquetFile(f))
    except Exception as e:  # pyarrow raises several types for a missing or damaged file
        raise InputError(f"{message or f'cannot read {path} (damaged or not Parquet)'}: {e}") from None
    raise InputError(f"{path} does not match the sha256 its folder's manifest records: a job published into the "
                     "folder while it was read, or the folder mixes two runs' files; read it again")


def read_parquet(path: str | Path, *, columns: list[str] | None = None, message: str | None = None,
                 sha256: str | None = None) -> Any:
    """A whole Parquet table (a ``pyarrow.Table``), read through one open file (:func:`open_parquet`; ``sha256``:
    the digest its bytes must have).

    Raises:
        InputError: the file cannot be opened or read as Parquet, or is not the ``sha256`` given.
    """
    return open_parquet(path, lambda pf: pf.read(columns=columns), message=message, sha256=sha256)


def _load_parquet(p: Path) -> list[Any]:
    return read_parquet(p, message=f"cannot read Parquet file {str(p)!r} (truncated or corrupt?)").to_pylist()


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
                records.append(RowError(None, (
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


def load_records(p: Path, kind: str) -> list[Any]:
    if kind == "parquet":
        records = _load_parquet(p)
    elif kind == "csv":
        records = _load_csv(p)
    else:
        records = _load_json_records(p)
    if not records:
        raise InputError(f"{str(p)!r} holds no records")
    return records


def kind_of(p: Path, fmt: str | None = None) -> str:
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


