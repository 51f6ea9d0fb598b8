import json

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from rubric.errors import ConfigError, InputError
from rubric.preference.model import PreferenceModel


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


PROV = {"rubric_version": "x.v1", "backend": "spacy", "model_id": "m", "model_revision": "r", "template_hash": "",
        "rescale": {"kind": "declared", "lo": 0.0, "hi": 1.0}}


def _saved(tmp_path, **kw):
    X, y = _data()
    m = PreferenceModel(feature_names=["x", "y", "z"], **kw).fit(X, y)
    path = tmp_path / "m.json"
    m.to_json(path)
    return path, json.loads(path.read_text())


def test_provenance_is_saved_and_loaded(tmp_path):
    prov = {f: {**PROV, "rubric_version": f"{f}.v1"} for f in ("x", "y", "z")}
    path, doc = _saved(tmp_path, provenance=prov)
    assert doc["format"] == "lfqa-rubric.preference-model.v4" and doc["provenance"] == prov
    assert PreferenceModel.from_json(path).provenance == prov


def test_provenance_must_cover_every_feature():
    X, y = _data()
    with pytest.raises(ConfigError, match="missing \\['z'\\]"):
        PreferenceModel(feature_names=["x", "y", "z"], provenance={"x": PROV, "y": PROV}).fit(X, y)


def test_v1_file_loads_without_provenance(tmp_path):
    path, doc = _saved(tmp_path)
    doc["format"] = "lfqa-rubric.preference-model.v1"
    del doc["provenance"]
    path.write_text(json.dumps(doc))
    m = PreferenceModel.from_json(path)
    X, _ = _data()
    assert m.provenance is None and m.predict(X).shape == (len(X),)


def _damage(doc, what):
    if what == "no coef":
        del doc["coef"]
    elif what == "coef shape":
        doc["coef"] = [doc["coef"][0][:2]]
    elif what == "coef text":
        doc["coef"][0][1] = "big"
    elif what == "intercept nan":
        doc["intercept"] = [float("nan")]
    elif what == "scaler short":
        doc["scaler"]["mean"] = doc["scaler"]["mean"][:1]
    elif what == "features type":
        doc["features"] = "x,y,z"
    elif what == "params type":
        doc["params"]["C"] = "one"
    elif what == "classes":
        doc["classes"] = ["a"]
    elif what == "provenance features":
        doc["provenance"] = {"x": PROV}
    elif what == "provenance record":
        doc["provenance"] = {f: {**PROV, "rescale": {"kind": "guessed", "lo": 0, "hi": 1}} for f in "xyz"}
    elif what == "no provenance key":
        del doc["provenance"]
    return json.dumps(doc)


@pytest.mark.parametrize("what,msg", [
    ("no coef", "missing key 'coef'"),
    ("coef shape", "'coef' must have shape (1, 3)"),
    ("coef text", "finite numbers, got 'big'"),
    ("intercept nan", "'intercept' must hold finite numbers"),
    ("scaler short", "'scaler.mean' must have shape (3,)"),
    ("features type", "'features' must be a list"),
    ("params type", "'params.C' has the wrong type"),
    ("classes", "'classes' must list at least two labels"),
    ("provenance features", "one record per feature"),
    ("provenance record", "'rescale' must be an object with 'kind'"),
    ("no provenance key", "missing key 'provenance'"),
])
def test_damaged_model_file_is_one_input_error_naming_file_and_fault(tmp_path, what, msg):
    path, doc = _saved(tmp_path, provenance={f: PROV for f in "xyz"})
    path.write_text(_damage(doc, what))
    with pytest.raises(InputError) as e:
        PreferenceModel.from_json(path)
    assert str(path) in str(e.value) and msg in str(e.value)


@pytest.mark.parametrize("text,msg", [
    ('{"format": "lfqa-rubric.preference-model.v2", "params": {"C": 1', "not valid JSON (truncated?)"),
    ('[1, 2, 3]', "the top level is a list"),
    ('"model"', "the top level is a str"),
    ('{"format": "something else"}', "not a preference model"),
])
def test_unreadable_model_file(tmp_path, text, msg):
    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        PreferenceModel.from_json(path)
    assert str(path) in str(e.value) and msg in str(e.value)


def test_missing_model_file(tmp_path):
    with pytest.raises(InputError, match="cannot read preference model"):
        PreferenceModel.from_json(tmp_path / "absent.json")


