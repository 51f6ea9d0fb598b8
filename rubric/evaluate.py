"""Fit the preference model on a feature table's training split and evaluate it against baselines.

Both steps check provenance first: a fit refuses a table whose rows made a feature in different ways,
and an evaluation refuses a table whose features were made differently from the model's (unless told
to go ahead, in which case the report lists every difference).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from rubric.errors import ConfigError, InputError, ProvenanceError
from rubric.features import DesignMatrix, design_matrix
from rubric.metrics import MetricRow, always_a, evaluate_predictions, longer_answer_wins
from rubric.preference import PreferenceModel
from rubric.provenance import (provenance_differences, require_uniform_provenance, table_provenance,
                               table_provenance_problems)
from rubric.report import plot_weights, render_report

__all__ = ["read_output_table", "read_pairs", "fit_model", "Evaluation", "model_table_differences",
           "evaluate_model", "write_report"]

log = logging.getLogger(__name__)


def read_output_table(out_dir: str | Path, table: str = "pairs") -> pa.Table:
    """Read a ``score`` output table (``OUT/<table>.parquet``), with one clear message when absent or broken.

    Both job paths (single process and Ray) write the same layout: one table per job.
    """
    import pyarrow.parquet as pq

    out = Path(out_dir)
    path = out / f"{table}.parquet"
    if not path.is_file():
        raise InputError(f"{path} not found: run 'lfqa-rubric score ... --out {out_dir}' first")
    try:
        return pq.read_table(path)
    except Exception as e:  # pyarrow raises several types for a damaged file
        raise InputError(f"cannot read {path} (damaged or not Parquet): {e}") from None


def read_pairs(out_dir: str | Path) -> pa.Table:
    """The pairs table of a ``score`` output folder."""
    return read_output_table(out_dir, "pairs")


def fit_model(pairs: pa.Table, *, split: str = "train", C: float = 1.0, ties: str = "drop",
              features: list[str] | None = None) -> tuple[PreferenceModel, DesignMatrix]:
    """Fit on one split of a pairs table; rubrics without values, or constant, are excluded (and reported).

    The model records the provenance of its features, read from the table.

    Raises:
        ProvenanceError: the table records no provenance ("re-run score"), or a used feature's
            ``prov_<rubric>`` column holds more than one provenance or disagrees with the metadata.
        ConfigError: no rubric is left to fit on, or the split has no pairs.
    """
    records = table_provenance(pairs)  # refuses tables written before provenance was recorded
    dm = design_matrix(pairs, split=split, features=features, keep_ties=(ties == "three_way"))
    if not dm.features:
        raise ConfigError("no rubric is left to fit on; excluded: "
                          + "; ".join(f"{k}: {v}" for k, v in dm.excluded.items()))
    require_uniform_provenance(pairs, dm.features, action="fit")
    model = PreferenceModel(C=C, ties=ties, feature_names=dm.features,
                            provenance={f: records[f] for f in dm.features}).fit(dm.X, dm.y)
    return model, dm


@dataclass(frozen=True)
class Evaluation:
    """A model and its baselines evaluated on one split.

    Attributes:
        split: the evaluated split.
        rows: the model's metrics, then the baselines', on the same pairs.
        dm: the design matrix evaluated.
        provenance_differences: how the model's features and the table's were made differently,
            when the evaluation was allowed to go ahead regardless; empty otherwise.
    """

    split: str
    rows: list[MetricRow]
    dm: DesignMatrix
    provenance_differences: list[str] = field(default_factory=list)


def model_table_differences(model: PreferenceModel, pairs: pa.Table) -> list[str]:
    """Every way the model's features were made differently from the table's, one line each.

    Covers a model or table that records no provenance, field-by-field differences between their
    records, and rows of the table that mix provenances for one of the model's features.
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
    return lines


def evaluate_model(model: PreferenceModel, pairs: pa.Table, *, split: str = "test", n_boot: int = 1000,
                   seed: int = 0, allow_provenance_mismatch: bool = False) -> Evaluation:
    """The model beside "longer answer wins" and "always a" on the same pairs.

    CIs come from a bootstrap over questions (see :func:`rubric.metrics.evaluate_predictions`).

    Args:
        model: a fitted model.
        pairs: a pairs table.
        split: the split to evaluate ("all" for every pair).
        n_boot: bootstrap replicates.
        seed: bootstrap seed.
        allow_provenance_mismatch: evaluate even when the model's features were made differently
            from the table's; the differences are logged and kept in the result for the report.

    Raises:
        ProvenanceError: the model's and the table's provenance differ (every difference is listed)
            and ``allow_provenance_mismatch`` is False.
        ConfigError: the split has no usable pairs.
    """
    differences = model_table_differences(model, pairs)
    if differences and not allow_provenance_mismatch:
        raise ProvenanceError("the model's features were made differently from this table's:\n- "
                              + "\n- ".join(differences)
                              + "\nre-score the table the way the model's training table was scored, re-fit the "
                              "model, or pass --allow-provenance-mismatch to evaluate anyway")
    if differences:
        log.warning("evaluating despite %d provenance difference(s) between the model and the table: %s",
                    len(differences), "; ".join(differences))
    dm = design_matrix(pairs, split=split, features=model.features_, keep_ties=(model.ties == "three_way"))
    if len(dm.y) == 0:
        raise ConfigError(f"split {split!r} has no usable pairs (ties dropped: {dm.n_ties_dropped}, "
                          f"missing rubric values: {dm.n_missing_rows})")

    def row(system, predictions):
        return evaluate_predictions(system, dm.y, predictions, groups=dm.question_id, n_boot=n_boot, seed=seed)

    rows = [
        row("preference model (LR on rubric differences)", model.predict(dm.X)),
        row("baseline: longer answer wins", longer_answer_wins(dm.n_words_a, dm.n_words_b)),
        row("baseline: always a", always_a(len(dm.y))),
    ]
    return Evaluation(split=split, rows=rows, dm=dm, provenance_differences=differences)


def write_report(ev: Evaluation, model: PreferenceModel, report_path: str | Path) -> str:
    """Write the Markdown report and, for binary models, the weights chart beside it."""
    report_path = Path(report_path)
    report_path.parent.mkdir(parents=True, exist_ok=True)
    weights = chart = None
    if list(model.classes_) == ["a", "b"]:
        weights = model.weights()
        png = report_path.with_suffix(".png")
        plot_weights(weights, png)
        chart = png.name
    counts = {"pairs evaluated": len(ev.dm.y), "questions evaluated": len(set(ev.dm.question_id)),
              "ties dropped": ev.dm.n_ties_dropped,
              "pairs dropped for a missing rubric value": ev.dm.n_missing_rows,
              "features": ", ".join(model.features_)}
    # Rubrics the fit left out (saved in the model file) explain why a rubric has no weight.
    fit_excluded = model.metadata_.get("excluded", {})
    excluded = {**(fit_excluded if isinstance(fit_excluded, dict) else {}), **ev.dm.excluded}
    text = render_report(title="Preference model report", split=ev.split, rows=ev.rows, weights=weights,
                         counts=counts, excluded=excluded, chart=chart,
                         provenance_differences=ev.provenance_differences)
    report_path.write_text(text)
    return text
