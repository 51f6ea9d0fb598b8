"""Feature tables: per-answer rubric scores and per-pair vectors with their differences.

Writing results into tables is kept apart from scoring (spaCy's predict / set_annotations split):
scorers return ``Score`` lists, and these functions lay them out as Arrow tables.

Per-answer columns: ids and text, ``n_words`` (whitespace tokens), ``n_chars``, ``n_md`` (markdown
elements, :func:`rubric.tables.style.markdown_count`), then for each rubric ``r``: ``r`` (1-5), ``r_raw``, ``r_error``,
any extras as ``r_<extra>``, and provenance ``r_version``, ``r_backend``, ``r_model``,
``r_model_revision``, ``r_template_hash``.
Per-pair columns: ids, label (null for an unlabeled pair), source, domain, expert, split, word and
markdown counts of both answers (``n_words_a``, ``n_words_b``, ``n_md_a``, ``n_md_b``), and for each
rubric ``a_r``, ``b_r``, ``d_r = a_r - b_r`` and ``prov_r`` (the key of the rubric's provenance record).

Both tables carry in their schema metadata the rubric list and ``{rubric: provenance record}``
(see :mod:`rubric.tables.provenance`) and the style covariates its counts support (``{name: version}``, see
:mod:`rubric.tables.style`), so a table says how each column was made, and the per-row ``prov_r`` keys expose
tables made differently that were concatenated.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from rubric.errors import ConfigError, InputError
from rubric.tables.provenance import (PROVENANCE_INDEX_META_KEY, PROVENANCE_META_KEY, provenance_column,
                               provenance_key, provenance_metadata, rubric_provenance, table_provenance,
                               table_provenance_index)
from rubric.io import AnswerItem, PairRecord
from rubric.scoring import FittedMinMax
from rubric.scoring import Provenance, Score, is_abstention
from rubric.scoring import RubricSpec
from rubric.tables.missing import MissingRule, fit_missing_rule
from rubric.tables.style import (STYLE_COVARIATES, STYLE_META_KEY, length_decorrelation_beta, markdown_count,
                          normalised_difference)

__all__ = ["answers_table", "pairs_table", "table_rubrics", "table_style", "concat_feature_tables", "DesignMatrix",
           "design_matrix", "fit_length_betas", "word_count", "ASPECT_COLUMN_PREFIX"]

log = logging.getLogger(__name__)

_META_KEY = b"lfqa_rubric.rubrics"
#: Pairs-table columns holding one aspect's judgement each: ``aspect_coherence``, ``aspect_factuality``.
ASPECT_COLUMN_PREFIX = "aspect_"


def word_count(text: str) -> int:
    """Whitespace tokens (``str.split()``): the length behind ``n_words`` and the ``style_length`` covariate."""
    return len(text.split())


def _meta(rubrics: Sequence[str]) -> dict[bytes, bytes]:
    style = {name: version for name, (version, _) in STYLE_COVARIATES.items()}
    return {_META_KEY: json.dumps(list(rubrics)).encode(), STYLE_META_KEY: json.dumps(style, sort_keys=True).encode()}


def table_style(table: pa.Table) -> dict[str, str]:
    """``{covariate: version}`` of the style covariates a feature table's counts support; empty for a
    table written before lfqa-rubric counted markdown."""
    meta = table.schema.metadata or {}
    if STYLE_META_KEY not in meta:
        return {}
    try:
        doc = json.loads(meta[STYLE_META_KEY])
    except ValueError as e:
        raise InputError(f"this table's style metadata is not JSON: {e}") from None
    if not isinstance(doc, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in doc.items()):
        raise InputError(f"this table's style metadata must map covariate names to versions, got {doc!r}")
    return doc


def table_rubrics(table: pa.Table) -> list[str]:
    """The rubric names a feature table was written with (from its schema metadata)."""
    meta = table.schema.metadata or {}
    if _META_KEY not in meta:
        raise InputError("this table was not written by lfqa-rubric (no rubric list in its metadata)")
    return json.loads(meta[_META_KEY])


def answers_table(items: Sequence[AnswerItem], specs: Sequence[RubricSpec],
                  scores: Mapping[str, Sequence[Score]], provenance: Mapping[str, Provenance],
                  fitted: FittedMinMax | None = None,
                  extra_keys: Mapping[str, Sequence[str]] | None = None) -> pa.Table:
    """Lay out per-answer scores. ``scores[r][i]`` is rubric ``r``'s score of ``items[i]``.

    The 1-5 column uses each rubric's declared range, or its ``fitted`` bounds where it has them;
    the schema metadata records which, with the rest of each rubric's provenance.

    Args:
        extra_keys: rubric -> the extras to lay out as columns (null where a score lacks one); default:
            every extra any of these scores has. A table written in pieces passes the whole job's
            keys so that every piece has the same columns.
    """
    cols: dict[str, list] = {
        "answer_id": [it.answer_id for it in items],
        "question": [it.question for it in items],
        "answer": [it.answer for it in items],
        "n_words": [word_count(it.answer) for it in items],
        "n_chars": [len(it.answer) for it in items],
        "n_md": [markdown_count(it.answer) for it in items],
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
        keys = sorted({k for s in rs for k in s.extras}) if extra_keys is None else sorted(extra_keys.get(r, ()))
        for k in keys:
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
    """Join per-answer 1-5 scores and counts onto pairs; one output row per pair, in input order.

    The answers table's provenance is copied into the metadata, and each row gets ``prov_<rubric>``.
    An unlabeled pair (``label`` None) keeps a null label. Per-aspect human judgements become
    ``aspect_<name>`` columns ("a"/"b"/"tie"/null); ``answer_type_a``/``answer_type_b`` say who wrote
    each answer ("" when unknown); ``has_reference`` whether the pair's question has a reference answer.

    Raises:
        ConfigError: splits and pairs differ in length, a pair's answer is not in ``answers``, or
            ``answers`` has no ``n_md`` column (written before markdown was counted: re-run score).
        ProvenanceError: ``answers`` records no provenance.
    """
    if len(splits) != len(pairs):
        raise ConfigError(f"{len(splits)} splits for {len(pairs)} pairs")
    rubrics = table_rubrics(answers)
    records = table_provenance(answers)
    index = {aid: i for i, aid in enumerate(answers.column("answer_id").to_pylist())}
    n_words = answers.column("n_words").to_pylist()
    if "n_md" not in answers.column_names:
        raise ConfigError("the answers table has no n_md column (it was written before lfqa-rubric counted "
                          "markdown): re-run score")
    n_md = answers.column("n_md").to_pylist()
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
        "answer_type_a": [p.answer_type_a for p in pairs],
        "answer_type_b": [p.answer_type_b for p in pairs],
        "has_reference": [p.reference is not None for p in pairs],
    }
    # per-aspect human judgements (lfqa_eval's coherence_preference, ...): one column per aspect any pair has
    aspects = sorted({name for p in pairs for name, _ in p.aspects})
    for name in aspects:
        cols[f"{ASPECT_COLUMN_PREFIX}{name}"] = [dict(p.aspects).get(name) for p in pairs]
    try:
        ia = [index[p.answer_id_a] for p in pairs]
        ib = [index[p.answer_id_b] for p in pairs]
    except KeyError as e:
        raise ConfigError(f"answer {e.args[0]} of a pair is missing from the answers table") from None
    cols["n_words_a"] = [n_words[i] for i in ia]
    cols["n_words_b"] = [n_words[i] for i in ib]
    cols["n_md_a"] = [n_md[i] for i in ia]
    cols["n_md_b"] = [n_md[i] for i in ib]
    for r in rubrics:
        vals = answers.column(r).to_pylist()
        a = [vals[i] for i in ia]
        b = [vals[i] for i in ib]
        cols[f"a_{r}"] = a
        cols[f"b_{r}"] = b
        errs = answers.column(f"{r}_error").to_pylist()
        both_abstain = [is_abstention(errs[i]) and is_abstention(errs[j]) for i, j in zip(ia, ib)]
        # both answers abstain (the rubric has nothing to judge on either): nothing to compare, difference 0
        cols[f"d_{r}"] = [0.0 if both else None if x is None or y is None else x - y
                          for x, y, both in zip(a, b, both_abstain)]
        cols[provenance_column(r)] = [provenance_key(records[r])] * len(pairs)
    table = pa.table(cols)
    for r in rubrics:
        for name in (f"a_{r}", f"b_{r}", f"d_{r}"):
            i = table.schema.get_field_index(name)
            table = table.set_column(i, name, table.column(name).cast(pa.float64()))
        col = provenance_column(r)
        table = table.set_column(table.schema.get_field_index(col), col, table.column(col).cast(pa.string()))
    # an all-null label or aspect column (unlabeled pairs) would otherwise be typed null, not string
    for name in ["label"] + [f"{ASPECT_COLUMN_PREFIX}{a}" for a in aspects]:
        table = table.set_column(table.schema.get_field_index(name), name, table.column(name).cast(pa.string()))
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
    """Rubric differences (and style covariates) ready for the preference model.

    Attributes:
        X: (n, f + m + s) float array: the ``a - b`` differences of the used rubrics (a missing side read by
            ``missing``; residualised against the length difference when ``length_betas`` were given), then the
            missing-side indicators of ``missing.indicators``, then the style covariates.
        y: labels "a"/"b"/"tie", or None for an unlabeled pair (kept only with ``keep_unlabeled``).
        features: the used rubric names, in column order (the first f columns).
        excluded: rubric name -> why it was left out (e.g. no values at all).
        n_missing_rows: pairs dropped because a used rubric was missing for one of their answers and the rule
            drops such pairs (``missing.mode == "drop"``), or because a style count was missing.
        n_ties_dropped: ties dropped (when ties are not modelled).
        n_words_a / n_words_b: answer lengths, for the "longer answer wins" baseline.
        pair_id: the pair ids of the kept rows.
        question_id: the question ids of the kept rows (the clusters of the bootstrap).
        n_unlabeled: unlabeled pairs dropped (0 with ``keep_unlabeled``, which keeps them).
        style_features: the style covariate names, in column order (the last s columns).
        row_index: the table row of each kept row.
        missing: the rule that read a rubric missing on one side (:class:`rubric.tables.missing.MissingRule`).
        n_filled: rubric -> kept pairs whose value was missing on one side and read by ``missing``.
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
    n_unlabeled: int = 0
    style_features: tuple[str, ...] = ()
    row_index: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    missing: MissingRule = field(default_factory=lambda: MissingRule(mode="drop"))
    n_filled: dict[str, int] = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        """Every column name of ``X``: the rubrics, their missing-side indicators, then the style covariates."""
        return list(self.features) + self.missing.columns + list(self.style_features)


