"""A damaged model.json is one line naming it and exit 2, whichever part is damaged.

The issue's repros: ``scaler.scale`` set to 0 (was a ValueError traceback about infinity) and a
reordered ``features`` list (went undetected and moved predictions by up to 0.38).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from rubric.errors import InputError
from rubric.preference import PreferenceModel
from tests.reliability.test_cli_errors import _pairs_table, model_json, one_error_line  # noqa: F401 (fixture)
from workers.cli import main


def _edit(path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _reorder(doc):
    doc["features"] = doc["features"][::-1]


def _scale_zero(doc):
    doc["scaler"]["scale"][0] = 0.0


DAMAGE = {
    "scale zero": (_scale_zero, "'scaler.scale' must be > 0"),
    "scale negative": (lambda d: d["scaler"]["scale"].__setitem__(1, -1.0), "'scaler.scale' must be > 0"),
    "var negative": (lambda d: d["scaler"]["var"].__setitem__(1, -1.0), "'scaler.var' >= 0"),
    "features reordered": (_reorder, "features list reordered"),
    "coef edited": (lambda d: d["coef"][0].__setitem__(0, d["coef"][0][0] + 1), "do not match the checksum"),
    "classes swapped": (lambda d: d.__setitem__("classes", d["classes"][::-1]), "do not match the checksum"),
    "mean infinite": (lambda d: d["scaler"].__setitem__("mean", [float("inf"), 0.0]), "finite numbers"),
    "feature renamed": (lambda d: d.__setitem__("features", ["conciseness", "fluency"]), "do not match the checksum"),
}


@pytest.mark.parametrize("what", DAMAGE)
@pytest.mark.parametrize("command", ["evaluate", "predict"])
def test_damaged_model_is_one_line_exit_2(tmp_path, capsys, model_json, what, command):  # noqa: F811
    change, words = DAMAGE[what]
    _edit(model_json, change)
    out = tmp_path / "out"
    out.mkdir()
    pq.write_table(_pairs_table(), out / "pairs.parquet")
    argv = [command, str(out), "--model", str(model_json)]
    argv += ["--n-boot", "10"] if command == "evaluate" else ["--out", str(tmp_path / "p.parquet")]
    rc = main(argv)
    line = one_error_line(capsys, rc, str(model_json), words)
    assert rc == 2 and "damaged" in line


def test_reordered_features_would_have_changed_predictions(model_json):  # noqa: F811
    """Why the check matters: the same numbers read against the reversed names predict differently."""
    good = PreferenceModel.from_json(model_json)
    X = np.array([[0.3, -0.2], [0.1, 0.4]])
    doc = json.loads(model_json.read_text())
    _reorder(doc)
    del doc["checksum"]  # a file from before the checksum: its order cannot be checked
    model_json.write_text(json.dumps(doc))
    old = PreferenceModel.from_json(model_json)
    assert old.features_ == good.features_[::-1]
    assert not np.allclose(old.predict_proba(X[:, ::-1]), good.predict_proba(X))


def test_model_nested_too_deeply_is_one_input_error(tmp_path):
    path = tmp_path / "model.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="not valid JSON"):
        PreferenceModel.from_json(path)


def test_a_saved_model_round_trips_with_its_checksum(model_json):  # noqa: F811
    doc = json.loads(model_json.read_text())
    assert len(doc["checksum"]) == 64
    m = PreferenceModel.from_json(model_json)
    m.to_json(model_json, trained_on="again")
    assert json.loads(model_json.read_text())["checksum"] == doc["checksum"]
