"""Evaluation metrics with question-clustered bootstrap confidence intervals, and the baselines the model must beat.

Every interval here resamples questions, not pairs: pairs about one question share an answer set and a
rater, so they are not independent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

from rubric.config import check_range
from rubric.errors import ConfigError

__all__ = ["METRICS", "MetricRow", "evaluate_predictions", "question_bootstrap_weights", "ClusteredMean",
           "clustered_mean", "paired_accuracy_delta", "brier_score", "ReliabilityBin", "reliability_bins",
           "longer_answer_wins", "always_a", "per_question_kendall"]

MetricFn = Callable[[np.ndarray, np.ndarray], float]


def _macro(fn) -> MetricFn:
    return lambda y, p: float(fn(y, p, average="macro", zero_division=0))


#: accuracy and macro-averaged precision, recall and F1 (the paper's Table 4 columns).
METRICS: dict[str, MetricFn] = {
    "accuracy": lambda y, p: float(accuracy_score(y, p)),
    "precision": _macro(precision_score),
    "recall": _macro(recall_score),
    "f1": _macro(f1_score),
}


@dataclass(frozen=True)
class MetricRow:
    """One system's metrics on one set of pairs.

    Attributes:
        system: the system's name.
        n: pairs evaluated.
        n_questions: distinct questions among them (the bootstrap's clusters).
        values: metric name -> point value.
        ci: metric name -> (low, high), percentile 95% CI of the question-clustered bootstrap;
            (nan, nan) with fewer than 2 questions, where resampling questions says nothing.
    """

    system: str
    n: int
    n_questions: int
    values: dict[str, float]
    ci: dict[str, tuple[float, float]]


def _confusion_metrics(conf: np.ndarray) -> dict[str, np.ndarray]:
    """METRICS computed from stacked confusion matrices ``conf[..., true, pred]``.

    Matches scikit-learn's macro averaging: the average runs over the labels present in the true or
    predicted labels of that sample, and an undefined precision/recall/F1 counts as 0.
    """
    tp = np.diagonal(conf, axis1=-2, axis2=-1)
    true_n = conf.sum(axis=-1)
    pred_n = conf.sum(axis=-2)
    present = (true_n + pred_n) > 0
    n_present = present.sum(axis=-1)
    total = true_n.sum(axis=-1)

    def ratio(num, den):
        return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den > 0)

    def macro(per_label):
        return (per_label * present).sum(axis=-1) / np.maximum(n_present, 1)

    return {
        "accuracy": ratio(tp.sum(axis=-1), total),
        "precision": macro(ratio(tp, pred_n)),
        "recall": macro(ratio(tp, true_n)),
        "f1": macro(ratio(2 * tp, true_n + pred_n)),
    }


def evaluate_predictions(system: str, y_true, y_pred, *, groups, n_boot: int = 1000, seed: int = 0) -> MetricRow:
    """Point metrics plus question-clustered bootstrap 95% CIs.

    Pairs about one question share an answer set and a rater, so they are not independent: resampling
    pairs would give CIs as if every pair were a new question. Each replicate instead draws questions
    with replacement and takes all their pairs. It is vectorised: per-question confusion counts are
    computed once, and a replicate's confusion matrix is their sum weighted by how often each question
    was drawn.

    Args:
        system: the system's name for the table.
        y_true: true labels, one per pair.
        y_pred: predicted labels, same order.
        groups: the question id of each pair.
        n_boot: bootstrap replicates.
        seed: seed of the replicates.

    Raises:
        ConfigError: the three sequences differ in length, or ``n_boot < 1``.
    """
    y_true = np.asarray(y_true, dtype=object).astype(str)
    y_pred = np.asarray(y_pred, dtype=object).astype(str)
    groups = np.asarray(groups, dtype=object)
    if not len(y_true) == len(y_pred) == len(groups):
        raise ConfigError(f"y_true, y_pred and groups must have one entry per pair, got lengths "
                          f"{len(y_true)}, {len(y_pred)} and {len(groups)}")
    check_range("n_boot", n_boot, low=1)
    n = len(y_true)
    nan_ci = {m: (float("nan"), float("nan")) for m in METRICS}
    if n == 0:
        return MetricRow(system=system, n=0, n_questions=0, values={m: float("nan") for m in METRICS}, ci=nan_ci)
    values = {m: fn(y_true, y_pred) for m, fn in METRICS.items()}
    _, g = np.unique(groups.astype(str), return_inverse=True)
    n_q = int(g.max()) + 1
    if n_q < 2:
        return MetricRow(system=system, n=n, n_questions=n_q, values=values, ci=nan_ci)
    labels, yi = np.unique(np.concatenate([y_true, y_pred]), return_inverse=True)
    k = len(labels)
    t, p = yi[:n], yi[n:]
    per_q = np.zeros((n_q, k * k))
    np.add.at(per_q, (g, t * k + p), 1.0)
    weights = question_bootstrap_weights(n_q, n_boot=n_boot, seed=seed)
    stats = _confusion_metrics((weights @ per_q).reshape(n_boot, k, k))
    ci = {m: (float(np.percentile(stats[m], 2.5)), float(np.percentile(stats[m], 97.5))) for m in METRICS}
    return MetricRow(system=system, n=n, n_questions=n_q, values=values, ci=ci)


def question_bootstrap_weights(n_questions: int, *, n_boot: int, seed: int) -> np.ndarray:
    """How many times each question is drawn in each replicate of a question bootstrap.

    Args:
        n_questions: questions (clusters) to draw from, with replacement, ``n_questions`` per replicate.
        n_boot: replicates.
        seed: the draws' seed.

    Returns:
        (n_boot, n_questions) integer counts; each row sums to ``n_questions``.
    """
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_questions, size=(n_boot, n_questions))
    # how many times each question was drawn in each replicate, as one flat bincount
    return np.bincount((draws + n_questions * np.arange(n_boot)[:, None]).ravel(),
                       minlength=n_boot * n_questions).reshape(n_boot, n_questions)


@dataclass(frozen=True)
class ClusteredMean:
    """A per-pair mean with its question-clustered bootstrap 95% CI.

    Attributes:
        value: the mean over pairs.
        ci: (low, high) percentile CI; (nan, nan) with fewer than 2 questions.
        n: pairs.
        n_questions: distinct questions (the bootstrap's clusters).
    """

    value: float
    ci: tuple[float, float]
    n: int
    n_questions: int


def clustered_mean(values, *, groups, n_boot: int = 1000, seed: int = 0) -> ClusteredMean:
    """Mean of per-pair ``values`` with a CI from resampling questions (all pairs of a drawn question).

    A replicate's mean is the sum of its pairs' values over its number of pairs, so questions with more
    pairs weigh more, as they do in the point value.

    Raises:
        ConfigError: ``values`` and ``groups`` differ in length, or ``n_boot < 1``.
    """
    values = np.asarray(values, dtype=float)
    groups = np.asarray(groups, dtype=object)
    if len(values) != len(groups):
        raise ConfigError(f"values and groups must have one entry per pair, got lengths {len(values)} and "
                          f"{len(groups)}")
    check_range("n_boot", n_boot, low=1)
    n = len(values)
    if n == 0:
        return ClusteredMean(float("nan"), (float("nan"), float("nan")), 0, 0)
    _, g = np.unique(groups.astype(str), return_inverse=True)
    n_q = int(g.max()) + 1
    value = float(values.mean())
    if n_q < 2:
        return ClusteredMean(value, (float("nan"), float("nan")), n, n_q)
    sums = np.bincount(g, weights=values, minlength=n_q)
    counts = np.bincount(g, minlength=n_q).astype(float)
    w = question_bootstrap_weights(n_q, n_boot=n_boot, seed=seed)
    stats = (w @ sums) / (w @ counts)
    return ClusteredMean(value, (float(np.percentile(stats, 2.5)), float(np.percentile(stats, 97.5))), n, n_q)


def paired_accuracy_delta(y_true, pred_base, pred_other, *, groups, n_boot: int = 1000,
                          seed: int = 0) -> ClusteredMean:
    """accuracy(other) - accuracy(base) on the same pairs, with a question-clustered *paired* bootstrap CI.

    Each replicate resamples questions once and scores both systems on that same resample (the
    difference of their per-pair correctness), so the CI reflects how the two differ, not how each
    varies on its own.

    Args:
        y_true: true labels.
        pred_base: the reference system's predictions (e.g. the full model).
        pred_other: the other system's predictions (e.g. the model without one rubric).
        groups: each pair's question id.
        n_boot: replicates.
        seed: their seed.

    Raises:
        ConfigError: the sequences differ in length.
    """
    y = np.asarray(y_true, dtype=object).astype(str)
    base = np.asarray(pred_base, dtype=object).astype(str)
    other = np.asarray(pred_other, dtype=object).astype(str)
    if not len(y) == len(base) == len(other):
        raise ConfigError(f"y_true, pred_base and pred_other must have one entry per pair, got lengths "
                          f"{len(y)}, {len(base)} and {len(other)}")
    diff = (other == y).astype(float) - (base == y).astype(float)
    return clustered_mean(diff, groups=groups, n_boot=n_boot, seed=seed)


def _binary_outcome(y_true, p_a) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y_true, dtype=object).astype(str)
    p = np.asarray(p_a, dtype=float)
    if len(y) != len(p):
        raise ConfigError(f"y_true and p_a must have one entry per pair, got lengths {len(y)} and {len(p)}")
    bad = sorted(set(y) - {"a", "b"})
    if bad:
        raise ConfigError(f"calibration is defined on a/b labels, got {bad}")
    if not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(p > 1):
        raise ConfigError("p_a must be probabilities in [0, 1]")
    return (y == "a").astype(float), p


def brier_score(y_true, p_a) -> float:
    """Mean squared error of P(a preferred) against the outcome (1 when "a" was preferred, else 0).

    0 is perfect; always answering 0.5 scores 0.25.

    Raises:
        ConfigError: lengths differ, a label is not "a"/"b", or a probability is outside [0, 1].
    """
    o, p = _binary_outcome(y_true, p_a)
    return float(np.mean((p - o) ** 2)) if len(o) else float("nan")


@dataclass(frozen=True)
class ReliabilityBin:
    """One bin of a reliability diagram.

    Attributes:
        lo / hi: the bin's P(a) range, ``[lo, hi)`` (the last bin includes 1).
        n: pairs whose predicted P(a) falls in it.
        mean_p: their mean predicted P(a) (nan when empty).
        frac_a: the share of them where "a" was preferred (nan when empty).
    """

    lo: float
    hi: float
    n: int
    mean_p: float
    frac_a: float


def reliability_bins(y_true, p_a, *, n_bins: int = 10) -> list[ReliabilityBin]:
    """Equal-width bins of predicted P(a) with how often "a" was preferred in each.

    Raises:
        ConfigError: as :func:`brier_score`, or ``n_bins < 1``.
    """
    check_range("n_bins", n_bins, low=1)
    o, p = _binary_outcome(y_true, p_a)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.clip(np.floor(p * n_bins).astype(int), 0, n_bins - 1)
    out = []
    for b in range(n_bins):
        sel = idx == b
        n = int(sel.sum())
        out.append(ReliabilityBin(lo=float(edges[b]), hi=float(edges[b + 1]), n=n,
                                  mean_p=float(p[sel].mean()) if n else float("nan"),
                                  frac_a=float(o[sel].mean()) if n else float("nan")))
    return out


def longer_answer_wins(n_words_a, n_words_b) -> np.ndarray:
    """Baseline: the answer with more words is preferred (a on equal length)."""
    a, b = np.asarray(n_words_a), np.asarray(n_words_b)
    return np.where(a >= b, "a", "b").astype(object)


def always_a(n: int) -> np.ndarray:
    """Baseline: the first answer is always preferred (exposes position effects in the labels)."""
    return np.array(["a"] * n, dtype=object)


def per_question_kendall(groups: dict[str, list[tuple[float, float | None]]]) -> dict[str, float | int]:
    """Mean Kendall tau-b between a score and graded labels, computed within each question.

    Args:
        groups: question -> list of (grade, score) for its answers; a None score is skipped.

    Returns:
        ``mean_tau`` over the questions where tau is defined (at least two answers with different
        grades and a non-constant score), ``n_questions`` used, and ``n_undefined``.
    """
    from scipy.stats import kendalltau

    taus, undefined = [], 0
    for pairs in groups.values():
        kept = [(g, s) for g, s in pairs if s is not None]
        grades = [g for g, _ in kept]
        scores = [s for _, s in kept]
        if len(kept) < 2 or len(set(grades)) < 2 or len(set(scores)) < 2:
            undefined += 1
            continue
        tau = kendalltau(grades, scores).statistic
        if np.isnan(tau):
            undefined += 1
            continue
        taus.append(float(tau))
    return {"mean_tau": float(np.mean(taus)) if taus else float("nan"), "n_questions": len(taus),
            "n_undefined": undefined}