def _style_columns(pairs: pa.Table, names: Sequence[str]) -> dict[str, tuple[list, list]]:
    """Covariate name -> the (a, b) per-answer counts it is built from; refuses a table without them."""
    unknown = [n for n in names if n not in STYLE_COVARIATES]
    if unknown:
        raise ConfigError(f"unknown style covariates {unknown}; known: {sorted(STYLE_COVARIATES)}")
    out = {}
    for name in names:
        count = STYLE_COVARIATES[name][1]
        needed = [f"{count}_a", f"{count}_b"]
        absent = [c for c in needed if c not in pairs.column_names]
        if absent:
            raise ConfigError(f"the pairs table has no {', '.join(absent)} column (it was written before "
                              f"lfqa-rubric counted style): re-run score, or fit without style covariates "
                              f"(--no-style)")
        out[name] = (pairs.column(needed[0]).to_pylist(), pairs.column(needed[1]).to_pylist())
    return out


def design_matrix(pairs: pa.Table, *, split: str | None = None, features: Sequence[str] | None = None,
                  keep_ties: bool = False, max_missing: float = 0.5, keep_unlabeled: bool = False,
                  style: bool | Sequence[str] = False, length_betas: Mapping[str, float] | None = None,
                  missing: MissingRule | str | None = None) -> DesignMatrix:
    """Select a split's rows and the rubric differences to model.

    Args:
        pairs: a table from :func:`pairs_table`.
        split: "train", "dev", "test", or None (or "all") for all rows.
        features: rubrics to use (a fitted model's), taken as given; None chooses them: every rubric
            that has values on enough of the split's pairs and is not constant on its kept rows.
        keep_ties: keep "tie" rows (3-way model) instead of dropping them.
        max_missing: when choosing features under the "drop" rule, a rubric missing on more than this share of
            the split's pairs is excluded (and reported) rather than dropping most pairs; a rule that reads the gap
            keeps every pair, and so the rubric.
        keep_unlabeled: keep pairs without a label (their ``y`` is None), for prediction; fitting and
            evaluating drop them and count them in ``n_unlabeled``.
        style: append the style covariates (:data:`rubric.tables.style.STYLE_COVARIATES`) as the last columns:
            ``style_length``, the normalised difference of the answers' whitespace-token counts, and
            ``style_markdown``, that of their markdown counts; True for both, or the names wanted
            (a fitted model's), in order.
        length_betas: rubric -> beta of the length decorrelation (see :func:`fit_length_betas`); the
            rubric's difference becomes ``d - beta * (n_words_a - n_words_b)``. Rubrics not named are
            left as they are.
        missing: how a rubric missing on one answer is read (:mod:`rubric.tables.missing`): a fitted
            :class:`MissingRule` (a model's), or a mode ("mean", "zero", "drop") to fit one on the split's rows
            for the features used; None: "drop" (the pair leaves).

    Raises:
        ConfigError: a requested feature is not in the table, the split is empty, a beta names a rubric
            that is not used, or ``style`` is asked of a table without style counts.
    """
    rubrics = table_rubrics(pairs)
    cols = {name: pairs.column(name).to_pylist()
            for name in ("label", "split", "n_words_a", "n_words_b", "pair_id", "question_id")}
    rows = [i for i, s in enumerate(cols["split"]) if split in (None, "all") or s == split]
    if not rows:
        raise ConfigError(f"split {split!r} has no pairs")
    if isinstance(style, bool):
        style = list(STYLE_COVARIATES) if style else []
    style_counts = _style_columns(pairs, list(style))
    excluded: dict[str, str] = {}
    if features is None:
        use = []
        for r in rubrics:
            vals = pairs.column(f"d_{r}").to_pylist()
            n_missing_r = sum(1 for i in rows if vals[i] is None)
            if n_missing_r == len(rows):
                excluded[r] = "no values (every answer failed or the rubric was not scored)"
            elif n_missing_r > max_missing * len(rows) and missing in (None, "drop"):
                excluded[r] = (f"missing for {n_missing_r} of {len(rows)} pairs (over {max_missing:.0%}); "
                               f"see the {r}_error column of answers.parquet")
            else:
                use.append(r)
    else:
        absent = [f for f in features if f not in rubrics]
        if absent:
            raise ConfigError(f"features {absent} are not in this table (it has {rubrics})")
        use = list(features)
    fitted = isinstance(missing, MissingRule)

    def rule_for(used: Sequence[str]) -> MissingRule:
        return missing if fitted else fit_missing_rule(pairs, used, rows, missing or "drop")

    values = {r: (pairs.column(f"a_{r}").to_pylist(), pairs.column(f"b_{r}").to_pylist(),
                  pairs.column(f"d_{r}").to_pylist()) for r in rubrics}

    def read(rule: MissingRule, used: Sequence[str]) -> dict[str, dict[int, tuple[float | None, int]]]:
        """Each used rubric's (difference, indicator) on each of the split's rows, read by ``rule``."""
        return {r: {i: rule.difference(r, *(v[i] for v in values[r])) for i in rows} for r in used}

    def bad(x) -> bool:
        return x is None or not math.isfinite(x)

    def kept_rows(used: Sequence[str], read_: Mapping[str, list]) -> tuple[list[int], int, int, int]:
        kept, n_missing, n_ties, n_unlabeled = [], 0, 0, 0
        for i in rows:
            label = cols["label"][i]
            if label is None and not keep_unlabeled:
                n_unlabeled += 1
                continue
            if not keep_ties and label == "tie":
                n_ties += 1
                continue
            if any(read_[r][i][0] is None for r in used) or any(bad(a[i]) or bad(b[i])
                                                                 for a, b in style_counts.values()):
                n_missing += 1
                continue
            kept.append(i)
        return kept, n_missing, n_ties, n_unlabeled

    rule = rule_for(use)
    diffs = read(rule, use)
    kept, n_missing, n_ties, n_unlabeled = kept_rows(use, diffs)
    if features is None:
        # A rubric whose difference never varies (grammar 5.0 on every answer) carries no information:
        # the scaler maps it to 0 and its weight would be reported as a measured -0.0000. Dropping it can
        # bring back rows it was missing on, which can make another rubric vary, so repeat until stable.
        # One kept row is "constant" by definition and says nothing about the rubric: leave that case to
        # the fit, which refuses it anyway. Unlabeled rows (kept for prediction) say nothing either.
        # Bounded: every pass that does not stop removes at least one rubric.
        for _ in range(len(use) + 1):
            labeled = [i for i in kept if cols["label"][i] is not None]
            if len(labeled) < 2:
                break
            constant = [r for r in use if len({diffs[r][i] for i in labeled}) == 1]
            if not constant:
                break
            for r in constant:
                value = diffs[r][labeled[0]][0]
                a_r = values[r][0]
                if all(a_r[i] is None for i in labeled):  # a difference 0 with no value: both answers abstained
                    excluded[r] = (f"every answer of the {split or 'all'} split's pairs abstained (the rubric had "
                                   f"nothing to judge; the reasons are in the {r}_error column of answers.parquet)")
                else:
                    excluded[r] = (f"constant on the {split or 'all'} split (every difference is {value:g}): "
                                   "nothing to learn")
                log.warning("rubric %s left out: %s", r, excluded[r])
            use = [r for r in use if r not in constant]
            rule = rule_for(use)
            diffs = read(rule, use)
            kept, n_missing, n_ties, n_unlabeled = kept_rows(use, diffs)
    betas = dict(length_betas or {})
    stray = sorted(set(betas) - set(use))
    if stray:
        raise ConfigError(f"length betas given for {stray}, which are not among the used rubrics {use}")
    n_words_a = np.array([cols["n_words_a"][i] for i in kept], dtype=float)
    n_words_b = np.array([cols["n_words_b"][i] for i in kept], dtype=float)
    X = np.array([[diffs[r][i][0] for r in use] for i in kept], dtype=float).reshape(len(kept), len(use))
    for j, r in enumerate(use):
        if r in betas:
            X[:, j] -= float(betas[r]) * (n_words_a - n_words_b)
    unused = sorted(set(rule.indicators) - set(use))
    if unused:
        raise ConfigError(f"missing-value indicators of {unused}, which are not among the used rubrics {use}")
    if rule.indicators:
        M = np.array([[diffs[r][i][1] for r in rule.indicators] for i in kept],
                     dtype=float).reshape(len(kept), len(rule.indicators))
        X = np.hstack([X, M])
    style_names = tuple(style_counts)
    if style_names:
        S = np.column_stack([normalised_difference([a[i] for i in kept], [b[i] for i in kept])
                             for a, b in style_counts.values()]).reshape(len(kept), len(style_names))
        X = np.hstack([X, S])
    n_filled = {r: sum(1 for i in kept if bad(values[r][0][i]) != bad(values[r][1][i])) for r in use}
    return DesignMatrix(
        X=X,
        y=np.array([cols["label"][i] for i in kept], dtype=object),
        features=use,
        excluded=excluded,
        n_missing_rows=n_missing,
        n_ties_dropped=n_ties,
        n_words_a=n_words_a,
        n_words_b=n_words_b,
        pair_id=np.array([cols["pair_id"][i] for i in kept], dtype=object),
        question_id=np.array([cols["question_id"][i] for i in kept], dtype=object),
        n_unlabeled=n_unlabeled,
        style_features=style_names,
        row_index=np.array(kept, dtype=int),
        missing=rule,
        n_filled={r: n for r, n in n_filled.items() if n and rule.mode != "drop"},
    )


