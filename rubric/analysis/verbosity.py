"""Verbosity (the paper's Table 7): when a system disagrees with people, does it pick the longer answer?

Among a system's disagreements with people on the compared pairs (people chose "a" or "b", the
system the other answer):

- people chose the shorter answer, the system the longer ("short -> long");
- people chose the longer answer, the system the shorter ("long -> short");
- the two answers have the same length (reported apart: neither direction);
- the system said "tie" (a disagreement with no side);
- the system judged the pair without a decision (undecided, a miss with no side; counted apart
  from its ties);
- the system failed on the pair (an error), when ``analyze --judge-failures miss`` keeps such a pair as
  its miss (a disagreement with no side, counted apart).

The share of "short -> long" among the directed disagreements has a question-clustered CI; a system
is called long-biased when the whole CI lies above 1/2 and short-biased when it lies below, which the
paper's Table 7 decided by eye. For reference: how often people themselves chose the longer answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rubric.analysis.systems import PairSet, System
from rubric.preference import ClusteredMean, clustered_mean

__all__ = ["VerbosityRow", "Verbosity", "verbosity_bias", "bias_direction"]


@dataclass(frozen=True)
class VerbosityRow:
    """One system's disagreements with people, by length.

    Attributes:
        system: its name (as the tables show it).
        n: pairs compared.
        n_disagreements: pairs where the system did not choose what people chose.
        short_to_long: people chose the shorter answer, the system the longer.
        long_to_short: people chose the longer answer, the system the shorter.
        equal_length: disagreements on pairs of answers of equal length.
        system_tie: the system said "tie".
        undecided: the system judged the pair without a decision (a miss, no side).
        failed: the system failed on the pair (an error), counted as a miss with no side.
        share_short_to_long: short_to_long / (short_to_long + long_to_short) with its CI.
        direction: :func:`bias_direction` of that share.
    """

    system: str
    n: int
    n_disagreements: int
    short_to_long: int
    long_to_short: int
    equal_length: int
    system_tie: int
    undecided: int
    share_short_to_long: ClusteredMean
    direction: str
    failed: int = 0


@dataclass(frozen=True)
class Verbosity:
    """The verbosity table and the people's own preference for length.

    Attributes:
        rows: one per system.
        people_longer: on the compared pairs of unequal length, the share where people chose the longer.
    """

    rows: list[VerbosityRow]
    people_longer: ClusteredMean


def bias_direction(share: ClusteredMean) -> str:
    """"long-biased" when the CI of the short -> long share lies above 1/2, "short-biased" below,
    "no clear direction" when it covers 1/2, "n/a" without a CI."""
    lo, hi = share.ci
    if np.isnan(lo) or np.isnan(hi):
        return "n/a"
    if lo > 0.5:
        return "long-biased"
    if hi < 0.5:
        return "short-biased"
    return "no clear direction"


def verbosity_bias(pairs: PairSet, systems: Sequence[System], *, n_boot: int = 1000, seed: int = 0,
                   failures_as_misses: bool = False) -> Verbosity:
    """Every system's disagreements with people, split by which answer was longer.

    Args:
        pairs: the compared pairs (labelled "a"/"b", failed by no system: Table 4's pairs); a system
            that left one undecided disagrees with people on it, with no side.
        systems: the systems.
        n_boot: bootstrap replicates.
        seed: their seed.
        failures_as_misses: a pair a system failed on is its miss (a disagreement with no side), as
            Table 4 counts it with ``judge_failures="miss"``; otherwise such pairs are not among ``pairs``.
    """
    label = pairs.label.astype(str)
    na, nb = pairs.n_words_a.astype(float), pairs.n_words_b.astype(float)
    longer = np.where(na > nb, "a", np.where(nb > na, "b", "equal"))
    q = pairs.question_id
    pids = [str(p) for p in pairs.pair_id]
    rows = []
    for s in systems:
        d = s.decided(pids)
        unsure = np.array([p in s.undecided and p not in s.decisions for p in pids], dtype=bool)
        failed = np.array([failures_as_misses and p in s.failures and p not in s.decisions for p in pids],
                          dtype=bool)
        decided = np.array([x is not None for x in d], dtype=bool)
        disagree = (decided & (d != label)) | unsure | failed
        tie = decided & (d == "tie")
        directed = disagree & decided & ~tie & (longer != "equal")
        s2l = directed & (d == longer)  # the system took the longer one, so people the shorter
        l2s = directed & (label == longer)
        share = clustered_mean(s2l[directed].astype(float), groups=q[directed], n_boot=n_boot, seed=seed)
        rows.append(VerbosityRow(system=s.label_on(q), n=int((decided | unsure | failed).sum()),
                                 n_disagreements=int(disagree.sum()), failed=int(failed.sum()),
                                 short_to_long=int(s2l.sum()), long_to_short=int(l2s.sum()),
                                 equal_length=int((disagree & decided & ~tie & (longer == "equal")).sum()),
                                 system_tie=int(tie.sum()), undecided=int(unsure.sum()), share_short_to_long=share,
                                 direction=bias_direction(share)))
    unequal = (longer != "equal") & np.isin(label, ["a", "b"])
    people = clustered_mean((label[unequal] == longer[unequal]).astype(float), groups=q[unequal], n_boot=n_boot,
                            seed=seed)
    return Verbosity(rows=rows, people_longer=people)
