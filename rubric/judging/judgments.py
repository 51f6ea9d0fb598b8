"""The judgments table: what an LLM judge said about each pair, in each presentation order.

A judge job writes ``OUT/judgments.parquet`` with one row per pair x judge x order:

- the pair, as the feature tables have it: ``pair_id``, ``question_id``, ``answer_id_a``,
  ``answer_id_b``, ``label`` ("a"/"b"/"tie", null when unlabeled), ``split``, ``n_words_a``,
  ``n_words_b``;
- the judge: ``judge`` (a versioned name such as ``judge.plain.v1``), ``mode`` ("logprob" or "vote");
- the presentation: ``order`` is "ab" when the answers were shown as in the input, "ba" when swapped;
- the judgement, always in the input's labelling whatever the order: ``p_a`` (the probability that
  the input's answer a is preferred), ``p_tie``, ``decision`` ("a"/"b"/"tie");
- the order-debiased judgement, the same on both rows of a pair x judge: ``p_a_debiased`` (the mean
  of the two orders' ``p_a``) and ``decision_debiased``;
- ``error``: why the row has no judgement (a bad row never kills a job), else null;
- provenance: ``model``, ``model_revision``, ``template_hash``, ``backend``.

This module owns the schema: :func:`judgments_table` builds and validates the table from rows,
:func:`validate_judgments` checks one read from disk, :func:`read_judgments` reads an output folder,
:func:`check_both_orders` checks that every pair x judge was judged once in each order, and
:func:`pair_decisions` reads one judge's order-debiased decision per pair.
"""

from __future__ import annotations

import logging
import numbers
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from rubric.judging.judges import ORDERS
from rubric.errors import ConfigError, InputError

__all__ = ["JUDGMENTS_FILE", "JUDGMENT_COLUMNS", "NULLABLE_COLUMNS", "PAIR_COLUMNS", "DECISIONS", "MODES",
           "judgments_table", "validate_judgments", "read_judgments", "write_judgments", "check_both_orders"]

log = logging.getLogger(__name__)

#: The file a judge job writes in its output folder.
JUDGMENTS_FILE = "judgments.parquet"

#: Every column of the judgments table, in order, with its Arrow type.
JUDGMENT_COLUMNS: dict[str, pa.DataType] = {
    "pair_id": pa.string(),
    "question_id": pa.string(),
    "answer_id_a": pa.string(),
    "answer_id_b": pa.string(),
    "label": pa.string(),
    "split": pa.string(),
    "n_words_a": pa.int64(),
    "n_words_b": pa.int64(),
    "judge": pa.string(),
    "mode": pa.string(),
    "order": pa.string(),
    "p_a": pa.float64(),
    "p_tie": pa.float64(),
    "decision": pa.string(),
    "p_a_debiased": pa.float64(),
    "decision_debiased": pa.string(),
    "error": pa.string(),
    "model": pa.string(),
    "model_revision": pa.string(),
    "template_hash": pa.string(),
    "backend": pa.string(),
}

#: Columns that may be null; every other column needs a value on every row.
NULLABLE_COLUMNS: frozenset[str] = frozenset({"label", "p_a", "p_tie", "decision", "p_a_debiased",
                                              "decision_debiased", "error", "model_revision"})

#: Columns that describe the pair itself: the same on every row of a pair, whatever the judge or order.
PAIR_COLUMNS: tuple[str, ...] = ("question_id", "answer_id_a", "answer_id_b", "label", "split", "n_words_a",
                                 "n_words_b")

DECISIONS: tuple[str, ...] = ("a", "b", "tie")
MODES: tuple[str, ...] = ("logprob", "vote")
_SPLITS: tuple[str, ...] = ("train", "dev", "test")

#: Allowed values of the enumerated columns (null is allowed where the column is nullable).
_VALUES: dict[str, tuple[str, ...]] = {"label": DECISIONS, "decision": DECISIONS, "decision_debiased": DECISIONS,
                                       "order": ORDERS, "mode": MODES, "split": _SPLITS}
_PROBABILITIES = ("p_a", "p_tie", "p_a_debiased")
_COUNTS = ("n_words_a", "n_words_b")


def _kind(t: pa.DataType) -> str:
    return "str" if pa.types.is_string(t) else "int" if pa.types.is_integer(t) else "float"


def _python_type_ok(value, kind: str) -> bool:
    if isinstance(value, bool):  # a bool is an int to Python, never a count or a probability here
        return False
    if kind == "str":
        return isinstance(value, str)
    if kind == "int":
        return isinstance(value, numbers.Integral)
    return isinstance(value, numbers.Real)


