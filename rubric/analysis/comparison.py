"""Table 4: every system's accuracy, precision, recall and F1 on the same pairs.

The pairs compared are those of the analysed split that people labelled "a" or "b" and that no
system failed on: a pair one system has no verdict for (an error, never given) is dropped for every
system, so no system is scored on easier pairs than another. A pair a system judged without picking
a side (an order-debiased P(a) of exactly 0.5, see :mod:`rubric.analysis.systems`) is *kept* and is
a miss for that system: dropping it would leave only the pairs every judge is order-consistent on,
an easier subset, and in vote mode (3 votes at temperature 0, the paper's protocol) a judge that
follows the position on a pair would remove that pair from every system's row. How many pairs each
system cost, how many it left undecided, and why, is part of the result.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rubric.analysis.systems import PairSet, System
from rubric.errors import ConfigError
from rubric.analysis.stats import metric_row
from rubric.preference import MetricRow

__all__ = ["Undecided", "Comparison", "labelled_pairs", "common_pairs", "compare_systems"]

log = logging.getLogger(__name__)

#: Longest reason kept verbatim; longer error messages are cut so that like errors group together.
_REASON_CHARS = 120


@dataclass(frozen=True)
class Undecided:
    """The labelled pairs one system did not decide.

    Attributes:
        system: the system's name.
        n: how many it failed on (an error, never given): left out for every system.
        reasons: reason -> count, most frequent first.
        n_undecided: how many it judged without a decision: kept, each a miss.
        undecided_reasons: reason -> count for those.
    """

    system: str
    n: int
    reasons: dict[str, int]
    n_undecided: int = 0
    undecided_reasons: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Comparison:
    """Every system on the same pairs.

    Attributes:
        n_pairs_split: pairs in the analysed split.
        n_labelled: of those, labelled "a" or "b" (the candidates).
        n_tie_labels: labelled "tie": left out, as ``evaluate`` leaves them out.
        n_unlabeled: without a label: left out.
        pair_ids: the compared pairs (labelled, failed by no system), in the split's order.
        n_questions: their distinct questions.
        systems: the systems, in the order of ``rows``.
        rows: each system's metrics on ``pair_ids`` with question-clustered bootstrap CIs.
        undecided: for each system, the labelled pairs it failed on or left undecided, and why.
    """

    n_pairs_split: int
    n_labelled: int
    n_tie_labels: int
    n_unlabeled: int
    pair_ids: tuple[str, ...]
    n_questions: int
    systems: list[System]
    rows: list[MetricRow]
    undecided: list[Undecided]

    @property
    def n_dropped(self) -> int:
        """Labelled pairs left out because at least one system failed on them."""
        return self.n_labelled - len(self.pair_ids)


def labelled_pairs(pairs: PairSet) -> PairSet:
    """The pairs people labelled "a" or "b"."""
    return pairs.take(np.array([lab in ("a", "b") for lab in pairs.label], dtype=bool))


def _short(why: str) -> str:
    return why if len(why) <= _REASON_CHARS else why[:_REASON_CHARS] + "..."


def common_pairs(pairs: PairSet, systems: Sequence[System]) -> tuple[PairSet, list[Undecided]]:
    """The pairs no system failed on, and what each system cost.

    Args:
        pairs: candidate pairs.
        systems: the systems.

    Returns:
        The pairs with a verdict (a decision or undecided) from all, in ``pairs``' order; and per
        system, the candidates it failed on and those of the kept pairs it left undecided, with reasons.
    """
    keep = np.ones(len(pairs), dtype=bool)
    for s in systems:
        keep &= np.array([s.why_not(pid) is None for pid in pairs.pair_id], dtype=bool)
    out = []
    for s in systems:
        reasons: Counter = Counter()
        unsure: Counter = Counter()
        for i, pid in enumerate(pairs.pair_id):
            why = s.why_not(pid)
            if why is not None:
                reasons[_short(why)] += 1
            elif keep[i] and pid in s.undecided:
                unsure[_short(s.undecided[pid])] += 1
        out.append(Undecided(system=s.name, n=sum(reasons.values()), reasons=dict(reasons.most_common()),
                             n_undecided=sum(unsure.values()), undecided_reasons=dict(unsure.most_common())))
        if reasons:
            log.info("%s did not decide %d of %d pairs: %s", s.name, sum(reasons.values()), len(pairs),
                     "; ".join(f"{r} ({n})" for r, n in reasons.most_common(3)))
        if unsure:
            log.info("%s left %d compared pairs undecided (each counted as a miss)", s.name, sum(unsure.values()))
    return pairs.take(keep), out


def compare_systems(pairs: PairSet, systems: Sequence[System], *, n_boot: int = 1000, seed: int = 0) -> Comparison:
    """Accuracy, macro precision, recall and F1 of every system on the labelled pairs none of them failed on.

    The metrics are :func:`rubric.analysis.stats.metric_row`'s: macro averages over the people's classes
    a and b, where a system's "tie" and an undecided verdict are misses.

    Args:
        pairs: the analysed split's pairs.
        systems: the systems (models, judges in each order, predictions files, baselines).
        n_boot: bootstrap replicates (questions resampled).
        seed: their seed.

    Returns:
        The comparison; with no pair left, every row has n = 0 and nan values.

    Raises:
        ConfigError: two systems have the same name.
    """
    names = Counter(s.name for s in systems)
    dup = [n for n, c in names.items() if c > 1]
    if dup:
        raise ConfigError("more than one system is called " + ", ".join(repr(d) for d in dup)
                          + ": give each input its own name")
    labels = list(pairs.label)
    candidates = labelled_pairs(pairs)
    common, undecided = common_pairs(candidates, systems)
    pids = [str(p) for p in common.pair_id]
    rows = [metric_row(s.name, list(common.label), list(s.verdicts(pids)), groups=common.question_id, n_boot=n_boot,
                       seed=seed) for s in systems]
    return Comparison(n_pairs_split=len(pairs), n_labelled=len(candidates), n_tie_labels=labels.count("tie"),
                      n_unlabeled=sum(1 for lab in labels if lab is None), pair_ids=tuple(pids),
                      n_questions=len(set(common.question_id)), systems=list(systems), rows=rows,
                      undecided=undecided)
