"""Specificity from the SubjECTive-QA classifier: label order, window averaging, the ordinal score.

Pure: no torch or transformers here (the classifier itself runs in ``models.rubric_backends.specificity``).

``gtfintechlab/SubjECTiveQA-SPECIFIC`` is a 3-way BERT classifier (LOW / NEUTRAL / HIGH). Its three
probabilities are read as an ordinal latent score

    latent = 0.5 * p_neutral + 1.0 * p_high        (in [0, 1])
    score_1_5 = 1 + 4 * latent

``latent`` is the rubric's raw value: declared with the raw range 0-1, the spec's min-max rescaling
is exactly ``1 + 4 * latent``. An answer longer than the model's 512 tokens is split into overlapping
windows; each window's softmax is weighted by the window's token count, so a short tail window
counts for less than a full one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from rubric.config import DEFAULT_SPECIFICITY_MODEL
from rubric.errors import ConfigError

__all__ = [
    "SUBJECTIVEQA_VERSION",
    "GEVAL_VERSION",
    "SUBJECTIVEQA_MODEL",
    "LABELS",
    "format_input",
    "latent_score",
    "ordinal_score_1_5",
    "combine_windows",
    "label_order",
    "window_spans",
]

SUBJECTIVEQA_VERSION = "specificity.subjectiveqa.v1"
GEVAL_VERSION = "specificity.geval.v1"
SUBJECTIVEQA_MODEL = DEFAULT_SPECIFICITY_MODEL

#: The canonical label order every function here returns probabilities in.
LABELS: tuple[str, str, str] = ("LOW", "NEUTRAL", "HIGH")

# Probabilities from a float32 softmax sum to 1 within ~1e-6; allow more for bf16/fp16 models.
_SUM_TOL = 1e-3
_GENERIC_LABEL = re.compile(r"^label_(\d+)$")


def format_input(question: str, answer: str) -> str:
    """The classifier's input text, as in the SubjECTive-QA paper."""
    return f"Question: {question} Answer: {answer}"


def _check_probs(p: Sequence[float], what: str) -> tuple[float, float, float]:
    if len(p) != 3:
        raise ConfigError(f"{what} must have 3 probabilities (LOW, NEUTRAL, HIGH), got {len(p)}")
    vals = tuple(float(x) for x in p)
    if not all(math.isfinite(x) and -1e-9 <= x <= 1.0 + 1e-9 for x in vals):
        raise ConfigError(f"{what} must be probabilities in [0, 1], got {vals}")
    if abs(sum(vals) - 1.0) > _SUM_TOL:
        raise ConfigError(f"{what} must sum to 1, got {sum(vals):.6f} from {vals}")
    return vals  # type: ignore[return-value]


def latent_score(p_low: float, p_neutral: float, p_high: float) -> float:
    """The ordinal latent score ``0.5 * p_neutral + 1.0 * p_high`` in [0, 1] (the raw value).

    Raises:
        ConfigError: the three values are not a probability distribution.
    """
    _, pn, ph = _check_probs((p_low, p_neutral, p_high), "specificity probabilities")
    return min(1.0, max(0.0, 0.5 * pn + ph))


def ordinal_score_1_5(p_low: float, p_neutral: float, p_high: float) -> float:
    """``1 + 4 * (0.5 * p_neutral + 1.0 * p_high)``: all-LOW is 1, all-NEUTRAL 3, all-HIGH 5.

    Raises:
        ConfigError: the three values are not a probability distribution.
    """
    return 1.0 + 4.0 * latent_score(p_low, p_neutral, p_high)


