"""The preference model: logistic regression on standardised rubric differences.

The reference code standardised features for training and validated on raw ones; here the
scaler is part of the estimator, so fit and predict always see the same scaling, and both
are saved together as JSON (no pickle), with the provenance of every feature, so the model is
only applied to features made the same way.

Style control (Chatbot Arena, AlpacaEval's length-controlled win rate): the model may carry style
covariates (length and markdown differences, :mod:`rubric.tables.style`) as its last columns, fitted and
scaled with the rubrics; predicting with ``style_controlled=True`` sets their raw values to 0 (two
answers of equal length and markdown) before scaling, so what remains is what the rubrics say.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from rubric.preference.core import check_core_params, fit_core, restore_core
from rubric.errors import ConfigError, InputError, ProvenanceError
from rubric.tables import check_record
from rubric.tables import STYLE_COVARIATES, MissingRule, check_style_record, style_record

__all__ = ["PreferenceModel"]

_FORMAT = "lfqa-rubric.preference-model.v4"
#: Still readable: v3 reads no missing value (a pair missing one of its rubrics on one side has no prediction); v2
#: also has no style covariates and no length betas; v1 also records no provenance.
_FORMAT_V3 = "lfqa-rubric.preference-model.v3"
_FORMAT_V2 = "lfqa-rubric.preference-model.v2"
_FORMAT_V1 = "lfqa-rubric.preference-model.v1"
_FORMATS = (_FORMAT, _FORMAT_V3, _FORMAT_V2, _FORMAT_V1)
#: The rule of a model saved before missing values were read: such a pair leaves.
_DROP = MissingRule(mode="drop")


class PreferenceModel(ClassifierMixin, BaseEstimator):
    """Predicts which of two answers people prefer from their rubric differences.

    ``X`` has one row per pair: the rubric differences ``a - b`` (the ``feature_names`` columns), then the
    missing-side indicators of ``missing.indicators`` (``missing_<rubric>``), then the style covariates (the
    ``style_features`` columns), as
    :func:`rubric.tables.features.design_matrix` builds them. When ``length_betas`` are set, the rubric
    columns must already be residualised with them (``design_matrix(..., length_betas=...)`` does
    it; :func:`rubric.preference.evaluate.model_inputs` builds the matrix a fitted model expects).

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularisation strength of the logistic regression.
    ties : {"drop", "three_way"}, default="drop"
        Drop tie labels before fitting (the paper's binary model) or model a/b/tie.
    max_iter : int, default=1000
        Solver iterations.
    feature_names : list of str or None, default=None
        Names of the rubric columns of ``X`` (the leading ones); ``f0..fn`` when None.
    provenance : dict or None, default=None
        How each rubric feature was made: rubric name -> provenance record (see
        ``rubric.tables.provenance``), covering every feature name. Saved with the model and compared with a
        table's before the model is applied to it; None when unknown (a model loaded from a v1 file).
    style_features : tuple of str, default=()
        Names of the trailing style covariate columns of ``X``, from
        ``rubric.tables.style.STYLE_COVARIATES`` (``"style_length"``, ``"style_markdown"``); scaled and
        fitted with the rubrics, and set to 0 by ``style_controlled=True``.
    length_betas : dict or None, default=None
        Rubric -> beta of the length decorrelation the rubric columns went through
        (``d - beta * (n_words_a - n_words_b)``); recorded so that the same residualisation is applied
        wherever the model is used. None: no decorrelation.
    missing : MissingRule or None, default=None
        How a rubric missing on one answer of a pair was read into ``X`` (:mod:`rubric.tables.missing`: the fill
        values and the indicator columns, fitted on the training split); saved with the model so every use reads
        a gap the same way. None: the pairs had no gap ("drop": a pair with one leaves).

    Attributes
    ----------
    scaler_ : StandardScaler
        Fitted on the training columns (rubrics and style covariates); applied again at predict time.
    lr_ : LogisticRegression
        The fitted classifier on scaled columns.
    classes_ : ndarray
        Labels seen in training ("a", "b" and possibly "tie").
    features_ : list of str
        The rubric feature names in column order.
    style_features_ : tuple of str
        The style covariate names in column order (after the rubrics).
    columns_ : list of str
        Every column of ``X``: ``features_``, the indicator columns of ``missing_``, then ``style_features_``.
    missing_ : MissingRule
        The missing-value rule in use (``missing``, or "drop" when None).
    style_provenance_ : dict
        Style covariate -> ``{"kind": "style", "version": ...}``: the formula behind the covariate.
    n_features_in_ : int
        Number of columns of ``X``.
    n_ties_dropped_ : int
        Tie rows removed by ``ties="drop"``.
    metadata_ : dict
        Facts about the fit saved by ``to_json`` (where it was trained, which rubrics were left out
        and why, how C was chosen, weight CIs), as read by ``from_json``; a model fitted in this
        process starts empty and ``rubric.preference.evaluate.fit_model`` fills it.
    """

    def __init__(self, *, C: float = 1.0, ties: str = "drop", max_iter: int = 1000,
                 feature_names: list[str] | None = None, provenance: dict | None = None,
                 style_features: tuple[str, ...] = (), length_betas: dict | None = None,
                 missing: MissingRule | None = None) -> None:
        self.C = C
        self.ties = ties
        self.max_iter = max_iter
        self.feature_names = feature_names
        self.provenance = provenance
        self.style_features = style_features
        self.length_betas = length_betas
        self.missing = missing

    def _check_params(self) -> None:
        if self.ties not in ("drop", "three_way"):
            raise ConfigError(f"'ties' must be 'drop' or 'three_way', got {self.ties!r}")
        check_core_params(self.C, self.max_iter)
        style = list(self.style_features)
        unknown = [s for s in style if s not in STYLE_COVARIATES]
        if unknown:
            raise ConfigError(f"'style_features' must name style covariates {sorted(STYLE_COVARIATES)}, "
                              f"got {unknown}")
        if len(set(style)) != len(style):
            raise ConfigError(f"'style_features' must be distinct, got {style}")
        if self.missing is not None and not isinstance(self.missing, MissingRule):
            raise ConfigError(f"'missing' must be a MissingRule or None, got {type(self.missing).__name__}")
        if self.length_betas is not None:
            if not isinstance(self.length_betas, Mapping):
                raise ConfigError(f"'length_betas' must be a dict or None, got {type(self.length_betas).__name__}")
            for k, v in self.length_betas.items():
                if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
                    raise ConfigError(f"'length_betas' must map rubrics to finite numbers, got {k!r}: {v!r}")

    def fit(self, X, y) -> "PreferenceModel":
        """Fit on ``X`` (differences ``a - b``, then style covariates) and labels ``y`` in {"a", "b", "tie"}.

        Returns
        -------
        self : PreferenceModel
        """
        self._check_params()
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=object)
        if X.ndim != 2 or len(X) != len(y):
            raise ConfigError(f"X must be 2-D with one row per label, got shape {X.shape} for {len(y)} labels")
        bad = sorted(set(y) - {"a", "b", "tie"}, key=repr)
        if bad:
            raise ConfigError(f"labels must be 'a', 'b' or 'tie', got {bad}")
        keep = np.ones(len(y), dtype=bool) if self.ties == "three_way" else (y != "tie")
        self.n_ties_dropped_ = int((~keep).sum())
        X, y = X[keep], y[keep]
        if len(set(y)) < 2:
            raise ConfigError(f"need at least two label classes to fit, got {sorted(set(y))} in {len(y)} rows")
        n_style = len(self.style_features)
        self.missing_ = self.missing if self.missing is not None else _DROP
        n_indicators = len(self.missing_.indicators)
        n_rubric = X.shape[1] - n_style - n_indicators
        self.features_ = list(self.feature_names) if self.feature_names else [f"f{i}" for i in range(max(n_rubric, 0))]
        if len(self.features_) != n_rubric:
            raise ConfigError(f"{len(self.features_)} feature names, {n_indicators} missing-value indicators and "
                              f"{n_style} style covariates for {X.shape[1]} columns")
        stray = sorted(set(self.missing_.indicators) - set(self.features_))
        if stray:
            raise ConfigError(f"missing-value indicators {stray} are not rubric features {self.features_}")
        self.style_features_ = tuple(self.style_features)
        clash = sorted(set(self.features_) & set(self.style_features_))
        if clash:
            raise ConfigError(f"{clash} are named as both rubric features and style covariates")
        if self.provenance is not None:
            missing = [f for f in self.features_ if f not in self.provenance]
            if missing:
                raise ConfigError(f"'provenance' must cover every feature; missing {missing}")
        if self.length_betas is not None:
            stray = sorted(set(self.length_betas) - set(self.features_))
            if stray:
                raise ConfigError(f"'length_betas' names {stray}, which are not rubric features {self.features_}")
        self.columns_ = self.features_ + self.missing_.columns + list(self.style_features_)
        self.style_provenance_ = {s: style_record(s) for s in self.style_features_}
        self.scaler_, self.lr_ = fit_core(X, y.astype(str), C=self.C, max_iter=self.max_iter)
        self.classes_ = self.lr_.classes_
        self.n_features_in_ = X.shape[1]
        self.metadata_ = {}
        return self

    def _scaled(self, X, style_controlled: bool = False) -> np.ndarray:
        check_is_fitted(self, ["scaler_", "lr_"])
        X = np.array(X, dtype=float)  # a copy: style control writes into it
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ConfigError(f"X must have {self.n_features_in_} columns ({self.columns_}), got shape {X.shape}")
        if style_controlled:
            if not self.style_features_:
                raise ConfigError("this model has no style covariates to control for (fitted without style)")
            # AlpacaEval LC: the prediction for two answers of equal length and markdown, i.e. the raw
            # covariates at 0 -- set before scaling, so their scaled value is -mean/scale, not 0.
            X[:, X.shape[1] - len(self.style_features_):] = 0.0
        return self.scaler_.transform(X)

    def predict_proba(self, X, *, style_controlled: bool = False) -> np.ndarray:
        """Class probabilities, columns in ``classes_`` order.

        Parameters
        ----------
        X : array-like of shape (n, n_features_in_)
        style_controlled : bool, default=False
            Set the style covariates' raw values to 0 (equal length and markdown) before scaling.

        Returns
        -------
        proba : ndarray of shape (n, n_classes)
        """
        Xs = self._scaled(X, style_controlled)  # checks the fitted state first
        return self.lr_.predict_proba(Xs)

    def predict(self, X, *, style_controlled: bool = False) -> np.ndarray:
        """Predicted labels; ``style_controlled`` as in :meth:`predict_proba`."""
        Xs = self._scaled(X, style_controlled)  # checks the fitted state first
        return self.lr_.predict(Xs)

    def decision_function(self, X, *, style_controlled: bool = False) -> np.ndarray:
        """The logistic regression's decision values, as scikit-learn defines them (for the binary
        model, the logit of ``classes_[1]`` = "b"; see :meth:`contributions` for the logit of "a");
        ``style_controlled`` as in :meth:`predict_proba`."""
        Xs = self._scaled(X, style_controlled)  # checks the fitted state first
        return self.lr_.decision_function(Xs)

    def contributions(self, X, *, style_controlled: bool = False) -> tuple[np.ndarray, float]:
        """Per-column contributions to the logit of P(a preferred). Binary models only.

        Parameters
        ----------
        X : array-like of shape (n, n_features_in_)
        style_controlled : bool, default=False
            As in :meth:`predict_proba` (the style columns then contribute their value at 0).

        Returns
        -------
        contributions : ndarray of shape (n, n_features_in_)
            ``weights()[column] * standardised value``, columns in ``columns_`` order.
        intercept : float
            The intercept signed for "a", so that ``contributions.sum(axis=1) + intercept`` is
            ``log(P(a) / P(b))``.
        """
        Xs = self._scaled(X, style_controlled)
        return Xs * self._binary_weights(), float(-self.lr_.intercept_[0])

    def _binary_weights(self) -> np.ndarray:
        check_is_fitted(self, ["lr_"])
        if list(self.classes_) != ["a", "b"]:
            raise ConfigError("weights are defined for the binary a/b model; use lr_.coef_ for three_way")
        # lr_.coef_ points towards classes_[1] == "b"; a positive a-b difference favouring "a" is -coef.
        return -self.lr_.coef_[0]

    def weights(self) -> dict[str, float]:
        """Per-column weight on standardised differences, signed so that > 0 favours the answer that
        scores higher on the rubric (the paper's Table 3 reading); style covariates last (> 0: the
        longer / more formatted answer is favoured). Binary models only."""
        return {f: float(c) for f, c in zip(self.columns_, self._binary_weights())}

    def to_json(self, path: str | Path, **metadata) -> None:
        """Save the fitted model (scaler, coefficients, features, their provenance, metadata) as JSON.

        Parameters
        ----------
        path : str or Path
            Where to write.
        **metadata
            JSON-serialisable facts about the fit (where it was trained, how many pairs), saved
            with ``metadata_`` (a key given here wins).
        """
        check_is_fitted(self, ["scaler_", "lr_"])
        provenance = {} if self.provenance is None else {f: self.provenance[f] for f in self.features_}
        provenance.update(self.style_provenance_)
        doc = {
            "format": _FORMAT,
            "params": {"C": float(self.C), "ties": self.ties, "max_iter": self.max_iter},
            "features": self.features_,
            "style_features": list(self.style_features_),
            "length_betas": None if self.length_betas is None else {k: float(v) for k, v in self.length_betas.items()},
            "missing": self.missing_.to_dict(),
            "provenance": provenance if provenance or self.provenance is not None else None,
            "classes": [str(c) for c in self.classes_],
            "scaler": {"mean": self.scaler_.mean_.tolist(), "scale": self.scaler_.scale_.tolist(),
                       "var": self.scaler_.var_.tolist(), "n_samples_seen": int(self.scaler_.n_samples_seen_)},
            "coef": self.lr_.coef_.tolist(),
            "intercept": self.lr_.intercept_.tolist(),
            "n_ties_dropped": self.n_ties_dropped_,
            "metadata": {**self.metadata_, **metadata},
        }
        doc["checksum"] = _checksum(doc)
        Path(path).write_text(json.dumps(doc, indent=2))

    @classmethod
    def from_json(cls, path: str | Path) -> "PreferenceModel":
        """Load a model saved by :meth:`to_json` (format v3; v2 without style covariates; v1, which
        also records no provenance).

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
        except (RecursionError, ValueError) as e:  # nested too deeply, an integer over the digit limit
            raise InputError(f"cannot read preference model {path}: not valid JSON ({type(e).__name__})") from None
        if not isinstance(doc, dict):
            raise InputError(f"{path} is not a preference model file (format {_FORMAT}): "
                             f"the top level is a {type(doc).__name__}, not an object")
        if doc.get("format") not in _FORMATS:
            raise InputError(f"{path} is not a preference model file (format {_FORMAT}), "
                             f"its format is {doc.get('format')!r}")
        try:
            return cls._from_doc(doc)
        except (_Damaged, ConfigError, ProvenanceError) as e:
            raise InputError(f"preference model {path} is damaged: {e}") from None

    @classmethod
    def _from_doc(cls, doc: dict) -> "PreferenceModel":
        fmt = doc["format"]
        params = _get(doc, "params", dict)
        unknown = sorted(set(params) - {"C", "ties", "max_iter"})
        if unknown:
            raise _Damaged(f"'params' has unknown keys {unknown}")
        for key, kinds in (("C", (int, float)), ("ties", (str,)), ("max_iter", (int,))):
            if key in params and (isinstance(params[key], bool) or not isinstance(params[key], kinds)):
                raise _Damaged(f"'params.{key}' has the wrong type: {params[key]!r}")
        features = _get(doc, "features", list)
        if not all(isinstance(f, str) for f in features) or len(set(features)) != len(features):
            raise _Damaged(f"'features' must be a list of distinct names, got {features!r}")
        style: list = []
        betas = None
        missing = _DROP
        if fmt == _FORMAT:
            if "missing" not in doc:
                raise _Damaged("missing key 'missing'")
            try:
                missing = MissingRule.from_dict(doc["missing"])
            except ConfigError as e:
                raise _Damaged(f"'missing': {e}") from None
            if not set(missing.indicators) <= set(features) or not set(missing.fill) <= set(features):
                raise _Damaged(f"'missing' names rubrics that are not features {features}: {doc['missing']!r}")
        if fmt in (_FORMAT, _FORMAT_V3):
            style = _get(doc, "style_features", list)
            if any(s not in STYLE_COVARIATES for s in style) or len(set(style)) != len(style):
                raise _Damaged(f"'style_features' must be distinct names from {sorted(STYLE_COVARIATES)}, "
                               f"got {style!r}")
            if "length_betas" not in doc:
                raise _Damaged("missing key 'length_betas'")
            betas = doc["length_betas"]
            if betas is not None:
                if not isinstance(betas, dict) or not set(betas) <= set(features):
                    raise _Damaged(f"'length_betas' must be null or map rubric features to numbers, got {betas!r}")
                for k, v in betas.items():
                    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                        raise _Damaged(f"'length_betas.{k}' must be a finite number, got {v!r}")
                betas = {k: float(v) for k, v in betas.items()}
        if not features and not style:
            raise _Damaged("'features' must be a non-empty list of distinct names, got []")
        nf = len(features) + len(missing.indicators) + len(style)
        classes = _get(doc, "classes", list)
        if len(classes) < 2 or not all(isinstance(c, str) for c in classes):
            raise _Damaged(f"'classes' must list at least two labels, got {classes!r}")
        n_rows = 1 if len(classes) == 2 else len(classes)  # LogisticRegression's coef_ rows
        scaler = _get(doc, "scaler", dict)
        mean = _numbers(scaler, "mean", (nf,), "scaler.mean")
        scale = _numbers(scaler, "scale", (nf,), "scaler.scale")
        var = _numbers(scaler, "var", (nf,), "scaler.var")
        if (scale <= 0).any() or (var < 0).any():  # a zero scale divides by zero; StandardScaler never writes one
            raise _Damaged(f"'scaler.scale' must be > 0 and 'scaler.var' >= 0, got scale {scale.tolist()} and "
                           f"var {var.tolist()}")
        n_seen = _get(scaler, "n_samples_seen", int, "scaler.n_samples_seen")
        coef = _numbers(doc, "coef", (n_rows, nf), "coef")
        intercept = _numbers(doc, "intercept", (n_rows,), "intercept")
        provenance = None
        style_prov = {s: style_record(s) for s in style}
        if fmt != _FORMAT_V1:
            if "provenance" not in doc:
                raise _Damaged("missing key 'provenance'")
            raw = doc["provenance"]
            if raw is not None:
                if not isinstance(raw, dict):
                    raise _Damaged(f"'provenance' must be an object or null, got {type(raw).__name__}")
                rubric_keys = sorted(k for k in raw if k not in style)
                if sorted(k for k in raw if k in style) != sorted(style) or (
                        rubric_keys != sorted(features) and (rubric_keys or not style)):
                    raise _Damaged(f"'provenance' must have one record per feature {features + style}, "
                                   f"got {sorted(raw)}")
                if rubric_keys:
                    provenance = {f: check_record(raw[f], what=f"provenance of {f!r}") for f in features}
                style_prov = {s: check_style_record(raw[s], what=f"provenance of {s!r}") for s in style}
            elif style:
                raise _Damaged(f"'provenance' must record the style covariates {style}, got null")
        if "checksum" in doc and doc["checksum"] != _checksum(doc):  # files before the checksum load unchecked
            raise _Damaged("its features, classes, coefficients and scaler do not match the checksum saved with "
                           "them (a features list reordered, or a number edited, after fitting); fit it again")
        n_ties = doc.get("n_ties_dropped", 0)
        if isinstance(n_ties, bool) or not isinstance(n_ties, int):
            raise _Damaged(f"'n_ties_dropped' must be an integer, got {n_ties!r}")
        metadata = doc.get("metadata", {})
        if not isinstance(metadata, dict):
            raise _Damaged(f"'metadata' must be an object, got {type(metadata).__name__}")

        model = cls(**params, feature_names=list(features), provenance=provenance, style_features=tuple(style),
                    length_betas=betas, missing=missing)
        model._check_params()
        model.features_ = list(features)
        model.style_features_ = tuple(style)
        model.missing_ = missing
        model.columns_ = list(features) + missing.columns + list(style)
        model.style_provenance_ = style_prov
        model.n_features_in_ = nf
        model.n_ties_dropped_ = n_ties
        sc, lr = restore_core(C=model.C, max_iter=model.max_iter, classes=classes, coef=coef, intercept=intercept,
                              mean=mean, scale=scale, var=var, n_samples_seen=n_seen)
        model.scaler_, model.lr_, model.classes_ = sc, lr, lr.classes_
        model.metadata_ = metadata
        return model


def _checksum(doc: Mapping) -> str:
    """SHA-256 over what binds each column to its numbers: the columns in order, classes, scaler,
    coefficients (metadata and provenance are checked on their own)."""
    import hashlib

    bound = {k: doc.get(k) for k in ("features", "classes", "coef", "intercept")}
    bound["style_features"] = doc.get("style_features", [])  # absent in a v2 file: none
    if "missing" in doc:  # a v4 file: its indicator columns and fill values are numbers of the model too
        bound["missing"] = doc["missing"]
    sc = doc.get("scaler")
    bound["scaler"] = {k: sc.get(k) for k in ("mean", "scale", "var")} if isinstance(sc, Mapping) else sc
    return hashlib.sha256(json.dumps(bound, sort_keys=True).encode()).hexdigest()


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