def fit_length_betas(pairs: pa.Table, features: Sequence[str], *, split: str | None = "train") -> dict[str, float]:
    """ArmoRM-style decorrelation betas, fitted on one split's answers.

    For each rubric, over the distinct answers of the split's pairs (labeled or not: no label is
    used) that have a score, ``beta`` makes the rank correlation of ``score - beta * n_words`` with
    ``n_words`` zero (:func:`rubric.tables.style.length_decorrelation_beta`). A pair's difference then
    becomes ``d - beta * (n_words_a - n_words_b)``, which is the difference of the residualised scores.

    Args:
        pairs: a table from :func:`pairs_table`.
        features: the rubrics to decorrelate.
        split: the split whose answers fit the betas (the training split); None or "all" for every row.

    Returns:
        rubric -> beta.

    Raises:
        ConfigError: the split has no pairs, or a rubric is not in the table.
    """
    rubrics = table_rubrics(pairs)
    absent = [f for f in features if f not in rubrics]
    if absent:
        raise ConfigError(f"features {absent} are not in this table (it has {rubrics})")
    splits = pairs.column("split").to_pylist()
    rows = [i for i, s in enumerate(splits) if split in (None, "all") or s == split]
    if not rows:
        raise ConfigError(f"split {split!r} has no pairs")
    ids = {side: pairs.column(f"answer_id_{side}").to_pylist() for side in "ab"}
    words = {side: pairs.column(f"n_words_{side}").to_pylist() for side in "ab"}
    betas = {}
    for r in features:
        score = {side: pairs.column(f"{side}_{r}").to_pylist() for side in "ab"}
        seen: dict[str, tuple[float, float]] = {}
        for i in rows:
            for side in "ab":
                x = score[side][i]
                if x is not None and math.isfinite(x):
                    seen.setdefault(ids[side][i], (float(x), float(words[side][i])))
        if not seen:
            betas[r] = 0.0
            continue
        values = np.array(list(seen.values()))
        betas[r] = length_decorrelation_beta(values[:, 0], values[:, 1])
        log.info("length decorrelation of %s on %d %s answers: beta = %.6g", r, len(values), split or "all",
                 betas[r])
    return betas
