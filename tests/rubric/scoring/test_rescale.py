import pytest

from rubric.errors import ConfigError
from rubric.scoring.rescale import FittedMinMax


def test_fit_transform_clip_and_json(tmp_path):
    f = FittedMinMax.fit({"x": [2.0, None, 4.0, 3.0], "c": [7.0, 7.0]})
    assert f.transform("x", 2.0) == 1.0 and f.transform("x", 4.0) == 5.0 and f.transform("x", 3.0) == 3.0
    assert f.transform("x", 10.0) == 5.0 and f.transform("x", -1.0) == 1.0  # unseen values are clipped
    assert f.transform("c", 7.0) == 3.0  # a constant column maps to the middle
    f.to_json(tmp_path / "r.json")
    assert FittedMinMax.from_json(tmp_path / "r.json") == f


def test_fit_errors(tmp_path):
    with pytest.raises(ConfigError, match="no finite values"):
        FittedMinMax.fit({"x": [None]})
    (tmp_path / "bad.json").write_text('{"kind": "other"}')
    with pytest.raises(ConfigError, match="not a fitted min-max"):
        FittedMinMax.from_json(tmp_path / "bad.json")
