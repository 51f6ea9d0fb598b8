"""Apply a fitted preference model to the pairs of a table, labeled or not.

One output row per pair of the chosen split, in table order: P(a preferred) as fitted and, for a model
with style covariates, style-controlled; the predicted label; and, for the binary model, each column's
contribution to the logit, so a prediction can be read off its parts::

    sum(contrib_<column>) + intercept == log(p_a / (1 - p_a))

A rubric missing on one answer of a pair (it abstained, or its score failed) is read by the model's missing-value
rule (:mod:`rubric.tables.missing`), and ``missing`` names the rubrics so read for that pair. A pair the model
cannot score (a style count missing; or a model saved before missing values were read, format v3, and a rubric
missing on one side) keeps its row, with null predictions and the reason in ``error``, so the output accounts for
every input pair.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import numpy as np
import pyarrow as pa

from rubric.preference.evaluate import check_model_table, model_inputs
from rubric.tables import table_rubrics
from rubric.preference.fitted_on import FITTED_ON_KEY, sample_status
from rubric.preference.model import PreferenceModel
from rubric.tables import STYLE_COVARIATES

__all__ = ["PREDICTIONS_META_KEY", "predict_pairs", "write_predictions"]

log = logging.getLogger(__name__)

#: Schema-metadata key of the predictions table: which model made it and how it differs from the table.
PREDICTIONS_META_KEY = b"lfqa_rubric.predictions"


def _missing_reasons(pairs: pa.Table, rows: list[int], model: PreferenceModel) -> dict[int, str]:
    """Why each table row in ``rows`` could not be scored: the rubrics (or style counts) missing for it."""
    if not rows:
        return {}
    checks: list[tuple[str, list]] = [(r, pairs.column(f"d_{r}").to_pylist()) for r in model.features_]
    for s in model.style_features_:
        count = STYLE_COVARIATES[s][1]
        for side in "ab":
            checks.append((f"{count}_{side} (for {s})", pairs.column(f"{count}_{side}").to_pylist()))
    out = {}
    old = " (this model reads no missing value: it was saved before lfqa-rubric modelled them; re-fit it)" \
        if model.missing_.mode == "drop" else ""
    for i in rows:
        missing = [name for name, values in checks if values[i] is None or not math.isfinite(values[i])]
        out[i] = "missing value for " + ", ".join(missing) + old if missing else "not scored"
    return out


def _filled(pairs: pa.Table, rows: list[int], model: PreferenceModel) -> list[str | None]:
    """Per row, the model's rubrics that had no value on one answer or both and were read by its missing-value
    rule (``coherence (a)``, ``factuality (a, b)``), or None."""
    sides = {r: (pairs.column(f"a_{r}").to_pylist(), pairs.column(f"b_{r}").to_pylist()) for r in model.features_}

    def gone(x) -> bool:
        return x is None or not math.isfinite(x)

    out = []
    for i in rows:
        parts = []
        for r, (a, b) in sides.items():
            which = [s for s, v in (("a", a[i]), ("b", b[i])) if gone(v)]
            if which:
                parts.append(f"{r} ({', '.join(which)})")
        out.append("; ".join(parts) or None)
    return out


def predict_pairs(model: PreferenceModel, pairs: pa.Table, *, split: str | None = None,
                  allow_provenance_mismatch: bool = False) -> pa.Table:
    """Predictions for every pair of a split, labeled or not.

    Args:
        model: a fitted model.
        pairs: a pairs table.
        split: "train", "dev", "test", or None / "all" for every pair.
        allow_provenance_mismatch: predict even when the model's features were made differently from
            the table's; the differences are logged and recorded in the output's metadata.

    Returns:
        A table with ``pair_id``, ``question_id``, ``split``, ``label`` (null when unknown), ``p_a``
        (``p_b`` and ``p_tie`` too for a three-way model), ``p_a_style_controlled`` (models with style
        covariates), ``predicted``, for binary models ``contrib_<column>`` (the column's weight times its
        standardised value) and ``intercept`` (signed for "a"), ``missing`` (the rubrics without a value on
        an answer of the pair, read by the model's missing-value rule; null when none) and ``error`` (why a pair
        has no prediction, else null).

    Raises:
        ProvenanceError: the model's and the table's provenance differ and that is not allowed.
        ConfigError: the split has no pairs.
    """
    differences = check_model_table(model, pairs, allow_provenance_mismatch=allow_provenance_mismatch,
                                    action="predict")
    table_rubrics(pairs)  # a table not written by lfqa-rubric fails here with its own message
    dm = model_inputs(model, pairs, split=split, keep_unlabeled=True, keep_ties=True)
    splits = pairs.column("split").to_pylist()
    rows = [i for i, s in enumerate(splits) if split in (None, "all") or s == split]
    pos = {int(i): k for k, i in enumerate(dm.row_index)}
    n = len(rows)
    scored = np.array([i in pos for i in rows], dtype=bool)
    take = np.array([pos[i] for i in rows if i in pos], dtype=int)
    X = dm.X[take]
    classes = [str(c) for c in model.classes_]
    binary = classes == ["a", "b"]

    def spread(values) -> list:
        """Per-output-row values: the scored rows' values in place, None elsewhere."""
        it = iter(values.tolist() if isinstance(values, np.ndarray) else values)
        return [next(it) if ok else None for ok in scored]

    cols: dict[str, list] = {}
    for name in ("pair_id", "question_id", "split", "label"):
        values = splits if name == "split" else pairs.column(name).to_pylist()
        cols[name] = [values[i] for i in rows]
    if len(X):
        proba = model.predict_proba(X)
        predicted = model.predict(X).astype(str)
    else:
        proba = np.zeros((0, len(classes)))
        predicted = np.zeros(0, dtype=str)
    cols["p_a"] = spread(proba[:, classes.index("a")])
    if not binary:
        for c in classes:
            if c != "a":
                cols[f"p_{c}"] = spread(proba[:, classes.index(c)])
    if model.style_features_:
        p_sc = model.predict_proba(X, style_controlled=True)[:, classes.index("a")] if len(X) else np.zeros(0)
        cols["p_a_style_controlled"] = spread(p_sc)
    cols["predicted"] = spread(list(predicted))
    if binary:
        if len(X):
            contrib, intercept = model.contributions(X)
        else:
            contrib, intercept = np.zeros((0, len(model.columns_))), float(-model.lr_.intercept_[0])
        for j, c in enumerate(model.columns_):
            cols[f"contrib_{c}"] = spread(contrib[:, j])
        cols["intercept"] = [intercept if ok else None for ok in scored]
    else:
        log.info("no per-feature contributions for a three-way model (one logit per class)")
    reasons = _missing_reasons(pairs, [i for i, ok in zip(rows, scored) if not ok], model)
    filled = _filled(pairs, rows, model)
    cols["missing"] = [f if ok else None for f, ok in zip(filled, scored)]
    cols["error"] = [None if ok else reasons[i] for i, ok in zip(rows, scored)]
    types = {"pair_id": pa.string(), "question_id": pa.string(), "split": pa.string(), "label": pa.string(),
             "predicted": pa.string(), "missing": pa.string(), "error": pa.string()}
    table = pa.table({k: pa.array(v, type=types.get(k, pa.float64())) for k, v in cols.items()})
    status = sample_status(model, pairs, split or "all")
    fitted = (model.metadata_ or {}).get(FITTED_ON_KEY) if isinstance(model.metadata_, dict) else None
    meta = {"model_features": list(model.features_), "style_features": list(model.style_features_),
            "length_betas": model.length_betas, "classes": classes, "provenance_differences": differences,
            "n_pairs": n, "n_unscored": int((~scored).sum()), "missing_rule": model.missing_.to_dict(),
            "n_read_by_missing_rule": sum(1 for f, ok in zip(filled, scored) if ok and f),
            # what the model was fitted on travels with its predictions: `analyze` marks the rows of any
            # table of them by question overlap (rubric.analysis.predictions_systems), never by file or split name
            FITTED_ON_KEY: {k: fitted[k] for k in ("split", "pairs_sha256", "question_hashes") if k in fitted}
            if isinstance(fitted, dict) else None,
            "sample": {"kind": status.kind, "n_overlap": status.n_overlap, "note": status.note}}
    if status.in_sample:
        log.info("%s", status.note)
    if meta["n_unscored"]:
        log.warning("%d of %d pairs have no prediction (a rubric value is missing): see the error column",
                    meta["n_unscored"], n)
    return table.replace_schema_metadata({PREDICTIONS_META_KEY: json.dumps(meta).encode()})


def write_predictions(table: pa.Table, path: str | Path) -> None:
    """Write a predictions table as Parquet (the folder is created)."""
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