def judgments_table(rows: Sequence[Mapping]) -> pa.Table:
    """Build the judgments table from one dict per pair x judge x order, checking every column.

    Every row must have every column of :data:`JUDGMENT_COLUMNS` (None for a null); columns beyond
    them (raw outputs, vote counts) are kept after them with the type Arrow infers.

    Args:
        rows: the rows.

    Returns:
        The table, columns in :data:`JUDGMENT_COLUMNS` order, then the extra columns.

    Raises:
        ConfigError: a row lacks a column, a value has the wrong type ("column 'p_a' must be a float
            or null, got str '0.7' (row 3)"), a required value is null, or a value is out of its
            domain (see :func:`validate_judgments`).
    """
    rows = list(rows)
    cols: dict[str, list] = {}
    for name, typ in JUDGMENT_COLUMNS.items():
        kind = _kind(typ)
        nullable = name in NULLABLE_COLUMNS
        values = []
        for i, row in enumerate(rows):
            if name not in row:
                n_missing = sum(1 for r in rows if name not in r)
                raise ConfigError(f"judgments: missing column {name!r} (row {i}, and {n_missing} row(s) in all)")
            v = row[name]
            if v is None:
                if not nullable:
                    raise ConfigError(f"judgments: column {name!r} must have a value, got None (row {i})")
            elif not _python_type_ok(v, kind):
                want = {"str": "a str", "int": "an int", "float": "a float"}[kind] + (" or null" if nullable else "")
                raise ConfigError(f"judgments: column {name!r} must be {want}, got {type(v).__name__} {v!r} (row {i})")
            values.append(v)
        cols[name] = values
    extra: list[str] = []
    for row in rows:
        extra.extend(k for k in row if k not in JUDGMENT_COLUMNS and k not in extra)
    arrays = {name: pa.array(cols[name], type=typ) for name, typ in JUDGMENT_COLUMNS.items()}
    for name in extra:
        try:
            arrays[name] = pa.array([row.get(name) for row in rows])
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise ConfigError(f"judgments: extra column {name!r} has values of mixed types: {e}") from None
    return validate_judgments(pa.table(arrays))


def validate_judgments(table: pa.Table) -> pa.Table:
    """Check a judgments table's columns, types and values; cast it to the canonical types.

    Accepted types: any string type for a string column; any integer type for a count; any integer or
    floating type for a probability; the null type (an all-null column) where nulls are allowed.

    Args:
        table: a judgments table (built here or read from disk).

    Returns:
        The table with every contract column cast to its type in :data:`JUDGMENT_COLUMNS`, extra
        columns kept as they are.

    Raises:
        ConfigError: a column is missing or of the wrong type, a required column holds a null, an
            enumerated column holds another value (order not "ab"/"ba", mode not "logprob"/"vote",
            decision not "a"/"b"/"tie", split not "train"/"dev"/"test"), a probability is outside
            [0, 1] or NaN, a word count is negative, or an id is empty.
    """
    missing = [c for c in JUDGMENT_COLUMNS if c not in table.column_names]
    if missing:
        raise ConfigError("judgments: missing column(s) " + ", ".join(repr(c) for c in missing))
    out = {}
    for name, typ in JUDGMENT_COLUMNS.items():
        col = table.column(name)
        have = col.type
        kind = _kind(typ)
        ok = (pa.types.is_null(have) and name in NULLABLE_COLUMNS
              or kind == "str" and (pa.types.is_string(have) or pa.types.is_large_string(have))
              or kind == "int" and pa.types.is_integer(have)
              or kind == "float" and (pa.types.is_floating(have) or pa.types.is_integer(have)))
        if not ok:
            raise ConfigError(f"judgments: column {name!r} must be of type {typ}, got {have}")
        col = col.cast(typ)
        if name not in NULLABLE_COLUMNS and col.null_count:
            raise ConfigError(f"judgments: column {name!r} has {col.null_count} null value(s); it needs a value "
                              "on every row")
        out[name] = col
    for name, allowed in _VALUES.items():
        bad = sorted(v for v in pc.unique(out[name]).to_pylist() if v is not None and v not in allowed)
        if bad:
            raise ConfigError(f"judgments: column {name!r} must be one of {', '.join(allowed)}"
                              + (" or null" if name in NULLABLE_COLUMNS else "") + f", got {bad[:5]}")
    for name in _PROBABILITIES:
        col = out[name]
        if len(col) - col.null_count == 0:
            continue
        if pc.any(pc.is_nan(col)).as_py():
            raise ConfigError(f"judgments: column {name!r} holds NaN; write null for a missing probability")
        lo, hi = pc.min_max(col).values()
        if lo.as_py() < 0 or hi.as_py() > 1:
            raise ConfigError(f"judgments: column {name!r} must hold probabilities in [0, 1], got values from "
                              f"{lo.as_py():g} to {hi.as_py():g}")
    for name in _COUNTS:
        if len(out[name]) and pc.min(out[name]).as_py() < 0:
            raise ConfigError(f"judgments: column {name!r} must be >= 0, got {pc.min(out[name]).as_py()}")
    for name in ("pair_id", "question_id", "answer_id_a", "answer_id_b", "judge"):
        if len(out[name]) and pc.any(pc.equal(pc.utf8_length(out[name]), 0)).as_py():
            raise ConfigError(f"judgments: column {name!r} holds an empty string")
    extra = [c for c in table.column_names if c not in JUDGMENT_COLUMNS]
    return pa.table({**out, **{c: table.column(c) for c in extra}})


