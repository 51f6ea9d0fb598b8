"""Train/dev/test splits that keep whole questions together and preserve the mix of strata.

The paper split 70/15/15 "preserving proportional representation of sources, domains, and
annotator expertise". Here a question (all its pairs) is the unit; questions are grouped into
strata by (source, expert, domain) and, inside each stratum, dealt in a seeded random order to
whichever split is furthest below its target share of pairs. Small strata therefore still land
in proportion overall, and no question leaks across splits.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence

from rubric.config import DEFAULT_SPLIT_FRACTIONS
from rubric.errors import ConfigError
from rubric.io.records import PairRecord

__all__ = ["SPLITS", "assign_splits", "split_questions"]

SPLITS: tuple[str, ...] = ("train", "dev", "test")


def assign_splits(pairs: Sequence[PairRecord], fractions: Sequence[float] = DEFAULT_SPLIT_FRACTIONS,
                  seed: int = 0) -> list[str]:
    """Return the split name of each pair, in order.

    Args:
        pairs: the pairs to split.
        fractions: target shares of train, dev and test (must sum to 1).
        seed: RNG seed; the same input and seed always give the same splits.

    Returns:
        One of "train", "dev", "test" per pair.

    Raises:
        ConfigError: fractions are not three non-negative numbers summing to 1.
    """
    by_question: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(pairs):
        by_question[p.question_id].append(i)
    questions = {}
    for qid, idx in by_question.items():
        first = pairs[idx[0]]
        questions[qid] = (len(idx), (first.source, str(first.expert), first.domain))
    of_question = split_questions(questions, fractions, seed)
    out = [""] * len(pairs)
    for qid, idx in by_question.items():
        for i in idx:
            out[i] = of_question[qid]
    return out


def split_questions(questions: Mapping[str, tuple[int, tuple]], fractions: Sequence[float] = DEFAULT_SPLIT_FRACTIONS,
                    seed: int = 0) -> dict[str, str]:
    """The split of each question, from per-question summaries only (what :func:`assign_splits` does).

    A job too large to hold its pairs keeps one summary per question instead.

    Args:
        questions: question id -> (its number of pairs, its stratum: (source, str(expert), domain)
            of its first pair).
        fractions, seed: as :func:`assign_splits`.
    """
    if len(fractions) != 3 or any(f < 0 for f in fractions) or abs(sum(fractions) - 1.0) > 1e-9:
        raise ConfigError(f"'fractions' must be three non-negative numbers summing to 1, got {tuple(fractions)}")
    strata: dict[tuple, list[str]] = defaultdict(list)
    for qid, (_n, stratum) in questions.items():
        strata[stratum].append(qid)
    rng = random.Random(seed)
    counts = [0, 0, 0]
    out: dict[str, str] = {}
    for key in sorted(strata):
        qids = sorted(strata[key])
        rng.shuffle(qids)
        for qid in qids:
            n = questions[qid][0]
            total = sum(counts) + n
            # the split with the largest shortfall against its target after adding this question
            deficits = [fractions[k] * total - counts[k] for k in range(3)]
            k = max(range(3), key=lambda j: (deficits[j], -j))
            counts[k] += n
            out[qid] = SPLITS[k]
    return out
