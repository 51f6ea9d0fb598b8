"""``--map`` parsing: a table's columns named onto our fields (``question=q,answer_a=...``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rubric.errors import ConfigError, InputError
from rubric.io.records import LABELS

__all__ = ["TABLE_FIELDS", "parse_mapping", "parse_label_values", "mapping_entries", "check_mapping",
           "check_mapped_columns"]

logger = logging.getLogger(__name__)


#: Our field names that ``read_table`` can map onto a file's columns.
TABLE_FIELDS: tuple[str, ...] = (
    "question", "answer_a", "answer_b", "label", "pair_id", "source", "domain", "expert", "docs_a", "docs_b",
    "split", "reference",
)
#: ``label`` is optional: without it every pair of the table is unlabeled (scored, not judged).
_TABLE_REQUIRED: tuple[str, ...] = ("question", "answer_a", "answer_b")




def check_mapping(mapping: Mapping[str, str], fields: Sequence[str] = TABLE_FIELDS,
                  required: Sequence[str] = _TABLE_REQUIRED) -> dict[str, str]:
    """``mapping`` (our field -> the file's column) checked against the fields a reader knows.

    Raises:
        ConfigError: an unknown or missing field, or a column name that is not a non-empty string.
    """
    unknown = sorted(set(mapping) - set(fields))
    if unknown:
        raise ConfigError(f"unknown mapping field(s) {', '.join(map(repr, unknown))}; "
                          f"known: {', '.join(fields)}")
    missing = [f for f in required if f not in mapping]
    if missing:
        raise ConfigError(f"mapping is missing required field(s) {', '.join(map(repr, missing))}; "
                          f"required: {', '.join(required)} (label is optional)")
    for key, col in mapping.items():
        if not isinstance(col, str) or not col.strip():
            raise ConfigError(f"mapping[{key!r}] must be a non-empty column name, got {col!r}")
    for side in ("answer_a", "answer_b"):
        if "reference" in mapping and mapping.get(side) == mapping["reference"]:
            raise ConfigError(f"--map reference={mapping['reference']} is also {side}'s column: a compared answer "
                              "cannot be its own reference")
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
    return check_mapping(mapping_entries(text))


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


def check_mapped_columns(p: Path, records: Sequence[Any], cols: Mapping[str, str]) -> None:
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


