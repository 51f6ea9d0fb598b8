"""Robustness (the paper's Table 8): the same systems on perturbed copies of the same pairs.

A perturbed set keeps each pair's id and label and changes its answers' text (synonym swaps,
character edits). Each system present on both sides is scored on the same labelled pairs: those in
both sets that every such system was given on both sides. A failure (an error) is that system's miss
on that side (``judge_failures="miss"``) or leaves the pair out for every system (``"drop"``), as in
Table 4 (:mod:`rubric.analysis.comparison`); a pair a system judged without a decision stays in and is
a miss. The change (perturbed - original) of accuracy, precision, recall and F1 comes with a paired
question-clustered CI, as an absolute difference and relative to the original value (the paper
reports the relative one, in %). Which pairs each system failed on or left undecided, on each side,
is listed per system.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rubric.analysis.comparison import Undecided, labelled_pairs, scorable, undecided_on
from rubric.analysis.stats import MetricDelta, paired_metric_deltas
from rubric.analysis.systems import PairSet, System
from rubric.errors import ConfigError

__all__ = ["PerturbationRow", "Perturbation", "perturbation_deltas"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PerturbationRow:
    """One system on original and perturbed pairs.

    Attributes:
        system: its name (as the tables show it).
        deltas: metric -> original (``base``), perturbed (``other``), their difference and CIs.
        n_changed: compared pairs whose decision differs between the two sides.
        n_undecided_original / n_undecided_perturbed: compared pairs it left undecided (misses) on each side.
        n_failed_original / n_failed_perturbed: compared pairs it failed on (an error), each a miss
            (``judge_failures="miss"``; 0 with "drop", which leaves them out).
    """

    system: str
    deltas: dict[str, MetricDelta]
    n_changed: int
    n_undecided_original: int = 0
    n_undecided_perturbed: int = 0
    n_failed_original: int = 0
    n_failed_perturbed: int = 0


@dataclass(frozen=True)
class Perturbation:
    """One perturbed set against the original pairs.

    Attributes:
        name: the perturbation's name (e.g. "textfooler").
        rows: one per system present on both sides.
        n: compared pairs (labelled, present in both sets, failed by no system on either side).
        n_questions: their questions.
        n_labelled: labelled original pairs.
        n_in_perturbed: of those, present in the perturbed set.
        only_original: systems with no decisions on the perturbed set (left out of the table).
        only_perturbed: systems with no decisions on the original pairs (left out).
        undecided_original / undecided_perturbed: per system present on both sides, the candidate pairs
            (labelled, in both sets) it failed on or left undecided on that side, and why.
        judge_failures: "miss" or "drop".
    """

    name: str
    rows: list[PerturbationRow]
    n: int
    n_questions: int
    n_labelled: int
    n_in_perturbed: int
    only_original: list[str]
    only_perturbed: list[str]
    undecided_original: list[Undecided] = field(default_factory=list)
    undecided_perturbed: list[Undecided] = field(default_factory=list)
    judge_failures: str = "drop"


def perturbation_deltas(name: str, original: PairSet, perturbed: PairSet, systems_original: Sequence[System],
                        systems_perturbed: Sequence[System], *, n_boot: int = 1000, seed: int = 0,
                        judge_failures: str = "miss") -> Perturbation:
    """Metric changes of every system between original and perturbed copies of the same pairs.

    Systems are matched by name; pairs by id.

    Args:
        name: the perturbation's name.
        original: the analysed original pairs.
        perturbed: the perturbed pairs (their answer lengths may differ; ids and labels may not).
        systems_original: the systems on the original pairs.
        systems_perturbed: the same systems on the perturbed pairs.
        n_boot: bootstrap replicates.
        seed: their seed.
        judge_failures: "miss" or "drop", as in :func:`rubric.analysis.comparison.compare_systems`.

    Raises:
        ConfigError: a pair carries another label or question in the perturbed set than in the original.
    """
    p_idx = perturbed.index()
    for pid, lab, q in zip(original.pair_id, original.label, original.question_id):
        j = p_idx.get(pid)
        if j is not None and (perturbed.label[j] != lab or perturbed.question_id[j] != q):
            raise ConfigError(f"perturbation {name!r}: pair {pid!r} has label {perturbed.label[j]!r} and question "
                              f"{perturbed.question_id[j]!r} in the perturbed set, {lab!r} and {q!r} in the original: "
                              "a perturbed set must keep each pair's id, question and label")
    by_name = {s.name: s for s in systems_perturbed}
    matched = [(s, by_name[s.name]) for s in systems_original if s.name in by_name]
    only_original = [s.name for s in systems_original if s.name not in by_name]
    only_perturbed = [s.name for s in systems_perturbed if s.name not in {o.name for o in systems_original}]
    if only_original:
        log.info("perturbation %s: no perturbed decisions for %s", name, ", ".join(only_original))
    cand = labelled_pairs(original)
    in_p = np.array([p in p_idx for p in cand.pair_id], dtype=bool)
    both = cand.take(in_p)
    keep = np.ones(len(both), dtype=bool)
    for o, p in matched:
        keep &= scorable(o, both.pair_id, judge_failures) & scorable(p, both.pair_id, judge_failures)
    common = both.take(keep)
    cpids = [str(p) for p in common.pair_id]
    misses = judge_failures == "miss"

    def count(s: System, pool) -> int:
        return sum(q in pool and q not in s.decisions for q in cpids)

    rows = []
    for o, p in matched:
        d_o = o.verdicts(cpids, failures_as_misses=misses)
        d_p = p.verdicts(cpids, failures_as_misses=misses)
        deltas = paired_metric_deltas(common.label.astype(str), d_o, d_p, groups=common.question_id, n_boot=n_boot,
                                      seed=seed)
        rows.append(PerturbationRow(system=o.label_on(common.question_id), deltas=deltas, n_changed=int((d_o != d_p).sum()),
                                    n_undecided_original=count(o, o.undecided),
                                    n_undecided_perturbed=count(p, p.undecided),
                                    n_failed_original=count(o, o.failures) if misses else 0,
                                    n_failed_perturbed=count(p, p.failures) if misses else 0))
    return Perturbation(name=name, rows=rows, n=len(common), n_questions=len(set(common.question_id)),
                        n_labelled=len(cand), n_in_perturbed=int(in_p.sum()), only_original=only_original,
                        only_perturbed=only_perturbed,
                        undecided_original=undecided_on(both, [o for o, _ in matched], keep),
                        undecided_perturbed=undecided_on(both, [p for _, p in matched], keep),
                        judge_failures=judge_failures)
