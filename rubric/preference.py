"""The preference model: logistic regression on standardised rubric differences.

The reference code standardised features for training and validated on raw ones; here the
scaler is part of the estimator, so fit and predict always see the same scaling, and both
are saved together as JSON (no pickle).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from rubric.errors import ConfigError, InputError

__all__ = ["PreferenceModel"]

_FORMAT = "lfqa-rubric.preference-model.v1"


class PreferenceModel(ClassifierMixin, BaseEstimator):
    """Predicts which of two answers people prefer from their rubric differences.

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularisation strength of the logistic regression.
    ties : {"drop", "three_way"}, default="drop"
        Drop tie labels before fitting (the paper's binary model) or model a/b/tie.
    max_iter : int, default=1000
        Solver iterations.
    feature_names : list of str or None, default=None
        Names of the columns of ``X`` (rubric names); ``f0..fn`` when None.

    Attributes
    ----------
    scaler_ : StandardScaler
        Fitted on the training differences; applied again at predict time.
    lr_ : LogisticRegression
        The fitted classifier on scaled differences.
    classes_ : ndarray
        Labels seen in training ("a", "b" and possibly "tie").
    features_ : list of str
        The feature names in column order.
    n_ties_dropped_ : int
        Tie rows removed by ``ties="drop"``.
    """

    def __init__(self, *, C: float = 1.0, ties: str = "drop", max_iter: int = 1000,
                 feature_names: list[str] | None = None) -> None:
        self.C = C
        self.ties = ties
        self.max_iter = max_iter
        self.feature_names = feature_names

    def _check_params(self) -> None:
        if self.ties not in ("drop", "three_way"):
            raise ConfigError(f"'ties' must be 'drop' or 'three_way', got {self.ties!r}")
        if not self.C > 0:
            raise ConfigError(f"'C' must be > 0, got {self.C}")

    def fit(self, X, y) -> "PreferenceModel":
        """Fit on differences ``X = a - b`` and labels ``y`` in {"a", "b", "tie"}.

        Returns
        -------
        self : PreferenceModel
        """
        self._check_params()
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=object)
        if X.ndim != 2 or len(X) != len(y):
            raise ConfigError(f"X must be 2-D with one row per label, got shape {X.shape} for {len(y)} labels")
        bad = sorted(set(y) - {"a", "b", "tie"})
        if bad:
            raise ConfigError(f"labels must be 'a', 'b' or 'tie', got {bad}")
        keep = np.ones(len(y), dtype=bool) if self.ties == "three_way" else (y != "tie")
        self.n_ties_dropped_ = int((~keep).sum())
        X, y = X[keep], y[keep]
        if len(set(y)) < 2:
            raise ConfigError(f"need at least two label classes to fit, got {sorted(set(y))} in {len(y)} rows")
        self.features_ = list(self.feature_names) if self.feature_names else [f"f{i}" for i in range(X.shape[1])]
        if len(self.features_) != X.shape[1]:
            raise ConfigError(f"{len(self.features_)} feature names for {X.shape[1]} columns")
        self.scaler_ = StandardScaler().fit(X)
        self.lr_ = LogisticRegression(C=self.C, max_iter=self.max_iter).fit(self.scaler_.transform(X), y.astype(str))
        self.classes_ = self.lr_.classes_
        self.n_features_in_ = X.shape[1]
        return self

    def _scaled(self, X) -> np.ndarray:
        check_is_fitted(self, ["scaler_", "lr_"])
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ConfigError(f"X must have {self.n_features_in_} columns ({self.features_}), got shape {X.shape}")
        return self.scaler_.transform(X)

    def predict_proba(self, X) -> np.ndarray:
        Xs = self._scaled(X)  # checks fitted state first
        return self.lr_.predict_proba(Xs)

    def predict(self, X) -> np.ndarray:
        Xs = self._scaled(X)
        return self.lr_.predict(Xs)

    def weights(self) -> dict[str, float]:
        """Per-rubric weight on standardised differences, signed so that > 0 favours the answer
        that scores higher on the rubric (the paper's Table 3 reading). Binary models only."""
        check_is_fitted(self, ["lr_"])
        if list(self.classes_) != ["a", "b"]:
            raise ConfigError("weights() is defined for the binary a/b model; use lr_.coef_ for three_way")
        # lr_.coef_ points towards classes_[1] == "b"; a positive a-b difference favouring "a" is -coef.
        return {f: float(-c) for f, c in zip(self.features_, self.lr_.coef_[0])}

    def to_json(self, path: str | Path, **metadata) -> None:
        """Save the fitted model (scaler, coefficients, features, metadata) as JSON."""
        check_is_fitted(self, ["scaler_", "lr_"])
        doc = {
            "format": _FORMAT,
            "params": {"C": self.C, "ties": self.ties, "max_iter": self.max_iter},
            "features": self.features_,
            "classes": [str(c) for c in self.classes_],
            "scaler": {"mean": self.scaler_.mean_.tolist(), "scale": self.scaler_.scale_.tolist(),
                       "var": self.scaler_.var_.tolist(), "n_samples_seen": int(self.scaler_.n_samples_seen_)},
            "coef": self.lr_.coef_.tolist(),
            "intercept": self.lr_.intercept_.tolist(),
            "n_ties_dropped": self.n_ties_dropped_,
            "metadata": metadata,
        }
        Path(path).write_text(json.dumps(doc, indent=2))

    @classmethod
    def from_json(cls, path: str | Path) -> "PreferenceModel":
        """Load a model saved by :meth:`to_json`.

        Raises
        ------
        InputError
            The file is missing, not JSON, or not a preference model.
        """
        try:
            doc = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise InputError(f"cannot read preference model {path}: {e}") from None
        if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
            raise InputError(f"{path} is not a preference model file (format {_FORMAT})")
        model = cls(**doc["params"], feature_names=doc["features"])
        model.features_ = list(doc["features"])
        model.n_features_in_ = len(model.features_)
        model.n_ties_dropped_ = int(doc.get("n_ties_dropped", 0))
        sc = StandardScaler()
        sc.mean_ = np.asarray(doc["scaler"]["mean"], dtype=float)
        sc.scale_ = np.asarray(doc["scaler"]["scale"], dtype=float)
        sc.var_ = np.asarray(doc["scaler"]["var"], dtype=float)
        sc.n_samples_seen_ = doc["scaler"]["n_samples_seen"]
        sc.n_features_in_ = model.n_features_in_
        lr = LogisticRegression(C=model.C, max_iter=model.max_iter)
        lr.classes_ = np.asarray(doc["classes"], dtype=object)
        lr.coef_ = np.asarray(doc["coef"], dtype=float)
        lr.intercept_ = np.asarray(doc["intercept"], dtype=float)
        lr.n_features_in_ = model.n_features_in_
        model.scaler_, model.lr_, model.classes_ = sc, lr, lr.classes_
        model.metadata_ = doc.get("metadata", {})
        return model