def read_judgments(out_dir: str | Path) -> pa.Table:
    """Read and validate a judge output's ``OUT/judgments.parquet``.

    Args:
        out_dir: the judge job's output folder.

    Returns:
        The validated table (see :func:`validate_judgments`).

    Raises:
        InputError: the file is absent, not Parquet (damaged), or breaks the schema; the message names
            the file. Or the folder is not one run's complete set (``rubric.io.check_published``).
    """
    from rubric.io import check_published, read_parquet

    path = Path(out_dir) / JUDGMENTS_FILE
    if not path.is_file():
        raise InputError(f"{path} not found: run 'lfqa-rubric judge ... --out {out_dir}' first")
    check_published(out_dir)
    table = read_parquet(path)  # through one open file
    try:
        return validate_judgments(table)
    except ConfigError as e:
        raise InputError(f"{path}: {e}") from None


def write_judgments(table: pa.Table, out_dir: str | Path) -> Path:
    """Validate a judgments table and write it as ``OUT/judgments.parquet`` (the folder is created).

    Returns:
        The written path.

    Raises:
        ConfigError: the table breaks the schema (see :func:`validate_judgments`).
    """
    import pyarrow.parquet as pq

    table = validate_judgments(table)
    path = Path(out_dir) / JUDGMENTS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def pair_decisions(table: pa.Table, judge: str | None = None) -> tuple[str, dict[str, str | None]]:
    """One judge's order-debiased decision per pair, read from its "ab" rows (both rows carry it).

    Args:
        table: a judgments table.
        judge: the judge version; default the judge of the first "ab" row (a protocol job has one).

    Returns:
        (the judge, pair_id -> ``decision_debiased``); ("", {}) for a table without an "ab" row.
    """
    d = table.select(["pair_id", "judge", "order", "decision_debiased"]).to_pydict()
    if judge is None:
        judge = next((j for j, o in zip(d["judge"], d["order"]) if o == "ab"), "")
    return judge, {p: x for p, j, o, x in zip(d["pair_id"], d["judge"], d["order"], d["decision_debiased"])
                   if j == judge and o == "ab"}


def _show(values) -> str:
    return ", ".join(repr(v) for v in sorted(values, key=lambda v: (v is None, str(v))))


def check_both_orders(table: pa.Table) -> list[str]:
    """Everything that stops a judgments table from holding one judgement per order for every pair x judge.

    Checks that every (pair, judge) has exactly one "ab" row and one "ba" row, that the two rows agree
    on the mode and on the debiased judgement (``p_a_debiased``, ``decision_debiased``), and that
    every row of a pair, whatever the judge, describes the same pair (:data:`PAIR_COLUMNS`).

    Args:
        table: a judgments table (validated).

    Returns:
        One line per problem, e.g. "pair 'p1', judge 'judge.plain.v1': 2 'ab' row(s) and 0 'ba'
        row(s)"; empty when there is none.
    """
    cols = {c: table.column(c).to_pylist() for c in ("pair_id", "judge", "order", "mode", "p_a_debiased",
                                                     "decision_debiased", *PAIR_COLUMNS)}
    by_key: dict[tuple[str, str], list[int]] = defaultdict(list)
    pair_values: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    for i, (pid, judge) in enumerate(zip(cols["pair_id"], cols["judge"])):
        by_key[(pid, judge)].append(i)
        for c in PAIR_COLUMNS:
            pair_values[pid][c].add(cols[c][i])
    problems = []
    for (pid, judge), idx in by_key.items():
        orders = [cols["order"][i] for i in idx]
        n_ab, n_ba = orders.count("ab"), orders.count("ba")
        where = f"pair {pid!r}, judge {judge!r}"
        if (n_ab, n_ba) != (1, 1):
            problems.append(f"{where}: {n_ab} 'ab' row(s) and {n_ba} 'ba' row(s), expected one of each")
        for c in ("mode", "decision_debiased", "p_a_debiased"):
            values = {cols[c][i] for i in idx}
            if c == "p_a_debiased":  # the same mean computed twice may differ in the last bits
                values = {None if v is None else round(v, 9) for v in values}
            if len(values) > 1:
                problems.append(f"{where}: {c} differs between its rows ({_show(values)})")
    for pid, values in pair_values.items():
        for c in PAIR_COLUMNS:
            if len(values[c]) > 1:
                problems.append(f"pair {pid!r}: {c} differs between its rows ({_show(values[c])})")
    return problems
