"""Pure formulas of the CPU rubric profile (``--preset cpu``): the paper's nine rubric names, each
with a version that runs well on a CPU.

What each version means, from the rubric's definition (docs/cpu-profile.md has what each one
measured on the shared data and what it does not capture):

- relevance (``relevance.minilm.v1``): cosine of the question's embedding and the answer's, the
  answer's embedding being the normalised mean of its sentences' embeddings (so no answer is cut
  at the encoder's 256 word pieces, and the sentence embeddings serve the other rubrics too).
- coherence (``coherence.minilm.v1``): mean cosine of adjacent units in (question, sentence 1, ...,
  sentence n): how each sentence follows from the one before, the first from the question (local
  coherence, as in Foltz et al.'s LSA measure). A one-sentence answer has one link, to the question.
- completeness (``completeness.coverage.v1``): coverage of the question's content words (lemmas of
  its nouns, proper nouns, verbs, adjectives and numbers that are not stop words) by the answer's
  lemmas and, where the question has a reference answer, the reference's recall: the mean over the
  reference's sentences of their best cosine with an answer sentence (floored at 0). With both, the
  mean of the two.
- factuality (``factuality.support.v1``): the answer's sentences (its claims, one per sentence)
  against the evidence (the reference answer and the documents attached to the answer): the mean
  over the answer's sentences of their best cosine with an evidence sentence (floored at 0), i.e.
  the precision side of what completeness measures as recall. Without any evidence nothing can be
  checked: the rubric abstains with ``FACTUALITY_NO_EVIDENCE`` (0.5), the same for every answer of
  such a question, so its difference inside a pair is 0 and it moves no prediction.
- specificity (``specificity.concrete.v1``): the share of the answer's words that are concrete
  content: inside a named entity, a number, or a proper noun.
- use_of_examples (``use_of_examples.cues.v1``): 1 when the answer introduces an example with an
  explicit cue (``EXAMPLE_CUE``: "for example", "such as", "e.g.", "imagine", ...), else 0 (the
  paper's binary outcome).
- fluency (``fluency.harper.v1``): the error-rate score of grammar (``grammar_score``) over the
  Harper findings about the prose that grammar does not count (``FLUENCY_HARPER_KINDS``: typos,
  punctuation, capitalisation, repeated words, over-long sentences, redundancy).
- conciseness and grammar keep their CPU versions (``conciseness.lexical_density.v1``,
  ``grammar.harper.v1``).

Embeddings here are rows of unit-length vectors (what the encoder returns with normalisation on);
the functions divide by norms anyway where a mean is taken.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from rubric.errors import ConfigError
from rubric.scoring.grammar import grammar_score

__all__ = [
    "CPU_RELEVANCE_VERSION", "CPU_COHERENCE_VERSION", "CPU_COMPLETENESS_VERSION", "CPU_FACTUALITY_VERSION",
    "CPU_SPECIFICITY_VERSION", "CPU_EXAMPLES_VERSION", "CPU_FLUENCY_VERSION",
    "FACTUALITY_NO_EVIDENCE", "QUESTION_TERM_POS", "CONCRETE_POS", "EXAMPLE_CUE", "FLUENCY_HARPER_KINDS",
    "centroid", "relevance_score", "coherence_score", "soft_recall", "term_coverage", "completeness_score",
    "support_score", "concreteness", "example_cues", "count_fluency_lints", "fluency_score",
]

CPU_RELEVANCE_VERSION = "relevance.minilm.v1"
CPU_COHERENCE_VERSION = "coherence.minilm.v1"
CPU_COMPLETENESS_VERSION = "completeness.coverage.v1"
CPU_FACTUALITY_VERSION = "factuality.support.v1"
CPU_SPECIFICITY_VERSION = "specificity.concrete.v1"
CPU_EXAMPLES_VERSION = "use_of_examples.cues.v1"
CPU_FLUENCY_VERSION = "fluency.harper.v1"

#: factuality.support.v1 of an answer with no evidence to check it against: it abstains.
FACTUALITY_NO_EVIDENCE = 0.5

#: Universal POS tags of a question's content words (what an answer should cover).
QUESTION_TERM_POS: frozenset[str] = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "NUM"})

#: POS tags that make a word concrete by themselves (besides being inside a named entity).
CONCRETE_POS: frozenset[str] = frozenset({"PROPN", "NUM"})

#: The explicit cues that introduce an example. "like" and "consider" are left out: most of their
#: uses are not examples ("feels like", "consider using").
EXAMPLE_CUE = re.compile(
    r"(?<![\w.])(?:for example|for instance|e\.\s?g\.|such as|examples?|to illustrate|imagine|suppose|"
    r"let'?s say|say you)(?!\w)", re.IGNORECASE)

#: Harper lint kinds fluency counts: the prose's surface errors that grammar does not count.
#: Left out: grammar's own kinds; Spelling (on web answers mostly words outside Harper's
#: dictionary: names and technical terms, which specificity rewards); Formatting (whitespace of
#: extracted text); house-style preferences (Style: the Oxford comma, WordChoice: closed compounds,
#: Enhancement, Nonstandard, Regionalism) and the Miscellaneous catch-all.
FLUENCY_HARPER_KINDS: frozenset[str] = frozenset({
    "Typo", "BoundaryError", "Eggcorn", "Malapropism", "Capitalization", "Punctuation", "Repetition",
    "Readability", "Redundancy"})


def _rows(a: np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] == 0:
        raise ConfigError(f"{what} must be a non-empty (n, d) array, got shape {a.shape}")
    return a


def _unit(v: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    if np.any(norms == 0):
        raise ConfigError("an embedding has zero norm: it has no direction")
    return v / norms


def centroid(sentences: np.ndarray) -> np.ndarray:
    """The unit-length mean of unit-length sentence embeddings: the answer's embedding.

    Raises:
        ConfigError: no sentence, or a zero vector (a mean of opposite directions).
    """
    s = _unit(_rows(sentences, "sentence embeddings"))
    return _unit(s.mean(axis=0))


def relevance_score(question: np.ndarray, sentences: np.ndarray) -> float:
    """relevance.minilm.v1: cosine of the question and the answer's centroid, in [-1, 1]."""
    q = _unit(np.asarray(question, dtype=np.float64).reshape(-1))
    return float(np.clip(q @ centroid(sentences), -1.0, 1.0))


