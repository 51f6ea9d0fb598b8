"""Table 4's metrics for judges that may say "tie", and paired differences of them.

People labelled every compared pair "a" or "b"; a system may also answer "tie". Precision, recall and
F1 are macro-averaged over the people's two classes, a and b: a "tie" is a miss (it lowers the recall
of the pair's true class) and never a class of its own, whose precision and recall would be 0 and
pull a tie-capable judge's macro average down by a third. Without ties the values are those of
:func:`rubric.preference.metrics.evaluate_predictions` (scikit-learn's macro averages).

Every CI resamples questions. Two systems on the same pairs (one judge in two orders; one system on
original and perturbed answers) are compared on the same resampled questions in every replicate, so
the CI is that of their difference, not of each on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rubric.config import check_range
from rubric.errors import ConfigError
from rubric.preference import METRICS, MetricRow, question_bootstrap_weights

__all__ = ["CLASSES", "MetricDelta", "ab_metrics", "metric_row", "paired_metric_deltas"]

#: Index of each decision in the confusion matrices: the people's two classes, then a system's tie.
CLASSES: tuple[str, ...] = ("a", "b", "tie")


@dataclass(frozen=True)
class MetricDelta:
    """One metric of two systems on the same pairs, and their difference.

    Attributes:
        metric: the metric's name (a key of :data:`rubric.preference.metrics.METRICS`).
        base: the reference system's value.
        other: the other system's value.
        delta: ``other - base``.
        ci: 95% percentile CI of ``delta`` over resampled questions; (nan, nan) under 2 questions.
        relative: ``delta / base`` (nan when ``base`` is 0), the paper's Table 8 "Δ%" as a fraction.
        relative_ci: its CI from the same replicates.
    """

    metric: str
    base: float
    other: float
    delta: float
    ci: tuple[float, float]
    relative: float
    relative_ci: tuple[float, float]


def ab_metrics(conf: np.ndarray) -> dict[str, np.ndarray]:
    """Accuracy and precision, recall and F1 macro-averaged over a and b, from confusion matrices.

    Args:
        conf: ``conf[..., true, predicted]`` counts over :data:`CLASSES` (3 x 3 in the last two axes).

    Returns:
        metric -> array over the leading axes. As in scikit-learn, a class enters the macro average
        when it is a true or a predicted label of that matrix, and an undefined ratio counts as 0.
    """
    ab = slice(0, 2)
    tp = np.diagonal(conf, axis1=-2, axis2=-1)[..., ab]
    true_n = conf.sum(axis=-1)[..., ab]
    pred_n = conf.sum(axis=-2)[..., ab]
    total = conf.sum(axis=(-2, -1))
    present = (true_n + pred_n) > 0
    n_present = np.maximum(present.sum(axis=-1), 1)

    def ratio(num, den):
        return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den > 0)

    def macro(per_class):
        return (per_class * present).sum(axis=-1) / n_present

    return {"accuracy": ratio(tp.sum(axis=-1), total), "precision": macro(ratio(tp, pred_n)),
            "recall": macro(ratio(tp, true_n)), "f1": macro(ratio(2 * tp, true_n + pred_n))}


def _codes(values, what: str) -> np.ndarray:
    index = {c: i for i, c in enumerate(CLASSES)}
    try:
        return np.array([index[v] for v in values], dtype=int)
    except KeyError as e:
        raise ConfigError(f"{what} must be one of {', '.join(CLASSES)}, got {e.args[0]!r}") from None


def _per_question(y: np.ndarray, pred: np.ndarray, g: np.ndarray, n_q: int) -> np.ndarray:
    k = len(CLASSES)
    conf = np.zeros((n_q, k * k))
    np.add.at(conf, (g, y * k + pred), 1.0)
    return conf


def _groups(groups) -> tuple[np.ndarray, int]:
    _, g = np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)
    return g, (int(g.max()) + 1 if len(g) else 0)


def _pct(x: np.ndarray) -> tuple[float, float]:
    x = x[np.isfinite(x)]
    if not len(x):
        return float("nan"), float("nan")
    return float(np.percentile(x, 2.5)), float(np.percentile(x, 97.5))


def metric_row(system: str, y_true, y_pred, *, groups, n_boot: int = 1000, seed: int = 0) -> MetricRow:
    """One system's Table 4 row: point values and question-clustered bootstrap 95% CIs.

    Args:
        system: its name.
        y_true: the people's labels, "a" or "b".
        y_pred: the system's decisions, "a", "b" or "tie".
        groups: each pair's question id.
        n_boot: replicates.
        seed: their seed.

    Raises:
        ConfigError: lengths differ, a label is not a or b, a decision not a, b or tie, or ``n_boot < 1``.
    """
    y, p = list(y_true), list(y_pred)
    groups = list(groups)
    if not len(y) == len(p) == len(groups):
        raise ConfigError(f"y_true, y_pred and groups must have one entry per pair, got lengths {len(y)}, {len(p)} "
                          f"and {len(groups)}")
    check_range("n_boot", n_boot, low=1)
    nan_ci = {m: (float("nan"), float("nan")) for m in METRICS}
    if not y:
        return MetricRow(system=system, n=0, n_questions=0, values={m: float("nan") for m in METRICS}, ci=nan_ci)
    yc = _codes(y, "labels")
    if (yc == 2).any():
        raise ConfigError("labels must be a or b: leave tie labels out first")
    g, n_q = _groups(groups)
    conf = _per_question(yc, _codes(p, "decisions"), g, n_q)
    point = ab_metrics(conf.sum(axis=0).reshape(3, 3))
    values = {m: float(point[m]) for m in METRICS}
    if n_q < 2:
        return MetricRow(system=system, n=len(y), n_questions=n_q, values=values, ci=nan_ci)
    boot = ab_metrics((question_bootstrap_weights(n_q, n_boot=n_boot, seed=seed) @ conf).reshape(n_boot, 3, 3))
    return MetricRow(system=system, n=len(y), n_questions=n_q, values=values, ci={m: _pct(boot[m]) for m in METRICS})


def paired_metric_deltas(y_true, pred_base, pred_other, *, groups, n_boot: int = 1000,
                         seed: int = 0) -> dict[str, MetricDelta]:
    """Every metric of :func:`metric_row` for two systems on the same pairs, with the CI of their
    difference from a paired bootstrap over questions.

    Args:
        y_true: the people's labels, "a" or "b".
        pred_base: the reference system's decisions (e.g. order ab, the original answers).
        pred_other: the other system's decisions on the same pairs (order ba, the perturbed answers).
        groups: each pair's question id.
        n_boot: replicates.
        seed: their seed.

    Returns:
        metric name -> :class:`MetricDelta`; with no pairs, every value is nan.

    Raises:
        ConfigError: the sequences differ in length, hold other values, or ``n_boot < 1``.
    """
    y, b, o, groups = list(y_true), list(pred_base), list(pred_other), list(groups)
    if not len(y) == len(b) == len(o) == len(groups):
        raise ConfigError(f"y_true, pred_base, pred_other and groups must have one entry per pair, got lengths "
                          f"{len(y)}, {len(b)}, {len(o)} and {len(groups)}")
    check_range("n_boot", n_boot, low=1)
    nan = float("nan")
    if not y:
        return {m: MetricDelta(m, nan, nan, nan, (nan, nan), nan, (nan, nan)) for m in METRICS}
    yc = _codes(y, "labels")
    if (yc == 2).any():
        raise ConfigError("labels must be a or b: leave tie labels out first")
    g, n_q = _groups(groups)
    conf_b = _per_question(yc, _codes(b, "decisions"), g, n_q)
    conf_o = _per_question(yc, _codes(o, "decisions"), g, n_q)
    point_b = ab_metrics(conf_b.sum(axis=0).reshape(3, 3))
    point_o = ab_metrics(conf_o.sum(axis=0).reshape(3, 3))
    if n_q >= 2:
        w = question_bootstrap_weights(n_q, n_boot=n_boot, seed=seed)
        boot_b = ab_metrics((w @ conf_b).reshape(n_boot, 3, 3))
        boot_o = ab_metrics((w @ conf_o).reshape(n_boot, 3, 3))
    out = {}
    for m in METRICS:
        base, other = float(point_b[m]), float(point_o[m])
        rel = (other - base) / base if base else nan
        ci = rel_ci = (nan, nan)
        if n_q >= 2:
            d = boot_o[m] - boot_b[m]
            ci = _pct(d)
            with np.errstate(divide="ignore", invalid="ignore"):
                rel_ci = _pct(np.where(boot_b[m] > 0, d / boot_b[m], np.nan))
        out[m] = MetricDelta(m, base, other, other - base, ci, rel, rel_ci)
    return out
