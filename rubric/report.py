"""Markdown report and weight chart for an evaluated preference model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rubric.metrics import METRICS, MetricRow

__all__ = ["metrics_markdown", "weights_markdown", "render_report", "plot_weights"]


def metrics_markdown(rows: Sequence[MetricRow]) -> str:
    head = "| system | n | " + " | ".join(METRICS) + " |"
    sep = "|---|---:|" + "---:|" * len(METRICS)
    lines = [head, sep]
    for r in rows:
        cells = [f"{r.values[m]:.4f} [{r.ci[m][0]:.3f}, {r.ci[m][1]:.3f}]" for m in METRICS]
        lines.append(f"| {r.system} | {r.n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def weights_markdown(weights: Mapping[str, float]) -> str:
    lines = ["| feature (rubric) | weight |", "|---|---:|"]
    lines += [f"| {k} | {v:+.4f} |" for k, v in weights.items()]
    return "\n".join(lines)


def render_report(*, title: str, split: str, rows: Sequence[MetricRow], weights: Mapping[str, float] | None,
                  counts: Mapping[str, object], excluded: Mapping[str, str], chart: str | None) -> str:
    parts = [f"# {title}", "", f"Split evaluated: **{split}**" + (" (includes the training pairs: in-sample)" if split == "all" else ""), ""]
    parts += ["## Counts", ""] + [f"- {k}: {v}" for k, v in counts.items()] + [""]
    if excluded:
        parts += ["## Rubrics left out of the features", ""] + [f"- {k}: {v}" for k, v in excluded.items()] + [""]
    parts += ["## Metrics (macro-averaged; bootstrap 95% CI in brackets)", "", metrics_markdown(rows), ""]
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