def coherence_score(question: np.ndarray, sentences: np.ndarray) -> tuple[float, float]:
    """coherence.minilm.v1: mean (and least) cosine of adjacent units in (question, s1, ..., sn).

    Returns:
        ``(mean, minimum)`` over the n links, each in [-1, 1].
    """
    q = np.asarray(question, dtype=np.float64).reshape(1, -1)
    units = _unit(np.vstack([q, _rows(sentences, "sentence embeddings")]))
    links = np.clip(np.einsum("ij,ij->i", units[:-1], units[1:]), -1.0, 1.0)
    return float(links.mean()), float(links.min())


def soft_recall(targets: np.ndarray, candidates: np.ndarray) -> float:
    """Mean over ``targets`` of each one's best cosine with a row of ``candidates``, floored at 0.

    How much of what ``targets`` says is also said in ``candidates`` (a sentence-level, embedding
    version of recall); in [0, 1].
    """
    t = _unit(_rows(targets, "targets"))
    c = _unit(_rows(candidates, "candidates"))
    best = (t @ c.T).max(axis=1)
    return float(np.clip(best, 0.0, 1.0).mean())


def term_coverage(question_terms: Iterable[str], answer_terms: Iterable[str]) -> float | None:
    """The share of the question's content terms that the answer uses; None when it has none."""
    q = set(question_terms)
    if not q:
        return None
    return len(q & set(answer_terms)) / len(q)


def completeness_score(question_coverage: float | None, reference_recall: float | None) -> float:
    """completeness.coverage.v1: the mean of the coverages there are, in [0, 1].

    A question without content terms and without a reference leaves nothing to cover: 1.0.
    """
    parts = [x for x in (question_coverage, reference_recall) if x is not None]
    return float(np.mean(parts)) if parts else 1.0


def support_score(sentences: np.ndarray, evidence: np.ndarray | None) -> float:
    """factuality.support.v1: how much of the answer the evidence supports, in [0, 1].

    ``soft_recall`` of the answer's sentences in the evidence's; ``FACTUALITY_NO_EVIDENCE`` when
    there is no evidence sentence (None or zero rows).
    """
    if evidence is None or np.asarray(evidence).shape[0] == 0:
        return FACTUALITY_NO_EVIDENCE
    return soft_recall(sentences, evidence)


def concreteness(n_concrete: int, n_words: int) -> float:
    """specificity.concrete.v1: concrete words / words in [0, 1]; 0.0 without words.

    Raises:
        ConfigError: a negative count, or more concrete words than words.
    """
    if n_words < 0 or n_concrete < 0 or n_concrete > n_words:
        raise ConfigError(f"need 0 <= n_concrete <= n_words, got {n_concrete} and {n_words}")
    return n_concrete / n_words if n_words else 0.0


def example_cues(text: str) -> list[str]:
    """The example cues in ``text``, lower-cased, in order (``EXAMPLE_CUE``)."""
    return [m.group(0).lower() for m in EXAMPLE_CUE.finditer(text)]


def count_fluency_lints(kinds: Iterable[str]) -> int:
    """How many Harper lints (by ``lint_kind``) fluency counts (``FLUENCY_HARPER_KINDS``)."""
    return sum(1 for k in kinds if k in FLUENCY_HARPER_KINDS)


def fluency_score(n_errors: int, text: str) -> float:
    """fluency.harper.v1: grammar's error-rate score (1-5) of the fluency findings."""
    return grammar_score(n_errors, text)
