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
  (``distinct_sentences``: a sentence whose cosine with an earlier one is >= ``REPEAT_COS``, or whose words are a
  run of an earlier one's, says it again) is
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
  is no unit): each link is their cosine (floored at 0) times the later sentence's novelty against the earlier
  one (weighted as relevance's): a step is coherent when it is related to what came before and adds to it, so
  sentences that keep restating a topic link weakly; a link into a sentence that repeats an earlier one is 0.
  With fewer than two sentences there is no link: the rubric abstains.
- factuality (``factuality.support.v2``): the answer's sentences against evidence both answers of a pair
  share, the question's reference answer; documents attached to one answer are that answer's sources, not
  shared evidence. Without a reference it abstains, so no answer is "checked" against nothing.
- fluency (``fluency.harper.v2``): v1's findings plus Harper's spelling findings on words general English
  hardly uses (``UNKNOWN_WORD_ZIPF``): v1 left every spelling finding out (on web answers most are names and
  technical terms), so it could not see a typo.
- use_of_examples (``use_of_examples.cues.v2``): ``EXAMPLE_CUE_V2``, the cues that introduce an example,
  without "I suppose", "I can't imagine", a negated "example" ("there is no example") or a bare
  "example(s)"; precision and recall on the hand-labelled sentences of tests/rubric/data/example_cues.jsonl
  are in docs/validity.md.

The third versions of relevance, coherence and completeness read the answer *without its copies*
(:func:`without_repeats`, before anything is parsed): v2 dropped a sentence that repeats an earlier one, but a
repeat glued to its own line ("* 1 cup flour * 1 cup flour") is one new sentence to the splitter, and a repeat could
still move v2 up (a median 0.002, on a quarter of WebGLM's answers). Text said again is cut, so it cannot add
information however it is split. Not cut by them: a copy after an inline "- " bullet ("- 1 cup flour - 1 cup flour": a
hyphen is no break, so the copy starts inside a sentence, where it needs ``REPEAT_MIN_WORDS_INSIDE`` words; the
versions after them cut it, ``without_repeats(glued=True)``) and a one-word line said again on its own line ("Terrier
Terrier"):

- relevance (``relevance.minilm.v3``) and completeness (``completeness.coverage.v3``): v2's formulas over the answer
  without its copies, with a sentence's information read from what it says *besides the question's words*: its
  cosine is the question's with the sentence with those words taken out (:func:`without_question_words`), times its
  novelty as before. v2's cosine was highest for a sentence about the question's topic that says nothing of it
  ("Heat pumps are a topic many people are curious about"); without "heat pumps" such a sentence is far from the
  question, while an answer's "they move heat from the outside air with a refrigerant" stays near it. The
  question's terms are read as written and in plain case (:func:`plain_case`: a heading's capitals make a tagger
  read "Sardines" as a name), as written words besides their lemmas, so an answer's "Sardines" is the question's
  "sardines".
- coherence (``coherence.minilm.v3``): v2's links over the answer without its copies, a link into a sentence that
  says nothing new being 0 (one that repeats an earlier sentence, as v2; one a copy was cut from,
  :func:`copied_sentences`; one that restates the question) and each copy one more link of 0 (:func:`coherence_v3`):
  saying a thing again, the question included, is a step that goes nowhere.

The fourth coherence (``coherence.minilm.v4``): v3's links, each times the later sentence's information
about the question (relevance.minilm.v3's; :func:`coherence_v4`). A coherent answer builds a body of information about
its question from sentence to sentence ("not just a heap of related information", G-Eval's definition); generic
sentences about the topic link closely and build nothing, so each of their steps is near 0 (v3: they outranked the
answer four times in ten). Coherence now shares relevance's reading of what a sentence says.

The fourth versions (``relevance.minilm.v4``, ``completeness.coverage.v4``, ``coherence.minilm.v5``): the same formulas
over the question's words read whole. The third versions took the question's words from its content words, which
leave out what spaCy's stop list holds ("back" in "How To Crack Your Back", "make", "side", "top") and what it reads
neither as alphabetic nor as a number ("ww1", "mp3"): a non-answer that said the question's "back" or "ww1" again kept
it as something new. The fourth reading takes the question's nouns, verbs, adjectives and numbers whether or not the
stop list holds them, and words written with letters and digits on both sides. coherence.minilm.v5 also cuts the
answer's sentences at line breaks: spaCy's sentence recogniser reads a numbered list without full stops as one
sentence, so a coherent list of steps had one link, or none (the formulas are here; the readings are the scorer's,
``rubric.cpu_profile.READINGS``).

The fifth versions (``relevance.minilm.v5``, ``completeness.coverage.v5``, ``coherence.minilm.v6``): the fourth versions
over the answer without its copies cut *in phase* with its sentences (``without_repeats(glued=True, aligned=True)``).
The fourth versions' rule could cut a sentence said again right after itself, whose last words also end the text before
it, as those words and the start of the copy ("back pain. 1. Locate the points", a run inside a sentence crossing its
end) and then the rest: as many words as the copy added, but the sentence that stays lost its last words and said more
that was new (validate's repeat family, with other seeds, raised relevance and completeness on WebGLM and on TREC-DL).
A run that starts inside a sentence, copying text that starts inside one too, is now a copy only up to that
sentence's end.

The sixth versions (``relevance.minilm.v6``, ``completeness.coverage.v6``, ``coherence.minilm.v7``; the preset's from
8542cbd until issue 56) read the
fifth versions' sentences without every word of the question but its function words (spaCy's stop list and
punctuation), whatever the tagger calls it, and without the pieces punctuation joins ("mint.com": "mint", "com"). The
fifth read only the question's nouns, verbs, adjectives and numbers, so a topical non-answer that said the question's
"far away" (adverbs), "mint.com" (X) or a rare word the tagger reads as a pronoun read as saying something (validate on
RAG-QA Arena's answers).

Embeddings here are rows of unit-length vectors (what the encoder returns with normalisation on);
the functions divide by norms anyway where a mean is taken.

The coherence formulas (v1 to v4; v5 is v4's over another reading) are ``_coherence``'s; the text-level readings
(copies, the question's words, example cues, fluency's findings) ``_text``'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from rubric.errors import ConfigError

__all__ = [
    "RESTATE_COS", "RESTATE_FLOOR", "REPEAT_COS", "ZIPF_TOP", "MIN_TERM_WEIGHT", "FACTUALITY_NO_EVIDENCE",
    "centroid", "relevance_score", "restating", "relevance_beyond_restating", "coverage_beyond_restating",
    "soft_recall", "term_coverage", "completeness_score", "support_score", "claims_support", "concreteness", "repeated_sentences",
    "distinct_sentences", "term_weight", "novelty", "sentence_information", "relevance_v2", "completeness_v2",
]

#: relevance.minilm.v7: a sentence at least this close to the question (MiniLM cosine) restates it. The question restated
#: sits at 0.81-0.96 to it, a real answer's sentences at 0.6-0.65 (a heat pump answer and its echo,
#: tests/models/test_cpu_rubrics.py).
RESTATE_COS = 0.8

#: factuality.support.v3: a sentence at least this close to the question (MiniLM cosine) is about it, and restates
#: it when it is closer to the question than to any evidence sentence. Real answers' sentences sit at 0.6-0.65 to
#: their question and closer to the evidence; the question restated sits at 0.81-0.96 (a heat pump answer and its
#: echo, tests/models/test_cpu_rubrics.py).
RESTATE_FLOOR = 0.5

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


def restating(question: np.ndarray, sentences: np.ndarray) -> np.ndarray:
    """For each sentence, whether it restates the question (MiniLM cosine with it at least ``RESTATE_COS``)."""
    q = _unit(np.asarray(question, dtype=np.float64).reshape(-1))
    return (_unit(_rows(sentences, "sentence embeddings")) @ q) >= RESTATE_COS


def relevance_beyond_restating(question: np.ndarray, sentences: np.ndarray,
                               texts: Sequence[str] | None = None) -> tuple[float, int]:
    """relevance.minilm.v7: relevance.minilm.v1 (the question against the centroid of the answer's sentences) over its
    distinct sentences (:func:`distinct_sentences`: one said again counts once) that do not restate the question
    (:func:`restating`), and how many did restate it; an answer that only restates its question scores 0.0 (it says
    nothing of it). In [-1, 1]."""
    again = restating(question, sentences)
    keep = [i for i in distinct_sentences(sentences, texts) if not again[i]]
    if not keep:
        return 0.0, int(again.sum())
    return relevance_score(question, np.asarray(sentences)[keep]), int(again.sum())


def coverage_beyond_restating(question_terms: Iterable[str], sentence_terms: Sequence[Iterable[str]],
                              again: Sequence[bool]) -> float | None:
    """completeness.coverage.v7: the share of the question's content terms said by the answer's sentences that do
    not restate the question (``again``, :func:`restating`); None when the question has none. An echo covers
    nothing."""
    said = set().union(*(set(t) for t, a in zip(sentence_terms, again) if not a))
    return term_coverage(question_terms, said)


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


def claims_support(sentences: np.ndarray, question: np.ndarray, evidence: np.ndarray) -> tuple[float, int]:
    """factuality.support.v3: how much of what the answer asserts the evidence supports, and how many assertions.

    A sentence that restates the question asserts nothing and is no claim (as VeriScore extracts no verifiable
    claim from "The question is how heat pumps work"): one that is about the question (cosine with it at least
    ``RESTATE_FLOOR``) and closer to the question than to any evidence sentence. Every other sentence is a claim,
    an off-topic one too (it is far from both, and unsupported). The score is :func:`soft_recall` of the claims in
    the evidence; an answer with no claim scores 0.0 (the paper's rule for factuality, as
    ``factuality.veriscore.v2``), never "supported".
    """
    s = _unit(_rows(sentences, "sentence embeddings"))
    q = _unit(np.asarray(question, dtype=np.float64).reshape(-1))
    e = _unit(_rows(evidence, "evidence"))
    to_question, to_evidence = s @ q, (s @ e.T).max(axis=1)
    claims = s[~((to_question >= RESTATE_FLOOR) & (to_question > to_evidence))]
    if len(claims) == 0:
        return 0.0, 0
    return soft_recall(claims, e), len(claims)


def concreteness(n_concrete: int, n_words: int) -> float:
    """specificity.concrete.v1: concrete words / words in [0, 1]; 0.0 without words.

    Raises:
        ConfigError: a negative count, or more concrete words than words.
    """
    if n_words < 0 or n_concrete < 0 or n_concrete > n_words:
        raise ConfigError(f"need 0 <= n_concrete <= n_words, got {n_concrete} and {n_words}")
    return n_concrete / n_words if n_words else 0.0


def _words(text: str) -> tuple[str, ...]:
    return tuple(re.findall(r"\w+", text.lower()))


def _inside(part: tuple[str, ...], whole: tuple[str, ...]) -> bool:
    n = len(part)
    return 0 < n <= len(whole) and any(whole[i:i + n] == part for i in range(len(whole) - n + 1))


def repeated_sentences(sentences: np.ndarray, texts: Iterable[str] | None = None) -> list[bool]:
    """For each sentence, whether it says again what an earlier one said: cosine >= ``REPEAT_COS`` with it, or
    (given the ``texts``) its words a run of the earlier sentence's words. The second catches a repeat that the
    sentence splitter cut differently (a list item glued to the sentence before it, then said again alone)."""
    s = _unit(_rows(sentences, "sentence embeddings"))
    words = [_words(t) for t in texts] if texts is not None else None
    if words is not None and len(words) != len(s):
        raise ConfigError(f"need one text per sentence ({len(s)}), got {len(words)}")
    out = []
    for i in range(len(s)):
        same = i > 0 and float((s[:i] @ s[i]).max()) >= REPEAT_COS
        if not same and words is not None:
            same = any(_inside(words[i], words[j]) for j in range(i))
        out.append(same)
    return out


def distinct_sentences(sentences: np.ndarray, texts: Iterable[str] | None = None) -> list[int]:
    """Indices of the sentences that do not repeat an earlier one (:func:`repeated_sentences`)."""
    return [i for i, rep in enumerate(repeated_sentences(sentences, texts)) if not rep]


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
