"""The neighbouring protocols' report tables (Markdown), from their output rows.

Pure: no model here; every number comes from :mod:`rubric.protocols.linkage` and :mod:`rubric.protocols.arena`
(a protocol whose statistics live in its own module has its tables there too). The ``lfqa-rubric judge
--protocol`` job writes these into ``OUT/report.md``.

- :func:`linkage_table`: LINKAGE's metric for every system on the same answers, one row per system
  (listwise, pointwise with and without references, pairwise, ROUGE-1/ROUGE-L and MiniLM similarity
  to the best reference, answer length, any rubric score): mean per-question Kendall's tau-b,
  Spearman's rho and Pearson's r with question-bootstrap CIs, and how many questions were undefined.
- :func:`arena_tables`: win and win+tie rate per system against the reference, Elo (online, Chatbot
  Arena's) and Bradley-Terry ratings with bootstrap CIs, agreement with human labels when present.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from rubric.protocols.arena import Battle, RatingInterval, battles_against, human_agreement, rating_intervals, win_rates
from rubric.protocols.arena_data import REFERENCE_SYSTEM
from rubric.errors import ConfigError
from rubric.protocols.linkage_metric import LinkageCorrelations, linkage_correlations
from rubric.preference import ClusteredMean

__all__ = ["linkage_results", "linkage_table", "arena_ratings", "arena_tables", "fmt_mean", "fmt_value"]


def fmt_value(x: float, digits: int = 3) -> str:
    """``0.412``, or ``n/a`` when undefined."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def fmt_mean(m: ClusteredMean, digits: int = 3) -> str:
    """``0.412 [0.301, 0.520]``; the CI is left out when undefined."""
    if m.n == 0 or math.isnan(m.value):
        return "n/a"
    lo, hi = m.ci
    if math.isnan(lo) or math.isnan(hi):
        return fmt_value(m.value, digits)
    return f"{fmt_value(m.value, digits)} [{fmt_value(lo, digits)}, {fmt_value(hi, digits)}]"


def linkage_results(rows: Sequence[Mapping[str, object]], *, n_boot: int = 1000,
                    seed: int = 0) -> list[LinkageCorrelations]:
    """LINKAGE's metric per system from long rows (``question_id``, ``system``, ``label``, ``score``).

    Systems keep their first-seen order; a row whose ``score`` is None or nan is a missing score.

    Raises:
        ConfigError: a row lacks a field.
    """
    by_system: dict[str, tuple[list[str], list[float], list[float | None]]] = {}
    for i, r in enumerate(rows):
        try:
            q, s, y, v = r["question_id"], r["system"], r["label"], r["score"]
        except KeyError as e:
            raise ConfigError(f"LINKAGE row {i} has no field {e}") from None
        qs, ys, vs = by_system.setdefault(str(s), ([], [], []))
        qs.append(str(q))
        ys.append(float(y))  # type: ignore[arg-type]
        vs.append(None if v is None else float(v))  # type: ignore[arg-type]
    return [linkage_correlations(qs, ys, vs, system=s, n_boot=n_boot, seed=seed)
            for s, (qs, ys, vs) in by_system.items()]


def linkage_table(results: Sequence[LinkageCorrelations], *, notes: Mapping[str, str] | None = None) -> str:
    """One Markdown table: a row per system, means with their 95% CIs over the defined questions."""
    notes = dict(notes or {})
    lines = ["| system | Kendall τ | Spearman ρ | Pearson r | questions (defined / all) | undefined | "
             "answers without a score | what it is |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.system} | {fmt_mean(r.kendall)} | {fmt_mean(r.spearman)} | {fmt_mean(r.pearson)} | "
                     f"{r.kendall.n} / {r.n_questions} | {r.n_undefined} | {r.n_missing_scores} | "
                     f"{notes.get(r.system, '')} |")
    return "\n".join(lines)


def arena_ratings(battles: Sequence[Battle], *, n_boot: int = 1000,
                  seed: int = 0) -> tuple[dict[str, list[RatingInterval]], list[str]]:
    """Elo (online, K=4) and Bradley-Terry ratings with question-bootstrap CIs, by method name, and a
    note for each method that failed (unbounded ratings) or lost bootstrap replicates."""
    ratings: dict[str, list[RatingInterval]] = {}
    notes = []
    for method, name in (("online", "Elo (online, K=4)"), ("bt", "Bradley-Terry")):
        try:
            ivs, failed = rating_intervals(battles, method=method, unit="question", n_boot=n_boot, seed=seed)
        except ConfigError as e:
            notes.append(f"{name}: {e}")
            continue
        if failed:
            notes.append(f"{name}: {failed} of {n_boot} replicates unbounded, left out")
        ratings[name] = ivs
    return ratings, notes


def arena_tables(systems: Sequence[str], outcomes: Sequence[str | None], question_ids: Sequence[str],
                 humans: Sequence[str | None] | None = None, *, n_boot: int = 1000, seed: int = 0) -> str:
    """RAG-QA Arena's tables for one judge: win rates, Elo and Bradley-Terry, human agreement.

    Args:
        systems: each pair's system (the side ``a``; the reference is ``b``).
        outcomes: the judge's order-debiased decision per pair (``a``/``b``/``tie``; None undecided).
        question_ids: each pair's question.
        humans: each pair's human outcome (None where absent); the agreement table needs at least one.
        n_boot: bootstrap replicates.
        seed: their seed.
    """
    out = ["### Win rate against the LFRQA reference (question-bootstrap 95% CI)", "",
           "| system | win | win + tie | pairs decided | undecided |", "|---|---|---|---|---|"]
    for w in win_rates(systems, outcomes, question_ids, n_boot=n_boot, seed=seed):
        out.append(f"| {w.system} | {fmt_mean(w.win)} | {fmt_mean(w.win_tie)} | {w.n} | {w.n_undecided} |")
    battles = battles_against(systems, outcomes, question_ids)
    out += ["", f"### Ratings over all systems, {REFERENCE_SYSTEM} included (bootstrap over questions, "
                f"{n_boot} replicates)", ""]
    if not battles:
        out.append("No decided battle: no ratings.")
    else:
        rows: dict[str, dict[str, str]] = {}
        ratings, failed_notes = arena_ratings(battles, n_boot=n_boot, seed=seed)
        for name, ivs in ratings.items():
            for iv in ivs:
                cell = f"{iv.rating:.0f} [{fmt_value(iv.ci[0], 0)}, {fmt_value(iv.ci[1], 0)}]"
                rows.setdefault(iv.system, {"n": str(iv.n_battles)})[name] = cell
        order = sorted(rows, key=lambda s: -float(rows[s].get("Elo (online, K=4)", "nan").split(" ")[0]))
        out += ["| system | Elo (online, K=4) | Bradley-Terry | battles |", "|---|---|---|---|"]
        for s in order:
            out.append(f"| {s} | {rows[s].get('Elo (online, K=4)', 'n/a')} | {rows[s].get('Bradley-Terry', 'n/a')} "
                       f"| {rows[s]['n']} |")
        out += [f"- {n}" for n in failed_notes]
    if humans is not None and any(h is not None for h in humans):
        ag = human_agreement(outcomes, humans)
        out += ["", "### Agreement with the human labels", "", "| pairs | accuracy | Cohen's κ | Pearson r |",
                "|---|---|---|---|", f"| {ag.n} | {fmt_value(ag.accuracy)} | {fmt_value(ag.kappa)} | {fmt_value(ag.pearson)} |"]
    else:
        out += ["", "No human labels in the input: no agreement table."]
    return "\n".join(out)
