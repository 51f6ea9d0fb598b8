"""Markdown report and charts (weights with their CIs, reliability diagram) for an evaluated preference model."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rubric.preference.fitted_on import IN_SAMPLE_MARK, PARTLY_IN_SAMPLE_MARK
from rubric.preference.metrics import METRICS, ClusteredMean, MetricRow, ReliabilityBin
from rubric.preference.selection import MAX_DEGENERATE_SHARE
from rubric.scoring import EXTRA_SIGNALS
from rubric.tables import is_indicator_column

if TYPE_CHECKING:
    from rubric.preference.selection import AblationRow, Calibration

__all__ = ["MIN_QUESTIONS_FOR_CI", "MIN_PAIRS_FOR_CI", "IN_SAMPLE_SPLITS", "IN_SAMPLE_MARK", "metrics_markdown",
           "ci_warning", "weight_ci_cell", "weight_ci_note", "weights_markdown", "selection_markdown", "ablation_markdown", "calibration_markdown", "render_report", "plot_weights",
           "plot_reliability", "CHART_WIDTH", "CHART_MIN_FONT", "chart_label", "legend_beside", "column_kind"]


#: Below either, a question-clustered bootstrap has too few clusters for its CIs to mean much.
MIN_QUESTIONS_FOR_CI = 30
MIN_PAIRS_FOR_CI = 50

#: Splits whose pairs the model was (or may have been) fitted on.
IN_SAMPLE_SPLITS = {"all": "includes the training pairs: in-sample", "train": "the training pairs: in-sample"}


def _num(x: float, digits: int) -> str:
    return "n/a" if math.isnan(x) else f"{x:.{digits}f}"


def _ci(lo: float, hi: float, fmt: str = ".3f") -> str:
    return "n/a" if math.isnan(lo) or math.isnan(hi) else f"{lo:{fmt}}, {hi:{fmt}}"


def metrics_markdown(rows: Sequence[MetricRow], *, in_sample: bool = False, mark: str | None = None) -> str:
    """The metrics table: one row per system, each metric with its CI in brackets ("n/a" when undefined);
    every system carries ``mark`` (default: :data:`IN_SAMPLE_MARK` when ``in_sample``)."""
    head = "| system | n pairs | n questions | " + " | ".join(METRICS) + " |"
    sep = "|---|---:|---:|" + "---:|" * len(METRICS)
    lines = [head, sep]
    if mark is None:
        mark = IN_SAMPLE_MARK if in_sample else ""
    for r in rows:
        cells = []
        for m in METRICS:
            lo, hi = r.ci[m]
            cells.append(f"{_num(r.values[m], 4)} [{_ci(lo, hi)}]")
        lines.append(f"| {r.system}{mark} | {r.n} | {r.n_questions} | " + " | ".join(cells) + " |")
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


def weight_ci_cell(column: str, weight_ci: Mapping | None) -> str:
    """One weight's CI as the reports print it: "[lo, hi]"; with the replicates left out because the column
    was constant in them; "unreliable: ..." when more than the set share were (see
    :func:`rubric.preference.selection.bootstrap_weight_cis`); "not computed" without CIs.

    Args:
        column: the column.
        weight_ci: a model's saved weight CIs (``saved_weight_ci``: ``ci``, ``n_boot``, ``n_failed`` and,
            when recorded, ``n_degenerate`` and ``unreliable``), or None.
    """
    ci = weight_ci.get("ci") if weight_ci else None
    if not ci or column not in ci:
        return "not computed"
    text = f"[{_ci(*ci[column], fmt='+.4f')}]"
    if "n_degenerate" not in weight_ci:
        return text + " (degenerate replicates not checked: fitted before they were; re-fit)"
    n_deg = int((weight_ci.get("n_degenerate") or {}).get(column, 0))
    fitted = int(weight_ci.get("n_boot", 0)) - int(weight_ci.get("n_failed", 0))
    if column in (weight_ci.get("unreliable") or ()):
        return (f"unreliable: the column is constant in {n_deg} of {fitted} replicates "
                f"(over {float(weight_ci.get('max_degenerate_share', 0)):.0%}); the other {fitted - n_deg} give {text}")
    return text + (f" ({n_deg} of {fitted} replicates constant: left out)" if n_deg else "")


def column_kind(column: str, style_features: Sequence[str] = ()) -> str:
    """What a model column is: a style covariate, a missing-value indicator, an extra signal (a feature people reward
    that is no rubric, under its own name: ``qa_similarity``) or a rubric."""
    return ("style covariate" if column in style_features else
            "missing-value indicator" if is_indicator_column(column) else
            "signal" if column in EXTRA_SIGNALS else "rubric")


def weights_markdown(weights: Mapping[str, float], *, style_features: Sequence[str] = (),
                     ci: Mapping[str, tuple[float, float]] | None = None, weight_ci: Mapping | None = None) -> str:
    """The weight table (the paper's Table 3): one row per column, style covariates marked as such,
    with the bootstrap 95% CI when known (``weight_ci``, the saved record, wins over a bare ``ci``
    mapping; see :func:`weight_ci_cell`)."""
    if weight_ci is None and ci is not None:
        weight_ci = {"ci": ci, "n_degenerate": {}}
    lines = ["| feature | kind | weight | 95% CI |", "|---|---|---:|---|"]
    for k, v in weights.items():
        kind = column_kind(k, style_features)
        lines.append(f"| {k} | {kind} | {v:+.4f} | {weight_ci_cell(k, weight_ci)} |")
    return "\n".join(lines)


def weight_ci_note(weight_ci: Mapping) -> str:
    """The sentence above the weight table saying how its CIs were made."""
    return (f"95% CIs: percentile bootstrap over training questions ({weight_ci.get('n_boot')} replicates, "
            f"seed {weight_ci.get('seed')}, {weight_ci.get('n_failed', 0)} unfittable), model refitted on each. A "
            "replicate in which a column is constant gives that column weight 0 by construction: it is left out of "
            "that column's CI, and a column constant in more than "
            f"{float(weight_ci.get('max_degenerate_share', MAX_DEGENERATE_SHARE)):.0%} of the replicates has its CI "
            "marked unreliable.")


def selection_markdown(C: float, selection: Mapping | None) -> str:
    """How C was chosen: given, or by cross-validation (with the CV table)."""
    rows = selection.get("rows") if selection else None
    if not rows:
        return f"C = {C:g}, given (not selected by cross-validation; `fit --C cv` selects it)."
    criterion = selection.get("criterion", "mean validation log loss")
    lines = [f"C = {C:g}, chosen by {selection.get('n_folds', '?')}-fold cross-validation on the training split with "
             f"questions kept together (GroupKFold; criterion: {criterion}).", "",
             "| C | validation log loss (mean ± sd over folds) | validation accuracy | folds fitted |",
             "|---:|---:|---:|---:|"]
    for r in rows:
        mark = " **(chosen)**" if r.get("C") == selection.get("best_C") else ""
        lines.append(f"| {r.get('C', float('nan')):g}{mark} | {_num(r.get('log_loss', float('nan')), 4)} ± "
                     f"{_num(r.get('log_loss_sd', float('nan')), 4)} | {_num(r.get('accuracy', float('nan')), 4)} | "
                     f"{r.get('n_folds', 0)} |")
    return "\n".join(lines)


def ablation_markdown(rows: Sequence["AblationRow"], *, in_sample: bool = False, mark: str | None = None) -> str:
    """The drop-one-rubric table: accuracy without each rubric and the paired difference with its CI; each
    row carries ``mark`` (default: IN-SAMPLE when ``in_sample``)."""
    lines = ["| rubric left out | accuracy without it | Δ accuracy vs full model [95% CI] | n pairs | n questions |",
             "|---|---:|---|---:|---:|"]
    if mark is None:
        mark = IN_SAMPLE_MARK if in_sample else ""
    for r in rows:
        d = r.delta
        lines.append(f"| {r.feature}{mark} | {_num(r.accuracy_without, 4)} | "
                     f"{_num(d.value, 4)} [{_ci(*d.ci, fmt='+.3f')}] | {d.n} | {d.n_questions} |")
    return "\n".join(lines)


def _brier_cell(b: ClusteredMean) -> str:
    return f"{_num(b.value, 4)} [{_ci(*b.ci, fmt='.4f')}]"


def calibration_markdown(cal: "Calibration", *, in_sample: bool = False, mark: str | None = None) -> str:
    """Brier scores (model as fitted, style-controlled, and the constant 0.5 baseline) and the
    reliability table with its counts; the model's rows carry ``mark`` (default: IN-SAMPLE when ``in_sample``)."""
    if mark is None:
        mark = IN_SAMPLE_MARK if in_sample else ""
    lines = ["| system | Brier score [95% CI] |", "|---|---:|",
             f"| preference model{mark} | {_brier_cell(cal.brier)} |"]
    if cal.brier_style_controlled is not None:
        lines.append(f"| preference model, style-controlled{mark} | {_brier_cell(cal.brier_style_controlled)} |")
    lines += ["| baseline: always P(a) = 0.5 | 0.2500 |", "",
              "| P(a) bin | n pairs | mean predicted P(a) | share where a was preferred |", "|---|---:|---:|---:|"]
    for i, b in enumerate(cal.bins):
        close = "]" if i == len(cal.bins) - 1 else ")"
        lines.append(f"| [{b.lo:.1f}, {b.hi:.1f}{close} | {b.n} | {_num(b.mean_p, 3)} | {_num(b.frac_a, 3)} |")
    return "\n".join(lines)


def render_report(*, title: str, split: str, rows: Sequence[MetricRow], weights: Mapping[str, float] | None,
                  counts: Mapping[str, object], excluded: Mapping[str, str], chart: str | None,
                  provenance_differences: Sequence[str] = (), style_features: Sequence[str] = (),
                  weight_ci: Mapping | None = None, ablation: Sequence["AblationRow"] | None = None,
                  ablation_note: str = "", ablation_in_sample: bool = False,
                  calibration: "Calibration | None" = None, calibration_chart: str | None = None,
                  C: float | None = None, selection: Mapping | None = None,
                  length_betas: Mapping[str, float] | None = None, in_sample: bool | None = None,
                  sample_note: str = "", mark: str | None = None,
                  outside: tuple[str, Sequence[MetricRow]] | None = None) -> str:
    """The Markdown report.

    Args:
        title: the top heading.
        split: the evaluated split; "all" and "train" are labelled in-sample.
        rows: the metric rows (the model, style-controlled when it has style covariates, and its
            baselines on the same pairs).
        weights: per-column weights of a binary model, or None.
        counts: label -> count lines.
        excluded: rubric (or style covariate) -> why it was left out of the features.
        chart: file name of the weights chart beside the report, or None.
        provenance_differences: differences between how the model's features and the table's were
            made, evaluated anyway (``--allow-provenance-mismatch``); listed in their own section.
        style_features: the model's style covariates (marked in the weight table).
        weight_ci: the model's saved weight CIs: ``{"ci": {column: (lo, hi)}, "n_boot": ..., ...}``.
        ablation: drop-one-rubric rows, or None (``ablation_note`` says why).
        ablation_note: where the ablation refitted, or why it is missing.
        ablation_in_sample: the ablation's training pairs overlap the evaluated ones.
        calibration: Brier scores and reliability bins, or None.
        calibration_chart: file name of the reliability plot beside the report, or None.
        C: the model's regularisation strength; with ``selection`` (the saved ``C_selection``), how it
            was chosen.
        length_betas: the length decorrelation betas, when the model was fitted with them.
        in_sample: whether the evaluated pairs are in the model's training sample, when known from
            what the model was fitted on (:mod:`rubric.preference`); None: judged from ``split`` alone
            ("all" and "train" are in-sample).
        sample_note: the sentence saying how that was decided (printed under the split).
        mark: what every row of the in-sample tables carries (``SampleStatus.mark``); default from
            ``in_sample``.
        outside: when only some evaluated pairs' questions were trained on: ("held-out" or
            "transferred", the metric rows on the other pairs), shown beside the rows of all pairs.
    """
    if in_sample is None:
        in_sample_text = IN_SAMPLE_SPLITS.get(split)
    elif mark == PARTLY_IN_SAMPLE_MARK:
        in_sample_text = "some pairs' questions are the model's training questions: partly in-sample"
    else:
        in_sample_text = "the model's training pairs: in-sample" if in_sample else None
    if mark is None:
        mark = IN_SAMPLE_MARK if in_sample_text else ""
    tag = f" —{mark.replace('(', '').replace(')', '')}" if mark else ""
    parts = [f"# {title}", "", f"Split evaluated: **{split}**" + (f" ({in_sample_text})" if in_sample_text else ""),
             ""]
    if sample_note:
        parts += [f"Model: {sample_note}.", ""]
    in_sample = in_sample_text
    if provenance_differences:
        parts += ["## Provenance differences (allowed by --allow-provenance-mismatch)", "",
                  "The model's features were made differently from this table's; these metrics mix them.", ""]
        parts += [f"- {d}" for d in provenance_differences] + [""]
    parts += ["## Counts", ""] + [f"- {k}: {v}" for k, v in counts.items()] + [""]
    if excluded:
        parts += ["## Rubrics left out of the features", ""] + [f"- {k}: {v}" for k, v in excluded.items()] + [""]
    parts += [f"## Metrics{tag} (macro-averaged; question-clustered bootstrap 95% CI in brackets)", ""]
    warning = ci_warning(rows)
    if warning:
        parts += [warning, ""]
    parts += [metrics_markdown(rows, mark=mark), ""]
    if outside is not None:
        kind, outside_rows = outside
        n = max((r.n for r in outside_rows), default=0)
        parts += [f"### Metrics on the {n} pairs whose questions the model was not fitted on ({kind})", ""]
        warning = ci_warning(outside_rows)
        if warning:
            parts += [warning, ""]
        parts += [metrics_markdown(outside_rows, mark=""), ""]
    if style_features:
        parts += ["Style-controlled: the same model with its style covariates' raw values set to 0 (two answers of "
                  "equal length and markdown), as in Chatbot Arena's style control and AlpacaEval's length-controlled "
                  "win rate; the style covariates are " + ", ".join(style_features) + ".", ""]
    if weights is not None:
        parts += ["## Weights (standardised differences; > 0 favours the answer scoring higher)", ""]
        ci = weight_ci.get("ci") if weight_ci else None
        if weight_ci:
            parts += [weight_ci_note(weight_ci), ""]
        else:
            parts += ["No weight CIs: the model was fitted without a weight bootstrap (`fit --weight-boot N`).", ""]
        parts += [weights_markdown(weights, style_features=style_features, weight_ci=weight_ci), ""]
    if chart:
        parts += [f"![weights]({chart})", ""]
    if C is not None:
        parts += ["## Regularisation", "", selection_markdown(C, selection), ""]
    if length_betas:
        parts += ["## Length decorrelation", "",
                  "Each rubric's per-answer score was residualised against answer length (whitespace tokens) on "
                  "the training answers, r' = r - beta * length, with beta making Spearman(r', length) zero; "
                  "differences use d' = d - beta * (length_a - length_b).", "",
                  "| rubric | beta |", "|---|---:|"] + [f"| {k} | {v:+.6g} |" for k, v in length_betas.items()] + [""]
    ab_mark = (mark or IN_SAMPLE_MARK) if ablation_in_sample else ""
    ab_tag = f" —{ab_mark.replace('(', '').replace(')', '')}" if ab_mark else ""
    parts += [f"## Drop-one-rubric ablation{ab_tag} (Δ accuracy = without - full; question-clustered paired "
              "bootstrap 95% CI)", ""]
    if ablation_note:
        parts += [ablation_note[:1].upper() + ablation_note[1:] + ".", ""]
    if ablation:
        parts += [f"Full model refitted the same way: accuracy {_num(ablation[0].accuracy_full, 4)}.", "",
                  ablation_markdown(ablation, mark=ab_mark), ""]
    elif ablation is not None:
        parts += ["No rubric to leave out.", ""]
    if calibration is not None:
        parts += [f"## Calibration{tag} (P(a preferred); question-clustered bootstrap 95% CI)", "",
                  calibration_markdown(calibration, mark=mark), ""]
        if calibration_chart:
            parts += [f"![reliability]({calibration_chart})", ""]
    return "\n".join(parts)


#: The widest chart, in inches. The HTML page shows a chart at its natural size (96 px per inch) up to the
#: width of its column, which is about 740 px in an 800 px window: a chart of 7.5 in (720 px) is not shrunk
#: there, so text of :data:`CHART_MIN_FONT` pt stays at 10.7 px or more.
CHART_WIDTH = 7.5
#: The smallest text in a chart, in points.
CHART_MIN_FONT = 8


def chart_label(text: str, width: int = 34) -> str:
    """A category label (a system's name) wrapped on lines of about ``width`` characters, so a long name is
    drawn whole without squeezing the plot."""
    import textwrap

    return "\n".join(textwrap.wrap(str(text), width=width, break_on_hyphens=False)) or str(text)


def _label_lines(labels: Sequence[str]) -> int:
    return sum(label.count("\n") + 1 for label in labels)


def legend_beside(ax, **kwargs):
    """The axes' legend to the right of the plot area, never over the data."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=CHART_MIN_FONT,
                     frameon=False, **kwargs)


def plot_weights(weights: Mapping[str, float], path: str | Path, *, ci: Mapping[str, tuple[float, float]] | None = None,
                 style_features: Sequence[str] = (), unreliable: Sequence[str] = ()) -> None:
    """Horizontal bar chart of the weights (PNG), with 95% CI error bars when given (grey and dashed for a
    CI marked unreliable); style covariates hatched."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(weights)
    vals = [weights[n] for n in names]
    fig, ax = plt.subplots(figsize=(min(6.0, CHART_WIDTH), 0.45 * len(names) + 1.4))
    bars = ax.barh(names, vals, color=["#2a9d8f" if v >= 0 else "#e76f51" for v in vals])
    for bar, n in zip(bars, names):
        if n in style_features:
            bar.set_hatch("//")
            bar.set_edgecolor("#264653")
    if ci:
        for k, n in enumerate(names):
            lo, hi = ci[n]
            if math.isnan(lo) or math.isnan(hi):
                continue
            bad = n in unreliable
            ax.errorbar([vals[k]], [k], xerr=[[max(vals[k] - lo, 0.0)], [max(hi - vals[k], 0.0)]], fmt="none",
                        ecolor="#9aa5ab" if bad else "black", capsize=3, linewidth=1, linestyle="--" if bad else "-")
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("LR weight on standardised a - b" + (" (95% CI)" if ci else ""))
    notes = (["hatched: style covariates"] if style_features else []) + (["grey: CI unreliable"] if unreliable else [])
    ax.set_title("Preference model weights" + (f"\n({'; '.join(notes)})" if notes else ""), fontsize=10)
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_reliability(bins: Sequence[ReliabilityBin], path: str | Path) -> None:
    """Reliability diagram (PNG): share of pairs where a was preferred against mean predicted P(a) per
    bin, the diagonal for perfect calibration, and the pair count of each bin underneath."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax_n) = plt.subplots(2, 1, figsize=(6.5, 6), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="perfectly calibrated")
    full = [b for b in bins if b.n]
    ax.plot([b.mean_p for b in full], [b.frac_a for b in full], marker="o", color="#2a9d8f", label="model")
    ax.set_ylabel("share where a was preferred")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    legend_beside(ax)
    ax.set_title("Reliability of P(a preferred)")
    centres = [(b.lo + b.hi) / 2 for b in bins]
    widths = [b.hi - b.lo for b in bins]
    ax_n.bar(centres, [b.n for b in bins], width=widths, color="#8ab17d", edgecolor="white")
    for c, b in zip(centres, bins):
        ax_n.annotate(str(b.n), (c, b.n), ha="center", va="bottom", fontsize=CHART_MIN_FONT)
    from matplotlib.ticker import MaxNLocator

    ax_n.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax_n.set_xlabel("predicted P(a)")
    ax_n.set_ylabel("pairs")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
