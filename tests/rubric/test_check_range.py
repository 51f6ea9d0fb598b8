"""rubric.config.check_range: the one numeric bound check, its accepted values and its one message format."""

import math

import pytest

from rubric.config import ScoringConfig, check_range
from rubric.errors import ConfigError


@pytest.mark.parametrize("value, kw", [
    (1, {"low": 1}),
    (2.5, {"low": 1}),
    (True, {"low": 1}),  # a bool is a number to Python, as it was to the checks this replaced
    (1e-9, {"above": 0}),
    (10, {"low": 0, "high": 10}),
    (-1, {"low": -1, "high": 1}),
    (4096, {"low": 1, "high": 4096, "integer": True}),
    (None, {"low": 1, "optional": True}),
    (None, {"low": 1, "integer": True, "optional": True}),
])
def test_in_range_is_returned(value, kw):
    assert check_range("x", value, **kw) is value


@pytest.mark.parametrize("value, kw, message", [
    (0, {"low": 1}, "'x' must be >= 1, got 0"),
    (0.0, {"above": 0}, "'x' must be > 0, got 0.0"),
    (11, {"low": 0, "high": 10}, "'x' must be in 0..10, got 11"),
    (-0.5, {"low": 0, "high": 10}, "'x' must be in 0..10, got -0.5"),
    (0, {"low": 1, "integer": True}, "'x' must be an integer >= 1, got 0"),
    (True, {"low": 0, "integer": True}, "'x' must be an integer >= 0, got True"),
    (2.0, {"low": 1, "integer": True}, "'x' must be an integer >= 1, got 2.0"),
    (0, {"low": 1, "high": 4096, "integer": True}, "'x' must be an integer in 1..4096, got 0"),
    (0, {"low": 1, "optional": True}, "'x' must be >= 1 or None, got 0"),
    (None, {"low": 1}, "'x' must be >= 1, got None"),
    ("5", {"above": 0}, "'x' must be > 0, got '5'"),
    (math.nan, {"low": 0}, "'x' must be >= 0, got nan"),
])
def test_out_of_range_names_the_bound_and_the_value(value, kw, message):
    with pytest.raises(ConfigError) as e:
        check_range("x", value, **kw)
    assert str(e.value) == message


def test_a_config_reports_the_field_it_refuses():
    with pytest.raises(ConfigError, match="^'factuality_f1_k' must be >= 1, got 0$"):
        ScoringConfig(factuality_f1_k=0)
