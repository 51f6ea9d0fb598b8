"""Charts as inline SVG: the Markdown reports' own matplotlib plots, and the few the HTML adds.

The Markdown reports write PNGs beside themselves with ``plot_*(..., path)``; the HTML calls the same
functions with an in-memory file and SVG as the save format, so a chart is the same drawing of the
same result object, not a redrawn one. Text stays text (``svg.fonttype: none``), which keeps each
chart a few kilobytes and lets a browser test find its labels.

A chart is shown at its natural size (the SVG's width in points at 96 px per inch) and only shrunk to a
narrower column: every chart is at most :data:`rubric.preference.CHART_WIDTH` wide and its text at least
:data:`rubric.preference.CHART_MIN_FONT` points, so its text stays at 10 px or more from an 800 px wide
window up; long category labels are wrapped, not cut, and legends sit beside the data.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from rubric.preference import CHART_MIN_FONT, CHART_WIDTH, chart_label, legend_beside

__all__ = ["svg_of", "svg_figure", "plot_distributions", "plot_correlations", "plot_linkage", "plot_win_rates",
           "plot_accuracy"]

_RC = {"savefig.format": "svg", "svg.fonttype": "none", "svg.hashsalt": "lfqa-rubric", "font.size": 9}
#: CSS pixels per SVG user unit (a point) at a chart's natural size.
_PX_PER_PT = 96 / 72


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _clean(svg: bytes) -> str:
    text = svg.decode("utf-8")
    start = text.find("<svg")
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text[start:], flags=re.S)  # creator and date: not the chart
    # matplotlib sizes the chart in pt; the page shows it at that size, shrunk to a narrower column, never enlarged
    width = re.search(r'<svg[^>]*? width="([0-9.]+)pt"', text)
    style = f' style="max-width: {float(width.group(1)) * _PX_PER_PT:.0f}px"' if width else ""
    return re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', rf'<svg\1 class="chart"{style}', text, count=1)


def svg_of(plot: Callable, *args, **kwargs) -> str:
    """Run a ``plot_*(..., path, ...)`` function of the Markdown reports into an SVG string.

    Args:
        plot: a function that draws one figure and saves it to the path it is given (its second
            positional argument) with ``fig.savefig(path)``.
        *args: its arguments before the path.
        **kwargs: its keyword arguments.
    """
    import matplotlib

    _plt()
    buf = io.BytesIO()
    with matplotlib.rc_context(_RC):
        plot(*args, buf, **kwargs)
    return _clean(buf.getvalue())


def svg_figure(fig) -> str:
    """A figure drawn here, as SVG (closed afterwards)."""
    import matplotlib

    buf = io.BytesIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    _plt().close(fig)
    return _clean(buf.getvalue())


def plot_distributions(values: Mapping[str, Sequence[float]], *, bins: int = 20) -> str:
    """One histogram per rubric (1-5 scale, or the column's own range), in a grid."""
    plt = _plt()
    names = list(values)
    cols = min(3, max(len(names), 1))
    rows = max(math.ceil(len(names) / cols), 1)
    with plt.rc_context(_RC):
        fig, axes = plt.subplots(rows, cols, figsize=(CHART_WIDTH / 3 * cols, 2.0 * rows), squeeze=False)
        for ax in axes.flat[len(names):]:
            ax.set_visible(False)
        for ax, name in zip(axes.flat, names):
            v = np.asarray([x for x in values[name] if x is not None and not math.isnan(x)], dtype=float)
            if len(v):
                ax.hist(v, bins=bins, color="#2a9d8f", edgecolor="white")
            ax.set_title(f"{name} (n={len(v)})", fontsize=9)
            ax.tick_params(labelsize=CHART_MIN_FONT)
        fig.tight_layout()
    return svg_figure(fig)


def plot_correlations(names: Sequence[str], matrix: np.ndarray) -> str:
    """A Spearman correlation heatmap with each cell's value written in it."""
    plt = _plt()
    n = len(names)
    with plt.rc_context(_RC):
        cell = min(0.8, (CHART_WIDTH - 2.4) / max(n, 1))  # the whole matrix within the widest chart
        fig, ax = plt.subplots(figsize=(2.4 + cell * n, 1.6 + 0.75 * cell * n))
        im = ax.imshow(np.nan_to_num(matrix), vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set_xticks(range(n), names, rotation=45, ha="right")
        ax.set_yticks(range(n), names)
        for i in range(n):
            for j in range(n):
                v = matrix[i, j]
                ax.text(j, i, "n/a" if math.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=CHART_MIN_FONT,
                        color="white" if not math.isnan(v) and abs(v) > 0.6 else "black")
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="Spearman ρ")
        ax.set_title("Spearman ρ, per answer", fontsize=9)
        fig.tight_layout()
    return svg_figure(fig)


def _err(value: float, ci: tuple[float, float]) -> tuple[float, float]:
    lo, hi = ci
    if any(math.isnan(x) for x in (value, lo, hi)):
        return 0.0, 0.0
    return max(value - lo, 0.0), max(hi - value, 0.0)


def _paired_bars(rows: Sequence, series: Sequence[tuple[str, str, str]], *, xlim: tuple[float, float],
                 xlabel: str, zero_line: bool = False) -> str:
    """Two bars per row (one per ``(attribute, colour, label)`` of ``series``), each a ClusteredMean-like
    value with its 95% CI as an error bar."""
    plt = _plt()
    y = np.arange(len(rows))
    h = 0.38
    names = [chart_label(r.system) for r in rows]
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(CHART_WIDTH, 0.32 * sum(n.count("\n") + 1 for n in names) + 1.6))
        for k, (attr, colour, label) in enumerate(series):
            ms = [getattr(r, attr) for r in rows]
            vals = [0.0 if math.isnan(m.value) else m.value for m in ms]
            ax.barh(y + (k - 0.5) * h, vals, height=h, color=colour, label=label,
                    xerr=np.array([_err(m.value, m.ci) for m in ms]).T.reshape(2, -1), capsize=3)
        ax.set_yticks(y, names)
        ax.invert_yaxis()
        if zero_line:
            ax.axvline(0, color="black", linewidth=0.8)
        ax.set_xlim(*xlim)
        ax.set_xlabel(xlabel)
        legend_beside(ax)
        fig.tight_layout()
    return svg_figure(fig)


