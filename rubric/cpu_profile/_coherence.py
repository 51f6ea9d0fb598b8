"""The CPU profile's coherence formulas, one per registered version (old ones stay, so stored scores can be read
again): ``coherence_score`` (coherence.minilm.v1), :func:`adjacent_coherence` (coherence.minilm.v8), :func:`coherence_v2`, :func:`coherence_v3` and
:func:`coherence_v4` (also coherence.minilm.v5's, over the scorer's "lines" reading: sentences cut at line breaks too). What each version reads and why
is in ``rubric.cpu_profile._formulas``' docstring; the helpers they share (unit rows, repeats, novelty) are its.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from rubric.errors import ConfigError
from rubric.cpu_profile._formulas import _rows, _unit, novelty, repeated_sentences

__all__ = ["coherence_score", "coherence_v2", "coherence_v3", "coherence_v4", "adjacent_coherence"]


def coherence_score(question: np.ndarray, sentences: np.ndarray) -> tuple[float, float]:
    """coherence.minilm.v1: mean (and least) cosine of adjacent units in (question, s1, ..., sn).

    Returns:
        ``(mean, minimum)`` over the n links, each in [-1, 1].
    """
    q = np.asarray(question, dtype=np.float64).reshape(1, -1)
    units = _unit(np.vstack([q, _rows(sentences, "sentence embeddings")]))
    links = np.clip(np.einsum("ij,ij->i", units[:-1], units[1:]), -1.0, 1.0)
    return float(links.mean()), float(links.min())


def adjacent_coherence(sentences: np.ndarray) -> tuple[float, float] | None:
    """coherence.minilm.v8: mean (and least) cosine of adjacent sentences of the answer, with no link to the question
    (v1's links without its first: how close an answer stays to its question is ``qa_similarity``'s, a signal of its
    own); None with fewer than two sentences (the rubric abstains).

    Returns:
        ``(mean, minimum)`` over the n - 1 links, each in [-1, 1], or None.
    """
    s = _unit(_rows(sentences, "sentence embeddings"))
    if len(s) < 2:
        return None
    links = np.clip(np.einsum("ij,ij->i", s[:-1], s[1:]), -1.0, 1.0)
    return float(links.mean()), float(links.min())


def _links(sentences: np.ndarray, texts: Iterable[str] | None, terms: Sequence[Iterable[str]] | None,
           weights: Mapping[str, float] | None, question: tuple[np.ndarray, str] | None = None,
           copied: Sequence[bool] | None = None) -> tuple[list[float], int]:
    """coherence's links between adjacent sentences (``coherence_v2``) and how many sentences repeat an earlier one
    (or, given the ``question`` as its embedding and text, the question: ``repeated_sentences`` with the question
    first)."""
    s = _unit(_rows(sentences, "sentence embeddings"))
    if terms is not None and len(terms) != len(s):
        raise ConfigError(f"need one term set per sentence ({len(s)}), got {len(terms)}")
    if question is None:
        repeated = repeated_sentences(s, texts)
    else:
        q = np.asarray(question[0], dtype=np.float64).reshape(1, -1)
        said = None if texts is None else [question[1], *texts]
        repeated = repeated_sentences(np.vstack([q, s]), said)[1:]
    if copied is not None:
        if len(copied) != len(s):
            raise ConfigError(f"need one copied flag per sentence ({len(s)}), got {len(copied)}")
        repeated = [r or bool(c) for r, c in zip(repeated, copied)]
    links = []
    for i in range(1, len(s)):
        if repeated[i]:
            links.append(0.0)
            continue
        link = max(float(np.clip(s[i - 1] @ s[i], -1.0, 1.0)), 0.0)
        links.append(link if terms is None else link * novelty(terms[i], terms[i - 1], weights))
    return links, sum(repeated[1:])  # the first sentence has no link to lose


def coherence_v2(sentences: np.ndarray, texts: Iterable[str] | None = None,
                 terms: Sequence[Iterable[str]] | None = None,
                 weights: Mapping[str, float] | None = None) -> tuple[float, float, int] | None:
    """coherence.minilm.v2: ``(mean link, least link, repeated sentences)`` over adjacent sentences, or None
    with fewer than two sentences (no link to judge: the rubric abstains).

    A link is the two sentences' cosine floored at 0 times the later one's novelty against the earlier one
    (given ``terms``, each sentence's content terms, weighted by ``weights``: the share of what it says that the
    sentence before did not say): a coherent step is related to what came before *and* adds to it (the given-new
    contract), so a sentence that only restates the topic links weakly. A link into a sentence that repeats an
    earlier one (:func:`repeated_sentences`) is 0.
    """
    if len(_rows(sentences, "sentence embeddings")) < 2:
        return None
    links, repeated = _links(sentences, texts, terms, weights)
    return float(np.mean(links)), float(np.min(links)), repeated


def _clean_links(sentences: np.ndarray, texts: Iterable[str] | None, terms: Sequence[Iterable[str]] | None,
                 weights: Mapping[str, float] | None, question: tuple[np.ndarray, str] | None,
                 copied: Sequence[bool] | None, copies: int) -> tuple[list[float], int]:
    """coherence v3's links (:func:`coherence_v3`) and its repeats, the copies counted."""
    n = len(_rows(sentences, "sentence embeddings"))
    if copies < 0:
        raise ConfigError(f"copies must be >= 0, got {copies}")
    links, repeated = _links(sentences, texts, terms, weights, question, copied) if n >= 2 else ([], 0)
    return links + [0.0] * copies, repeated + copies