def window_spans(n_tokens: int, size: int, stride: int) -> list[tuple[int, int]]:
    """Half-open ``(start, end)`` spans over ``n_tokens`` content tokens: windows of ``size`` that share ``stride``.

    Every token lies in at least one window; consecutive windows start ``size - stride`` apart and
    the last one ends at ``n_tokens`` (it may be shorter). No tokens give one empty window, so
    every text is scored. This is the windowing of transformers' ``stride`` with
    ``return_overflowing_tokens`` (as 5.19 does it), written out because some transformers
    releases drop the tail: 5.17's fast BERT tokenizer gave 2 windows covering 512 of 910 tokens.

    Raises:
        ConfigError: ``size < 1``, ``stride < 0`` or ``stride >= size``.
    """
    if size < 1 or stride < 0 or stride >= size:
        raise ConfigError(f"windows need size >= 1 and 0 <= stride < size, got size={size} stride={stride}")
    if n_tokens < 0:
        raise ConfigError(f"n_tokens must be >= 0, got {n_tokens}")
    # The last start is the last one before n_tokens - stride: its window reaches n_tokens, the one
    # before it does not (so no window is redundant); max(.., 1) gives short texts their one window.
    starts = range(0, max(n_tokens - stride, 1), size - stride)
    return [(a, min(a + size, n_tokens)) for a in starts]


def combine_windows(probs_per_window: Sequence[Sequence[float]],
                    token_counts: Sequence[int]) -> tuple[float, float, float]:
    """Average per-window (LOW, NEUTRAL, HIGH) probabilities, weighted by each window's token count.

    Args:
        probs_per_window: one (LOW, NEUTRAL, HIGH) softmax per window.
        token_counts: tokens in each window (its attention-mask sum, special tokens included).

    Returns:
        The weighted mean (LOW, NEUTRAL, HIGH); a distribution again.

    Raises:
        ConfigError: no windows, mismatched lengths, a non-positive count, or rows that are not
            distributions.
    """
    if not probs_per_window:
        raise ConfigError("combine_windows needs at least one window")
    if len(probs_per_window) != len(token_counts):
        raise ConfigError(f"{len(probs_per_window)} windows but {len(token_counts)} token counts")
    if any(int(c) != c or c < 1 for c in token_counts):
        raise ConfigError(f"token counts must be positive integers, got {list(token_counts)}")
    total = float(sum(token_counts))
    acc = [0.0, 0.0, 0.0]
    for i, (p, c) in enumerate(zip(probs_per_window, token_counts)):
        vals = _check_probs(p, f"window {i}")
        for j in range(3):
            acc[j] += vals[j] * c
    return acc[0] / total, acc[1] / total, acc[2] / total


def label_order(id2label: Mapping[int | str, str]) -> tuple[int, int, int]:
    """The output indices of LOW, NEUTRAL and HIGH in a classifier's config.

    Labels match in any order and case (``"low"``, ``"Neutral"``, ``" HIGH "``). A config with
    only transformers' generic names (``LABEL_0``, ``LABEL_1``, ``LABEL_2``) is read as
    0 = LOW, 1 = NEUTRAL, 2 = HIGH, the order of SubjECTive-QA's 0/1/2 annotation scale.

    Args:
        id2label: ``model.config.id2label`` (keys may be ints or digit strings, as in config.json).

    Returns:
        ``(i_low, i_neutral, i_high)``.

    Raises:
        ConfigError: not exactly three labels, or labels that are neither the three names nor
            ``LABEL_0..2`` (the message lists them).
    """
    try:
        norm = {int(k): str(v).strip().upper() for k, v in id2label.items()}
    except (TypeError, ValueError) as e:
        raise ConfigError(f"id2label keys must be integers, got {dict(id2label)!r}") from e
    if sorted(norm) != [0, 1, 2]:
        raise ConfigError(f"a specificity classifier needs 3 labels with ids 0, 1, 2; got {dict(id2label)!r}")
    by_name = {v: k for k, v in norm.items()}
    if set(by_name) == set(LABELS):
        return by_name["LOW"], by_name["NEUTRAL"], by_name["HIGH"]
    generic = {k: _GENERIC_LABEL.match(v.lower()) for k, v in norm.items()}
    if all(m is not None and int(m.group(1)) == k for k, m in generic.items()):
        return 0, 1, 2
    raise ConfigError(f"cannot read specificity labels from id2label {dict(id2label)!r}: expected LOW, NEUTRAL "
                      "and HIGH (any order or case) or LABEL_0..LABEL_2 (read as 0=LOW, 1=NEUTRAL, 2=HIGH)")
