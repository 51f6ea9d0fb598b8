"""The neighbouring protocols' report tables (Markdown), from their output rows.

Pure: no model here; every number comes from :mod:`rubric.protocols.linkage`, :mod:`rubric.protocols.arena` and
:mod:`rubric.protocols.lfqa_e`. The ``lfqa-rubric judge --protocol`` job writes these into ``OUT/report.md``.

- :func:`linkage_table`: LINKAGE's metric for every system on the same answers, one row per system
  (listwise, pointwise with and without references, pairwise, ROUGE-1/ROUGE-L and MiniLM similarity
  to the best reference, answer length, any rubric score): mean per-question Kendall's tau-b,
  Spearman's rho and Pearson's r with question-bootstrap CIs, and how many questions were undefined.
- :func:`arena_tables`: win and win+tie rate per system against the reference, Elo (online, Chatbot
  Arena's) and Bradley-Terry ratings with bootstrap CIs, agreement with human labels when present.
- :func:`lfqa_e_tables`: accuracy and macro-F1 over {a, b, tie} per system, overall and by pair type.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from rubric.protocols.arena import Battle, RatingInterval, battles_against, human_agreement, rating_intervals, win_rates
from rubric.protocols.arena_data import REFERENCE_SYSTEM
from rubric.errors import ConfigError
from rubric.protocols.lfqa_e import PAIR_TYPES, breakdown_by_pair_type
from rubric.protocols.linkage_metric import LinkageCorrelations, linkage_correlations
from rubric.preference import ClusteredMean
from rubric.io import PairRecord

__all__ = ["linkage_results", "linkage_table", "arena_ratings", "arena_tables", "lfqa_e_tables", "fmt_mean"]


def _f(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def fmt_mean(m: ClusteredMean, digits: int = 3) -> str:
    """``0.412 [0.301, 0.520]``; the CI is left out when undefined."""
    if m.n == 0 or math.isnan(m.value):
        return "n/a"
    lo, hi = m.ci
    if math.isnan(lo) or math.isnan(hi):
        return _f(m.value, digits)
    return f"{_f(m.value, digits)} [{_f(lo, digits)}, {_f(hi, digits)}]"


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
                cell = f"{iv.rating:.0f} [{_f(iv.ci[0], 0)}, {_f(iv.ci[1], 0)}]"
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
                "|---|---|---|---|", f"| {ag.n} | {_f(ag.accuracy)} | {_f(ag.kappa)} | {_f(ag.pearson)} |"]
    else:
        out += ["", "No human labels in the input: no agreement table."]
    return "\n".join(out)


def lfqa_e_tables(pairs: Sequence[PairRecord], decisions: Mapping[str, Sequence[str | None]], *,
                  n_boot: int = 1000, seed: int = 0, notes: Mapping[str, str] | None = None) -> str:
    """LFQA-E's tables: accuracy and macro-F1 over {a, b, tie} per system, overall and by pair type.

    Args:
        pairs: the pairs with their human labels and answer types.
        decisions: system -> its decision per pair (same order; None undecided, counted wrong).
        n_boot: bootstrap replicates.
        seed: their seed.
        notes: system -> a note for the table (e.g. "in-sample").
    """
    notes = dict(notes or {})
    labels = [p.label for p in pairs]
    dist = {c: sum(1 for x in labels if x == c) for c in ("a", "b", "tie")}
    out = [f"Labelled pairs: {sum(dist.values())} (a {dist['a']}, b {dist['b']}, tie {dist['tie']}); an undecided "
           "pair counts as wrong.", "",
           "| system | accuracy | macro-F1 | F1 a / b / tie | pairs | undecided | note |",
           "|---|---|---|---|---|---|---|"]
    breakdowns = {s: breakdown_by_pair_type(pairs, d, system=s, n_boot=n_boot, seed=seed) for s, d in decisions.items()}

    def cell(m, key: str) -> str:
        lo, hi = m.ci[key]
        v = getattr(m, key)
        return _f(v) if math.isnan(lo) else f"{_f(v)} [{_f(lo)}, {_f(hi)}]"

    for s, b in breakdowns.items():
        m = b.overall
        out.append(f"| {s} | {cell(m, 'accuracy')} | {cell(m, 'macro_f1')} | "
                   f"{' / '.join(_f(m.f1[c]) for c in ('a', 'b', 'tie'))} | {m.n} | {m.n_undecided} | "
                   f"{notes.get(s, '')} |")
    out += ["", "By pair type (LFQA-E's breakdown; from answer_a_type / answer_b_type):", "",
            "| system | pair type | accuracy | macro-F1 | pairs |", "|---|---|---|---|---|"]
    any_type = False
    for s, b in breakdowns.items():
        for pt in PAIR_TYPES:
            if pt in b.by_type:
                any_type = True
                m = b.by_type[pt]
                out.append(f"| {s} | {pt} | {cell(m, 'accuracy')} | {cell(m, 'macro_f1')} | {m.n} |")
        if b.n_unknown_type:
            out.append(f"| {s} | unknown (an answer type is empty) | | | {b.n_unknown_type} |")
    if not any_type:
        out.append("")
        out.append("No pair has both answer types: the breakdown is empty.")
    return "\n".join(out)