def plot_linkage(results: Sequence) -> str:
    """Mean per-question Kendall τ and Spearman ρ per system with their 95% CIs (LINKAGE's metric)."""
    return _paired_bars(results, (("kendall", "#264653", "Kendall τ"), ("spearman", "#2a9d8f", "Spearman ρ")),
                        xlim=(-1, 1), xlabel="mean per-question correlation with the graded labels (95% CI)",
                        zero_line=True)


def plot_win_rates(rows: Sequence) -> str:
    """RAG-QA Arena: each system's win and win+tie rate against the reference, with 95% CIs."""
    return _paired_bars(rows, (("win", "#e76f51", "win"), ("win_tie", "#2a9d8f", "win + tie")), xlim=(0, 1),
                        xlabel="share of pairs against the reference (95% CI)")


def plot_accuracy(rows: Sequence, *, title: str) -> str:
    """Accuracy per system with its question-clustered 95% CI (``MetricRow``s), the chance line at 0.5."""
    plt = _plt()
    y = np.arange(len(rows))
    names = [chart_label(r.system) for r in rows]
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(CHART_WIDTH, 0.3 * sum(n.count("\n") + 1 for n in names) + 1.4))
        vals = [r.values["accuracy"] for r in rows]
        ax.barh(y, [0.0 if math.isnan(v) else v for v in vals], height=0.6,
                color=["#8ab17d" if r.system.startswith("baseline") else "#2a9d8f" for r in rows],
                xerr=np.array([_err(v, r.ci["accuracy"]) for v, r in zip(vals, rows)]).T.reshape(2, -1), capsize=3)
        ax.axvline(0.5, color="grey", linestyle="--", linewidth=1)
        ax.set_yticks(y, names)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("accuracy (95% CI, questions resampled)")
        ax.set_title(title, fontsize=9)
        fig.tight_layout()
    return svg_figure(fig)
