"""Pure formulas behind the extra signals (answer length, embedding similarity).

The extra signals are opt-in features outside the paper's nine rubrics (see ``rubric.scoring.specs``);
the backends that compute them live in ``models.rubric_backends.signals``. What can be written without a model
is here, so that it is importable (and testable) without torch or sentence-transformers.
"""

from __future__ import annotations

import math

import numpy as np

from rubric.config import check_range
from rubric.errors import ConfigError

__all__ = ["LENGTH_WORD_CAP", "LENGTH_RAW_MAX", "whitespace_words", "length_raw", "row_cosine"]

#: Answers longer than this many words all get the top of the length scale.
LENGTH_WORD_CAP = 1000

#: The declared raw maximum of ``length.words.v1``: ``log(1 + LENGTH_WORD_CAP)``.
LENGTH_RAW_MAX = math.log1p(LENGTH_WORD_CAP)


def whitespace_words(text: str) -> int:
    """Words as ``str.split()`` sees them, the same count as the pair tables' word counts.

    Args:
        text: the answer.

    Returns:
        The number of maximal runs of non-whitespace characters.
    """
    return len(text.split())


def length_raw(n_words: int) -> float:
    """The raw value of ``length.words.v1``: ``log(1 + min(n_words, LENGTH_WORD_CAP))``.

    Log-scaled because a length difference matters in proportion (50 vs 100 words says more than
    950 vs 1000), and capped so that the declared range ``[0, LENGTH_RAW_MAX]`` holds every answer.
    On the 1-5 scale that puts 0 words at 1, ~31 words at 3, ~177 at 4 and 1000 or more at 5.

    Args:
        n_words: the answer's word count.

    Returns:
        A value in ``[0, LENGTH_RAW_MAX]``.

    Raises:
        ConfigError: ``n_words`` is negative.
    """
    check_range("n_words", n_words, low=0)
    return math.log1p(min(n_words, LENGTH_WORD_CAP))


def row_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of ``a`` with the same row of ``b``.

    The embeddings the similarity signals use are already unit-length, but the norms are divided
    out here anyway, so the value is a cosine whatever the model's last layer does. A row whose
    vector has zero norm has no direction: its similarity is NaN, for the caller to turn into a row
    error rather than a number.

    Args:
        a: array of shape ``(n, d)``.
        b: array of shape ``(n, d)``.

    Returns:
        Array of shape ``(n,)`` in ``[-1, 1]`` (clipped against rounding), NaN for zero vectors.

    Raises:
        ConfigError: the shapes differ or are not two-dimensional.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ConfigError(f"row_cosine needs two (n, d) arrays of one shape, got {a.shape} and {b.shape}")
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dots = np.einsum("ij,ij->i", a, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), np.nan)
    return np.clip(cos, -1.0, 1.0)
