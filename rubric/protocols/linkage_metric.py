"""LINKAGE's metric: per-question Kendall/Spearman correlations between the graded labels and the
judge's scores, and their average over questions."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rubric.errors import ConfigError
from rubric.preference import ClusteredMean, clustered_mean

__all__ = ["QuestionCorrelation", "LinkageCorrelations", "question_correlation", "linkage_correlations"]


# --- the metric ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class QuestionCorrelation:
    """One question's correlations between graded labels and a system's scores.

    Attributes:
        question_id: the question.
        n: answers with a score.
        kendall: Kendall's tau-b (nan when undefined).
        spearman: Spearman's rho (nan when undefined).
        pearson: Pearson's r (nan when undefined).
        undefined: why the correlations are undefined, else None.
    """

    question_id: str
    n: int
    kendall: float
    spearman: float
    pearson: float
    undefined: str | None = None


@dataclass(frozen=True)
class LinkageCorrelations:
    """A system's LINKAGE metric: per-question correlations averaged over the questions where defined.

    Attributes:
        system: the system's name.
        kendall: mean Kendall's tau-b over the defined questions, with its question-bootstrap 95% CI
            (``n`` and ``n_questions`` are the defined questions).
        spearman: the same for Spearman's rho.
        pearson: the same for Pearson's r.
        n_questions: questions given.
        n_undefined: questions left out of the means (fewer than two scored answers, one grade only,
            or one score only).
        n_missing_scores: answers without a score (None or nan), left out of their question.
        per_question: every question's correlations, in first-seen order.
    """

    system: str
    kendall: ClusteredMean
    spearman: ClusteredMean
    pearson: ClusteredMean
    n_questions: int
    n_undefined: int
    n_missing_scores: int
    per_question: tuple[QuestionCorrelation, ...] = field(repr=False)


_NAN = float("nan")


def question_correlation(question_id: str, labels: Sequence[float], scores: Sequence[float]) -> QuestionCorrelation:
    """Kendall's tau-b, Spearman's rho and Pearson's r of one question's labels and scores.

    They are undefined (nan, with the reason) with fewer than two answers, when every answer has the
    same label, or when the system gave every answer the same score; scipy would return nan with a
    warning there, and LINKAGE's code then dropped the question from the average.

    Raises:
        ConfigError: ``labels`` and ``scores`` differ in length, or a value is not finite.
    """
    from scipy.stats import kendalltau, pearsonr, spearmanr

    y = np.asarray(labels, dtype=float)
    s = np.asarray(scores, dtype=float)
    if y.shape != s.shape:
        raise ConfigError(f"question {question_id}: labels and scores differ in length ({len(y)} and {len(s)})")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(s))):
        raise ConfigError(f"question {question_id}: labels and scores must be finite")
    n = len(y)
    why = None
    if n < 2:
        why = f"{n} scored answer(s)"
    elif np.all(y == y[0]):
        why = f"every answer has the grade {y[0]:g}"
    elif np.all(s == s[0]):
        why = f"every answer has the score {s[0]:g}"
    if why is not None:
        return QuestionCorrelation(question_id, n, _NAN, _NAN, _NAN, why)
    return QuestionCorrelation(question_id, n, float(kendalltau(y, s).statistic), float(spearmanr(y, s).statistic),
                               float(pearsonr(y, s).statistic))


def linkage_correlations(question_ids: Sequence[str], labels: Sequence[float], scores: Sequence[float | None], *,
                         system: str = "", n_boot: int = 1000, seed: int = 0) -> LinkageCorrelations:
    """LINKAGE's metric: per-question Kendall / Spearman / Pearson against graded labels, averaged.

    As LINKAGE's ``count_spearman_metric`` computes it, with three differences, each a bug there:

    - an answer without a score is left out of its question and counted (the reference scored it -2,
      i.e. as if the judge had said rank 2);
    - the mean of each coefficient runs over the questions where it is defined (the reference
      skipped a question whose Spearman was nan after adding its Kendall, so Kendall's sum had one
      more question than its divisor);
    - answers are matched by position, not by their text (the reference keyed scores by the passage
      text, so two answers with the same text shared one score).

    All three coefficients are defined on the same questions (at least two scored answers, two
    grades and two scores), so one ``n_undefined`` serves them. The CI resamples the defined
    questions (one value each) with :func:`rubric.preference.metrics.clustered_mean`.

    Args:
        question_ids: each answer's question.
        labels: each answer's graded label (any integer scale; higher is better).
        scores: each answer's score from the system, higher is better (for a rank use
            :func:`rank_score`); None or nan when the system has none.
        system: the system's name for the table.
        n_boot: bootstrap replicates.
        seed: their seed.

    Returns:
        A :class:`LinkageCorrelations`.

    Raises:
        ConfigError: the sequences differ in length, a label is not finite, or ``n_boot < 1``.
    """
    if not len(question_ids) == len(labels) == len(scores):
        raise ConfigError(f"question_ids, labels and scores must have one entry per answer, got lengths "
                          f"{len(question_ids)}, {len(labels)} and {len(scores)}")
    groups: dict[str, tuple[list[float], list[float]]] = {}
    missing = 0
    for q, y, s in zip(question_ids, labels, scores):
        ys, ss = groups.setdefault(str(q), ([], []))
        if s is None or not math.isfinite(float(s)):
            missing += 1
            continue
        ys.append(float(y))
        ss.append(float(s))
    per_q = tuple(question_correlation(q, ys, ss) for q, (ys, ss) in groups.items())
    defined = [c for c in per_q if c.undefined is None]
    qids = [c.question_id for c in defined]

    def mean(metric: str) -> ClusteredMean:
        return clustered_mean([getattr(c, metric) for c in defined], groups=qids, n_boot=n_boot, seed=seed)

    return LinkageCorrelations(system=system, kendall=mean("kendall"), spearman=mean("spearman"),
                               pearson=mean("pearson"), n_questions=len(per_q), n_undefined=len(per_q) - len(defined),
                               n_missing_scores=missing, per_question=per_q)
