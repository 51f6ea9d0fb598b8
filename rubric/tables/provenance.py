"""Per-rubric provenance records: how a feature column was made, so that results made one way are
never combined with results made another way without saying so.

A record is a small JSON object::

    {"rubric_version": "grammar.harper.v1", "backend": "harper", "model_id": "", "model_revision": "",
     "template_hash": "", "rescale": {"kind": "declared", "lo": 1.0, "hi": 5.0}}

where ``rescale`` gives the raw range mapped to 1-5 (the rubric's declared ``raw_min``/``raw_max``, or
the bounds fitted on the training split). Feature tables carry ``{rubric: record}`` in their schema
metadata, and pairs tables also carry one ``prov_<rubric>`` column holding each row's record key, so a
table concatenated from differently-made parts shows it row by row. Fitted models store the records of
their features and are compared with a table's before they are applied to it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence

import pyarrow as pa

from rubric.errors import ProvenanceError
from rubric.scoring import FittedMinMax
from rubric.scoring import Provenance
from rubric.scoring import RubricSpec

__all__ = [
    "PROVENANCE_META_KEY",
    "PROVENANCE_INDEX_META_KEY",
    "RECORD_FIELDS",
    "rubric_provenance",
    "check_record",
    "provenance_key",
    "provenance_column",
    "provenance_metadata",
    "table_provenance",
    "table_provenance_index",
    "provenance_differences",
    "table_provenance_problems",
    "require_uniform_provenance",
]

#: Schema-metadata key of ``{rubric: record}``: how this table's rubric columns were made.
PROVENANCE_META_KEY = b"lfqa_rubric.provenance"
#: Schema-metadata key of ``{key: record}`` for every record key the table's rows may hold; tables
#: concatenated by :func:`rubric.tables.features.concat_feature_tables` keep the union of their parts' entries,
#: so a mix can be described field by field rather than only by opaque keys.
PROVENANCE_INDEX_META_KEY = b"lfqa_rubric.provenance_index"

#: The fields of a record, flattened, in the order differences are reported.
RECORD_FIELDS = ("rubric_version", "backend", "model_id", "model_revision", "template_hash",
                 "rescale.kind", "rescale.lo", "rescale.hi")
_STRING_FIELDS = RECORD_FIELDS[:5]
_RESCALE_KINDS = ("declared", "fitted")
#: What a record is, in a few words, when there is no other record to say how it differs from.
_IDENTITY_FIELDS = ("rubric_version", "backend", "model_id", "rescale.kind")


def rubric_provenance(prov: Provenance, spec: RubricSpec, fitted: FittedMinMax | None = None) -> dict:
    """The provenance record of one rubric column.

    Args:
        prov: what the scorer reported (rubric version, backend, model, template hash).
        spec: the rubric's declaration, whose raw range is the declared rescaling.
        fitted: data-fitted min-max bounds; used for this rubric when it has bounds there, exactly as
            :func:`rubric.tables.features.answers_table` rescales it.

    Returns:
        A record that :func:`check_record` accepts.
    """
    if fitted is not None and spec.name in fitted.bounds:
        lo, hi = fitted.bounds[spec.name]
        rescale = {"kind": "fitted", "lo": float(lo), "hi": float(hi)}
    else:
        rescale = {"kind": "declared", "lo": float(spec.raw_min), "hi": float(spec.raw_max)}
    return {"rubric_version": prov.rubric_version, "backend": prov.backend, "model_id": prov.model_id,
            "model_revision": prov.model_revision, "template_hash": prov.template_hash, "rescale": rescale}


def check_record(obj: object, *, what: str = "provenance record") -> dict:
    """Validate a record read from JSON and return a normalised copy (bounds as floats).

    Raises:
        ProvenanceError: a field is missing or has the wrong type.
    """
    if not isinstance(obj, Mapping):
        raise ProvenanceError(f"{what} must be an object, got {type(obj).__name__}")
    for f in _STRING_FIELDS:
        if not isinstance(obj.get(f), str):
            raise ProvenanceError(f"{what}: {f!r} must be a string, got {obj.get(f)!r}")
    rescale = obj.get("rescale")
    if not isinstance(rescale, Mapping) or rescale.get("kind") not in _RESCALE_KINDS:
        raise ProvenanceError(f"{what}: 'rescale' must be an object with 'kind' in {_RESCALE_KINDS}, got {rescale!r}")
    bounds = []
    for b in ("lo", "hi"):
        v = rescale.get(b)
        # bool is an int subclass; a JSON true is not a bound
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ProvenanceError(f"{what}: 'rescale.{b}' must be a finite number, got {v!r}")
        bounds.append(float(v))
    return {**{f: obj[f] for f in _STRING_FIELDS},
            "rescale": {"kind": rescale["kind"], "lo": bounds[0], "hi": bounds[1]}}


def provenance_key(record: Mapping) -> str:
    """A stable short key of a record: the first 16 hex digits of the sha256 of its canonical JSON."""
    canonical = json.dumps(check_record(record), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def provenance_column(rubric: str) -> str:
    """The pairs-table column holding each row's provenance key for ``rubric``."""
    return f"prov_{rubric}"