def _styled(n=400, seed=0):
    """Two rubric differences, then a length covariate the labels also follow."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=n), rng.normal(size=n), rng.uniform(-1, 1, size=n) * 0.5 + 0.2])
    logit = 1.5 * X[:, 0] + 3.0 * X[:, 2]
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "a", "b").astype(object)
    return X, y


def test_style_covariates_are_scaled_with_the_features_and_zeroed_raw_under_style_control():
    X, y = _styled()
    m = PreferenceModel(feature_names=["good", "noise"], style_features=("style_length",)).fit(X, y)
    assert m.features_ == ["good", "noise"] and m.columns_ == ["good", "noise", "style_length"]
    assert list(m.weights()) == m.columns_ and m.weights()["style_length"] > 0
    assert m.scaler_.mean_[2] == pytest.approx(X[:, 2].mean())  # the scaler covers the covariate
    zeroed = X.copy()
    zeroed[:, 2] = 0.0  # raw 0 (equal length), so its scaled value is -mean/scale, not 0
    manual = m.lr_.predict_proba((zeroed - m.scaler_.mean_) / m.scaler_.scale_)
    np.testing.assert_allclose(m.predict_proba(X, style_controlled=True), manual)
    assert not np.allclose(m.predict_proba(X, style_controlled=True), m.predict_proba(X))
    np.testing.assert_array_equal(m.predict(X, style_controlled=True), m.lr_.classes_[(manual[:, 1] > 0.5).astype(int)])
    np.testing.assert_allclose(m.decision_function(X), m.lr_.decision_function(m.scaler_.transform(X)))
    plain = PreferenceModel().fit(X[:, :2], y)
    with pytest.raises(ConfigError, match="no style covariates"):
        plain.predict_proba(X[:, :2], style_controlled=True)
    with pytest.raises(ConfigError, match="'style_features' must name style covariates"):
        PreferenceModel(style_features=("style_emoji",)).fit(X, y)
    with pytest.raises(ConfigError, match="2 feature names, 0 missing-value indicators and 1 style covariates for 2 columns"):
        PreferenceModel(feature_names=["good", "noise"], style_features=("style_length",)).fit(X[:, :2], y)


def test_contributions_plus_intercept_are_the_logit_of_a():
    X, y = _styled()
    m = PreferenceModel(feature_names=["good", "noise"], style_features=("style_length",)).fit(X, y)
    for controlled in (False, True):
        contrib, intercept = m.contributions(X, style_controlled=controlled)
        p_a = m.predict_proba(X, style_controlled=controlled)[:, list(m.classes_).index("a")]
        np.testing.assert_allclose(contrib.sum(axis=1) + intercept, np.log(p_a / (1 - p_a)), rtol=1e-9, atol=1e-9)
    w = np.array(list(m.weights().values()))
    np.testing.assert_allclose(contrib, m.scaler_.transform(np.where(np.arange(3) == 2, 0.0, X)) * w)


def test_v4_file_round_trips_style_covariates_and_length_betas(tmp_path):
    X, y = _styled()
    prov = {f: {**PROV, "rubric_version": f"{f}.v1"} for f in ("good", "noise")}
    m = PreferenceModel(feature_names=["good", "noise"], provenance=prov, style_features=("style_length",),
                        length_betas={"good": 0.004}).fit(X, y)
    m.metadata_ = {"split": "train"}
    m.to_json(tmp_path / "m.json", trained_on="x")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["format"] == "lfqa-rubric.preference-model.v4"
    assert doc["missing"] == {"mode": "drop", "fill": {}, "indicators": []}
    assert doc["style_features"] == ["style_length"] and doc["length_betas"] == {"good": 0.004}
    assert doc["provenance"]["style_length"] == {"kind": "style", "version": "style.length_normdiff.v1"}
    assert doc["metadata"] == {"split": "train", "trained_on": "x"}
    m2 = PreferenceModel.from_json(tmp_path / "m.json")
    assert m2.provenance == prov and m2.style_features_ == ("style_length",) and m2.length_betas == {"good": 0.004}
    assert m2.style_provenance_ == {"style_length": {"kind": "style", "version": "style.length_normdiff.v1"}}
    for controlled in (False, True):
        np.testing.assert_allclose(m.predict_proba(X, style_controlled=controlled),
                                   m2.predict_proba(X, style_controlled=controlled), rtol=1e-12)
    # a style record that is not one is damage, named
    doc["provenance"]["style_length"] = {"kind": "rubric", "version": "?"}
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="provenance of 'style_length'"):
        PreferenceModel.from_json(tmp_path / "bad.json")


def test_v2_file_still_loads(tmp_path):
    path, doc = _saved(tmp_path, provenance={f: PROV for f in "xyz"})
    doc["format"] = "lfqa-rubric.preference-model.v2"
    del doc["style_features"], doc["length_betas"]
    path.write_text(json.dumps(doc))
    m = PreferenceModel.from_json(path)
    X, _ = _data()
    assert m.style_features_ == () and m.length_betas is None and m.predict(X).shape == (len(X),)
    with pytest.raises(ConfigError, match="no style covariates"):
        m.predict(X, style_controlled=True)


def test_sklearn_clone_keeps_style_and_betas():
    from sklearn.base import clone

    X, y = _styled()
    m = PreferenceModel(C=0.3, feature_names=["good", "noise"], style_features=("style_length",),
                        length_betas={"good": 0.1})
    c = clone(m).fit(X, y)
    assert c.C == 0.3 and c.style_features_ == ("style_length",) and c.length_betas == {"good": 0.1}
    with pytest.raises(ConfigError, match="'length_betas' names \\['bad'\\]"):
        clone(m).set_params(length_betas={"bad": 1.0}).fit(X, y)
