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

The second versions (issue 44: a rubric means its name; ``lfqa-rubric validate`` checks it, docs/validity.md
has the tables). Each answers a way the first could be fooled:

- relevance (``relevance.minilm.v2``): restating the question is not answering it. Each distinct sentence
  (``distinct_sentences``: a sentence whose cosine with an earlier one is >= ``REPEAT_COS`` says it again) is
  worth its cosine with the question (floored at 0) times its *novelty*, the share of its content lemmas' information
  that the question does not contain (``sentence_information``; a lemma's information is its surprisal in general
  English, ``term_weight`` of its wordfreq frequency, so "people" or "situation" count for less than
  "refrigerant"); relevance is the mean over the distinct sentences.
  An echo of the question scores ~0; a repeated sentence changes nothing.
- completeness (``completeness.coverage.v2``, reference-free like the paper's framework): how much the
  answer says about the question, ``1 - prod(1 - information)`` over the distinct sentences: each new
  informative sentence adds, a cut answer loses what it cut, a repetition adds nothing.
  ``completeness.reference.v1`` is the reference-reading variant, opt-in: the reference's sentence recall
  alone; it abstains on a question without a reference (it never becomes another definition).
- coherence (``coherence.minilm.v2``): links between adjacent sentences of the answer only (the question
  is no unit): each link is their cosine (floored at 0), and a link into a sentence that repeats an earlier
  one is 0 (it adds no step). With fewer than two sentences there is no link: the rubric abstains.
- factuality (``factuality.support.v2``): the answer's sentences against evidence both answers of a pair
  share, the question's reference answer; documents attached to one answer are that answer's sources, not
  shared evidence. Without a reference it abstains, so no answer is "checked" against nothing.
- use_of_examples (``use_of_examples.cues.v2``): ``EXAMPLE_CUE_V2``, the cues that introduce an example,
  without "I suppose", "I can't imagine", a negated "example" ("there is no example") or a bare
  "example(s)"; precision and recall on the hand-labelled sentences of tests/rubric/data/example_cues.jsonl
  are in docs/validity.md.

Embeddings here are rows of unit-length vectors (what the encoder returns with normalisation on);
the functions divide by norms anyway where a mean is taken.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import numpy as np

from rubric.errors import ConfigError
from rubric.scoring.grammar import grammar_score

__all__ = [
    "CPU_RELEVANCE_VERSION", "CPU_COHERENCE_VERSION", "CPU_COMPLETENESS_VERSION", "CPU_FACTUALITY_VERSION",
    "CPU_SPECIFICITY_VERSION", "CPU_EXAMPLES_VERSION", "CPU_FLUENCY_VERSION",
    "FACTUALITY_NO_EVIDENCE", "QUESTION_TERM_POS", "CONCRETE_POS", "EXAMPLE_CUE", "FLUENCY_HARPER_KINDS",
    "centroid", "relevance_score", "coherence_score", "soft_recall", "term_coverage", "completeness_score",
    "support_score", "concreteness", "example_cues", "count_fluency_lints", "fluency_score",
    "CPU_RELEVANCE_V2", "CPU_COHERENCE_V2", "CPU_COMPLETENESS_V2", "CPU_COMPLETENESS_REFERENCE", "CPU_FACTUALITY_V2",
    "CPU_EXAMPLES_V2", "REPEAT_COS", "EXAMPLE_CUE_V2", "distinct_sentences", "novelty", "sentence_information",
    "relevance_v2", "completeness_v2", "coherence_v2", "example_cues_v2", "ZIPF_TOP", "MIN_TERM_WEIGHT", "term_weight",
]

CPU_RELEVANCE_VERSION = "relevance.minilm.v1"
CPU_COHERENCE_VERSION = "coherence.minilm.v1"
CPU_COMPLETENESS_VERSION = "completeness.coverage.v1"
CPU_FACTUALITY_VERSION = "factuality.support.v1"
CPU_SPECIFICITY_VERSION = "specificity.concrete.v1"
CPU_EXAMPLES_VERSION = "use_of_examples.cues.v1"
CPU_FLUENCY_VERSION = "fluency.harper.v1"
CPU_RELEVANCE_V2 = "relevance.minilm.v2"
CPU_COHERENCE_V2 = "coherence.minilm.v2"
CPU_COMPLETENESS_V2 = "completeness.coverage.v2"
CPU_COMPLETENESS_REFERENCE = "completeness.reference.v1"
CPU_FACTUALITY_V2 = "factuality.support.v2"
CPU_EXAMPLES_V2 = "use_of_examples.cues.v2"

#: Cosine at or above which a sentence says again what an earlier sentence of the same answer said. On
#: MiniLM, paraphrases sit above it and adjacent sentences of real answers below it (0.46-0.62 on a heat
#: pump answer; the question restated four ways: 0.87-0.91).
REPEAT_COS = 0.85

#: The Zipf frequency of the commonest English words (wordfreq's scale tops out near 7.7 for "the"), and the
#: least weight a term gets (:func:`term_weight`).
ZIPF_TOP = 8.0
MIN_TERM_WEIGHT = 0.5

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

#: use_of_examples.cues.v2's cues: v1's less the readings that introduce no example. "imagine" and
#: "suppose" only as an invitation (sentence-initial, or after "just"/"now"/"let's", followed by what is
#: imagined), never after "I"/"can't"; "example(s)" only as "for example", "as an example", "one/an example
#: (is|of|would be)", "examples include" or "example:"; a cue right after a negation ("no", "not",
#: "without", "never") is not one (:func:`example_cues_v2`).
EXAMPLE_CUE_V2 = re.compile(
    r"(?<![\w.])(?:for example|for instance|e\.\s?g\.|such as|to illustrate|as an example|"
    r"(?:an?|one|another|good|classic|simple|common|typical) example (?:is|of|would be|being)|examples include|"
    r"example\s*:|let'?s say|(?:^|(?<=[.!?:;,]\s))say (?:you|your)|"
    r"(?:(?:^|(?<=[.!?:;]\s)|(?<=\bjust\s)|(?<=\bnow\s)|(?<=\bso\s)|(?<=\blet's\s))(?:imagine|suppose|picture)\s+"
    r"(?:that|you|your|we|a|an|the|if|someone|there)))(?!\w)", re.IGNORECASE | re.MULTILINE)

_NEGATED = re.compile(r"(?:\b(?:no|not|without|never|nor)|n't)\s+(?:\w+\s+)?$", re.IGNORECASE)

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


def distinct_sentences(sentences: np.ndarray) -> list[int]:
    """Indices of the sentences that do not repeat an earlier one (cosine < ``REPEAT_COS`` with every kept one)."""
    s = _unit(_rows(sentences, "sentence embeddings"))
    kept: list[int] = []
    for i in range(len(s)):
        if not kept or float((s[kept] @ s[i]).max()) < REPEAT_COS:
            kept.append(i)
    return kept


def term_weight(zipf: float) -> float:
    """A word's information weight from its Zipf frequency (log10 of uses per billion words, wordfreq's scale):
    ``ZIPF_TOP - zipf`` (its surprisal in log10 units, up to a constant), at least ``MIN_TERM_WEIGHT``. "people"
    (6.25) weighs 1.75, "refrigerant" (2.66) 5.34; a word the list does not know (0) weighs ``ZIPF_TOP``."""
    return max(MIN_TERM_WEIGHT, ZIPF_TOP - float(zipf))


def novelty(sentence_terms: Iterable[str], question_terms: Iterable[str],
            weights: Mapping[str, float] | None = None) -> float:
    """The share of a sentence's content terms (weighted by ``weights``, 1 each when None) that the question
    does not contain; 0.0 without terms."""
    terms = set(sentence_terms)
    if not terms:
        return 0.0
    w = (lambda t: 1.0) if weights is None else weights.__getitem__
    new = terms - set(question_terms)
    if new == terms:  # exactly 1: the two sums below may differ in their last bit when taken in another order
        return 1.0
    return min(1.0, sum(w(t) for t in new) / sum(w(t) for t in terms))


def sentence_information(question: np.ndarray, sentences: np.ndarray, novelties: Iterable[float]) -> np.ndarray:
    """What each sentence says about the question: cosine with it (floored at 0) times its novelty, in [0, 1]."""
    q = _unit(np.asarray(question, dtype=np.float64).reshape(-1))
    nov = np.asarray(list(novelties), dtype=np.float64)
    s = _unit(_rows(sentences, "sentence embeddings"))
    if nov.shape != (len(s),) or np.any((nov < 0) | (nov > 1)):
        raise ConfigError(f"need one novelty in [0, 1] per sentence ({len(s)}), got {nov.tolist()}")
    return np.clip(s @ q, 0.0, 1.0) * nov


def relevance_v2(information: np.ndarray) -> float:
    """relevance.minilm.v2: the mean information of the distinct sentences, in [0, 1]."""
    info = np.asarray(information, dtype=np.float64)
    if info.size == 0:
        raise ConfigError("relevance needs at least one sentence")
    return float(info.mean())


def completeness_v2(information: np.ndarray) -> float:
    """completeness.coverage.v2: ``1 - prod(1 - information)`` over the distinct sentences, in [0, 1]."""
    info = np.clip(np.asarray(information, dtype=np.float64), 0.0, 1.0)
    return float(1.0 - np.prod(1.0 - info))


def coherence_v2(sentences: np.ndarray) -> tuple[float, float, int] | None:
    """coherence.minilm.v2: ``(mean link, least link, repeated sentences)`` over adjacent sentences, or None
    with fewer than two sentences (no link to judge: the rubric abstains).

    A link is the two sentences' cosine floored at 0; a link into a sentence that repeats an earlier one
    (cosine >= ``REPEAT_COS``) is 0.
    """
    s = _unit(_rows(sentences, "sentence embeddings"))
    if len(s) < 2:
        return None
    sims = np.clip(s @ s.T, -1.0, 1.0)
    links, repeats = [], 0
    for i in range(1, len(s)):
        if float(sims[i, :i].max()) >= REPEAT_COS:
            repeats += 1
            links.append(0.0)
        else:
            links.append(max(float(sims[i - 1, i]), 0.0))
    return float(np.mean(links)), float(np.min(links)), repeats


def example_cues_v2(text: str) -> list[str]:
    """The example cues of ``text`` under use_of_examples.cues.v2 (``EXAMPLE_CUE_V2``), lower-cased, in order."""
    out = []
    for m in EXAMPLE_CUE_V2.finditer(text):
        if _NEGATED.search(text[max(0, m.start() - 40):m.start()]):
            continue
        out.append(m.group(0).lower())
    return out
