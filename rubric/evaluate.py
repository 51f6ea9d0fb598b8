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

__all__ = ["read_output_table", "read_pairs", "fit_model", "Evaluation", "evaluate_model", "write_report"]


def read_output_table(out_dir: str | Path, table: str = "pairs") -> pa.Table:
    """Read a ``score`` output table, from either layout, with a clear message when absent or broken.

    The single-process path writes ``OUT/<table>.parquet``; a Ray job writes one folder per shard
    plus ``OUT/summary.json``, whose complete shards are concatenated here in shard order.
    """
    import json

    import pyarrow.parquet as pq

    out = Path(out_dir)
    single = out / f"{table}.parquet"
    if single.is_file():
        paths = [single]
    elif (out / "summary.json").is_file():
        try:
            summary = json.loads((out / "summary.json").read_text())
            names = [n for n, v in summary["per_shard"].items() if v["status"] != "failed"]
        except (OSError, ValueError, KeyError, AttributeError) as e:
            raise InputError(f"{out / 'summary.json'} is not a job summary: {e}") from None
        paths = [out / n / f"{table}.parquet" for n in names]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise InputError(f"missing shard tables: {', '.join(missing[:5])}")
        if not paths:
            raise InputError(f"{out} has no complete shards")
    else:
        raise InputError(f"{single} not found: run 'lfqa-rubric score ... --out {out_dir}' first")
    try:
        tables = [pq.read_table(p) for p in paths]
    except Exception as e:  # pyarrow raises several types for a damaged file
        raise InputError(f"cannot read {table} table under {out}: {e}") from None
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="default")


def read_pairs(out_dir: str | Path) -> pa.Table:
    """The pairs table of a ``score`` output folder (either layout)."""
    return read_output_table(out_dir, "pairs")


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
