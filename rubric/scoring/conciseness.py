"""Conciseness as lexical density: content words over words, from POS-tagged tokens.

Pure arithmetic on ``(pos, is_alpha)`` pairs so it imports without spaCy; the tagging itself
lives in ``models.rubric_backends.text``.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["CONTENT_POS", "WORD_LIKE_POS", "lexical_density_counts", "density_from_counts", "lexical_density"]

#: Universal POS tags counted as content (lexical) words.
CONTENT_POS: frozenset[str] = frozenset({"NOUN", "VERB", "ADJ", "ADV", "PROPN", "NUM", "X"})

#: Non-alphabetic tokens that still count as words in the denominator.
WORD_LIKE_POS: frozenset[str] = frozenset({"X", "SYM", "NUM"})


def lexical_density_counts(tokens: Iterable[tuple[str, bool]]) -> tuple[int, int]:
    """Count content tokens and word tokens, exactly as the paper's reference code does.

    Args:
        tokens: ``(pos, is_alpha)`` per token, e.g. ``(tok.pos_, tok.is_alpha)`` from spaCy.

    Returns:
        ``(n_content, n_words)``: tokens whose POS is in ``CONTENT_POS`` (counted among *all*
        tokens), and tokens that are alphabetic or whose POS is in ``WORD_LIKE_POS``.
    """
    n_content = 0
    n_words = 0
    for pos, is_alpha in tokens:
        # The two counts use different filters on purpose (the reference's own choice): the
        # numerator does not require is_alpha, so "U.S." (PROPN) or "COVID-19" counts as
        # content without counting as a word.
        if pos in CONTENT_POS:
            n_content += 1
        if is_alpha or pos in WORD_LIKE_POS:
            n_words += 1
    return n_content, n_words


def lexical_density(tokens: Iterable[tuple[str, bool]]) -> float:
    """Lexical density in [0, 1]: content tokens / word tokens, 0.0 when there are no words.

    The numerator counts content POS among all tokens, the denominator counts tokens that are
    alphabetic or tagged X/SYM/NUM (the reference implementation, kept literally). Because the
    numerator is not a subset of the denominator, a text dense in non-alphabetic proper nouns
    ("U.S. U.K. EU-27 go") can exceed 1; we clip to 1 so the declared 0-1 range of
    ``conciseness.lexical_density.v1`` holds and min-max rescaling stays inside 1-5. An empty
    denominator (empty text, punctuation only) gives 0.0, as in the reference.

    Args:
        tokens: ``(pos, is_alpha)`` per token.

    Returns:
        The clipped density.
    """
    return density_from_counts(*lexical_density_counts(tokens))


def density_from_counts(n_content: int, n_words: int) -> float:
    """``n_content / n_words`` clipped to [0, 1]; 0.0 when ``n_words`` is 0 (see ``lexical_density``)."""
    if n_words == 0:
        return 0.0
    return min(1.0, n_content / n_words)
