"""Fit the preference model on a feature table's training split and evaluate it against baselines."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from rubric.errors import ConfigError, InputError
from rubric.features import DesignMatrix, design_matrix
from rubric.metrics import MetricRow, always_a, evaluate_predictions, longer_answer_wins
from rubric.preference import PreferenceModel
from rubric.report import plot_weights, render_report

__all__ = ["read_pairs", "fit_model", "Evaluation", "evaluate_model", "write_report"]


def read_pairs(out_dir: str | Path) -> pa.Table:
    """Read ``OUTDIR/pairs.parquet`` with a clear message when it is absent or broken."""
    import pyarrow.parquet as pq

    path = Path(out_dir) / "pairs.parquet"
    if not path.is_file():
        raise InputError(f"{path} not found: run 'lfqa-rubric score ... --out {out_dir}' first")
    try:
        return pq.read_table(path)
    except Exception as e:  # pyarrow raises several types for a damaged file
        raise InputError(f"cannot read {path}: {e}") from None


def fit_model(pairs: pa.Table, *, split: str = "train", C: float = 1.0, ties: str = "drop",
              features: list[str] | None = None) -> tuple[PreferenceModel, DesignMatrix]:
    """Fit on one split of a pairs table; rubrics without values are excluded (and reported)."""
    dm = design_matrix(pairs, split=split, features=features, keep_ties=(ties == "three_way"))
    if not dm.features:
        raise ConfigError("no rubric has values to fit on; excluded: " + "; ".join(f"{k}: {v}" for k, v in dm.excluded.items()))
    model = PreferenceModel(C=C, ties=ties, feature_names=dm.features).fit(dm.X, dm.y)
    return model, dm


@dataclass(frozen=True)
class Evaluation:
    split: str
    rows: list[MetricRow]
    dm: DesignMatrix


def evaluate_model(model: PreferenceModel, pairs: pa.Table, *, split: str = "test", n_boot: int = 1000,
                   seed: int = 0) -> Evaluation:
    """The model beside "longer answer wins" and "always a" on the same pairs."""
    dm = design_matrix(pairs, split=split, features=model.features_, keep_ties=(model.ties == "three_way"))
    if len(dm.y) == 0:
        raise ConfigError(f"split {split!r} has no usable pairs (ties dropped: {dm.n_ties_dropped}, "
                          f"missing rubric values: {dm.n_missing_rows})")
    rows = [
        evaluate_predictions("preference model (LR on rubric differences)", dm.y, model.predict(dm.X),
                             n_boot=n_boot, seed=seed),
        evaluate_predictions("baseline: longer answer wins", dm.y, longer_answer_wins(dm.n_words_a, dm.n_words_b),
                             n_boot=n_boot, seed=seed),
        evaluate_predictions("baseline: always a", dm.y, always_a(len(dm.y)), n_boot=n_boot, seed=seed),
    ]
    return Evaluation(split=split, rows=rows, dm=dm)


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
    counts = {"pairs evaluated": len(ev.dm.y), "ties dropped": ev.dm.n_ties_dropped,
              "pairs dropped for a missing rubric value": ev.dm.n_missing_rows,
              "features": ", ".join(model.features_)}
    text = render_report(title="Preference model report", split=ev.split, rows=ev.rows, weights=weights,
                         counts=counts, excluded=ev.dm.excluded, chart=chart)
    report_path.write_text(text)
    return text
