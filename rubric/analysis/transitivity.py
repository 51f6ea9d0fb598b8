"""Transitivity (the paper's §5.1, Table 5): do a system's pairwise verdicts form 3-cycles?

A triad is three answers to one question whose three pairs are all among the analysed pairs (a
question needs at least three answers; graded inputs pair a question's answers up to a cap, so not
every three answers make a triad). For one system a triad is

- transitive: one answer beats both others (A > B, B > C, A > C);
- a 3-cycle: every answer beats exactly one other (A > B, B > C, C > A), a violation;
- not testable: one of its pairs has no decision (an error, never judged) or is a tie.

The violation rate is cycles / testable triads, with a CI from resampling questions (all triads of
a drawn question).

The seed's Table 5 illustrates a narrower denominator without defining it: its triad is listed as
three comparisons (A B, B C, C A), and when the answer shared by the first two listed comparisons
wins both ("the model selects option B in two cases"), the third is "irrelevant" and the triad is not
testable. The seed does not say how it lists a triad's comparisons, nor what it does when the shared
answer *loses* both (then, too, no third verdict can make a cycle), nor how ties and failures count.
So three rates are reported, each with its own denominator, and none is claimed to be the paper's:

- ``violation``: cycles / testable triads (every pair decided a or b);
- ``violation_paper``: cycles / (testable minus the triads whose shared answer won both listed
  comparisons), the case the seed illustrates;
- ``violation_chain``: cycles / (testable minus those whose shared answer won both *or lost both*),
  i.e. the triads whose first two listed comparisons form a chain, where the third decides.

Here the listed order is the pairs' order in the input (the first two of a triad's pairs as they
appear share one answer). The excluded triads are always transitive, so the rates only grow down the
list; a judge that picks at random scores 1/4, 1/3 and 1/2 on them. Every system is counted the same way, pointwise scorers included: a scorer that
ranks answers by a per-answer score cannot cycle, but one whose pair decision also depends on which
answer is "a" can (the rubric model's intercept favours one position; "longer answer wins" gives
equal lengths to a), and so can one with terms that are not differences of per-answer scores (the
style covariates' normalised differences), so the count is computed, not assumed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rubric.analysis.systems import PairSet, System
from rubric.preference import ClusteredMean, clustered_mean

__all__ = ["Triad", "TransitivityRow", "Transitivity", "find_triads", "classify_triad", "shared_answer_wins_both",
           "shared_answer_outcome", "transitivity"]


@dataclass(frozen=True)
class Triad:
    """Three answers to one question and the pairs between them.

    Attributes:
        question_id: the question.
        answers: the three answer ids, sorted.
        pairs: positions in the :class:`PairSet` of the pairs (x, y), (y, z), (x, z).
    """

    question_id: str
    answers: tuple[str, str, str]
    pairs: tuple[int, int, int]


@dataclass(frozen=True)
class TransitivityRow:
    """One system's triads.

    Attributes:
        system: its name (as the tables show it).
        n_triads: triads (the same for every system).
        n_transitive / n_cycles: testable triads that are transitive / 3-cycles.
        n_untestable_missing: triads with a pair the system did not decide.
        n_untestable_tie: triads with every pair decided and at least one tie.
        violation: cycles / testable with its question-clustered CI (``n`` = testable triads).
        n_shared_wins_both: testable triads whose first two listed comparisons (input order) were both
            won by the answer they share: not testable in the paper's Table 5.
        violation_paper: cycles / (testable - ``n_shared_wins_both``), the case the seed illustrates, with its CI.
        n_shared_loses_both: testable triads whose first two listed comparisons were both lost by the
            answer they share (as unable to cycle; the seed does not say whether it counts them).
        violation_chain: cycles / (testable - ``n_shared_wins_both`` - ``n_shared_loses_both``), with its CI.
    """

    system: str
    n_triads: int
    n_transitive: int
    n_cycles: int
    n_untestable_missing: int
    n_untestable_tie: int
    violation: ClusteredMean
    n_shared_wins_both: int = 0
    violation_paper: ClusteredMean | None = None
    n_shared_loses_both: int = 0
    violation_chain: ClusteredMean | None = None

    @property
    def n_testable(self) -> int:
        return self.n_transitive + self.n_cycles

    @property
    def n_testable_paper(self) -> int:
        """Testable triads less those whose shared answer won both listed comparisons (the seed's example)."""
        return self.n_testable - self.n_shared_wins_both

    @property
    def n_chains(self) -> int:
        """Testable triads whose first two listed comparisons form a chain (the shared answer won one, lost one)."""
        return self.n_testable_paper - self.n_shared_loses_both


@dataclass(frozen=True)
class Transitivity:
    """The transitivity table and what it was computed on.

    Attributes:
        rows: one per system.
        n_questions: questions among the analysed pairs.
        n_questions_3plus: of those, with at least three distinct answers.
        n_questions_with_triads: with at least one triad.
        n_triads: triads.
        n_duplicate_pairs: pairs of two answers already paired in another pair (only the first counts).
    """

    rows: list[TransitivityRow]
    n_questions: int
    n_questions_3plus: int
    n_questions_with_triads: int
    n_triads: int
    n_duplicate_pairs: int


def find_triads(pairs: PairSet) -> tuple[list[Triad], dict[str, int]]:
    """Every triad of answers whose three pairs are present, question by question.

    Args:
        pairs: the analysed pairs.

    Returns:
        The triads (by question in order of appearance, then by answer ids), and counts:
        ``n_questions``, ``n_questions_3plus``, ``n_duplicate_pairs``.
    """
    edge: dict[str, dict[frozenset, int]] = defaultdict(dict)
    answers: dict[str, set] = defaultdict(set)
    duplicates = 0
    for i, (q, a, b) in enumerate(zip(pairs.question_id, pairs.answer_id_a, pairs.answer_id_b)):
        answers[q].update((a, b))
        key = frozenset((a, b))
        if a == b:
            continue  # an answer against itself says nothing about order
        if key in edge[q]:
            duplicates += 1
            continue
        edge[q][key] = i
    triads = []
    for q, edges in edge.items():
        adj: dict[str, set] = defaultdict(set)
        for key in edges:
            a, b = sorted(key)
            adj[a].add(b)
            adj[b].add(a)
        for x in sorted(adj):
            for y in sorted(n for n in adj[x] if n > x):
                for z in sorted(n for n in adj[x] & adj[y] if n > y):
                    triads.append(Triad(question_id=q, answers=(x, y, z),
                                        pairs=(edges[frozenset((x, y))], edges[frozenset((y, z))],
                                               edges[frozenset((x, z))])))
    return triads, {"n_questions": len(answers), "n_questions_3plus": sum(1 for s in answers.values() if len(s) >= 3),
                    "n_duplicate_pairs": duplicates}


def classify_triad(winners: Sequence[str | None]) -> str:
    """"transitive", "cycle", "missing" or "tie" from a triad's three outcomes.

    Args:
        winners: for each of the three pairs, the winning answer id, "tie", or None (no decision).
    """
    if any(w is None for w in winners):
        return "missing"
    if any(w == "tie" for w in winners):
        return "tie"
    # three pairs among three answers: a cycle is exactly when every answer wins once
    return "cycle" if len(set(winners)) == 3 else "transitive"


def shared_answer_outcome(pairs: PairSet, triad: Triad, winners: Sequence[str | None]) -> str | None:
    """How the answer shared by the triad's first two comparisons as listed (its two pairs that come first
    in the input) did in them: "won both", "lost both", or None (won one, or a comparison is undecided).

    Args:
        pairs: the analysed pairs (their order is the listing order).
        triad: the triad.
        winners: the winner of each of ``triad.pairs`` (answer id, "tie" or None), in that order.
    """
    first, second = sorted(range(3), key=lambda k: triad.pairs[k])[:2]
    ends = [{pairs.answer_id_a[triad.pairs[k]], pairs.answer_id_b[triad.pairs[k]]} for k in (first, second)]
    shared = ends[0] & ends[1]
    if len(shared) != 1:
        return None
    (x,) = shared
    w1, w2 = winners[first], winners[second]
    if w1 == w2 == x:
        return "won both"
    if w1 in ends[0] - shared and w2 in ends[1] - shared:
        return "lost both"
    return None


def shared_answer_wins_both(pairs: PairSet, triad: Triad, winners: Sequence[str | None]) -> bool:
    """The seed's "not testable" example: the answer shared by the triad's first two comparisons as
    listed won both of them (:func:`shared_answer_outcome`)."""
    return shared_answer_outcome(pairs, triad, winners) == "won both"


def transitivity(pairs: PairSet, systems: Sequence[System], *, n_boot: int = 1000, seed: int = 0) -> Transitivity:
    """Transitive, cyclic and untestable triads of every system on the same triads.

    Args:
        pairs: the analysed pairs (labelled or not: no label is used except by the people's system).
        systems: the systems.
        n_boot: bootstrap replicates.
        seed: their seed.
    """
    triads, counts = find_triads(pairs)
    triad_questions = [pairs.question_id[i] for t in triads for i in t.pairs]
    rows = []
    for s in systems:
        outcome = {"transitive": 0, "cycle": 0, "missing": 0, "tie": 0}
        values, groups, paper_values, paper_groups, chain_values, chain_groups = [], [], [], [], [], []
        shared_wins = shared_losses = 0
        for t in triads:
            winners = []
            for i in t.pairs:
                d = s.decisions.get(str(pairs.pair_id[i]))
                winners.append(None if d is None else "tie" if d == "tie"
                               else pairs.answer_id_a[i] if d == "a" else pairs.answer_id_b[i])
            kind = classify_triad(winners)
            outcome[kind] += 1
            if kind in ("transitive", "cycle"):
                values.append(1.0 if kind == "cycle" else 0.0)
                groups.append(t.question_id)
                shared = shared_answer_outcome(pairs, t, winners)
                if shared == "won both":
                    shared_wins += 1
                else:
                    paper_values.append(values[-1])
                    paper_groups.append(t.question_id)
                    if shared == "lost both":
                        shared_losses += 1
                    else:
                        chain_values.append(values[-1])
                        chain_groups.append(t.question_id)
        rows.append(TransitivityRow(system=s.label_on(triad_questions), n_triads=len(triads), n_transitive=outcome["transitive"],
                                    n_cycles=outcome["cycle"], n_untestable_missing=outcome["missing"],
                                    n_untestable_tie=outcome["tie"],
                                    violation=clustered_mean(np.array(values, dtype=float), groups=groups,
                                                             n_boot=n_boot, seed=seed),
                                    n_shared_wins_both=shared_wins,
                                    violation_paper=clustered_mean(np.array(paper_values, dtype=float),
                                                                   groups=paper_groups, n_boot=n_boot, seed=seed),
                                    n_shared_loses_both=shared_losses,
                                    violation_chain=clustered_mean(np.array(chain_values, dtype=float),
                                                                   groups=chain_groups, n_boot=n_boot, seed=seed)))
    return Transitivity(rows=rows, n_questions=counts["n_questions"], n_questions_3plus=counts["n_questions_3plus"],
                        n_questions_with_triads=len({t.question_id for t in triads}), n_triads=len(triads),
                        n_duplicate_pairs=counts["n_duplicate_pairs"])
