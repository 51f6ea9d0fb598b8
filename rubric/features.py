"""Feature tables: per-answer rubric scores and per-pair vectors with their differences.

Writing results into tables is kept apart from scoring (spaCy's predict / set_annotations split):
scorers return ``Score`` lists, and these functions lay them out as Arrow tables.

Per-answer columns: ids and text, then for each rubric ``r``: ``r`` (1-5), ``r_raw``, ``r_error``,
any extras as ``r_<extra>``, and provenance ``r_version``, ``r_backend``, ``r_model``,
``r_model_revision``, ``r_template_hash``.
Per-pair columns: ids, label, source, domain, expert, split, word counts, and for each rubric
``a_r``, ``b_r`` and ``d_r = a_r - b_r``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rubric.errors import ConfigError, InputError
from rubric.records import AnswerItem, PairRecord
from rubric.rescale import FittedMinMax
from rubric.scoring import Provenance, Score
from rubric.specs import RubricSpec

__all__ = ["answers_table", "pairs_table", "table_rubrics", "DesignMatrix", "design_matrix", "word_count"]

_META_KEY = b"lfqa_rubric.rubrics"


def word_count(text: str) -> int:
    return len(text.split())


def _meta(rubrics: Sequence[str]) -> dict[bytes, bytes]:
    return {_META_KEY: json.dumps(list(rubrics)).encode()}


def table_rubrics(table: pa.Table) -> list[str]:
    """The rubric names a feature table was written with (from its schema metadata)."""
    meta = table.schema.metadata or {}
    if _META_KEY not in meta:
        raise InputError("this table was not written by lfqa-rubric (no rubric list in its metadata)")
    return json.loads(meta[_META_KEY])


def answers_table(items: Sequence[AnswerItem], specs: Sequence[RubricSpec],
                  scores: Mapping[str, Sequence[Score]], provenance: Mapping[str, Provenance],
                  fitted: FittedMinMax | None = None) -> pa.Table:
    """Lay out per-answer scores. ``scores[r][i]`` is rubric ``r``'s score of ``items[i]``.

    The 1-5 column uses each rubric's declared range, or its ``fitted`` bounds where it has them.
    """
    cols: dict[str, list] = {
        "answer_id": [it.answer_id for it in items],
        "question": [it.question for it in items],
        "answer": [it.answer for it in items],
        "n_words": [word_count(it.answer) for it in items],
        "n_chars": [len(it.answer) for it in items],
    }
    for spec in specs:
        r = spec.name
        rs = scores[r]
        if len(rs) != len(items):
            raise ConfigError(f"rubric {r!r} has {len(rs)} scores for {len(items)} answers")
        if fitted is not None and r in fitted.bounds:
            to_1_5 = lambda x, _r=r: fitted.transform(_r, x)  # noqa: E731
        else:
            to_1_5 = spec.rescale
        cols[r] = [None if s.raw is None else to_1_5(s.raw) for s in rs]
        cols[f"{r}_raw"] = [s.raw for s in rs]
        cols[f"{r}_error"] = [s.error for s in rs]
        extra_keys = sorted({k for s in rs for k in s.extras})
        for k in extra_keys:
            cols[f"{r}_{k}"] = [s.extras.get(k) for s in rs]
        p = provenance[r]
        for key, val in (("version", p.rubric_version), ("backend", p.backend), ("model", p.model_id),
                         ("model_revision", p.model_revision), ("template_hash", p.template_hash)):
            cols[f"{r}_{key}"] = [val] * len(items)
    table = pa.table(cols)
    for spec in specs:  # keep score columns float even when every value is null
        for name in (spec.name, f"{spec.name}_raw"):
            i = table.schema.get_field_index(name)
            table = table.set_column(i, name, table.column(name).cast(pa.float64()))
        i = table.schema.get_field_index(f"{spec.name}_error")
        table = table.set_column(i, f"{spec.name}_error", table.column(f"{spec.name}_error").cast(pa.string()))
    return table.replace_schema_metadata(_meta([s.name for s in specs]))


def pairs_table(pairs: Sequence[PairRecord], splits: Sequence[str], answers: pa.Table) -> pa.Table:
    """Join per-answer 1-5 scores onto pairs; one output row per pair, in input order."""
    if len(splits) != len(pairs):
        raise ConfigError(f"{len(splits)} splits for {len(pairs)} pairs")
    rubrics = table_rubrics(answers)
    index = {aid: i for i, aid in enumerate(answers.column("answer_id").to_pylist())}
    n_words = answers.column("n_words").to_pylist()
    cols: dict[str, list] = {
        "pair_id": [p.pair_id for p in pairs],
        "row": [p.row for p in pairs],
        "question_id": [p.question_id for p in pairs],
        "question": [p.question for p in pairs],
        "answer_id_a": [p.answer_id_a for p in pairs],
        "answer_id_b": [p.answer_id_b for p in pairs],
        "label": [p.label for p in pairs],
        "source": [p.source for p in pairs],
        "domain": [p.domain for p in pairs],
        "expert": [p.expert for p in pairs],
        "split": list(splits),
    }
    try:
        ia = [index[p.answer_id_a] for p in pairs]
        ib = [index[p.answer_id_b] for p in pairs]
    except KeyError as e:
        raise ConfigError(f"answer {e.args[0]} of a pair is missing from the answers table") from None
    cols["n_words_a"] = [n_words[i] for i in ia]
    cols["n_words_b"] = [n_words[i] for i in ib]
    for r in rubrics:
        vals = answers.column(r).to_pylist()
        a = [vals[i] for i in ia]
        b = [vals[i] for i in ib]
        cols[f"a_{r}"] = a
        cols[f"b_{r}"] = b
        cols[f"d_{r}"] = [None if x is None or y is None else x - y for x, y in zip(a, b)]
    table = pa.table(cols)
    for r in rubrics:
        for name in (f"a_{r}", f"b_{r}", f"d_{r}"):
            i = table.schema.get_field_index(name)
            table = table.set_column(i, name, table.column(name).cast(pa.float64()))
    return table.replace_schema_metadata(_meta(rubrics))


@dataclass(frozen=True)
class DesignMatrix:
    """Rubric differences ready for the preference model.

    Attributes:
        X: (n, f) float array of ``a - b`` differences of the used rubrics.
        y: labels "a"/"b"/"tie".
        features: the used rubric names, in column order.
        excluded: rubric name -> why it was left out (e.g. no values at all).
        n_missing_rows: pairs dropped because a used rubric was missing for one of their answers.
        n_ties_dropped: ties dropped (when ties are not modelled).
        n_words_a / n_words_b: answer lengths, for the "longer answer wins" baseline.
        pair_id: the pair ids of the kept rows.
    """

    X: np.ndarray
    y: np.ndarray
    features: list[str]
    excluded: dict[str, str]
    n_missing_rows: int
    n_ties_dropped: int
    n_words_a: np.ndarray
    n_words_b: np.ndarray
    pair_id: np.ndarray


def design_matrix(pairs: pa.Table, *, split: str | None = None, features: Sequence[str] | None = None,
                  keep_ties: bool = False, max_missing: float = 0.5) -> DesignMatrix:
    """Select a split's rows and the rubric differences to model.

    Args:
        pairs: a table from :func:`pairs_table`.
        split: "train", "dev", "test", or None for all rows.
        features: rubrics to use (a fitted model's); None uses every rubric that has values.
        keep_ties: keep "tie" rows (3-way model) instead of dropping them.
        max_missing: when choosing features, a rubric missing on more than this share of the
            split's pairs is excluded (and reported) rather than dropping most pairs.

    Raises:
        ConfigError: a requested feature is not in the table, or the split is empty.
    """
    rubrics = table_rubrics(pairs)
    cols = {name: pairs.column(name).to_pylist() for name in ("label", "split", "n_words_a", "n_words_b", "pair_id")}
    rows = [i for i, s in enumerate(cols["split"]) if split in (None, "all") or s == split]
    if not rows:
        raise ConfigError(f"split {split!r} has no pairs")
    excluded: dict[str, str] = {}
    if features is None:
        use = []
        for r in rubrics:
            vals = pairs.column(f"d_{r}").to_pylist()
            n_missing_r = sum(1 for i in rows if vals[i] is None)
            if n_missing_r == len(rows):
                excluded[r] = "no values (every answer failed or the rubric was not scored)"
            elif n_missing_r > max_missing * len(rows):
                excluded[r] = (f"missing for {n_missing_r} of {len(rows)} pairs (over {max_missing:.0%}); "
                               f"see the {r}_error column of answers.parquet")
            else:
                use.append(r)
    else:
        missing = [f for f in features if f not in rubrics]
        if missing:
            raise ConfigError(f"features {missing} are not in this table (it has {rubrics})")
        use = list(features)
    diffs = {r: pairs.column(f"d_{r}").to_pylist() for r in use}
    kept, n_missing, n_ties = [], 0, 0
    for i in rows:
        if not keep_ties and cols["label"][i] == "tie":
            n_ties += 1
            continue
        if any(diffs[r][i] is None or not math.isfinite(diffs[r][i]) for r in use):
            n_missing += 1
            continue
        kept.append(i)
    X = np.array([[diffs[r][i] for r in use] for i in kept], dtype=float).reshape(len(kept), len(use))
    return DesignMatrix(
        X=X,
        y=np.array([cols["label"][i] for i in kept], dtype=object),
        features=use,
        excluded=excluded,
        n_missing_rows=n_missing,
        n_ties_dropped=n_ties,
        n_words_a=np.array([cols["n_words_a"][i] for i in kept], dtype=float),
        n_words_b=np.array([cols["n_words_b"][i] for i in kept], dtype=float),
        pair_id=np.array([cols["pair_id"][i] for i in kept], dtype=object),
    )
