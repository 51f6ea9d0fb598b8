"""Table 6: does a judge's verdict depend on which answer it reads first?

For each judge, the same pairs judged in the input's order (ab) and swapped (ba):

- accuracy, precision, recall and F1 in each order and their difference (ba - ab) with a paired
  question-clustered CI, on the labelled pairs decided in both orders (the paper's Table 6);
- the flip rate: the share of pairs, labelled or not, whose decision (in the input's labelling)
  changes with the order; a judge without position bias flips none. Flips are split by direction:
  towards the first-shown answer (a when shown ab, b when shown ba), towards the second, or to or
  from a tie;
- the share of pairs where the answer shown first wins, in each order. With no position bias it is
  the same in both orders, whatever the data's own share of "a" labels (given for reference).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rubric.analysis.stats import MetricDelta, paired_metric_deltas
from rubric.analysis.systems import PairSet, System
from rubric.errors import ConfigError
from rubric.preference import ClusteredMean, clustered_mean

__all__ = ["PositionRow", "Position", "position_bias"]


@dataclass(frozen=True)
class PositionRow:
    """One judge in both orders.

    Attributes:
        judge: the judge's name (with its mode).
        n / n_questions: labelled ("a"/"b") pairs decided in both orders, and their questions: the
            pairs of ``deltas``.
        deltas: metric -> values in order ab (``base``) and ba (``other``) and ``ba - ab`` with its CI.
        n_both / n_questions_both: pairs decided in both orders, labelled or not: the pairs of the
            flip rate and the first-position shares.
        n_flips: pairs whose decision changes with the order.
        flip_rate: ``n_flips / n_both`` with its question-clustered CI.
        flips_to_first: flips where the first-shown answer won both times (ab -> a, ba -> b).
        flips_to_second: flips where the second-shown answer won both times (ab -> b, ba -> a).
        flips_with_tie: flips to or from "tie".
        first_wins_ab: share of the ``n_both`` pairs decided "a" in order ab (a was shown first).
        first_wins_ba: share decided "b" in order ba (b was shown first).
    """

    judge: str
    n: int
    n_questions: int
    deltas: dict[str, MetricDelta]
    n_both: int
    n_questions_both: int
    n_flips: int
    flip_rate: ClusteredMean
    flips_to_first: int
    flips_to_second: int
    flips_with_tie: int
    first_wins_ab: ClusteredMean
    first_wins_ba: ClusteredMean


@dataclass(frozen=True)
class Position:
    """Every judge's position table, with the reference share of the labels.

    Attributes:
        rows: one per judge.
        people_a: share of the analysed labelled pairs ("a"/"b"/"tie") where people chose answer a.
    """

    rows: list[PositionRow]
    people_a: ClusteredMean


def position_bias(pairs: PairSet, judges: Sequence[tuple[System, System]], *, n_boot: int = 1000,
                  seed: int = 0) -> Position:
    """Each judge's metrics and decisions in the two presentation orders.

    Args:
        pairs: the analysed pairs.
        judges: (order-ab system, order-ba system) of each judge.
        n_boot: bootstrap replicates.
        seed: their seed.

    Raises:
        ConfigError: a tuple is not (order ab, order ba) of one judge.
    """
    rows = []
    for ab, ba in judges:
        if (ab.order, ba.order) != ("ab", "ba") or ab.judge != ba.judge:
            raise ConfigError(f"position_bias needs (order ab, order ba) of one judge, got {ab.name!r} and "
                              f"{ba.name!r}")
        pids = [str(p) for p in pairs.pair_id]
        d_ab, d_ba = ab.decided(pids), ba.decided(pids)
        both = np.array([x is not None and y is not None for x, y in zip(d_ab, d_ba)], dtype=bool)
        labelled = both & np.array([lab in ("a", "b") for lab in pairs.label], dtype=bool)
        deltas = paired_metric_deltas(pairs.label[labelled].astype(str), d_ab[labelled], d_ba[labelled],
                                      groups=pairs.question_id[labelled], n_boot=n_boot, seed=seed)
        x, y, q = d_ab[both], d_ba[both], pairs.question_id[both]
        flip = x != y
        tie = (x == "tie") | (y == "tie")
        rows.append(PositionRow(
            judge=f"{ab.judge} ({ab.mode})", n=int(labelled.sum()), n_questions=len(set(pairs.question_id[labelled])),
            deltas=deltas, n_both=int(both.sum()), n_questions_both=len(set(q)), n_flips=int(flip.sum()),
            flip_rate=clustered_mean(flip.astype(float), groups=q, n_boot=n_boot, seed=seed),
            flips_to_first=int((flip & (x == "a") & (y == "b")).sum()),
            flips_to_second=int((flip & (x == "b") & (y == "a")).sum()),
            flips_with_tie=int((flip & tie).sum()),
            first_wins_ab=clustered_mean((x == "a").astype(float), groups=q, n_boot=n_boot, seed=seed),
            first_wins_ba=clustered_mean((y == "b").astype(float), groups=q, n_boot=n_boot, seed=seed)))
    has_label = np.array([lab is not None for lab in pairs.label], dtype=bool)
    people_a = clustered_mean((pairs.label[has_label] == "a").astype(float), groups=pairs.question_id[has_label],
                              n_boot=n_boot, seed=seed)
    return Position(rows=rows, people_a=people_a)
