"""The analysis as Markdown (Tables 4-8) and PNG charts beside it.

Every table says the command that made it, how many pairs and questions it rests on, and warns when
its CIs rest on fewer than :data:`rubric.preference.report.MIN_QUESTIONS_FOR_CI` questions. Rows of systems
fitted on pairs that may include the analysed ones carry "(IN-SAMPLE)" in the table itself; the rubric
model's rows are marked per table by the overlap of that table's pairs with its training questions
("(PARTLY IN-SAMPLE: k of n pairs)" when only some are), and Table 4 is given again on the pairs outside.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from rubric.analysis.perturbation import Perturbation
from rubric.analysis.position import Position
from rubric.analysis.run import Analysis
from rubric.analysis.stats import MetricDelta
from rubric.analysis.verbosity import Verbosity
from rubric.preference import CHART_WIDTH, METRICS, ClusteredMean, chart_label, legend_beside
from rubric.preference import MIN_QUESTIONS_FOR_CI

__all__ = ["analysis_markdown", "plot_position", "plot_verbosity", "plot_perturbations", "write_analysis"]

_METRIC_NAMES = {"accuracy": "accuracy", "precision": "precision", "recall": "recall", "f1": "F1"}


def _num(x: float, fmt: str = ".4f") -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:{fmt}}"


def _ci(ci: tuple[float, float], fmt: str = ".3f") -> str:
    lo, hi = ci
    return "n/a" if math.isnan(lo) or math.isnan(hi) else f"{lo:{fmt}}, {hi:{fmt}}"


def _with_ci(value: float, ci: tuple[float, float], fmt: str = ".4f", ci_fmt: str = ".3f") -> str:
    return f"{_num(value, fmt)} [{_ci(ci, ci_fmt)}]"


def _share(m: ClusteredMean) -> str:
    return _with_ci(m.value, m.ci, ".3f", ".3f")


def _pct(m: MetricDelta) -> str:
    lo, hi = m.relative_ci
    ci = "n/a" if math.isnan(lo) or math.isnan(hi) else f"{100 * lo:+.2f}%, {100 * hi:+.2f}%"
    return f"{'n/a' if math.isnan(m.relative) else f'{100 * m.relative:+.2f}%'} [{ci}]"


def _size_line(command: str, n: int, n_questions: int, what: str) -> list[str]:
    lines = [f"`{command}` — {n} pairs from {n_questions} questions ({what}).", ""]
    if n_questions < MIN_QUESTIONS_FOR_CI:
        lines += [f"> **Warning: CIs from {n_questions} questions are unreliable** (the bootstrap resamples questions "
                  f"and needs at least {MIN_QUESTIONS_FOR_CI}).", ""]
    return lines


_FAILURES_TEXT = {
    "miss": "a pair a system failed on (an error: no majority vote, no parseable vote, a context overflow) is a "
            "miss for that system only, and every other system keeps it (`--judge-failures miss`)",
    "drop": "a pair any system failed on (an error) is left out for every system (`--judge-failures drop`)",
}


def _metrics_table(out: list[str], c, *, label) -> None:
    out += ["| system | kind | n | undecided (misses) | failed (misses) | "
            + " | ".join(_METRIC_NAMES[m] for m in METRICS) + " |",
            "|---|---|---:|---:|---:|" + "---:|" * len(METRICS)]
    unsure = {u.system: (u.n_undecided, u.n_missed) for u in c.undecided}
    for s, r in zip(c.systems, c.rows):
        cells = [_with_ci(r.values[m], r.ci[m]) for m in METRICS]
        n_unsure, n_failed = unsure.get(s.name, (0, 0))
        out.append(f"| {label(s)} | {s.kind} | {r.n} | {n_unsure} | {n_failed} | " + " | ".join(cells) + " |")


def _comparison(a: Analysis, command: str) -> list[str]:
    c = a.comparison
    kept = ("labelled a or b in the {split} split and given to every system; every row on these same pairs" if c.misses
            else "labelled a or b in the {split} split, failed by no system; every row on these same pairs")
    out = [f"## Table 4: agreement with people on the same pairs ({a.split} split)", ""]
    out += _size_line(command, len(c.pair_ids), c.n_questions, kept.format(split=a.split))
    out += ["Accuracy, and precision, recall and F1 macro-averaged over the people's two classes (a, b); "
            "question-clustered bootstrap 95% CI in brackets. A system's \"tie\" counts as a miss, not as a class "
            "of its own; so does a pair it judged without a decision (undecided: e.g. an order-debiased P(a) of "
            f"exactly 0.5), which stays in every row; and {_FAILURES_TEXT[c.judge_failures]}.", ""]
    _metrics_table(out, c, label=lambda s: s.label_on(c.question_ids))
    out += ["", "### Pairs compared and pairs left out", "",
            f"- pairs in the {a.split} split: {c.n_pairs_split}; labelled a or b: {c.n_labelled}; labelled tie: "
            f"{c.n_tie_labels} (left out, as `evaluate` leaves them out); unlabeled: {c.n_unlabeled} (left out)",
            f"- labelled pairs compared: {len(c.pair_ids)}; left out for every system ("
            + ("some system was never given them" if c.misses else "some system failed on them (an error), or was "
               "never given them") + f"): {c.n_dropped}", ""]
    _undecided_table(out, c.undecided, misses=c.misses)
    out += ["", "### Each system on its own decided pairs (as the paper's reference code scores a judge)", "",
            "Each row on the labelled pairs of the split where that system said a or b: its ties, undecided "
            "verdicts and failures are left out, so the rows rest on different pairs and are not a comparison on "
            "the same pairs (the table above is). The paper's reference code (`LLM_judgement.evaluate_model`) "
            "scores a judge this way.", "",
            "| system | kind | n (its decided pairs) | n questions | "
            + " | ".join(_METRIC_NAMES[m] for m in METRICS) + " |",
            "|---|---|---:|---:|" + "---:|" * len(METRICS)]
    for s, r in zip(c.systems, c.own):
        out.append(f"| {s.label_on(c.question_ids)} | {s.kind} | {r.n} | {r.n_questions} | "
                   + " | ".join(_with_ci(r.values[m], r.ci[m]) for m in METRICS) + " |")
    if a.outside is not None:
        o = a.outside
        out += ["", "### Table 4 on the pairs whose questions the rubric model was not fitted on", "",
                f"{a.sample.note}.", ""]
        out += _size_line(command, len(o.pair_ids), o.n_questions,
                          f"the pairs above whose question is not one of the model's {len(a.sample.training_questions)}"
                          " training questions; every row on these same pairs")
        _metrics_table(out, o, label=lambda s: s.label_on(o.question_ids))
    return out + [""]


def _evaluators(a: Analysis) -> list[str]:
    if not a.evaluators:
        return []
    out = ["## Evaluators side by side", "",
           "The rubric model and each LLM judge (order-debiased): agreement with people on Table 4's pairs "
           "(accuracy, question-clustered bootstrap 95% CI), the share of the split's pairs given to it that it "
           "failed on, and the tokens per 1,000 pairs its run recorded (`rubric.analysis.evaluators`: the rubric "
           "model's are every rubric of its score run per 1,000 of that run's pairs). Seconds per 1,000 pairs vary "
           "from run to run, so this file, which a re-run reproduces, leaves them out: they are in each run's "
           "`manifest.json` (`cost`) and in the HTML report's table (`lfqa-rubric report ... --html`).", "",
           "| system | kind | n | accuracy [95% CI] | failed | prompt tokens / 1k pairs | generated tokens / 1k pairs |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for e in a.evaluators:
        rate = "n/a" if not e.n_given else f"{e.n_failed} of {e.n_given} ({e.failure_rate:.1%})"
        mark = " **(over its run's failure budget)**" if e.over_budget else ""
        out.append(f"| {e.system}{mark} | {e.kind} | {e.n} | {_with_ci(e.accuracy, e.ci)} | {rate} | "
                   f"{_tokens(e.prompt_tokens_per_1000)} | {_tokens(e.generated_tokens_per_1000)} |")
    return out + [""]


def _tokens(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def _why(reasons: dict[str, int]) -> str:
    text = "; ".join(f"{r} ({n})" for r, n in list(reasons.items())[:3])
    more = f"; {len(reasons) - 3} other reason(s)" if len(reasons) > 3 else ""
    return (text + more).replace("|", "/") or "-"


def _undecided_table(out: list[str], undecided, *, misses: bool) -> None:
    """Per system: the labelled pairs it has no verdict for (kept as its misses, or left out for all) and
    those it left undecided (misses)."""
    rows = [u for u in undecided if u.n or u.n_undecided]
    if not rows:
        out.append("Every system decided every labelled pair.")
        return
    out += ["| system | no verdict (an error, or never given) | kept as its misses | left out for every system | "
            "why | undecided (kept, each a miss) | why |",
            "|---|---:|---:|---:|---|---:|---|"]
    for u in rows:
        out.append(f"| {u.system} | {u.n} | {u.n_missed} | {u.n_left_out} | {_why(u.reasons)} | {u.n_undecided} | "
                   f"{_why(u.undecided_reasons)} |")


def _linkage(a: Analysis, command: str) -> list[str]:
    """LINKAGE's per-question correlations (per answer, so a table of its own beside Table 4)."""
    from rubric.protocols import linkage_table

    out = []
    for run in a.linkage:
        out += [f"## LINKAGE: per-question correlation with the graded labels ({run.source})", "",
                "Per answer, not per pair: each question's answers ranked by each system against their graded "
                "labels (mean over the questions where a coefficient is defined, 95% question-bootstrap CIs). "
                "The rows are the LINKAGE run's: its listwise judge, pointwise and pairwise baselines, reference "
                "signals, length and rubric scores.", ""]
        for scope in run.scopes:
            out += [f"### {scope.name}: {scope.n_questions} questions, {scope.n_answers} answers", "",
                    linkage_table(scope.results), ""]
        out += [f"Command: `{command}`", ""]
    return out


