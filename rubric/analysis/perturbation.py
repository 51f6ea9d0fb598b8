"""Robustness (the paper's Table 8): the same systems on perturbed copies of the same pairs.

A perturbed set keeps each pair's id and label and changes its answers' text (synonym swaps,
character edits). Each system present on both sides is scored on the labelled pairs that no such
system failed on, on either side (an error, never given); a pair a system judged without a decision
stays in and is a miss (see :mod:`rubric.analysis.comparison`), and the change (perturbed - original) of accuracy, precision, recall
and F1 comes with a paired question-clustered CI, as an absolute difference and relative to the
original value (the paper reports the relative one, in %).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rubric.analysis.comparison import labelled_pairs
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
    """

    system: str
    deltas: dict[str, MetricDelta]
    n_changed: int
    n_undecided_original: int = 0
    n_undecided_perturbed: int = 0


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
    """

    name: str
    rows: list[PerturbationRow]
    n: int
    n_questions: int
    n_labelled: int
    n_in_perturbed: int
    only_original: list[str]
    only_perturbed: list[str]


def perturbation_deltas(name: str, original: PairSet, perturbed: PairSet, systems_original: Sequence[System],
                        systems_perturbed: Sequence[System], *, n_boot: int = 1000, seed: int = 0) -> Perturbation:
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
    keep = in_p.copy()
    pids = [str(p) for p in cand.pair_id]
    for o, p in matched:
        keep &= np.array([x is not None for x in o.verdicts(pids)], dtype=bool)
        keep &= np.array([x is not None for x in p.verdicts(pids)], dtype=bool)
    common = cand.take(keep)
    cpids = [str(p) for p in common.pair_id]
    rows = []
    for o, p in matched:
        d_o, d_p = o.verdicts(cpids), p.verdicts(cpids)
        deltas = paired_metric_deltas(common.label.astype(str), d_o, d_p, groups=common.question_id, n_boot=n_boot,
                                      seed=seed)
        rows.append(PerturbationRow(system=o.label, deltas=deltas, n_changed=int((d_o != d_p).sum()),
                                    n_undecided_original=sum(q in o.undecided and q not in o.decisions for q in cpids),
                                    n_undecided_perturbed=sum(q in p.undecided and q not in p.decisions
                                                              for q in cpids)))
    return Perturbation(name=name, rows=rows, n=len(common), n_questions=len(set(common.question_id)),
                        n_labelled=len(cand), n_in_perturbed=int(in_p.sum()), only_original=only_original,
                        only_perturbed=only_perturbed)