def coherence_v3(sentences: np.ndarray, texts: Iterable[str] | None = None,
                 terms: Sequence[Iterable[str]] | None = None, weights: Mapping[str, float] | None = None,
                 question: tuple[np.ndarray, str] | None = None, copied: Sequence[bool] | None = None,
                 copies: int = 0) -> tuple[float, float, int] | None:
    """coherence.minilm.v3, over the answer without its copies (:func:`without_repeats`): v2's links
    (``coherence_v2``), a link into a sentence that says nothing new being 0 — one that repeats an earlier sentence,
    one that restates the ``question`` (given as its embedding and text: ``repeated_sentences`` with the question as
    the earliest sentence; the question is no unit, it links to nothing) or one a copy was cut from (``copied``:
    :func:`copied_sentences`) — and each of the ``copies`` one more link of 0. ``(mean, least, repeats)``, repeats
    counting the copies; None (abstain) without any link."""
    links, repeated = _clean_links(sentences, texts, terms, weights, question, copied, copies)
    if not links:
        return None
    return float(np.mean(links)), float(np.min(links)), repeated


def coherence_v4(sentences: np.ndarray, information: Sequence[float], texts: Iterable[str] | None = None,
                 terms: Sequence[Iterable[str]] | None = None, weights: Mapping[str, float] | None = None,
                 question: tuple[np.ndarray, str] | None = None, copied: Sequence[bool] | None = None,
                 copies: int = 0) -> tuple[float, float, int] | None:
    """coherence.minilm.v4: :func:`coherence_v3`'s links, the link into sentence ``i`` times ``information[i]``
    (what that sentence says about the question besides the question's words, in [0, 1]: relevance.minilm.v3's
    reading, v4's for coherence.minilm.v5; 0 for a sentence that repeats an earlier one) — a step builds the answer only when it adds
    information about the question. ``(mean, least, repeats)``; None (abstain) without any link.

    Raises:
        ConfigError: ``information`` is not one value in [0, 1] per sentence.
    """
    n = len(_rows(sentences, "sentence embeddings"))
    info = [float(x) for x in information]
    if len(info) != n or any(not 0.0 <= x <= 1.0 for x in info):
        raise ConfigError(f"need one information value in [0, 1] per sentence ({n}), got {info}")
    links, repeated = _clean_links(sentences, texts, terms, weights, question, copied, copies)
    if not links:
        return None
    steps = [link * info[i] for i, link in enumerate(links[:n - 1], start=1)] + links[n - 1:] if n >= 2 else links
    return float(np.mean(steps)), float(np.min(steps)), repeated
