"""Table 4: every system's accuracy, precision, recall and F1 on the same pairs.

The pairs compared are those of the analysed split that people labelled "a" or "b" and that every
system was given. What a system's failure on a pair (an error: no majority vote, no parseable vote,
a context overflow) does is the ``judge_failures`` choice (``analyze --judge-failures``):

- ``miss`` (the default): the failure is a miss for that system only; every other system keeps the
  pair. A failing judge then costs itself, not the rubric model and the baselines, their pairs.
- ``drop``: the pair is left out for every system (the intersection), so no system is scored on pairs
  another could not answer.

A pair a system was never given (not in its input) is left out for every system in both modes:
"the same pairs" means the same pairs. A pair a system judged without picking a side (an
order-debiased P(a) of exactly 0.5, see :mod:`rubric.analysis.systems`) is *kept* and is a miss for
that system: dropping it would leave only the pairs every judge is order-consistent on, an easier
subset. How many pairs each system failed on, left undecided, and why, is part of the result.

Beside it, each system on its own decided pairs, as the paper's reference code scores a judge
(``LLM_judgement.evaluate_model`` keeps the pairs where the human and the model said answer_1 or
answer_2): every labelled pair where the system said a or b, so rows rest on different pairs.
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

__all__ = ["Undecided", "Comparison", "JUDGE_FAILURES", "labelled_pairs", "common_pairs", "scorable", "undecided_on",
           "compare_systems", "own_decided_rows"]

#: ``analyze --judge-failures``: what a system's failure on a pair does (see the module docstring).
JUDGE_FAILURES: tuple[str, ...] = ("miss", "drop")

log = logging.getLogger(__name__)

#: Longest reason kept verbatim; longer error messages are cut so that like errors group together.
_REASON_CHARS = 120


@dataclass(frozen=True)
class Undecided:
    """The labelled pairs one system did not decide.

    Attributes:
        system: the system's name.
        n: how many it has no verdict for (an error, or never given).
        reasons: reason -> count, most frequent first.
        n_undecided: how many compared pairs it judged without a decision: kept, each a miss.
        undecided_reasons: reason -> count for those.
        n_missed: of the ``n``, the failures kept as its misses (``judge_failures="miss"``); the rest
            (``n - n_missed``) are left out for every system.
    """

    system: str
    n: int
    reasons: dict[str, int]
    n_undecided: int = 0
    undecided_reasons: dict[str, int] = field(default_factory=dict)
    n_missed: int = 0

    @property
    def n_left_out(self) -> int:
        """Pairs it has no verdict for that were left out for every system."""
        return self.n - self.n_missed


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
        judge_failures: "miss" or "drop" (see the module docstring).
        question_ids: the question of each compared pair (``pair_ids``' order).
        own: each system on its own decided pairs (labelled, and it said a or b), as the reference scores
            a judge; rows in ``systems`` order, each with its own n.
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
    judge_failures: str = "drop"
    own: list[MetricRow] = field(default_factory=list)
    question_ids: tuple[str, ...] = ()

    @property
    def n_dropped(self) -> int:
        """Labelled pairs left out for every system (some system failed on them, or was never given them)."""
        return self.n_labelled - len(self.pair_ids)

    @property
    def misses(self) -> bool:
        """A system's failure is its own miss (``judge_failures == "miss"``)."""
        return self.judge_failures == "miss"


def labelled_pairs(pairs: PairSet) -> PairSet:
    """The pairs people labelled "a" or "b"."""
    return pairs.take(np.array([lab in ("a", "b") for lab in pairs.label], dtype=bool))


def _short(why: str) -> str:
    return why if len(why) <= _REASON_CHARS else why[:_REASON_CHARS] + "..."


def _check_mode(judge_failures: str) -> None:
    if judge_failures not in JUDGE_FAILURES:
        raise ConfigError(f"'judge_failures' must be one of {', '.join(JUDGE_FAILURES)}, got {judge_failures!r}")


def common_pairs(pairs: PairSet, systems: Sequence[System], *,
                 judge_failures: str = "drop") -> tuple[PairSet, list[Undecided]]:
    """The pairs every system is scored on, and what each system cost.

    Args:
        pairs: candidate pairs.
        systems: the systems.
        judge_failures: "drop": the pairs no system failed on (an error) or lacks; "miss": the pairs every
            system was given (a failure stays in, a miss for the system that failed).

    Returns:
        The compared pairs, in ``pairs``' order; and per system, the candidates it has no verdict for
        (kept as misses or left out) and the compared pairs it left undecided, with reasons.
    """
    _check_mode(judge_failures)
    keep = np.ones(len(pairs), dtype=bool)
    for s in systems:
        keep &= scorable(s, pairs.pair_id, judge_failures)
    return pairs.take(keep), undecided_on(pairs, systems, keep)


