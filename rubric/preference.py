"""The preference model: logistic regression on standardised rubric differences.

The reference code standardised features for training and validated on raw ones; here the
scaler is part of the estimator, so fit and predict always see the same scaling, and both
are saved together as JSON (no pickle), with the provenance of every feature, so the model is
only applied to features made the same way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from rubric.errors import ConfigError, InputError, ProvenanceError
from rubric.provenance import check_record

__all__ = ["PreferenceModel"]

_FORMAT = "lfqa-rubric.preference-model.v2"
#: Still readable: the same fields without "provenance" (such a model records none).
_FORMAT_V1 = "lfqa-rubric.preference-model.v1"


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
    provenance : dict or None, default=None
        How each feature was made: rubric name -> provenance record (see ``rubric.provenance``),
        covering every feature name. Saved with the model and compared with a table's before the
        model is applied to it; None when unknown (a model loaded from a v1 file).

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
    metadata_ : dict
        The metadata saved with the model by ``to_json`` (where it was trained, which rubrics were
        left out and why), as read by ``from_json``; empty for a model fitted in this process.
    """

    def __init__(self, *, C: float = 1.0, ties: str = "drop", max_iter: int = 1000,
                 feature_names: list[str] | None = None, provenance: dict | None = None) -> None:
        self.C = C
        self.ties = ties
        self.max_iter = max_iter
        self.feature_names = feature_names
        self.provenance = provenance

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
        if self.provenance is not None:
            missing = [f for f in self.features_ if f not in self.provenance]
            if missing:
                raise ConfigError(f"'provenance' must cover every feature; missing {missing}")
        self.scaler_ = StandardScaler().fit(X)
        self.lr_ = LogisticRegression(C=self.C, max_iter=self.max_iter).fit(self.scaler_.transform(X), y.astype(str))
        self.classes_ = self.lr_.classes_
        self.n_features_in_ = X.shape[1]
        self.metadata_ = {}
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
        """Save the fitted model (scaler, coefficients, features, their provenance, metadata) as JSON.

        Parameters
        ----------
        path : str or Path
            Where to write.
        **metadata
            JSON-serialisable facts about the fit (where it was trained, how many pairs).
        """
        check_is_fitted(self, ["scaler_", "lr_"])
        doc = {
            "format": _FORMAT,
            "params": {"C": self.C, "ties": self.ties, "max_iter": self.max_iter},
            "features": self.features_,
            "provenance": None if self.provenance is None else {f: self.provenance[f] for f in self.features_},
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
        """Load a model saved by :meth:`to_json` (format v2, or v1 which records no provenance).

        Parameters
        ----------
        path : str or Path
            The model file.

        Returns
        -------
        model : PreferenceModel
            Fitted; ``provenance`` is None for a v1 file.

        Raises
        ------
        InputError
            The file is missing, not JSON (e.g. truncated), not a preference model, or damaged
            (a missing key, a wrong type, non-numeric or non-finite numbers, shapes that disagree
            with the features); the message names the file and what is wrong.
        """
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise InputError(f"cannot read preference model {path}: {e}") from None
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"cannot read preference model {path}: not valid JSON (truncated?): {e}") from None
        if not isinstance(doc, dict):
            raise InputError(f"{path} is not a preference model file (format {_FORMAT}): "
                             f"the top level is a {type(doc).__name__}, not an object")
        if doc.get("format") not in (_FORMAT, _FORMAT_V1):
            raise InputError(f"{path} is not a preference model file (format {_FORMAT}), "
                             f"its format is {doc.get('format')!r}")
        try:
            return cls._from_doc(doc)
        except (_Damaged, ConfigError, ProvenanceError) as e:
            raise InputError(f"preference model {path} is damaged: {e}") from None

    @classmethod
    def _from_doc(cls, doc: dict) -> "PreferenceModel":
        params = _get(doc, "params", dict)
        unknown = sorted(set(params) - {"C", "ties", "max_iter"})
        if unknown:
            raise _Damaged(f"'params' has unknown keys {unknown}")
        for key, kinds in (("C", (int, float)), ("ties", (str,)), ("max_iter", (int,))):
            if key in params and (isinstance(params[key], bool) or not isinstance(params[key], kinds)):
                raise _Damaged(f"'params.{key}' has the wrong type: {params[key]!r}")
        features = _get(doc, "features", list)
        if not features or not all(isinstance(f, str) for f in features) or len(set(features)) != len(features):
            raise _Damaged(f"'features' must be a non-empty list of distinct names, got {features!r}")
        nf = len(features)
        classes = _get(doc, "classes", list)
        if len(classes) < 2 or not all(isinstance(c, str) for c in classes):
            raise _Damaged(f"'classes' must list at least two labels, got {classes!r}")
        n_rows = 1 if len(classes) == 2 else len(classes)  # LogisticRegression's coef_ rows
        scaler = _get(doc, "scaler", dict)
        mean = _numbers(scaler, "mean", (nf,), "scaler.mean")
        scale = _numbers(scaler, "scale", (nf,), "scaler.scale")
        var = _numbers(scaler, "var", (nf,), "scaler.var")
        n_seen = _get(scaler, "n_samples_seen", int, "scaler.n_samples_seen")
        coef = _numbers(doc, "coef", (n_rows, nf), "coef")
        intercept = _numbers(doc, "intercept", (n_rows,), "intercept")
        provenance = None
        if doc["format"] != _FORMAT_V1:
            if "provenance" not in doc:
                raise _Damaged("missing key 'provenance'")
            raw = doc["provenance"]
            if raw is not None:
                if not isinstance(raw, dict) or sorted(raw) != sorted(features):
                    raise _Damaged(f"'provenance' must have one record per feature {features}, got "
                                   f"{sorted(raw) if isinstance(raw, dict) else type(raw).__name__}")
                provenance = {f: check_record(raw[f], what=f"provenance of {f!r}") for f in features}
        n_ties = doc.get("n_ties_dropped", 0)
        if isinstance(n_ties, bool) or not isinstance(n_ties, int):
            raise _Damaged(f"'n_ties_dropped' must be an integer, got {n_ties!r}")
        metadata = doc.get("metadata", {})
        if not isinstance(metadata, dict):
            raise _Damaged(f"'metadata' must be an object, got {type(metadata).__name__}")

        model = cls(**params, feature_names=list(features), provenance=provenance)
        model._check_params()
        model.features_ = list(features)
        model.n_features_in_ = nf
        model.n_ties_dropped_ = n_ties
        sc = StandardScaler()
        sc.mean_, sc.scale_, sc.var_ = mean, scale, var
        sc.n_samples_seen_ = n_seen
        sc.n_features_in_ = nf
        lr = LogisticRegression(C=model.C, max_iter=model.max_iter)
        lr.classes_ = np.asarray(classes, dtype=object)
        lr.coef_ = coef
        lr.intercept_ = intercept
        lr.n_features_in_ = nf
        model.scaler_, model.lr_, model.classes_ = sc, lr, lr.classes_
        model.metadata_ = metadata
        return model


class _Damaged(Exception):
    """Internal: what is wrong with a model document (turned into an InputError naming the file)."""


def _get(doc: Mapping, key: str, kind: type, name: str | None = None):
    name = name or key
    if key not in doc:
        raise _Damaged(f"missing key {name!r}")
    value = doc[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _Damaged(f"{name!r} must be a {kind.__name__}, got {type(value).__name__}")
    return value


def _numbers(doc: Mapping, key: str, shape: tuple[int, ...], name: str) -> np.ndarray:
    if key not in doc:
        raise _Damaged(f"missing key {name!r}")
    value = doc[key]

    def finite(x) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

    def check(v, dims):
        if not dims:
            if not finite(v):
                raise _Damaged(f"{name!r} must hold finite numbers, got {v!r}")
            return
        if not isinstance(v, list) or len(v) != dims[0]:
            got = f"{len(v)} entries" if isinstance(v, list) else type(v).__name__
            raise _Damaged(f"{name!r} must have shape {shape} to match the features and classes; "
                           f"found {got} where {dims[0]} were expected")
        for item in v:
            check(item, dims[1:])

    check(value, shape)
    return np.asarray(value, dtype=float)
