"""Table 4: every system's accuracy, precision, recall and F1 on the same pairs.

The pairs compared are those of the analysed split that people labelled "a" or "b" and that every
system decided: a pair one judge failed on (an error, no decision, never judged) is dropped for every
system, so no system is scored on easier pairs than another. How many pairs each system cost, and
why, is part of the result.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

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
        n: how many.
        reasons: reason -> count, most frequent first.
    """

    system: str
    n: int
    reasons: dict[str, int]


@dataclass(frozen=True)
class Comparison:
    """Every system on the same pairs.

    Attributes:
        n_pairs_split: pairs in the analysed split.
        n_labelled: of those, labelled "a" or "b" (the candidates).
        n_tie_labels: labelled "tie": left out, as ``evaluate`` leaves them out.
        n_unlabeled: without a label: left out.
        pair_ids: the compared pairs (labelled, decided by every system), in the split's order.
        n_questions: their distinct questions.
        systems: the systems, in the order of ``rows``.
        rows: each system's metrics on ``pair_ids`` with question-clustered bootstrap CIs.
        undecided: for each system, the labelled pairs it did not decide and why.
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
        """Labelled pairs left out because at least one system did not decide them."""
        return self.n_labelled - len(self.pair_ids)


def labelled_pairs(pairs: PairSet) -> PairSet:
    """The pairs people labelled "a" or "b"."""
    return pairs.take(np.array([lab in ("a", "b") for lab in pairs.label], dtype=bool))


def common_pairs(pairs: PairSet, systems: Sequence[System]) -> tuple[PairSet, list[Undecided]]:
    """The pairs every system decided, and what each system cost.

    Args:
        pairs: candidate pairs.
        systems: the systems.

    Returns:
        The pairs decided by all, in ``pairs``' order; and per system, the candidates it did not decide
        with their reasons.
    """
    keep = np.ones(len(pairs), dtype=bool)
    undecided = []
    for s in systems:
        reasons: Counter = Counter()
        for i, pid in enumerate(pairs.pair_id):
            why = s.why_not(pid)
            if why is not None:
                keep[i] = False
                reasons[why if len(why) <= _REASON_CHARS else why[:_REASON_CHARS] + "..."] += 1
        undecided.append(Undecided(system=s.name, n=sum(reasons.values()), reasons=dict(reasons.most_common())))
        if reasons:
            log.info("%s did not decide %d of %d pairs: %s", s.name, sum(reasons.values()), len(pairs),
                     "; ".join(f"{r} ({n})" for r, n in reasons.most_common(3)))
    return pairs.take(keep), undecided


def compare_systems(pairs: PairSet, systems: Sequence[System], *, n_boot: int = 1000, seed: int = 0) -> Comparison:
    """Accuracy, macro precision, recall and F1 of every system on the labelled pairs all of them decided.

    The metrics are :func:`rubric.analysis.stats.metric_row`'s: macro averages over the people's classes
    a and b, where a system's "tie" is a miss.

    Args:
        pairs: the analysed split's pairs.
        systems: the systems (models, judges in each order, predictions files, baselines).
        n_boot: bootstrap replicates (questions resampled).
        seed: their seed.

    Returns:
        The comparison; with no pair decided by all, every row has n = 0 and nan values.

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
    rows = [metric_row(s.name, list(common.label), list(s.decided(pids)), groups=common.question_id, n_boot=n_boot,
                       seed=seed) for s in systems]
    return Comparison(n_pairs_split=len(pairs), n_labelled=len(candidates), n_tie_labels=labels.count("tie"),
                      n_unlabeled=sum(1 for lab in labels if lab is None), pair_ids=tuple(pids),
                      n_questions=len(set(common.question_id)), systems=list(systems), rows=rows,
                      undecided=undecided)