def provenance_metadata(records: Mapping[str, Mapping],
                        index: Mapping[str, Mapping] | None = None) -> dict[bytes, bytes]:
    """Schema metadata entries for a table made with ``records`` (``{rubric: record}``).

    Args:
        records: the table's per-rubric records.
        index: further ``{key: record}`` entries the table's rows may hold (from concatenated parts).
    """
    checked = {r: check_record(rec, what=f"provenance of {r!r}") for r, rec in records.items()}
    full_index = {k: check_record(v, what=f"provenance {k}") for k, v in (index or {}).items()}
    full_index.update({provenance_key(rec): rec for rec in checked.values()})
    return {PROVENANCE_META_KEY: json.dumps(checked, sort_keys=True).encode(),
            PROVENANCE_INDEX_META_KEY: json.dumps(full_index, sort_keys=True).encode()}


def table_provenance(table: pa.Table) -> dict[str, dict]:
    """The ``{rubric: record}`` a feature table was written with (from its schema metadata).

    Raises:
        ProvenanceError: the table records no provenance (written before provenance was recorded),
            or its record is damaged.
    """
    meta = table.schema.metadata or {}
    if PROVENANCE_META_KEY not in meta:
        raise ProvenanceError("this table records no provenance (it was written before lfqa-rubric recorded how "
                              "each rubric was made): re-run score to rebuild it")
    try:
        doc = json.loads(meta[PROVENANCE_META_KEY])
    except ValueError as e:
        raise ProvenanceError(f"this table's provenance metadata is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise ProvenanceError(f"this table's provenance metadata must be an object, got {type(doc).__name__}")
    return {r: check_record(rec, what=f"the table's provenance of {r!r}") for r, rec in doc.items()}


def table_provenance_index(table: pa.Table) -> dict[str, dict]:
    """Every ``{key: record}`` the table's metadata can describe (its own records and its index)."""
    meta = table.schema.metadata or {}
    index: dict[str, dict] = {}
    if PROVENANCE_INDEX_META_KEY in meta:
        try:
            doc = json.loads(meta[PROVENANCE_INDEX_META_KEY])
        except ValueError as e:
            raise ProvenanceError(f"this table's provenance index metadata is not JSON: {e}") from None
        if not isinstance(doc, dict):
            raise ProvenanceError("this table's provenance index metadata must be an object")
        index.update({k: check_record(v, what=f"provenance {k}") for k, v in doc.items()})
    if PROVENANCE_META_KEY in meta:
        index.update({provenance_key(rec): rec for rec in table_provenance(table).values()})
    return index


def _flat(record: Mapping) -> dict[str, object]:
    out = {f: record[f] for f in _STRING_FIELDS}
    out.update({f"rescale.{k}": v for k, v in record["rescale"].items()})
    return out


def _show(value: object) -> str:
    return "'' (empty)" if value == "" else str(value)


def _differing_fields(records: Sequence[Mapping]) -> list[str]:
    flats = [_flat(r) for r in records]
    return [f for f in RECORD_FIELDS if len({repr(fl[f]) for fl in flats}) > 1]


def provenance_differences(model_prov: Mapping[str, Mapping], table_prov: Mapping[str, Mapping],
                           features: Sequence[str]) -> list[str]:
    """Every way the model's features were made differently from the table's, one line each.

    Args:
        model_prov: ``{rubric: record}`` stored with the model.
        table_prov: ``{rubric: record}`` of the table (see :func:`table_provenance`).
        features: the rubrics to compare (the model's features).

    Returns:
        Lines like ``"grammar: rubric_version is grammar.harper.v1 in the model, grammar.languagetool.v1
        in the table"``; a rubric missing on either side is a line too. Empty when they agree.
    """
    lines = []
    for f in features:
        if f not in model_prov:
            lines.append(f"{f}: the model records no provenance for it")
        if f not in table_prov:
            lines.append(f"{f}: the table records no provenance for it")
        if f not in model_prov or f not in table_prov:
            continue
        m, t = _flat(model_prov[f]), _flat(table_prov[f])
        for field in RECORD_FIELDS:
            if m[field] != t[field]:
                lines.append(f"{f}: {field} is {_show(m[field])} in the model, {_show(t[field])} in the table")
    return lines


def _describe(key: str | None, index: Mapping[str, Mapping], fields: Sequence[str]) -> str:
    if key is None:
        return "no provenance key"
    if key not in index:
        return f"{key}, not described in this table's metadata (rows from a table made another way)"
    flat = _flat(index[key])
    return (f"{key}: " + ", ".join(f"{f} {_show(flat[f])}" for f in fields)) if fields else key


def table_provenance_problems(table: pa.Table, features: Sequence[str]) -> list[str]:
    """Where a table's rows disagree about how ``features`` were made, one line per rubric.

    A ``prov_<rubric>`` column holding more than one key (a concatenation of tables made differently),
    or one key that is not the metadata's (metadata copied from another table), is a problem.

    Raises:
        ProvenanceError: the table records no provenance at all.
    """
    records = table_provenance(table)
    index = table_provenance_index(table)
    lines = []
    for r in features:
        col = provenance_column(r)
        if r not in records:
            lines.append(f"{r}: the table's metadata records no provenance for it")
            continue
        if col not in table.column_names:
            lines.append(f"{r}: the table has no {col} column to show how each row was made")
            continue
        counts = Counter(table.column(col).to_pylist())
        meta_key = provenance_key(records[r])
        if len(counts) > 1:
            known = [index[k] for k in counts if k in index]
            fields = _differing_fields(known)
            # with one described record there is nothing to compare it with: say what it is
            shown = fields or list(_IDENTITY_FIELDS)
            parts = [f"{n} rows with {_describe(k, index, shown)}" for k, n in counts.most_common()]
            lines.append(f"{r}: {col} holds {len(counts)} different provenances: " + "; ".join(parts)
                         + (f" (they differ in {', '.join(fields)})" if fields else ""))
        elif counts and next(iter(counts)) != meta_key:
            (k, n), = counts.items()
            fields = _differing_fields([records[r], index[k]]) if k in index else []
            lines.append(f"{r}: all {n} rows have {col} {_describe(k, index, fields)}, but the table's metadata "
                         f"records {_describe(meta_key, index, fields or list(_IDENTITY_FIELDS))}"
                         + (f" (they differ in {', '.join(fields)})" if fields else ""))
    return lines


def require_uniform_provenance(table: pa.Table, features: Sequence[str], *, action: str) -> None:
    """Raise unless every row of ``table`` made ``features`` the same way its metadata says.

    Args:
        table: a pairs table.
        features: the rubrics about to be used.
        action: what is refused, for the message (e.g. "fit").

    Raises:
        ProvenanceError: listing every rubric whose rows mix provenances, with row counts and the
            fields that differ; or the table records no provenance ("re-run score").
    """
    problems = table_provenance_problems(table, features)
    if problems:
        raise ProvenanceError(f"cannot {action} on a table whose rows were made in different ways:\n- "
                              + "\n- ".join(problems)
                              + "\nscore each part the same way (or fit on one part) instead of mixing them")
