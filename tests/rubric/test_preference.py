import json

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from rubric.errors import ConfigError, InputError
from rubric.preference import PreferenceModel


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * np.array([1.0, 10.0, 0.1])  # very different scales
    logit = 2.0 * X[:, 0] - 0.3 * X[:, 1] + 0.0 * X[:, 2]
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "a", "b").astype(object)
    return X, y


def test_fit_predict_and_weights_sign():
    X, y = _data()
    m = PreferenceModel(feature_names=["good", "bad", "noise"]).fit(X, y)
    assert m is not None and list(m.classes_) == ["a", "b"]
    assert (m.predict(X) == y).mean() > 0.75
    w = m.weights()
    assert w["good"] > 0 and w["bad"] < 0 and abs(w["noise"]) < abs(w["good"])


def test_json_roundtrip_same_predictions(tmp_path):
    X, y = _data()
    m = PreferenceModel(C=0.5, feature_names=["x", "y", "z"]).fit(X, y)
    path = tmp_path / "m.json"
    m.to_json(path, note="t")
    assert json.loads(path.read_text())["format"].startswith("lfqa-rubric")
    m2 = PreferenceModel.from_json(path)
    np.testing.assert_allclose(m.predict_proba(X), m2.predict_proba(X), rtol=1e-12)
    assert m2.features_ == ["x", "y", "z"]


def test_scaling_is_applied_at_predict_time():
    # The reference code trained on scaled and predicted on raw features; here predict must equal
    # the LR applied to the *scaled* input.
    X, y = _data()
    m = PreferenceModel().fit(X, y)
    manual = m.lr_.predict_proba((X - m.scaler_.mean_) / m.scaler_.scale_)
    np.testing.assert_allclose(m.predict_proba(X), manual)


def test_ties_dropped_or_modelled():
    X, y = _data()
    y = y.copy()
    y[:40] = "tie"
    m = PreferenceModel().fit(X, y)
    assert m.n_ties_dropped_ == 40 and list(m.classes_) == ["a", "b"]
    m3 = PreferenceModel(ties="three_way").fit(X, y)
    assert list(m3.classes_) == ["a", "b", "tie"]
    with pytest.raises(ConfigError, match="binary"):
        m3.weights()


def test_errors(tmp_path):
    X, y = _data()
    with pytest.raises(NotFittedError):
        PreferenceModel().predict(X)
    with pytest.raises(ConfigError, match="'ties'"):
        PreferenceModel(ties="maybe").fit(X, y)
    with pytest.raises(ConfigError, match="labels must be"):
        PreferenceModel().fit(X, np.array(["a", "c"] * 200, dtype=object))
    with pytest.raises(ConfigError, match="two label classes"):
        PreferenceModel().fit(X, np.array(["a"] * 400, dtype=object))
    m = PreferenceModel().fit(X, y)
    with pytest.raises(ConfigError, match="3 columns"):
        m.predict(X[:, :2])
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(InputError, match="not a preference model"):
        PreferenceModel.from_json(bad)
