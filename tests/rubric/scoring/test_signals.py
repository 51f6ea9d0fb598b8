"""The extra signals' pure formulas: word counts, the log length scale, row-wise cosine."""

import math

import numpy as np
import pytest

from rubric.errors import ConfigError
from rubric.tables.features import word_count
from rubric.scoring.signals import LENGTH_RAW_MAX, LENGTH_WORD_CAP, length_raw, row_cosine, whitespace_words
from rubric.scoring.specs import RUBRICS

LENGTH = RUBRICS.get("length.words.v1")


@pytest.mark.parametrize("text,n", [
    ("", 0), ("   \n\t ", 0), ("one", 1), ("two words", 2),
    ("  leading and trailing  ", 3), ("tabs\tand\nnewlines\r\nsplit", 4),
    ("punctuation, stays attached.", 3), ("non-breaking\u00a0space", 2), ("日本語 テキスト", 2),
])
def test_whitespace_words(text, n):
    assert whitespace_words(text) == n
    assert whitespace_words(text) == word_count(text)  # the pair tables' word counts agree


@pytest.mark.parametrize("n,raw", [
    (0, 0.0), (1, math.log(2)), (9, math.log(10)), (999, math.log(1000)),
    (1000, math.log(1001)), (1001, math.log(1001)), (50_000, math.log(1001)),
])
def test_length_raw_is_log_of_capped_words(n, raw):
    assert length_raw(n) == pytest.approx(raw)


@pytest.mark.parametrize("n,scaled", [
    (0, 1.0),                                  # no words: bottom of the scale
    (1000, 5.0), (20_000, 5.0),                # at and over the cap: top
    (round(math.expm1(LENGTH_RAW_MAX / 2)), 3.0),  # 31 words: the geometric middle
])
def test_length_on_the_1_5_scale(n, scaled):
    assert LENGTH.raw_min == 0.0 and LENGTH.raw_max == pytest.approx(math.log(1 + LENGTH_WORD_CAP))
    assert LENGTH.rescale(length_raw(n)) == pytest.approx(scaled, abs=0.01)


def test_length_scale_is_monotone_and_proportional():
    vals = [LENGTH.rescale(length_raw(n)) for n in (10, 20, 40, 80, 160)]
    assert vals == sorted(vals)
    steps = np.diff(vals)  # doubling the length adds (almost) the same amount each time
    assert np.allclose(steps, steps[-1], atol=0.05)


def test_length_raw_rejects_negative():
    with pytest.raises(ConfigError, match="'n_words' must be >= 0, got -1"):
        length_raw(-1)


def test_row_cosine_hand_values():
    a = np.array([[1.0, 0.0], [1.0, 1.0], [3.0, 4.0], [1.0, 0.0]])
    b = np.array([[0.0, 2.0], [2.0, 2.0], [-3.0, -4.0], [1.0, 1.0]])
    assert row_cosine(a, b) == pytest.approx([0.0, 1.0, -1.0, 1 / math.sqrt(2)])


def test_row_cosine_zero_vector_is_nan_not_zero():
    out = row_cosine(np.array([[0.0, 0.0], [1.0, 0.0]]), np.array([[1.0, 0.0], [1.0, 0.0]]))
    assert math.isnan(out[0]) and out[1] == pytest.approx(1.0)


def test_row_cosine_clips_rounding():
    v = np.array([[0.1, 0.2, 0.3]]) * 1e3
    assert row_cosine(v, v)[0] <= 1.0


@pytest.mark.parametrize("a,b", [(np.zeros((2, 3)), np.zeros((2, 4))), (np.zeros(3), np.zeros(3))])
def test_row_cosine_shape_errors(a, b):
    with pytest.raises(ConfigError, match="two \\(n, d\\) arrays of one shape"):
        row_cosine(a, b)
