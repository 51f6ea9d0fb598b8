"""Fit the preference model on a feature table's training split and evaluate it against baselines.

Both steps check provenance first: a fit refuses a table whose rows made a feature in different ways,
and an evaluation (or a prediction, :mod:`rubric.preference.predict`) refuses a table whose features were made
differently from the model's (unless told to go ahead, in which case the report lists every difference).

An evaluation reports the model as fitted and, when it has style covariates, style-controlled, beside
the baselines; a drop-one-rubric ablation; calibration; and the weights with their bootstrap CIs.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pyarrow as pa

from rubric.errors import ConfigError, InputError, ProvenanceError
from rubric.tables import DEFAULT_MISSING, DesignMatrix, design_matrix, fit_length_betas, table_style
from rubric.preference.fitted_on import FITTED_ON_KEY, SampleStatus, fitted_on_record, sample_status
from rubric.preference.metrics import MetricRow, always_a, evaluate_predictions, longer_answer_wins
from rubric.preference.model import PreferenceModel
from rubric.presets import model_preset, model_preset_tag, preset_title
from rubric.tables import (provenance_differences, require_uniform_provenance, table_provenance,
                               table_provenance_problems)
from rubric.preference.report import plot_reliability, plot_weights, render_report
from rubric.preference.selection import (C_GRID, AblationRow, Calibration, bootstrap_weight_cis, calibration,
                              cross_validate_C, drop_one_ablation)

__all__ = ["read_output_table", "read_pairs", "fit_model", "model_inputs", "Evaluation", "model_table_differences",
           "check_model_table", "evaluate_model", "write_report", "saved_weight_ci", "pairs_fingerprint", "MODEL_ROW",
           "STYLE_CONTROLLED_ROW", "model_row_names"]

log = logging.getLogger(__name__)

#: The metric rows' names (their start: :func:`model_row_names` says what each model holds).
MODEL_ROW = "preference model (LR on rubric differences)"
STYLE_CONTROLLED_ROW = "preference model, style-controlled (equal length and markdown)"


def model_row_names(model) -> tuple[str, str]:
    """The names of a fitted model's rows: as fitted, and style-controlled.

    Each says what the model holds: the preset's model (`` [paper preset]``, only when it has all the
    preset's rubrics at its versions and nothing else; a model fitted with the preset's settings that
    is not its model says which rubrics it lacks and why: :func:`rubric.scoring.model_preset_tag`), or,
    for our default fit, its style covariates (``+ length/markdown covariates``), so a row of our
    default model is never read as the paper's.

    Args:
        model: a fitted :class:`rubric.preference.PreferenceModel`.
    """
    tag = model_preset_tag(model)
    style = [f.removeprefix("style_") for f in model.style_features_]
    base = MODEL_ROW
    if style:
        base = MODEL_ROW[:-1] + f" + {'/'.join(style)} covariate{'s' if len(style) > 1 else ''})"
    if model.length_betas:
        base = base[:-1] + ", length-decorrelated)"
    return base + tag, STYLE_CONTROLLED_ROW + tag



def read_output_table(out_dir: str | Path, table: str = "pairs") -> pa.Table:
    """Read a ``score`` output table (``OUT/<table>.parquet``), with one clear message when absent or broken.

    Both job paths (single process and Ray) write the same layout: one table per job.
    """
    from rubric.io import check_published, read_parquet

    out = Path(out_dir)
    path = out / f"{table}.parquet"
    if path.is_dir():
        raise InputError(f"{path} is a folder, not a table: a score output holds {table}.parquet as one Parquet "
                         f"file (give the folder 'lfqa-rubric score ... --out' wrote)")
    if not path.is_file():
        raise InputError(f"{path} not found: run 'lfqa-rubric score ... --out {out_dir}' first")
    check_published(out)
    return read_parquet(path)  # through one open file: a publish renaming a new table in cannot mix two


def read_pairs(out_dir: str | Path) -> pa.Table:
    """The pairs table of a ``score`` output folder."""
    return read_output_table(out_dir, "pairs")


def fit_model(pairs: pa.Table, *, split: str = "train", C: float | str = 1.0, ties: str = "drop",
              features: list[str] | None = None, style: bool = True, decorrelate: bool = False,
              cv_grid: tuple[float, ...] = C_GRID, cv_folds: int = 5, n_boot_weights: int = 0,
              seed: int = 0, missing: str = DEFAULT_MISSING) -> tuple[PreferenceModel, DesignMatrix]:
    """Fit on one split of a pairs table; rubrics without values, or constant, are excluded (and reported).

    The model records the provenance of its features, read from the table, and in ``metadata_`` how it
    was fitted: the split, the rubrics and style covariates left out (``excluded``, ``style_excluded``),
    how C was chosen (``C_selection``, with the CV table), and the weight CIs (``weight_ci``) when asked
    for. The returned design matrix's ``excluded`` lists rubrics only.

    Args:
        pairs: a pairs table.
        split: the split to fit on ("all" for every pair).
        C: the regularisation strength, or "cv" to choose it from ``cv_grid`` by cross-validation on
            the split with questions kept together (:func:`rubric.preference.selection.cross_validate_C`).
        ties: "drop" or "three_way".
        features: rubrics to use; None chooses them (see :func:`rubric.tables.features.design_matrix`).
        style: add the style covariates (length and markdown differences) as the last columns; one
            that is constant on the split is left out with its reason, like a constant rubric.
        decorrelate: residualise each rubric against answer length on the split's answers first
            (:func:`rubric.tables.features.fit_length_betas`); the betas are saved with the model.
        cv_grid: the Cs tried by ``C="cv"``.
        cv_folds: its folds (fewer with fewer questions).
        n_boot_weights: replicates of the question bootstrap of the weights (0: no weight CIs).
        seed: seed of that bootstrap.
        missing: how a rubric missing on one answer of a pair is read (:mod:`rubric.tables.missing`: "mean",
            "zero" or "drop"); the rule is fitted on the split and saved with the model.

    Raises:
        ProvenanceError: the table records no provenance ("re-run score"), or a used feature's
            ``prov_<rubric>`` column holds more than one provenance or disagrees with the metadata.
        ConfigError: no rubric is left to fit on, the split has no pairs, ``C`` is neither a positive
            number nor "cv", or ``style`` is asked of a table written without style counts.
    """
    if isinstance(C, str) and C != "cv":
        raise ConfigError(f"'C' must be a number > 0 or 'cv', got {C!r}")
    records = table_provenance(pairs)  # refuses tables written before provenance was recorded
    keep_ties = ties == "three_way"
    dm = design_matrix(pairs, split=split, features=features, keep_ties=keep_ties, style=style, missing=missing)
    if not dm.features:
        raise ConfigError("no rubric is left to fit on; excluded: "
                          + "; ".join(f"{k}: {v}" for k, v in dm.excluded.items()))
    require_uniform_provenance(pairs, dm.features, action="fit")
    excluded = dict(dm.excluded)
    style_excluded: dict[str, str] = {}
    style_used = list(dm.style_features)
    if len(dm.y) >= 2:
        for j, name in enumerate(dm.style_features):
            values = dm.X[:, len(dm.features) + j]
            if np.ptp(values) == 0:
                style_excluded[name] = (f"constant on the {split} split (every value is {values[0]:g}): "
                                        "nothing to learn")
                log.warning("style covariate %s left out: %s", name, style_excluded[name])
                style_used.remove(name)
    betas = fit_length_betas(pairs, dm.features, split=split) if decorrelate else None
    if betas is not None or style_used != list(dm.style_features):
        dm = design_matrix(pairs, split=split, features=dm.features, keep_ties=keep_ties, style=style_used,
                           length_betas=betas, missing=dm.missing)
    dm = replace(dm, excluded=excluded)
    model = PreferenceModel(C=1.0 if C == "cv" else C, ties=ties, feature_names=dm.features,
                            provenance={f: records[f] for f in dm.features}, style_features=tuple(dm.style_features),
                            length_betas=betas, missing=dm.missing)
    selection = None
    if C == "cv":
        selection = cross_validate_C(model, dm.X, dm.y, dm.question_id, grid=cv_grid, n_splits=cv_folds)
        model.set_params(C=selection.best_C)
    model.fit(dm.X, dm.y)
    metadata: dict = {"split": split, "style": bool(style), "decorrelate": decorrelate, "excluded": excluded,
                      "style_excluded": style_excluded, "n_unlabeled": dm.n_unlabeled,
                      "n_filled": dict(dm.n_filled), "n_missing_rows": dm.n_missing_rows,
                      "train_pairs": {"n": int(len(dm.y)), "fingerprint": pairs_fingerprint(dm.pair_id)},
                      "features_given": None if features is None else list(features),
                      FITTED_ON_KEY: fitted_on_record(pairs, split=split, n_pairs=len(dm.y),
                                                      question_ids=dm.question_id),
                      "C_selection": selection.to_dict() if selection else {"best_C": float(C), "criterion": "given"}}
    if n_boot_weights:
        if list(model.classes_) == ["a", "b"]:
            metadata["weight_ci"] = bootstrap_weight_cis(model, dm.X, dm.y, dm.question_id, n_boot=n_boot_weights,
                                                         seed=seed).to_dict()
        else:
            log.warning("weight CIs skipped: they are defined for the binary a/b model")
    model.metadata_ = metadata
    return model, dm


def pairs_fingerprint(pair_ids) -> str:
    """A short stable digest of a set of pair ids (order-free): tells whether a table's split holds the
    pairs a model was fitted on."""
    h = hashlib.sha256()
    for pid in sorted(str(p) for p in pair_ids):
        h.update(pid.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def model_inputs(model: PreferenceModel, pairs: pa.Table, *, split: str | None = None,
                 keep_unlabeled: bool = False, keep_ties: bool | None = None) -> DesignMatrix:
    """The design matrix a fitted model expects, from a pairs table: its rubrics (a missing side read by its
    missing-value rule), residualised with its length betas, its missing-side indicators, then its style
    covariates.

    Args:
        model: a fitted model.
        pairs: a pairs table.
        split: the split (None or "all" for every pair).
        keep_unlabeled: keep pairs without a label (for prediction).
        keep_ties: keep ties; default: only when the model models them.
    """
    return design_matrix(pairs, split=split, features=model.features_,
                         keep_ties=(model.ties == "three_way") if keep_ties is None else keep_ties,
                         keep_unlabeled=keep_unlabeled, style=list(model.style_features_),
                         length_betas=model.length_betas, missing=model.missing_)


@dataclass(frozen=True)
class Evaluation:
    """A model and its baselines evaluated on one split.

    Attributes:
        split: the evaluated split.
        rows: the model's metrics (as fitted, then style-controlled when it has style covariates), then
            the baselines', on the same pairs.
        dm: the design matrix evaluated.
        provenance_differences: how the model's features and the table's were made differently,
            when the evaluation was allowed to go ahead regardless; empty otherwise.
        ablation: the drop-one-rubric rows, or None when they could not be computed (see
            ``ablation_note``).
        ablation_note: why there is no ablation, or which split it refitted on.
        ablation_in_sample: the refits' training pairs overlap the evaluated pairs.
        calibration: Brier score and reliability bins (binary models), else None.
        sources: the evaluated pairs' ``source`` values with their counts.
        sample: whether the evaluated pairs' questions are among the model's training questions
            (:func:`rubric.preference.sample_status`); None: decided from the split alone.
        outside_rows: when only some evaluated pairs' questions were trained on (``sample.partial``),
            the same systems on the other pairs; else None.
    """

    split: str
    rows: list[MetricRow]
    dm: DesignMatrix
    provenance_differences: list[str] = field(default_factory=list)
    ablation: list[AblationRow] | None = None
    ablation_note: str = ""
    ablation_in_sample: bool = False
    calibration: Calibration | None = None
    sources: dict[str, int] = field(default_factory=dict)
    sample: SampleStatus | None = None
    outside_rows: list[MetricRow] | None = None


def model_table_differences(model: PreferenceModel, pairs: pa.Table) -> list[str]:
    """Every way the model's features were made differently from the table's, one line each.

    Covers a model or table that records no provenance, field-by-field differences between their
    records, rows of the table that mix provenances for one of the model's rubrics, and style
    covariates the table's counts do not support (another version, or a table written before them).
    """
    features = list(model.features_)
    try:
        table_prov = table_provenance(pairs)
    except ProvenanceError as e:
        table_prov = None
        table_missing = str(e)
    lines = []
    if model.provenance is None:
        lines.append("the model records no provenance (it was saved before lfqa-rubric recorded how its features "
                     "were made): re-fit it")
    if table_prov is None:
        lines.append(table_missing)
    if model.provenance is not None and table_prov is not None:
        lines += provenance_differences(model.provenance, table_prov, features)
    if table_prov is not None:  # a rubric absent from the table's records is already a line above
        lines += table_provenance_problems(pairs, [f for f in features if f in table_prov])
    if model.style_features_:
        table_versions = table_style(pairs)
        for name in model.style_features_:
            mine = model.style_provenance_[name]["version"]
            theirs = table_versions.get(name)
            if theirs is None:
                lines.append(f"{name}: the table records no style covariates (it was written before lfqa-rubric "
                             f"counted style): re-run score, or re-fit the model with --no-style")
            elif theirs != mine:
                lines.append(f"{name}: version is {mine} in the model, {theirs} in the table")
    return lines


def check_model_table(model: PreferenceModel, pairs: pa.Table, *, allow_provenance_mismatch: bool = False,
                      action: str = "evaluate") -> list[str]:
    """Refuse to apply a model to a table whose features were made differently, unless allowed.

    Args:
        model: a fitted model.
        pairs: the table it is about to be applied to.
        allow_provenance_mismatch: go ahead anyway; the differences are logged and returned.
        action: what is refused, for the message ("evaluate", "predict").

    Returns:
        The differences (empty when there are none).

    Raises:
        ProvenanceError: there are differences (every one is listed) and they are not allowed.
    """
    differences = model_table_differences(model, pairs)
    if differences and not allow_provenance_mismatch:
        raise ProvenanceError("the model's features were made differently from this table's:\n- "
                              + "\n- ".join(differences)
                              + "\nre-score the table the way the model's training table was scored, re-fit the "
                              f"model, or pass --allow-provenance-mismatch to {action} anyway")
    if differences:
        log.warning("%s despite %d provenance difference(s) between the model and the table: %s",
                    {"evaluate": "evaluating", "predict": "predicting"}.get(action, action),
                    len(differences), "; ".join(differences))
    return differences


def _p_a(model: PreferenceModel, X: np.ndarray, *, style_controlled: bool = False) -> np.ndarray:
    return model.predict_proba(X, style_controlled=style_controlled)[:, list(model.classes_).index("a")]


def evaluate_model(model: PreferenceModel, pairs: pa.Table, *, split: str = "test", n_boot: int = 1000,
                   seed: int = 0, allow_provenance_mismatch: bool = False, ablation: bool = True,
                   calibrate: bool = True) -> Evaluation:
    """The model (as fitted and style-controlled) beside "longer answer wins" and "always a" on the same pairs.

    CIs come from a bootstrap over questions (see :func:`rubric.preference.metrics.evaluate_predictions`).

    Args:
        model: a fitted model.
        pairs: a pairs table.
        split: the split to evaluate ("all" for every pair).
        n_boot: bootstrap replicates.
        seed: bootstrap seed.
        allow_provenance_mismatch: evaluate even when the model's features were made differently
            from the table's; the differences are logged and kept in the result for the report.
        ablation: refit without each rubric on the table's copy of the model's training split
            (``metadata_["split"]``, "train" when unrecorded) and compare on the evaluated pairs.
        calibrate: compute the Brier score and reliability bins (binary models).

    Raises:
        ProvenanceError: the model's and the table's provenance differ (every difference is listed)
            and ``allow_provenance_mismatch`` is False.
        ConfigError: the split has no usable pairs.
    """
    differences = check_model_table(model, pairs, allow_provenance_mismatch=allow_provenance_mismatch)
    dm = model_inputs(model, pairs, split=split)
    if len(dm.y) == 0:
        raise ConfigError(f"split {split!r} has no usable pairs (ties dropped: {dm.n_ties_dropped}, "
                          f"missing rubric values: {dm.n_missing_rows}, unlabeled: {dm.n_unlabeled})")

    sample = sample_status(model, pairs, split, question_ids=dm.question_id)
    name, style_name = model_row_names(model)
    systems = [(name, model.predict(dm.X))]
    if model.style_features_:
        systems.append((style_name, model.predict(dm.X, style_controlled=True)))
    systems += [("baseline: longer answer wins", longer_answer_wins(dm.n_words_a, dm.n_words_b)),
                ("baseline: always a", always_a(len(dm.y)))]

    def rows_on(keep):
        return [evaluate_predictions(system, dm.y[keep], np.asarray(pred, dtype=object)[keep],
                                     groups=dm.question_id[keep], n_boot=n_boot, seed=seed) for system, pred in systems]

    rows = rows_on(np.ones(len(dm.y), dtype=bool))
    outside_rows = rows_on(sample.outside(dm.question_id)) if sample.partial else None
    cal = None
    binary = list(model.classes_) == ["a", "b"]
    if calibrate and binary:
        cal = calibration(dm.y, _p_a(model, dm.X), dm.question_id, n_boot=n_boot, seed=seed,
                          p_a_style_controlled=_p_a(model, dm.X, style_controlled=True) if model.style_features_
                          else None)
    abl, note, in_sample = None, "", False
    if ablation:
        recorded_split = model.metadata_.get("split")
        train_split = recorded_split if isinstance(recorded_split, str) else "train"
        in_sample = sample.in_sample
        recorded = model.metadata_.get("train_pairs")
        recorded = recorded.get("fingerprint") if isinstance(recorded, dict) else None
        try:
            train = model_inputs(model, pairs, split=train_split)
            if recorded is not None and pairs_fingerprint(train.pair_id) != recorded:
                # another table (a transfer evaluation): refitting on its split would answer another question
                note = (f"not computed: this table's {train_split!r} split is not the set of pairs the model was "
                        "fitted on (evaluate on the training table's output folder for the ablation)")
            else:
                abl = drop_one_ablation(model, train.X, train.y, dm.X, dm.y, dm.question_id, n_boot=n_boot,
                                        seed=seed)
                note = (f"each model refitted on the table's {train_split!r} split ({len(train.y)} pairs)"
                        + ("" if recorded else "; the model records no fingerprint of its training pairs, so "
                           "they may not be the pairs it was fitted on"))
        except ConfigError as e:
            note = f"not computed: cannot refit on the table's {train_split!r} split ({e})"
        if abl is None:
            log.warning("drop-one-rubric ablation %s", note)
    sources: dict[str, int] = {}
    if "source" in pairs.column_names:
        col = pairs.column("source").to_pylist()
        for i in dm.row_index:
            sources[str(col[int(i)])] = sources.get(str(col[int(i)]), 0) + 1
    return Evaluation(split=split, rows=rows, dm=dm, provenance_differences=differences, ablation=abl,
                      ablation_note=note, ablation_in_sample=in_sample, calibration=cal, sources=sources,
                      sample=sample, outside_rows=outside_rows)


#: What a report says beside a source whose pairs are not what their labels might suggest.
SOURCE_NOTES: dict[str, str] = {
    "lfqa-rubric-sample": "the bundled sample: questions, answers and labels written by the project, "
                          "not human preference data",
}


def write_report(ev: Evaluation, model: PreferenceModel, report_path: str | Path) -> str:
    """Write the Markdown report and, for binary models, the weights chart (``<report>.png``) and the
    reliability plot (``<report>_calibration.png``) beside it."""
    report_path = Path(report_path)
    report_path.parent.mkdir(parents=True, exist_ok=True)
    weights = chart = cal_chart = None
    meta = model.metadata_ if isinstance(model.metadata_, dict) else {}
    weight_ci = saved_weight_ci(meta.get("weight_ci"), model)
    if list(model.classes_) == ["a", "b"]:
        weights = model.weights()
        png = report_path.with_suffix(".png")
        plot_weights(weights, png, ci=weight_ci["ci"] if weight_ci else None, style_features=model.style_features_,
                     unreliable=weight_ci.get("unreliable") or () if weight_ci else ())
        chart = png.name
    if ev.calibration is not None:
        cal_png = report_path.with_name(report_path.stem + "_calibration.png")
        plot_reliability(ev.calibration.bins, cal_png)
        cal_chart = cal_png.name
    counts = {"pairs evaluated": len(ev.dm.y), "questions evaluated": len(set(ev.dm.question_id)),
              "ties dropped": ev.dm.n_ties_dropped,
              "pairs dropped for a missing rubric value": ev.dm.n_missing_rows,
              "pairs with a rubric missing on one answer, read by the model's missing-value rule "
              f"({model.missing_.mode!r})": ", ".join(f"{r} {n}" for r, n in ev.dm.n_filled.items()) or "none",
              "unlabeled pairs left out": ev.dm.n_unlabeled,
              "features": ", ".join(model.features_),
              "style covariates": ", ".join(model.style_features_) or "none (fitted without style)"}
    if ev.sources:
        counts["sources"] = ", ".join(f"{k} ({v} pairs)" + (f" - {SOURCE_NOTES[k]}" if k in SOURCE_NOTES else "")
                                      for k, v in sorted(ev.sources.items()))
    # Rubrics the fit left out (saved in the model file) explain why a rubric has no weight.
    fit_excluded = meta.get("excluded", {})
    excluded = {**(fit_excluded if isinstance(fit_excluded, dict) else {}), **ev.dm.excluded}
    style_excluded = meta.get("style_excluded", {})
    if isinstance(style_excluded, dict):
        excluded.update({f"{k} (style covariate)": v for k, v in style_excluded.items()})
    selection = meta.get("C_selection") if isinstance(meta.get("C_selection"), dict) else None
    text = render_report(title=preset_title("Preference model report", model_preset(model)), split=ev.split, rows=ev.rows, weights=weights,
                         counts=counts, excluded=excluded, chart=chart,
                         provenance_differences=ev.provenance_differences,
                         style_features=model.style_features_, weight_ci=weight_ci,
                         ablation=ev.ablation, ablation_note=ev.ablation_note,
                         ablation_in_sample=ev.ablation_in_sample, calibration=ev.calibration,
                         in_sample=None if ev.sample is None else ev.sample.in_sample,
                         sample_note="" if ev.sample is None else ev.sample.note,
                         mark=None if ev.sample is None else ev.sample.mark,
                         outside=None if ev.outside_rows is None else (ev.sample.outside_kind, ev.outside_rows),
                         calibration_chart=cal_chart, C=float(model.C), selection=selection,
                         length_betas=model.length_betas)
    report_path.write_text(text)
    return text


def saved_weight_ci(raw, model: PreferenceModel) -> dict | None:
    """The weight CIs saved in a model's metadata, when they are well-formed and cover its columns."""
    if not isinstance(raw, dict) or not isinstance(raw.get("ci"), dict):
        return None
    ci = raw["ci"]
    try:
        out = {c: (float(ci[c][0]), float(ci[c][1])) for c in model.columns_}
    except (KeyError, TypeError, ValueError, IndexError):
        log.warning("the model's saved weight CIs do not cover its columns %s: left out of the report", model.columns_)
        return None
    return {**raw, "ci": out}
