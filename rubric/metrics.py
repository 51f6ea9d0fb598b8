"""Evaluation metrics with question-clustered bootstrap confidence intervals, and the baselines the model must beat."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

from rubric.errors import ConfigError

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
    if n_boot < 1:
        raise ConfigError(f"'n_boot' must be >= 1, got {n_boot}")
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
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_q, size=(n_boot, n_q))
    # how many times each question was drawn in each replicate, as one flat bincount
    weights = np.bincount((draws + n_q * np.arange(n_boot)[:, None]).ravel(),
                          minlength=n_boot * n_q).reshape(n_boot, n_q)
    stats = _confusion_metrics((weights @ per_q).reshape(n_boot, k, k))
    ci = {m: (float(np.percentile(stats[m], 2.5)), float(np.percentile(stats[m], 97.5))) for m in METRICS}
    return MetricRow(system=system, n=n, n_questions=n_q, values=values, ci=ci)


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
