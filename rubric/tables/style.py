"""Style covariates: answer length and markdown, the two things raters reward beyond content.

Chatbot Arena's style control and AlpacaEval's length-controlled win rate both fit the preference
model with style covariates beside the content features, then report what it predicts with the
covariates set to "no style difference". The covariate of a pair is the normalised difference
``(x_a - x_b) / (x_a + x_b)`` of a per-answer count, bounded in [-1, 1] and 0 when both answers
have nothing to count, so a 10-word gap between two short answers weighs more than between two
essays.

Counts:

- length: whitespace tokens (``str.split()``), the ``n_words`` column of the feature tables;
- markdown: see :func:`markdown_count`.

This module also holds the ArmoRM-style decorrelation: a rubric's per-answer score residualised
against answer length so that, on the training answers, its rank correlation with length is zero
(:func:`length_decorrelation_beta`).

Everything here is pure (no tables): :mod:`rubric.tables.features` writes the counts into the tables and
builds the covariates from them.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping

import numpy as np

from rubric.errors import ConfigError

__all__ = ["MARKDOWN_RULE", "STYLE_COVARIATES", "STYLE_META_KEY", "markdown_count", "normalised_difference",
           "style_record", "check_style_record", "spearman", "length_decorrelation_beta"]

log = logging.getLogger(__name__)

#: Version of the counting rule of :func:`markdown_count`; bump it when the rule changes.
MARKDOWN_RULE = "markdown.count.v1"

#: Covariate name -> (its version, the per-answer count column of the feature tables it is built from).
#: The version names the formula and the counting rule together: ``style.markdown_normdiff.v1`` is the
#: normalised difference of counts made by ``markdown.count.v1``.
STYLE_COVARIATES: dict[str, tuple[str, str]] = {
    "style_length": ("style.length_normdiff.v1", "n_words"),
    "style_markdown": ("style.markdown_normdiff.v1", "n_md"),
}

#: Schema-metadata key of ``{covariate: version}``: the style covariates a feature table's counts support.
STYLE_META_KEY = b"lfqa_rubric.style"

_LINE_END = re.compile(r"\r\n|\r|\n")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_BULLET = re.compile(r"^\s*[-*+]\s+\S")
_ORDERED = re.compile(r"^\s*\d{1,9}[.)]\s+\S")
_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_RULE = re.compile(r"^\s{0,3}(?:(?:\*\s*){3,}|(?:-\s*){3,}|(?:_\s*){3,})$")
_BOLD = re.compile(r"\*\*(?=\S)[^*\n]*?(?<=\S)\*\*|__(?=\S)[^_\n]*?(?<=\S)__")


def markdown_count(text: str) -> int:
    """How many markdown elements an answer uses.

    The rule (``markdown.count.v1``), close to Chatbot Arena's style features:

    - every line that starts (after indentation) with a list marker and a space: ``-``, ``*``, ``+``,
      or a number followed by ``.`` or ``)`` (``1.``, ``12)``) counts 1;
    - every ATX header line (``#`` to ``######`` followed by a space and text) counts 1;
    - every bold span, ``**text**`` or ``__text__`` within one line, counts 1 (a list item with a bold
      lead-in counts 2);
    - every fenced code block (a line starting with ```` ``` ```` or ``~~~`` opens it, the next such
      line closes it; an unclosed block runs to the end) counts 1, and nothing inside it is counted;
    - a horizontal rule (``---``, ``***``, ``___``, spaced or not) counts 0, so ``* * *`` is not a
      list item; emphasis with one star, links, tables and HTML count 0.

    Args:
        text: the answer.

    Returns:
        The number of elements, >= 0.
    """
    n = 0
    in_code = False
    # Markdown's line ends only: str.splitlines would also split on \x0b, \x1c, \u2028 and other
    # characters that are no line end in markdown (and the project avoids it for that reason).
    for line in _LINE_END.split(text):
        if _FENCE.match(line):
            if not in_code:
                n += 1
            in_code = not in_code
            continue
        if in_code:
            continue
        if _RULE.match(line):
            continue
        if _BULLET.match(line) or _ORDERED.match(line) or _HEADER.match(line):
            n += 1
        n += len(_BOLD.findall(line))
    return n


def normalised_difference(a, b) -> np.ndarray:
    """``(a - b) / (a + b)`` element-wise, 0 where both are 0.

    Args:
        a: counts of the first answers (array-like, >= 0).
        b: counts of the second answers, same shape.

    Returns:
        Float array in [-1, 1].

    Raises:
        ConfigError: shapes differ, or a count is negative or not finite.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ConfigError(f"counts must have the same shape, got {a.shape} and {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ConfigError("counts must be finite numbers")
    if np.any(a < 0) or np.any(b < 0):
        raise ConfigError("counts must be >= 0 for a normalised difference")
    total = a + b
    return np.divide(a - b, total, out=np.zeros(np.broadcast(a, b).shape), where=total > 0)


def style_record(name: str) -> dict:
    """The provenance record of a style covariate, as saved in ``model.json``.

    Raises:
        ConfigError: ``name`` is not a known covariate (lists the known ones).
    """
    if name not in STYLE_COVARIATES:
        raise ConfigError(f"unknown style covariate {name!r}; known: {sorted(STYLE_COVARIATES)}")
    return {"kind": "style", "version": STYLE_COVARIATES[name][0]}


def check_style_record(obj: object, *, what: str) -> dict:
    """Validate a style covariate's record read from JSON: ``{"kind": "style", "version": str}``.

    Raises:
        ConfigError: it has another shape.
    """
    if (not isinstance(obj, Mapping) or obj.get("kind") != "style" or not isinstance(obj.get("version"), str)
            or set(obj) != {"kind", "version"}):
        raise ConfigError(f"{what} must be {{'kind': 'style', 'version': <str>}}, got {obj!r}")
    return {"kind": "style", "version": obj["version"]}


def _ranks(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(x)


def spearman(x, y) -> float:
    """Spearman's rank correlation (average ranks for ties); nan when either side is constant."""
    rx, ry = _ranks(np.asarray(x, dtype=float)), _ranks(np.asarray(y, dtype=float))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float(rx @ rx) * float(ry @ ry))
    return float(rx @ ry) / den if den > 0 else float("nan")


def length_decorrelation_beta(scores, lengths, *, max_iter: int = 60) -> float:
    """The ``beta`` of ArmoRM's decorrelation: ``Spearman(scores - beta * lengths, lengths) == 0``.

    The rank correlation falls from about +1 (beta very negative) to about -1 (beta very positive),
    one swapped pair at a time, so bisection on beta finds where it crosses 0. Ranks move in steps,
    so "0" means the crossing step: the returned beta is the one of the bracket whose correlation is
    nearest 0 (at most one step, about ``6 / n`` for ``n`` answers, away).

    Args:
        scores: per-answer rubric scores (1-5) of the training answers.
        lengths: their lengths (whitespace tokens), same order.
        max_iter: bisection steps after the bracket is found (60 halve the bracket to 1e-18 of its width).

    Returns:
        beta; 0.0 when the scores or the lengths are constant (nothing to residualise) or already
        uncorrelated.

    Raises:
        ConfigError: the arrays differ in length, are empty, or hold non-finite values.
    """
    r = np.asarray(scores, dtype=float)
    n = np.asarray(lengths, dtype=float)
    if r.shape != n.shape or r.ndim != 1 or len(r) == 0:
        raise ConfigError(f"scores and lengths must be 1-D of one length, got shapes {r.shape} and {n.shape}")
    if not (np.all(np.isfinite(r)) and np.all(np.isfinite(n))):
        raise ConfigError("scores and lengths must be finite")
    if np.ptp(r) == 0 or np.ptp(n) == 0:
        return 0.0
    rn = _ranks(n)
    rn = rn - rn.mean()
    rn_norm = math.sqrt(float(rn @ rn))

    def f(beta: float) -> float:
        rr = _ranks(r - beta * n)
        rr = rr - rr.mean()
        den = math.sqrt(float(rr @ rr)) * rn_norm
        return float(rr @ rn) / den if den > 0 else float("nan")  # nan: the residual is constant

    f0 = f(0.0)
    if f0 == 0.0 or math.isnan(f0):
        return 0.0
    # bracket [lo, hi] with f(lo) > 0 > f(hi); f decreases in beta
    step = float(np.std(r) / np.std(n))
    lo, hi = (0.0, step) if f0 > 0 else (-step, 0.0)
    f_lo, f_hi = (f0, f(hi)) if f0 > 0 else (f(lo), f0)
    for _ in range(200):
        for beta, value in ((lo, f_lo), (hi, f_hi)):
            if value == 0.0 or math.isnan(value):  # nan: the residual is constant, as uncorrelated as it gets
                return beta
        if f_lo > 0 > f_hi:
            break
        if f0 > 0:
            lo, f_lo, hi = hi, f_hi, hi * 2
            f_hi = f(hi)
        else:
            hi, f_hi, lo = lo, f_lo, lo * 2
            f_lo = f(lo)
    else:  # unreachable for finite, non-constant inputs: the limits are +-1
        raise ConfigError("could not bracket the decorrelating beta")
    for _ in range(max_iter):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        f_mid = f(mid)
        if f_mid == 0.0 or math.isnan(f_mid):
            return mid
        if f_mid > 0:
            lo, f_lo = mid, f_mid
        else:
            hi, f_hi = mid, f_mid
    return lo if abs(f_lo) <= abs(f_hi) else hi
