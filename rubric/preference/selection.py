"""Honest model selection and the numbers that say how far to trust a fitted preference model.

- :func:`cross_validate_C` chooses the regularisation strength by cross-validation on the training
  split with every question's pairs kept in one fold (scikit-learn's ``GroupKFold``), since pairs
  about one question share answers and a rater and would leak between folds otherwise.
- :func:`drop_one_ablation` refits the model without each rubric and measures what accuracy it loses
  on the evaluated split, with a question-clustered paired bootstrap CI.
- :func:`calibration` gives the Brier score and a reliability table of P(a preferred).
- :func:`bootstrap_weight_cis` refits the model on questions resampled with replacement and gives
  percentile 95% CIs of every weight. A replicate in which a column is constant (a binary rubric that
  is 0 on every drawn pair, say) cannot estimate that column's weight: the refit gives it exactly 0,
  which would pin a CI bound at 0. Such a replicate is degenerate *for that column* and left out of
  its percentiles (its other columns keep it); how many were left out is reported per column, and a
  column degenerate in more than :data:`MAX_DEGENERATE_SHARE` of the fitted replicates gets its CI
  marked unreliable.

All of them refit clones of a :class:`rubric.preference.model.PreferenceModel`, so the scaler, the style
covariates and the length betas are the model's own.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from math import nan

import numpy as np
from sklearn.base import clone
from sklearn.metrics import log_loss
from sklearn.model_selection import GroupKFold

from rubric.config import check_range
from rubric.errors import ConfigError
from rubric.preference.metrics import (ClusteredMean, ReliabilityBin, brier_score, clustered_mean, paired_accuracy_delta,
                            reliability_bins)
from rubric.preference.model import PreferenceModel
from rubric.tables import MissingRule, indicator_column

__all__ = ["C_GRID", "question_folds", "CVResult", "cross_validate_C", "AblationRow", "drop_one_ablation",
           "Calibration", "calibration", "WeightCIs", "bootstrap_weight_cis", "MAX_DEGENERATE_SHARE"]

log = logging.getLogger(__name__)

#: Above this share of degenerate replicates (the column constant in the resample), a weight's CI is
#: marked unreliable: the replicates left are those whose resample happened to vary the column, not a
#: bootstrap of the fit. 5%: at 200 replicates, more than 10.
MAX_DEGENERATE_SHARE = 0.05

#: The regularisation strengths tried by ``fit --C cv``: 1e-3 to 1e2, half a decade apart.
C_GRID: tuple[float, ...] = tuple(float(c) for c in np.logspace(-3, 2, 11))


def question_folds(groups, *, n_splits: int = 5) -> list[tuple[np.ndarray, np.ndarray]]:
    """K-fold splits of pairs that never put one question on both sides.

    Args:
        groups: each pair's question id.
        n_splits: folds wanted; fewer when there are fewer questions.

    Returns:
        ``(train_index, validation_index)`` per fold.

    Raises:
        ConfigError: fewer than 2 questions, or ``n_splits < 2``.
    """
    groups = np.asarray(groups, dtype=object).astype(str)
    n_q = len(set(groups))
    check_range("n_splits", n_splits, low=2)
    if n_q < 2:
        raise ConfigError(f"cross-validation over questions needs at least 2 questions, got {n_q}")
    k = min(n_splits, n_q)
    return [(tr, va) for tr, va in GroupKFold(n_splits=k).split(np.zeros((len(groups), 1)), groups=groups)]


@dataclass(frozen=True)
class CVResult:
    """Cross-validated choice of C.

    Attributes:
        best_C: the C with the lowest mean validation log loss (the smaller C on a tie).
        rows: one dict per C tried: ``C``, ``log_loss`` (mean over folds), ``log_loss_sd``, ``accuracy``
            (mean over folds), ``n_folds`` (folds that could be fitted).
        n_folds: folds made.
        criterion: what was minimised.
    """

    best_C: float
    rows: list[dict]
    n_folds: int
    criterion: str = "mean validation log loss"

    def to_dict(self) -> dict:
        return asdict(self)


def _scorable(model: PreferenceModel, y: np.ndarray) -> np.ndarray:
    """Rows whose label the model can be scored on (ties are not a class of the binary model)."""
    return np.isin(y.astype(str), [str(c) for c in model.classes_])


def cross_validate_C(model: PreferenceModel, X, y, groups, *, grid: Sequence[float] = C_GRID,
                     n_splits: int = 5) -> CVResult:
    """Choose C by cross-validation on training pairs, questions kept together.

    Args:
        model: an (unfitted) model whose other parameters are kept; C is set from ``grid``.
        X: the training design matrix.
        y: training labels.
        groups: each pair's question id.
        grid: the Cs to try.
        n_splits: folds (fewer with fewer questions).

    Returns:
        The chosen C and the table behind the choice.

    Raises:
        ConfigError: an empty grid, fewer than 2 questions, or no fold could be fitted for any C.
    """
    if not grid:
        raise ConfigError("the C grid is empty")
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=object)
    folds = question_folds(groups, n_splits=n_splits)
    rows = []
    for C in grid:
        losses, accs = [], []
        for tr, va in folds:
            try:
                m = clone(model).set_params(C=float(C)).fit(X[tr], y[tr])
            except ConfigError as e:  # e.g. one class only in this fold's training part
                log.debug("C=%g: fold skipped: %s", C, e)
                continue
            keep = _scorable(m, y[va])
            if not keep.any():
                continue
            proba = m.predict_proba(X[va][keep])
            losses.append(log_loss(y[va][keep].astype(str), proba, labels=[str(c) for c in m.classes_]))
            accs.append(float(np.mean(m.predict(X[va][keep]) == y[va][keep])))
        rows.append({"C": float(C), "log_loss": float(np.mean(losses)) if losses else float("nan"),
                     "log_loss_sd": float(np.std(losses)) if losses else float("nan"),
                     "accuracy": float(np.mean(accs)) if accs else float("nan"), "n_folds": len(losses)})
    usable = [r for r in rows if r["n_folds"]]
    if not usable:
        raise ConfigError("no cross-validation fold could be fitted (too few questions with both labels)")
    best = min(usable, key=lambda r: (r["log_loss"], r["C"]))
    log.info("C chosen by %d-fold cross-validation over questions: %g (validation log loss %.4f)",
             len(folds), best["C"], best["log_loss"])
    return CVResult(best_C=best["C"], rows=rows, n_folds=len(folds))


@dataclass(frozen=True)
class AblationRow:
    """The model refitted without one rubric, against the full model, on the same pairs.

    Attributes:
        feature: the rubric left out.
        accuracy_full: the full (refitted) model's accuracy.
        accuracy_without: the model without ``feature``.
        delta: ``accuracy_without - accuracy_full`` with its question-clustered paired bootstrap CI
            (negative: the rubric helps).
    """

    feature: str
    accuracy_full: float
    accuracy_without: float
    delta: ClusteredMean


def _without(model: PreferenceModel, feature: str) -> PreferenceModel:
    """An unfitted clone of ``model`` with one rubric fewer (its provenance, beta, fill value and missing-side
    indicator dropped with it)."""
    names = [f for f in model.features_ if f != feature]
    prov = None if model.provenance is None else {f: model.provenance[f] for f in names}
    betas = None if model.length_betas is None else {f: b for f, b in model.length_betas.items() if f != feature}
    rule = model.missing_
    missing = MissingRule(mode=rule.mode, fill={f: v for f, v in rule.fill.items() if f != feature},
                          indicators=tuple(f for f in rule.indicators if f != feature))
    return clone(model).set_params(feature_names=names, provenance=prov, length_betas=betas, missing=missing)


def _columns_of(model: PreferenceModel, feature: str) -> list[int]:
    """The columns of ``X`` that hold ``feature``: its difference and its missing-side indicator, if any."""
    own = {feature, indicator_column(feature)} if feature in model.missing_.indicators else {feature}
    return [k for k, c in enumerate(model.columns_) if c in own]


def _majority(y: np.ndarray, n: int) -> np.ndarray:
    values, counts = np.unique(y.astype(str), return_counts=True)
    return np.array([values[np.argmax(counts)]] * n, dtype=object)


def drop_one_ablation(model: PreferenceModel, X_train, y_train, X_eval, y_eval, groups_eval, *,
                      n_boot: int = 1000, seed: int = 0) -> list[AblationRow]:
    """Refit without each rubric on the training pairs and compare accuracy on the evaluated pairs.

    The reference is the full model refitted the same way on the same training pairs (which is the
    fitted model itself when these are its training pairs), so the difference is the rubric's alone.
    A model left with no column at all predicts the training majority label.

    Args:
        model: a fitted model (its parameters, columns and betas are reused).
        X_train / y_train: the training design matrix and labels, columns as ``model.columns_``.
        X_eval / y_eval: the evaluated pairs, same columns.
        groups_eval: the evaluated pairs' question ids (resampled by the paired bootstrap).
        n_boot: bootstrap replicates.
        seed: their seed (the same for every rubric, so rows are comparable).

    Returns:
        One row per rubric feature, in the model's column order.
    """
    X_train, X_eval = np.asarray(X_train, dtype=float), np.asarray(X_eval, dtype=float)
    y_train, y_eval = np.asarray(y_train, dtype=object), np.asarray(y_eval, dtype=object)
    full = clone(model).fit(X_train, y_train).predict(X_eval)
    acc_full = float(np.mean(full == y_eval)) if len(y_eval) else float("nan")
    rows = []
    for f in model.features_:
        gone = _columns_of(model, f)
        cols = [k for k in range(X_train.shape[1]) if k not in gone]
        if cols:
            pred = _without(model, f).fit(X_train[:, cols], y_train).predict(X_eval[:, cols])
        else:
            kept = y_train if model.ties == "three_way" else y_train[y_train != "tie"]
            pred = _majority(kept, len(y_eval))
        delta = paired_accuracy_delta(y_eval, full, pred, groups=groups_eval, n_boot=n_boot, seed=seed)
        rows.append(AblationRow(feature=f, accuracy_full=acc_full,
                                accuracy_without=float(np.mean(pred == y_eval)) if len(y_eval) else float("nan"),
                                delta=delta))
    return rows


@dataclass(frozen=True)
class Calibration:
    """How well P(a preferred) matches how often "a" was preferred.

    Attributes:
        brier: the model's Brier score with its question-clustered bootstrap CI.
        brier_style_controlled: the same for the style-controlled predictions, or None without style.
        bins: the reliability table of the model's predictions (10 equal-width bins).
    """

    brier: ClusteredMean
    brier_style_controlled: ClusteredMean | None
    bins: list[ReliabilityBin]


def calibration(y_true, p_a, groups, *, p_a_style_controlled=None, n_bins: int = 10, n_boot: int = 1000,
                seed: int = 0) -> Calibration:
    """Brier score (with a question-clustered CI) and reliability bins of P(a) on a/b pairs.

    Args:
        y_true: labels "a"/"b".
        p_a: predicted P(a preferred).
        groups: each pair's question id.
        p_a_style_controlled: the style-controlled P(a), when the model has style covariates.
        n_bins: reliability bins.
        n_boot: bootstrap replicates.
        seed: their seed.
    """
    y = np.asarray(y_true, dtype=object).astype(str)
    outcome = (y == "a").astype(float)

    def brier(p) -> ClusteredMean:
        brier_score(y, p)  # validates labels and probabilities
        return clustered_mean((np.asarray(p, dtype=float) - outcome) ** 2, groups=groups, n_boot=n_boot, seed=seed)

    return Calibration(brier=brier(p_a),
                       brier_style_controlled=None if p_a_style_controlled is None else brier(p_a_style_controlled),
                       bins=reliability_bins(y, p_a, n_bins=n_bins))


@dataclass(frozen=True)
class WeightCIs:
    """Percentile 95% CIs of the model's weights from a bootstrap over training questions.

    Attributes:
        ci: column -> (low, high), from the replicates that are not degenerate for the column ((nan, nan)
            with fewer than 2 of them).
        n_boot: replicates asked for.
        n_failed: replicates that could not be fitted (one label class only) and were skipped.
        seed: the replicates' seed.
        n_degenerate: column -> fitted replicates in which the column was constant (its weight then 0 by
            construction), left out of its percentiles.
        unreliable: columns degenerate in more than ``max_degenerate_share`` of the fitted replicates.
        max_degenerate_share: that threshold.
    """

    ci: dict[str, tuple[float, float]]
    n_boot: int
    n_failed: int
    seed: int
    n_degenerate: dict[str, int] = field(default_factory=dict)
    unreliable: tuple[str, ...] = ()
    max_degenerate_share: float = MAX_DEGENERATE_SHARE

    def to_dict(self) -> dict:
        return {"ci": {k: list(v) for k, v in self.ci.items()}, "n_boot": self.n_boot, "n_failed": self.n_failed,
                "seed": self.seed, "n_degenerate": dict(self.n_degenerate), "unreliable": list(self.unreliable),
                "max_degenerate_share": self.max_degenerate_share,
                "method": "percentile, questions resampled with replacement, model refitted; replicates in which a "
                          "column is constant left out of that column's percentiles"}


def bootstrap_weight_cis(model: PreferenceModel, X, y, groups, *, n_boot: int = 200, seed: int = 0) -> WeightCIs:
    """Refit on training questions drawn with replacement (all pairs of each drawn question).

    Args:
        model: a fitted binary model (its parameters are reused).
        X / y: its training design matrix and labels.
        groups: each training pair's question id.
        n_boot: replicates.
        seed: their seed (same seed, same CIs).

    Raises:
        ConfigError: ``n_boot < 1``, a three-way model, or fewer than 2 replicates could be fitted.
    """
    check_range("n_boot", n_boot, low=1)
    if list(model.classes_) != ["a", "b"]:
        raise ConfigError("weight CIs are defined for the binary a/b model")
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=object)
    _, g = np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)
    n_q = int(g.max()) + 1 if len(g) else 0
    rows_of = [np.flatnonzero(g == q) for q in range(n_q)]
    rng = np.random.default_rng(seed)
    draws, constant, failed = [], [], 0
    for _ in range(n_boot):
        idx = np.concatenate([rows_of[q] for q in rng.integers(0, n_q, size=n_q)])
        kept = y[idx] != "tie" if model.ties == "drop" else np.ones(len(idx), dtype=bool)
        try:
            m = clone(model).fit(X[idx], y[idx])
        except ConfigError:
            failed += 1
            continue
        if list(m.classes_) != ["a", "b"]:
            failed += 1
            continue
        draws.append([m.weights()[c] for c in model.columns_])
        constant.append(np.ptp(X[idx][kept], axis=0) == 0)  # on the rows the refit saw
    if len(draws) < 2:
        raise ConfigError(f"only {len(draws)} of {n_boot} bootstrap replicates could be fitted")
    w, degenerate = np.array(draws), np.array(constant)
    ci, n_degenerate, unreliable = {}, {}, []
    for j, c in enumerate(model.columns_):
        ok = w[~degenerate[:, j], j]
        ci[c] = (float(np.percentile(ok, 2.5)), float(np.percentile(ok, 97.5))) if len(ok) >= 2 else (nan, nan)
        n_degenerate[c] = int(degenerate[:, j].sum())
        if n_degenerate[c] > MAX_DEGENERATE_SHARE * len(w):
            unreliable.append(c)
    if unreliable:
        log.warning("weight CIs of %s are unreliable: the column is constant in %s of %d fitted replicates",
                    ", ".join(unreliable), ", ".join(str(n_degenerate[c]) for c in unreliable), len(w))
    return WeightCIs(ci=ci, n_boot=n_boot, n_failed=failed, seed=seed, n_degenerate=n_degenerate,
                     unreliable=tuple(unreliable))