def _position(a: Analysis, command: str, chart: str | None) -> list[str]:
    p: Position = a.position
    out = ["## Table 6: position bias (each judge with the answers in the input's order, ab, and swapped, ba)", ""]
    if not p.rows:
        return out + ["No judge output among the inputs: nothing to compare.", ""]
    n_q = min(r.n_questions for r in p.rows)
    out += _size_line(command, max(r.n for r in p.rows), n_q, "labelled a or b, decided in both orders; per judge "
                                                                "below")
    out += ["Δ = order ba - order ab on the same pairs; paired question-clustered bootstrap 95% CI in brackets.", "",
            "| judge | n pairs | n questions | accuracy ab | accuracy ba | "
            + " | ".join(f"Δ {_METRIC_NAMES[m]}" for m in METRICS) + " |",
            "|---|---:|---:|---:|---:|" + "---:|" * len(METRICS)]
    for r in p.rows:
        acc = r.deltas["accuracy"]
        out.append(f"| {r.judge} | {r.n} | {r.n_questions} | {_num(acc.base)} | {_num(acc.other)} | "
                   + " | ".join(_with_ci(r.deltas[m].delta, r.deltas[m].ci, "+.4f", "+.3f") for m in METRICS) + " |")
    out += ["", "### Order consistency (all pairs decided in both orders, labelled or not)", ""]
    n_q = min(r.n_questions_both for r in p.rows)
    out += _size_line(command, max(r.n_both for r in p.rows), n_q, "decided in both orders; per judge below")
    out += ["A flip is a pair whose decision (in the input's labelling) changes when the answers are swapped. "
            "\"To first shown\": the answer shown first won in both orders; \"to second shown\": the answer shown "
            "second won in both. With no position bias, the first-shown answer wins as often in both orders.", "",
            "| judge | n pairs | n questions | flips | flip rate [95% CI] | to first shown | to second shown | "
            "to or from tie | first shown wins, ab [95% CI] | first shown wins, ba [95% CI] |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in p.rows:
        out.append(f"| {r.judge} | {r.n_both} | {r.n_questions_both} | {r.n_flips} | {_share(r.flip_rate)} | "
                   f"{r.flips_to_first} | {r.flips_to_second} | {r.flips_with_tie} | {_share(r.first_wins_ab)} | "
                   f"{_share(r.first_wins_ba)} |")
    out += ["", f"Reference: people chose answer a in {_share(p.people_a)} of the {p.people_a.n} labelled pairs "
            f"({p.people_a.n_questions} questions).", ""]
    if chart:
        out += [f"![position]({chart})", ""]
    return out


def _transitivity(a: Analysis, command: str) -> list[str]:
    t = a.transitivity
    out = ["## Table 5: transitivity (3-cycles among triads of answers to one question)", ""]
    out += [f"`{command}` — {t.n_triads} triads from {t.n_questions_with_triads} questions; {t.n_questions_3plus} of "
            f"the split's {t.n_questions} questions have at least 3 answers, and a triad needs all three of its pairs "
            f"among the {len(a.pairs)} pairs of the {a.split} split (labelled or not)."
            + (f" {t.n_duplicate_pairs} pair(s) repeat two answers already paired: only the first counts."
               if t.n_duplicate_pairs else ""), ""]
    if t.n_questions_with_triads < MIN_QUESTIONS_FOR_CI:
        out += [f"> **Warning: CIs from {t.n_questions_with_triads} questions are unreliable** (the bootstrap "
                f"resamples questions and needs at least {MIN_QUESTIONS_FOR_CI}).", ""]
    if not t.n_triads:
        return out + ["No triad: no question has three answers whose three pairs were all given.", ""]
    out += ["A triad is transitive when one answer beats both others, a 3-cycle (violation) when each answer beats "
            "exactly one, and not testable when one of its pairs has no decision or is a tie. Pointwise scorers are "
            "counted the same way, not assumed to be 0: a decision that also depends on which answer is a (the rubric "
            "model's intercept, \"longer answer wins\" giving equal lengths to a, \"always a\") can cycle.", "",
            "Three rates, each 3-cycles over its own denominator (question-clustered bootstrap 95% CI), because the "
            "seed does not define its own: (1) **testable** = triads whose three pairs are all decided a or b; "
            "(2) **paper-testable** = testable less the triads whose first two listed comparisons (here: its two "
            "pairs that come first in the input) were both won by the answer they share, the case the seed's "
            "Table 5 illustrates as not testable; (3) **chains** = paper-testable less those whose shared answer "
            "lost both listed comparisons, which cannot cycle either and which the seed does not mention. The seed "
            "says neither how it lists a triad's comparisons nor which of (2) and (3) its 4.7 / 12.2 / 15.3 % use, "
            "so none of the three is known to be comparable with them. A judge picking at random scores 1/4, 1/3 "
            "and 1/2.", "",
            "| system | triads | transitive | 3-cycles | not testable: no decision | not testable: tie | "
            "(1) 3-cycles / testable [95% CI] | testable | shared answer won both listed | "
            "(2) 3-cycles / paper-testable [95% CI] | paper-testable | shared answer lost both listed | "
            "(3) 3-cycles / chains [95% CI] | chains |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in t.rows:
        paper = _share(r.violation_paper) if r.violation_paper is not None else "n/a"
        chain = _share(r.violation_chain) if r.violation_chain is not None else "n/a"
        out.append(f"| {r.system} | {r.n_triads} | {r.n_transitive} | {r.n_cycles} | {r.n_untestable_missing} | "
                   f"{r.n_untestable_tie} | {_share(r.violation)} | {r.n_testable} | {r.n_shared_wins_both} | "
                   f"{paper} | {r.n_testable_paper} | {r.n_shared_loses_both} | {chain} | {r.n_chains} |")
    return out + [""]


def _verbosity(a: Analysis, command: str, chart: str | None) -> list[str]:
    v: Verbosity = a.verbosity
    c = a.comparison
    out = ["## Table 7: verbosity (disagreements with people, by which answer was longer)", ""]
    out += _size_line(command, len(c.pair_ids), c.n_questions, "Table 4's pairs, the same for every row")
    out += ["Among each system's disagreements with people: people chose the shorter answer and the system the "
            "longer (short → long), or the opposite (long → short); answers of equal length and the system's ties "
            "apart, and the pairs it left undecided or failed on (a miss with no side; Table 4 counts them too). "
            "The share of "
            "short → long among the directed disagreements has a question-clustered bootstrap "
            "95% CI; the direction is \"long-biased\" when the whole CI is above 0.5, \"short-biased\" when below.", "",
            "| system | n pairs | disagreements | people shorter → system longer | people longer → system shorter | "
            "equal length | system said tie | undecided | failed | share short → long [95% CI] | direction |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in v.rows:
        out.append(f"| {r.system} | {r.n} | {r.n_disagreements} | {r.short_to_long} | {r.long_to_short} | "
                   f"{r.equal_length} | {r.system_tie} | {r.undecided} | {r.failed} | {_share(r.share_short_to_long)} | "
                   f"{r.direction} |")
    out += ["", f"Reference: on these pairs with answers of unequal length, people chose the longer answer in "
            f"{_share(v.people_longer)} of {v.people_longer.n} pairs.", ""]
    if chart:
        out += [f"![verbosity]({chart})", ""]
    return out


def _perturbation(p: Perturbation, command: str) -> list[str]:
    out = [f"### Perturbation: {p.name}", ""]
    what = ("labelled a or b, in both sets, given to every system below on both sides" if p.judge_failures == "miss"
            else "labelled a or b, in both sets, failed on neither side by any system below")
    out += _size_line(command, p.n, p.n_questions, what + "; every row on these same pairs")
    out += [f"Labelled original pairs: {p.n_labelled}; of those in the perturbed set: {p.n_in_perturbed}."]
    if p.only_original:
        out += [f"Not evaluated on the perturbed set (left out): {', '.join(p.only_original)}."]
    if p.only_perturbed:
        out += [f"Only on the perturbed set (left out): {', '.join(p.only_perturbed)}."]
    out += ["", "Δ = perturbed - original on the same pairs; paired question-clustered bootstrap 95% CI in brackets.",
            "",
            f"An undecided verdict (no side) is a miss, counted per side; {_FAILURES_TEXT[p.judge_failures]}.", "",
            "| system | n | undecided original / perturbed | failed original / perturbed | decisions changed | "
            "accuracy original → perturbed | " + " | ".join(f"Δ {_METRIC_NAMES[m]}" for m in METRICS) + " |",
            "|---|---:|---:|---:|---:|---:|" + "---:|" * len(METRICS)]
    for r in p.rows:
        acc = r.deltas["accuracy"]
        out.append(f"| {r.system} | {p.n} | {r.n_undecided_original} / {r.n_undecided_perturbed} | "
                   f"{r.n_failed_original} / {r.n_failed_perturbed} | {r.n_changed} | "
                   f"{_num(acc.base)} → {_num(acc.other)} | "
                   + " | ".join(_with_ci(r.deltas[m].delta, r.deltas[m].ci, "+.4f", "+.3f") for m in METRICS) + " |")
    out += ["", "Relative change (the paper's Table 8 Δ%): (perturbed - original) / original.", "",
            "| system | " + " | ".join(f"Δ% {_METRIC_NAMES[m]}" for m in METRICS) + " |",
            "|---|" + "---:|" * len(METRICS)]
    for r in p.rows:
        out.append(f"| {r.system} | " + " | ".join(_pct(r.deltas[m]) for m in METRICS) + " |")
    for side, und in (("original", p.undecided_original), ("perturbed", p.undecided_perturbed)):
        out += ["", f"Pairs each system failed on or left undecided, {side} side (of the {p.n_in_perturbed} labelled "
                    "pairs in both sets):", ""]
        _undecided_table(out, und, misses=p.judge_failures == "miss")
    return out + [""]


def analysis_markdown(a: Analysis, *, command: str, charts: Mapping[str, str] | None = None) -> str:
    """The analysis report.

    Args:
        a: the analysis.
        command: the command line that made it (repeated under every table).
        charts: chart kind ("position", "verbosity", "perturbation") -> file name beside the report.
    """
    charts = charts or {}
    from rubric.presets import preset_title

    out = [f"# {preset_title('Judges, rubric model and baselines on the same pairs', a.preset)}", "",
           f"Command: `{command}`", "",
           f"Split analysed: **{a.split}**" + (" (some rows are on pairs their system was, or may have been, "
                                                 "fitted on: they say so)" if a.in_sample else ""),
           "", "## Inputs", ""]
    out += [f"- {line}" for line in a.inputs] + [""]
    out += _comparison(a, command)
    out += _evaluators(a)
    out += _linkage(a, command)
    out += _transitivity(a, command)
    out += _position(a, command, charts.get("position"))
    out += _verbosity(a, command, charts.get("verbosity"))
    out += ["## Table 8: robustness to perturbed answers", ""]
    if not a.perturbations:
        out += ["No perturbed set given (`--perturbed NAME=OUT`).", ""]
    for p in a.perturbations:
        out += _perturbation(p, command)
    if a.perturbations and charts.get("perturbation"):
        out += [f"![perturbation]({charts['perturbation']})", ""]
    return "\n".join(out)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _err(m: ClusteredMean) -> tuple[float, float]:
    lo, hi = m.ci
    if math.isnan(lo) or math.isnan(hi) or math.isnan(m.value):
        return 0.0, 0.0
    return max(m.value - lo, 0.0), max(hi - m.value, 0.0)


def _height(labels: Sequence[str], per_line: float, extra: float) -> float:
    return per_line * sum(label.count("\n") + 1 for label in labels) + extra


def plot_position(position: Position, path: str | Path) -> None:
    """Flip rate per judge (top) and the first-shown answer's win share in each order (below), with 95% CIs
    (PNG); legends beside the plots."""
    import numpy as np

    plt = _plt()
    rows = position.rows
    names = [chart_label(r.judge) for r in rows]
    y = np.arange(len(rows))
    h_rows = _height(names, 0.3, 0.0)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(CHART_WIDTH, 2 * h_rows + 2.8),
                                   gridspec_kw={"height_ratios": [1, 1.6]})
    flips = [r.flip_rate for r in rows]
    ax1.barh(y, [0 if math.isnan(f.value) else f.value for f in flips], color="#e76f51",
             xerr=np.array([_err(f) for f in flips]).T, capsize=3)
    ax1.set_yticks(y, names)
    ax1.set_xlabel("flip rate (decision changes when swapped)")
    ax1.set_xlim(0, 1)
    ax1.invert_yaxis()
    h = 0.38
    for k, (attr, colour, label) in enumerate((("first_wins_ab", "#2a9d8f", "order ab"),
                                               ("first_wins_ba", "#264653", "order ba"))):
        ms = [getattr(r, attr) for r in rows]
        ax2.barh(y + (k - 0.5) * h, [0 if math.isnan(m.value) else m.value for m in ms], height=h, color=colour,
                 xerr=np.array([_err(m) for m in ms]).T, capsize=3, label=label)
    ax2.axvline(position.people_a.value if not math.isnan(position.people_a.value) else 0.5, color="grey",
                linestyle="--", linewidth=1, label="people chose a")
    ax2.set_yticks(y, names)
    ax2.set_xlabel("share where the first-shown answer wins")
    ax2.set_xlim(0, 1)
    ax2.invert_yaxis()
    legend_beside(ax2)
    fig.suptitle("Position bias per judge (95% CI, questions resampled)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_verbosity(verbosity: Verbosity, path: str | Path) -> None:
    """Per system, disagreements where people chose the shorter and the system the longer, and the opposite (PNG)."""
    import numpy as np

    plt = _plt()
    rows = verbosity.rows
    names = [chart_label(r.system) for r in rows]
    y = np.arange(len(rows))
    h = 0.38
    fig, ax = plt.subplots(figsize=(CHART_WIDTH, _height(names, 0.3, 1.6)))
    ax.barh(y - h / 2, [r.short_to_long for r in rows], height=h, color="#e76f51",
            label="people shorter →\nsystem longer")
    ax.barh(y + h / 2, [r.long_to_short for r in rows], height=h, color="#2a9d8f",
            label="people longer →\nsystem shorter")
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlabel("disagreements with people (pairs)")
    legend_beside(ax)
    ax.set_title("Verbosity: the answer picked against people's choice", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_perturbations(perturbations: Sequence[Perturbation], path: str | Path) -> None:
    """Δ accuracy (perturbed - original) per system, one bar per perturbation, with 95% CIs (PNG)."""
    import numpy as np

    plt = _plt()
    systems: list[str] = []
    for p in perturbations:
        systems += [r.system for r in p.rows if r.system not in systems]
    y = np.arange(len(systems))
    h = 0.8 / max(len(perturbations), 1)
    names = [chart_label(s) for s in systems]
    fig, ax = plt.subplots(figsize=(CHART_WIDTH, _height(names, 0.3 * max(len(perturbations), 1) ** 0.5, 1.6)))
    ends = [0.0]
    for k, p in enumerate(perturbations):
        by = {r.system: r.deltas["accuracy"] for r in p.rows}
        vals, errs = [], []
        for s in systems:
            d = by.get(s)
            vals.append(0.0 if d is None or math.isnan(d.delta) else d.delta)
            lo, hi = d.ci if d is not None else (float("nan"), float("nan"))
            ok = not (math.isnan(lo) or math.isnan(hi))
            errs.append((max(d.delta - lo, 0), max(hi - d.delta, 0)) if ok else (0.0, 0.0))
            ends += [lo, hi] if ok else [vals[-1]]
        ax.barh(y + (k - (len(perturbations) - 1) / 2) * h, vals, height=h, xerr=np.array(errs).T, capsize=3,
                label=p.name)
    ax.axvline(0, color="black", linewidth=0.8)
    span = max(max(abs(e) for e in ends), 0.05) * 1.1  # symmetric around 0, so a gain and a loss look alike
    ax.set_xlim(-span, span)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlabel("Δ accuracy, perturbed - original (95% CI)")
    legend_beside(ax)
    ax.set_title("Robustness to perturbed answers", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_analysis(a: Analysis, path: str | Path, *, command: str) -> str:
    """Write the report and its charts (``<stem>_position.png`` when there are judges, ``<stem>_verbosity.png``,
    ``<stem>_perturbation.png`` when perturbed sets were given) beside it.

    Returns:
        The Markdown text.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    charts: dict[str, str] = {}
    if a.position.rows:
        png = path.with_name(f"{path.stem}_position.png")
        plot_position(a.position, png)
        charts["position"] = png.name
    if a.verbosity.rows:
        png = path.with_name(f"{path.stem}_verbosity.png")
        plot_verbosity(a.verbosity, png)
        charts["verbosity"] = png.name
    if any(p.rows for p in a.perturbations):
        png = path.with_name(f"{path.stem}_perturbation.png")
        plot_perturbations(a.perturbations, png)
        charts["perturbation"] = png.name
    text = analysis_markdown(a, command=command, charts=charts)
    path.write_text(text)
    return text