def scorable(system: System, pair_ids, judge_failures: str) -> np.ndarray:
    """For each pair id, whether ``system`` lets it be compared: it was given the pair ("miss"), or it has a
    verdict for it ("drop")."""
    _check_mode(judge_failures)
    if judge_failures == "miss":
        return np.array([system.given(pid) for pid in pair_ids], dtype=bool)
    return np.array([system.why_not(pid) is None for pid in pair_ids], dtype=bool)


def undecided_on(pairs: PairSet, systems: Sequence[System], keep: np.ndarray) -> list[Undecided]:
    """Per system: the pairs of ``pairs`` it has no verdict for (kept as its misses where ``keep``, else
    left out) and the kept pairs it left undecided, with reasons."""
    out = []
    for s in systems:
        reasons: Counter = Counter()
        unsure: Counter = Counter()
        missed = 0
        for i, pid in enumerate(pairs.pair_id):
            why = s.why_not(pid)
            if why is not None:
                reasons[_short(why)] += 1
                missed += int(bool(keep[i]))  # only "miss" keeps a pair a system has no verdict for
            elif keep[i] and pid in s.undecided:
                unsure[_short(s.undecided[pid])] += 1
        out.append(Undecided(system=s.name, n=sum(reasons.values()), reasons=dict(reasons.most_common()),
                             n_undecided=sum(unsure.values()), undecided_reasons=dict(unsure.most_common()),
                             n_missed=missed))
        if reasons:
            log.info("%s did not decide %d of %d pairs (%d kept as its misses): %s", s.name, sum(reasons.values()),
                     len(pairs), missed, "; ".join(f"{r} ({n})" for r, n in reasons.most_common(3)))
        if unsure:
            log.info("%s left %d compared pairs undecided (each counted as a miss)", s.name, sum(unsure.values()))
    return out


def own_decided_rows(pairs: PairSet, systems: Sequence[System], *, n_boot: int = 1000,
                     seed: int = 0) -> list[MetricRow]:
    """Each system on the labelled pairs it decided a or b, as the paper's reference code scores a judge
    (its ties, undecided verdicts and failures are left out, so each row rests on its own pairs).

    Args:
        pairs: candidate pairs (labelled "a" or "b").
        systems: the systems.
        n_boot: bootstrap replicates (questions resampled).
        seed: their seed.
    """
    rows = []
    for s in systems:
        d = s.decided([str(p) for p in pairs.pair_id])
        mine = np.array([x in ("a", "b") for x in d], dtype=bool)
        rows.append(metric_row(s.name, list(pairs.label[mine]), list(d[mine]), groups=pairs.question_id[mine],
                               n_boot=n_boot, seed=seed))
    return rows


def compare_systems(pairs: PairSet, systems: Sequence[System], *, n_boot: int = 1000, seed: int = 0,
                    judge_failures: str = "miss") -> Comparison:
    """Accuracy, macro precision, recall and F1 of every system on the same labelled pairs.

    The metrics are :func:`rubric.analysis.stats.metric_row`'s: macro averages over the people's classes
    a and b, where a system's "tie" and an undecided verdict are misses (and, with ``judge_failures="miss"``,
    a failure).

    Args:
        pairs: the analysed split's pairs.
        systems: the systems (models, judges in each order, predictions files, baselines).
        n_boot: bootstrap replicates (questions resampled).
        seed: their seed.
        judge_failures: "miss" or "drop" (see the module docstring).

    Returns:
        The comparison; with no pair left, every row has n = 0 and nan values.

    Raises:
        ConfigError: two systems have the same name, or an unknown ``judge_failures``.
    """
    names = Counter(s.name for s in systems)
    dup = [n for n, c in names.items() if c > 1]
    if dup:
        raise ConfigError("more than one system is called " + ", ".join(repr(d) for d in dup)
                          + ": give each input its own name")
    labels = list(pairs.label)
    candidates = labelled_pairs(pairs)
    common, undecided = common_pairs(candidates, systems, judge_failures=judge_failures)
    pids = [str(p) for p in common.pair_id]
    misses = judge_failures == "miss"
    rows = [metric_row(s.name, list(common.label), list(s.verdicts(pids, failures_as_misses=misses)),
                       groups=common.question_id, n_boot=n_boot, seed=seed) for s in systems]
    return Comparison(n_pairs_split=len(pairs), n_labelled=len(candidates), n_tie_labels=labels.count("tie"),
                      n_unlabeled=sum(1 for lab in labels if lab is None), pair_ids=tuple(pids),
                      n_questions=len(set(common.question_id)), systems=list(systems), rows=rows,
                      undecided=undecided, judge_failures=judge_failures,
                      question_ids=tuple(str(q) for q in common.question_id),
                      own=own_decided_rows(candidates, systems, n_boot=n_boot, seed=seed))
