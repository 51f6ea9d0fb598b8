"""Feature tables: per-answer rubric scores and per-pair vectors with their differences.

Writing results into tables is kept apart from scoring (spaCy's predict / set_annotations split):
scorers return ``Score`` lists, and these functions lay them out as Arrow tables.

Per-answer columns: ids and text, then for each rubric ``r``: ``r`` (1-5), ``r_raw``, ``r_error``,
any extras as ``r_<extra>``, and provenance ``r_version``, ``r_backend``, ``r_model``,
``r_model_revision``, ``r_template_hash``.
Per-pair columns: ids, label, source, domain, expert, split, word counts, and for each rubric
``a_r``, ``b_r``, ``d_r = a_r - b_r`` and ``prov_r`` (the key of the rubric's provenance record).

Both tables carry in their schema metadata the rubric list and ``{rubric: provenance record}``
(see :mod:`rubric.provenance`), so a table says how each column was made, and the per-row
``prov_r`` keys expose tables made differently that were concatenated.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rubric.errors import ConfigError, InputError
from rubric.provenance import (PROVENANCE_INDEX_META_KEY, PROVENANCE_META_KEY, provenance_column,
                               provenance_key, provenance_metadata, rubric_provenance, table_provenance,
                               table_provenance_index)
from rubric.records import AnswerItem, PairRecord
from rubric.rescale import FittedMinMax
from rubric.scoring import Provenance, Score
from rubric.specs import RubricSpec

__all__ = ["answers_table", "pairs_table", "table_rubrics", "concat_feature_tables", "DesignMatrix",
           "design_matrix", "word_count"]

log = logging.getLogger(__name__)

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

    The 1-5 column uses each rubric's declared range, or its ``fitted`` bounds where it has them;
    the schema metadata records which, with the rest of each rubric's provenance.
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
    records = {spec.name: rubric_provenance(provenance[spec.name], spec, fitted) for spec in specs}
    return table.replace_schema_metadata({**_meta([s.name for s in specs]), **provenance_metadata(records)})


def pairs_table(pairs: Sequence[PairRecord], splits: Sequence[str], answers: pa.Table) -> pa.Table:
    """Join per-answer 1-5 scores onto pairs; one output row per pair, in input order.

    The answers table's provenance is copied into the metadata, and each row gets ``prov_<rubric>``.

    Raises:
        ConfigError: splits and pairs differ in length, or a pair's answer is not in ``answers``.
        ProvenanceError: ``answers`` records no provenance.
    """
    if len(splits) != len(pairs):
        raise ConfigError(f"{len(splits)} splits for {len(pairs)} pairs")
    rubrics = table_rubrics(answers)
    records = table_provenance(answers)
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
        cols[provenance_column(r)] = [provenance_key(records[r])] * len(pairs)
    table = pa.table(cols)
    for r in rubrics:
        for name in (f"a_{r}", f"b_{r}", f"d_{r}"):
            i = table.schema.get_field_index(name)
            table = table.set_column(i, name, table.column(name).cast(pa.float64()))
        col = provenance_column(r)
        table = table.set_column(table.schema.get_field_index(col), col, table.column(col).cast(pa.string()))
    return table.replace_schema_metadata({**_meta(rubrics), **provenance_metadata(records)})


def concat_feature_tables(tables: Sequence[pa.Table]) -> pa.Table:
    """Concatenate feature tables (e.g. a Ray job's shards) keeping what their metadata says.

    The result has the first table's metadata, plus every part's provenance records in its index, so
    rows made differently (their ``prov_<rubric>`` keys differ) can still be described field by field.
    Concatenating does not check anything: fitting and evaluating do.

    Raises:
        ConfigError: no tables.
    """
    if not tables:
        raise ConfigError("no tables to concatenate")
    if len(tables) == 1:
        return tables[0]
    merged = pa.concat_tables(tables, promote_options="default")
    meta = dict(tables[0].schema.metadata or {})
    index: dict[str, dict] = {}
    for t in tables:
        index.update(table_provenance_index(t))
    if PROVENANCE_META_KEY in meta:
        meta.update(provenance_metadata(table_provenance(tables[0]), index))
    elif index:  # the first part predates provenance; keep what the others say without inventing records
        meta[PROVENANCE_INDEX_META_KEY] = json.dumps(index, sort_keys=True).encode()
    return merged.replace_schema_metadata(meta)


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
        question_id: the question ids of the kept rows (the clusters of the bootstrap).
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
    question_id: np.ndarray


def design_matrix(pairs: pa.Table, *, split: str | None = None, features: Sequence[str] | None = None,
                  keep_ties: bool = False, max_missing: float = 0.5) -> DesignMatrix:
    """Select a split's rows and the rubric differences to model.

    Args:
        pairs: a table from :func:`pairs_table`.
        split: "train", "dev", "test", or None for all rows.
        features: rubrics to use (a fitted model's), taken as given; None chooses them: every rubric
            that has values on enough of the split's pairs and is not constant on its kept rows.
        keep_ties: keep "tie" rows (3-way model) instead of dropping them.
        max_missing: when choosing features, a rubric missing on more than this share of the
            split's pairs is excluded (and reported) rather than dropping most pairs.

    Raises:
        ConfigError: a requested feature is not in the table, or the split is empty.
    """
    rubrics = table_rubrics(pairs)
    cols = {name: pairs.column(name).to_pylist()
            for name in ("label", "split", "n_words_a", "n_words_b", "pair_id", "question_id")}
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

    def kept_rows(used: Sequence[str]) -> tuple[list[int], int, int]:
        kept, n_missing, n_ties = [], 0, 0
        for i in rows:
            if not keep_ties and cols["label"][i] == "tie":
                n_ties += 1
                continue
            if any(diffs[r][i] is None or not math.isfinite(diffs[r][i]) for r in used):
                n_missing += 1
                continue
            kept.append(i)
        return kept, n_missing, n_ties

    kept, n_missing, n_ties = kept_rows(use)
    if features is None:
        # A rubric whose difference never varies (grammar 5.0 on every answer) carries no information:
        # the scaler maps it to 0 and its weight would be reported as a measured -0.0000. Dropping it can
        # bring back rows it was missing on, which can make another rubric vary, so repeat until stable.
        # One kept row is "constant" by definition and says nothing about the rubric: leave that case to
        # the fit, which refuses it anyway.
        while len(kept) >= 2:
            constant = [r for r in use if len({diffs[r][i] for i in kept}) == 1]
            if not constant:
                break
            for r in constant:
                value = diffs[r][kept[0]]
                excluded[r] = (f"constant on the {split or 'all'} split (every difference is {value:g}): "
                               "nothing to learn")
                log.warning("rubric %s left out: %s", r, excluded[r])
            use = [r for r in use if r not in constant]
            kept, n_missing, n_ties = kept_rows(use)
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
        question_id=np.array([cols["question_id"][i] for i in kept], dtype=object),
    )
