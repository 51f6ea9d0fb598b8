"""The estimator core the preference models share: standardise, then a logistic regression.

Both the rubric preference model (:class:`rubric.preference.model.PreferenceModel`, on rubric
differences and style covariates) and the trained-encoder baseline's head
(``models.baselines.encoder.PreferenceHead``, on embedding differences) are this: a ``StandardScaler`` fitted
on the training rows, and an L2 ``LogisticRegression(C, max_iter)`` fitted on the scaled rows. They
differ only in what they do to the rows before (ties, style columns, symmetric copies) and in how
they are saved; :func:`fit_core` and :func:`restore_core` are the one place the pair is made.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from rubric.config import check_range
from rubric.errors import ConfigError

__all__ = ["check_core_params", "fit_core", "restore_core"]


def check_core_params(C: object, max_iter: object) -> None:
    """Raise ConfigError unless ``C`` is a number > 0 and ``max_iter`` an integer >= 1."""
    if isinstance(C, bool) or not isinstance(C, numbers.Real) or not C > 0:
        raise ConfigError(f"'C' must be a number > 0, got {C!r}")
    check_range("max_iter", max_iter, low=1, integer=True)


def fit_core(X: np.ndarray, y: np.ndarray, *, C: float, max_iter: int) -> tuple[StandardScaler, LogisticRegression]:
    """The scaler fitted on ``X`` and the logistic regression fitted on the scaled ``X`` and ``y``."""
    scaler = StandardScaler().fit(X)
    return scaler, LogisticRegression(C=C, max_iter=max_iter).fit(scaler.transform(X), y)


def restore_core(*, C: float, max_iter: int, classes, coef: np.ndarray, intercept: np.ndarray, mean: np.ndarray,
                 scale: np.ndarray, var: np.ndarray | None = None,
                 n_samples_seen: int = 0) -> tuple[StandardScaler, LogisticRegression]:
    """A fitted scaler and logistic regression rebuilt from saved arrays (no refit).

    ``var`` defaults to ``scale ** 2`` (what the scaler computed when it was fitted).
    """
    n_features = int(len(mean))
    scaler = StandardScaler()
    scaler.mean_, scaler.scale_, scaler.var_ = mean, scale, scale ** 2 if var is None else var
    scaler.n_samples_seen_ = n_samples_seen
    scaler.n_features_in_ = n_features
    lr = LogisticRegression(C=C, max_iter=max_iter)
    lr.classes_ = np.asarray(classes, dtype=object)
    lr.coef_, lr.intercept_ = coef, intercept
    lr.n_features_in_ = n_features
    return scaler, lr
