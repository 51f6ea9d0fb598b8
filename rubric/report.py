"""Markdown report and weight chart for an evaluated preference model."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from rubric.metrics import METRICS, MetricRow

__all__ = ["MIN_QUESTIONS_FOR_CI", "MIN_PAIRS_FOR_CI", "metrics_markdown", "ci_warning", "weights_markdown",
           "render_report", "plot_weights"]


#: Below either, a question-clustered bootstrap has too few clusters for its CIs to mean much.
MIN_QUESTIONS_FOR_CI = 30
MIN_PAIRS_FOR_CI = 50

#: Splits whose pairs the model was (or may have been) fitted on.
IN_SAMPLE_SPLITS = {"all": "includes the training pairs: in-sample", "train": "the training pairs: in-sample"}


def _num(x: float, digits: int) -> str:
    return "n/a" if math.isnan(x) else f"{x:.{digits}f}"


def metrics_markdown(rows: Sequence[MetricRow]) -> str:
    """The metrics table: one row per system, each metric with its CI in brackets ("n/a" when undefined)."""
    head = "| system | n pairs | n questions | " + " | ".join(METRICS) + " |"
    sep = "|---|---:|---:|" + "---:|" * len(METRICS)
    lines = [head, sep]
    for r in rows:
        cells = []
        for m in METRICS:
            lo, hi = r.ci[m]
            ci = "n/a" if math.isnan(lo) or math.isnan(hi) else f"{lo:.3f}, {hi:.3f}"
            cells.append(f"{_num(r.values[m], 4)} [{ci}]")
        lines.append(f"| {r.system} | {r.n} | {r.n_questions} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ci_warning(rows: Sequence[MetricRow]) -> str | None:
    """A warning line when the evaluated set is too small for its CIs to be trusted, else None."""
    if not rows:
        return None
    n_q = max(r.n_questions for r in rows)
    n = max(r.n for r in rows)
    if n_q >= MIN_QUESTIONS_FOR_CI and n >= MIN_PAIRS_FOR_CI:
        return None
    return (f"> **Warning: CIs from {n_q} questions are unreliable** ({n} pairs; the bootstrap resamples "
            f"questions and needs at least {MIN_QUESTIONS_FOR_CI} questions and {MIN_PAIRS_FOR_CI} pairs).")


def weights_markdown(weights: Mapping[str, float]) -> str:
    lines = ["| feature (rubric) | weight |", "|---|---:|"]
    lines += [f"| {k} | {v:+.4f} |" for k, v in weights.items()]
    return "\n".join(lines)


def render_report(*, title: str, split: str, rows: Sequence[MetricRow], weights: Mapping[str, float] | None,
                  counts: Mapping[str, object], excluded: Mapping[str, str], chart: str | None,
                  provenance_differences: Sequence[str] = ()) -> str:
    """The Markdown report.

    Args:
        title: the top heading.
        split: the evaluated split; "all" and "train" are labelled in-sample.
        rows: the metric rows (the model and its baselines on the same pairs).
        weights: per-rubric weights of a binary model, or None.
        counts: label -> count lines.
        excluded: rubric -> why it was left out of the features.
        chart: file name of the weights chart beside the report, or None.
        provenance_differences: differences between how the model's features and the table's were
            made, evaluated anyway (``--allow-provenance-mismatch``); listed in their own section.
    """
    in_sample = IN_SAMPLE_SPLITS.get(split)
    parts = [f"# {title}", "", f"Split evaluated: **{split}**" + (f" ({in_sample})" if in_sample else ""), ""]
    if provenance_differences:
        parts += ["## Provenance differences (allowed by --allow-provenance-mismatch)", "",
                  "The model's features were made differently from this table's; these metrics mix them.", ""]
        parts += [f"- {d}" for d in provenance_differences] + [""]
    parts += ["## Counts", ""] + [f"- {k}: {v}" for k, v in counts.items()] + [""]
    if excluded:
        parts += ["## Rubrics left out of the features", ""] + [f"- {k}: {v}" for k, v in excluded.items()] + [""]
    heading = "## Metrics" + (" — IN-SAMPLE" if in_sample else "")
    parts += [heading + " (macro-averaged; question-clustered bootstrap 95% CI in brackets)", ""]
    warning = ci_warning(rows)
    if warning:
        parts += [warning, ""]
    parts += [metrics_markdown(rows), ""]
    if weights is not None:
        parts += ["## Weights (standardised differences; > 0 favours the answer scoring higher)", "",
                  weights_markdown(weights), ""]
    if chart:
        parts += [f"![weights]({chart})", ""]
    return "\n".join(parts)


def plot_weights(weights: Mapping[str, float], path: str | Path) -> None:
    """Horizontal bar chart of the weights (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(weights)
    vals = [weights[n] for n in names]
    fig, ax = plt.subplots(figsize=(6, 0.45 * len(names) + 1.2))
    ax.barh(names, vals, color=["#2a9d8f" if v >= 0 else "#e76f51" for v in vals])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("logistic-regression weight on standardised a - b")
    ax.set_title("Rubric weights in the preference model")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
