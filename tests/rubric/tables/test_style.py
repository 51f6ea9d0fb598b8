"""Style covariates: the markdown counting rule, the normalised difference, and the length decorrelation."""

import numpy as np
import pytest

from rubric.errors import ConfigError
from rubric.tables.style import (STYLE_COVARIATES, check_style_record, length_decorrelation_beta, markdown_count,
                          normalised_difference, spearman, style_record)


@pytest.mark.parametrize("text,count", [
    ("", 0),
    ("Plain prose, no formatting at all.", 0),
    ("- one\n- two\n- three", 3),
    ("* star\n+ plus", 2),
    ("  - indented item", 1),
    ("1. first\n2. second\n10) tenth", 3),
    ("# Title\n## Section\n###### Deep", 3),
    ("#hashtag is not a header", 0),
    ("-not a list\n*emphasis*\n1.5 is a number", 0),
    ("Some **bold** and __also bold__ text", 2),
    ("** not bold **", 0),                           # the span must hug its text
    ("- **Lead:** detail", 2),                      # a list item and a bold span
    ("---\n***\n* * *\n___", 0),                    # horizontal rules
    ("```python\n- not an item\n**nor bold**\n```", 1),  # one code block, nothing inside counted
    ("~~~\ncode\n~~~\n- after", 2),
    ("```\nunclosed\n- still code", 1),
    ("Step **one**\n\n1. do **this**\n2. then that\n\n```\nx\n```", 5),
])
def test_markdown_count(text, count):
    assert markdown_count(text) == count


def test_normalised_difference():
    np.testing.assert_allclose(normalised_difference([3, 0, 1, 5], [1, 0, 3, 0]), [0.5, 0.0, -0.5, 1.0])
    assert normalised_difference(0, 0).item() == 0.0
    with pytest.raises(ConfigError, match=">= 0"):
        normalised_difference([-1], [2])
    with pytest.raises(ConfigError, match="same shape"):
        normalised_difference([1, 2], [1])


def test_style_records():
    assert style_record("style_length") == {"kind": "style", "version": "style.length_normdiff.v1"}
    assert style_record("style_markdown") == {"kind": "style", "version": "style.markdown_normdiff.v1"}
    assert set(STYLE_COVARIATES) == {"style_length", "style_markdown"}
    with pytest.raises(ConfigError, match="unknown style covariate"):
        style_record("style_emoji")
    assert check_style_record({"kind": "style", "version": "x.v2"}, what="r") == {"kind": "style", "version": "x.v2"}
    with pytest.raises(ConfigError, match="must be"):
        check_style_record({"kind": "rubric", "version": "x"}, what="r")


def test_spearman_matches_scipy():
    from scipy.stats import spearmanr

    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 10, 200), rng.normal(size=200)
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))


@pytest.mark.parametrize("slope", [0.01, -0.01])
def test_decorrelation_beta_zeroes_the_rank_correlation_with_length(slope):
    rng = np.random.default_rng(0)
    length = rng.integers(10, 600, size=800).astype(float)
    score = np.clip(3 + slope * (length - 300) + rng.normal(0, 0.8, size=800), 1, 5)
    assert abs(spearman(score, length)) > 0.5
    beta = length_decorrelation_beta(score, length)
    assert np.sign(beta) == np.sign(slope)
    assert abs(spearman(score - beta * length, length)) < 0.01


def test_decorrelation_beta_edge_cases():
    assert length_decorrelation_beta([3.0, 3.0, 3.0], [10, 20, 30]) == 0.0  # constant score
    assert length_decorrelation_beta([1.0, 2.0, 3.0], [10, 10, 10]) == 0.0  # constant length
    # a score exactly linear in length is flattened to a constant
    beta = length_decorrelation_beta([1.0, 2.0, 3.0, 4.0], [10, 20, 30, 40])
    assert beta == pytest.approx(0.1, rel=1e-6)
    with pytest.raises(ConfigError, match="1-D of one length"):
        length_decorrelation_beta([1.0, 2.0], [1.0])


def test_markdown_lines_end_only_at_markdown_line_ends():
    assert markdown_count("- a\r\n- b\r- c") == 3
    # a unicode line separator is no line end in markdown: one line, not two list items
    assert markdown_count("- a\u2028- b") == 1
