"""Evaluation metrics with bootstrap confidence intervals, and the baselines the model must beat."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

__all__ = ["METRICS", "MetricRow", "evaluate_predictions", "longer_answer_wins", "always_a", "per_question_kendall"]

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
    """One system's metrics: ``values[m]`` and ``ci[m] = (low, high)`` (bootstrap 95%)."""

    system: str
    n: int
    values: dict[str, float]
    ci: dict[str, tuple[float, float]]


def evaluate_predictions(system: str, y_true, y_pred, *, n_boot: int = 1000, seed: int = 0) -> MetricRow:
    """Point metrics plus percentile bootstrap 95% CIs (pairs resampled with replacement)."""
    y_true = np.asarray(y_true, dtype=object).astype(str)
    y_pred = np.asarray(y_pred, dtype=object).astype(str)
    n = len(y_true)
    values = {m: fn(y_true, y_pred) for m, fn in METRICS.items()} if n else {m: float("nan") for m in METRICS}
    ci: dict[str, tuple[float, float]] = {}
    if n:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, n, size=(n_boot, n))
        for m, fn in METRICS.items():
            stats = np.array([fn(y_true[i], y_pred[i]) for i in idx])
            ci[m] = (float(np.percentile(stats, 2.5)), float(np.percentile(stats, 97.5)))
    else:
        ci = {m: (float("nan"), float("nan")) for m in METRICS}
    return MetricRow(system=system, n=n, values=values, ci=ci)


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
