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
``models.rubric_backends.cpu_parse.READINGS``).

The fifth versions (``relevance.minilm.v5``, ``completeness.coverage.v5``, ``coherence.minilm.v6``): the fourth versions
over the answer without its copies cut *in phase* with its sentences (``without_repeats(glued=True, aligned=True)``).
The fourth versions' rule could cut a sentence said again right after itself, whose last words also end the text before
it, as those words and the start of the copy ("back pain. 1. Locate the points", a run inside a sentence crossing its
end) and then the rest: as many words as the copy added, but the sentence that stays lost its last words and said more
that was new (validate's repeat family, with other seeds, raised relevance and completeness on WebGLM and on TREC-DL).
A run that starts inside a sentence, copying text that starts inside one too, is now a copy only up to that
sentence's end.

The preset's now (``relevance.minilm.v6``, ``completeness.coverage.v6``, ``coherence.minilm.v7``) read the
fifth versions' sentences without every word of the question but its function words (spaCy's stop list and
punctuation), whatever the tagger calls it, and without the pieces punctuation joins ("mint.com": "mint", "com"). The
fifth read only the question's nouns, verbs, adjectives and numbers, so a topical non-answer that said the question's
"far away" (adverbs), "mint.com" (X) or a rare word the tagger reads as a pronoun read as saying something (validate on
RAG-QA Arena's answers).

Embeddings here are rows of unit-length vectors (what the encoder returns with normalisation on);
the functions divide by norms anyway where a mean is taken.

The coherence formulas (v1 to v4; v5 is v4's over another reading) are ``rubric.scoring.cpu_coherence``'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from rubric.errors import ConfigError
from rubric.scoring.grammar import grammar_score

__all__ = [
    "CPU_RELEVANCE_VERSION", "CPU_COHERENCE_VERSION", "CPU_COMPLETENESS_VERSION", "CPU_FACTUALITY_VERSION",
    "CPU_SPECIFICITY_VERSION", "CPU_EXAMPLES_VERSION", "CPU_FLUENCY_VERSION",
    "FACTUALITY_NO_EVIDENCE", "QUESTION_TERM_POS", "CONCRETE_POS", "EXAMPLE_CUE", "FLUENCY_HARPER_KINDS",
    "centroid", "relevance_score", "soft_recall", "term_coverage", "completeness_score",
    "support_score", "concreteness", "example_cues", "count_fluency_lints", "fluency_score",
    "CPU_RELEVANCE_V2", "CPU_COHERENCE_V2", "CPU_COMPLETENESS_V2", "CPU_COMPLETENESS_REFERENCE", "CPU_FACTUALITY_V2",
    "CPU_EXAMPLES_V2", "REPEAT_COS", "EXAMPLE_CUE_V2", "distinct_sentences", "novelty", "sentence_information",
    "relevance_v2", "completeness_v2", "example_cues_v2", "ZIPF_TOP", "MIN_TERM_WEIGHT", "term_weight",
    "CPU_FLUENCY_V2", "UNKNOWN_WORD_ZIPF", "count_fluency_lints_v2", "repeated_sentences",
    "CPU_RELEVANCE_V3", "CPU_COHERENCE_V3", "CPU_COMPLETENESS_V3", "without_repeats", "plain_case", "list_marker",
    "copied_sentences", "without_question_words", "CPU_COHERENCE_V4",
    "CPU_RELEVANCE_V4", "CPU_COMPLETENESS_V4", "CPU_COHERENCE_V5", "CPU_RELEVANCE_V5", "CPU_COMPLETENESS_V5",
    "CPU_COHERENCE_V6", "CPU_RELEVANCE_V6", "CPU_COMPLETENESS_V6", "CPU_COHERENCE_V7", "CPU_FACTUALITY_V3",
    "claims_support", "RESTATE_FLOOR", "CPU_COHERENCE_V8", "CPU_COMPLETENESS_V7",
    "CPU_RELEVANCE_V7", "CPU_INFORMATION", "RESTATE_COS", "relevance_beyond_restating", "restating", "coverage_beyond_restating",
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
CPU_FACTUALITY_V3 = "factuality.support.v3"
CPU_COHERENCE_V8 = "coherence.minilm.v8"
CPU_COMPLETENESS_V7 = "completeness.coverage.v7"
CPU_RELEVANCE_V7 = "relevance.minilm.v7"
CPU_INFORMATION = "information.minilm.v1"
CPU_EXAMPLES_V2 = "use_of_examples.cues.v2"
CPU_FLUENCY_V2 = "fluency.harper.v2"
CPU_RELEVANCE_V3 = "relevance.minilm.v3"
CPU_COHERENCE_V3 = "coherence.minilm.v3"
CPU_COMPLETENESS_V3 = "completeness.coverage.v3"
CPU_COHERENCE_V4 = "coherence.minilm.v4"
CPU_RELEVANCE_V4 = "relevance.minilm.v4"
CPU_COMPLETENESS_V4 = "completeness.coverage.v4"
CPU_COHERENCE_V5 = "coherence.minilm.v5"
CPU_RELEVANCE_V5 = "relevance.minilm.v5"
CPU_COMPLETENESS_V5 = "completeness.coverage.v5"
CPU_COHERENCE_V6 = "coherence.minilm.v6"
CPU_RELEVANCE_V6 = "relevance.minilm.v6"
CPU_COMPLETENESS_V6 = "completeness.coverage.v6"
CPU_COHERENCE_V7 = "coherence.minilm.v7"

#: fluency.harper.v2 counts a Harper spelling finding only on a word general English hardly uses: a Zipf
#: frequency (wordfreq) below this. Typos made by character edits land at 0-1.2 ("thgih" 0, "approch" 1.2);
#: technical terms and names sit above ("subducted" 1.91, "tenderloin" 2.58, "skincare" 3.32), and so do the
#: commonest misspellings ("recieve" 2.75, "teh" 3.04), which wordfreq has seen often enough to list.
UNKNOWN_WORD_ZIPF = 1.5

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


def example_cues(text: str) -> list[str]:
    """The example cues in ``text``, lower-cased, in order (``EXAMPLE_CUE``)."""
    return [m.group(0).lower() for m in EXAMPLE_CUE.finditer(text)]


def count_fluency_lints(kinds: Iterable[str]) -> int:
    """How many Harper lints (by ``lint_kind``) fluency counts (``FLUENCY_HARPER_KINDS``)."""
    return sum(1 for k in kinds if k in FLUENCY_HARPER_KINDS)


def count_fluency_lints_v2(kinds: Iterable[str], spelling_zipfs: Iterable[float]) -> int:
    """fluency.harper.v2's count: v1's (``count_fluency_lints``) plus the spelling findings whose word's Zipf
    frequency is below ``UNKNOWN_WORD_ZIPF`` (``spelling_zipfs``: one per Spelling finding)."""
    return count_fluency_lints(kinds) + sum(1 for z in spelling_zipfs if z < UNKNOWN_WORD_ZIPF)


def fluency_score(n_errors: int, text: str) -> float:
    """fluency.harper.v1: grammar's error-rate score (1-5) of the fluency findings."""
    return grammar_score(n_errors, text)


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


def copied_sentences(text: str, sentences: Sequence[str], cuts: Sequence[int]) -> list[bool]:
    """For each of ``text``'s ``sentences`` (in order, each a substring of ``text``), whether a copy was cut from it
    (one of the ``cuts``, offsets in ``text`` as :func:`without_repeats` returns them, lies inside it or at its end):
    the sentence that was said twice, or what is left of a sentence that held a copy.

    Raises:
        ConfigError: a sentence that is not in ``text`` after the one before it.
    """
    out, pos = [], 0
    for sent in sentences:
        at = text.find(sent, pos)
        if at < 0:
            raise ConfigError(f"sentence {sent[:40]!r} is not in the text after the sentence before it")
        pos = at + len(sent)
        out.append(any(at < c <= pos for c in cuts))
    return out


def without_question_words(words: Iterable[tuple[str, str, str]], asked: set[str]) -> str:
    """A sentence without the question's words: its ``words`` (each its text with the space after it, its lemma and
    its lower-cased form, both lower-case) but those whose lemma or form is in ``asked``, joined and stripped; ""
    when nothing with a letter or digit is left (the sentence only said the question's words)."""
    text = "".join(t for t, lemma, lower in words if lemma not in asked and lower not in asked).strip()
    return text if any(c.isalnum() for c in text) else ""


def plain_case(text: str) -> str:
    """A heading's capitals lowered ("How To Eat Sardines" -> "how to eat sardines"): when more than half of its
    words (more than two) start with a capital, every word but "I" is lower-cased; any other text is returned as it
    is. A parser reads a heading's capitalised words as names; the plain text reads as the question it asks."""
    ws = [w for w in text.split() if w[:1].isalpha()]
    if not (len(ws) > 2 and sum(w[:1].isupper() for w in ws) > len(ws) / 2):
        return text
    return re.sub(r"\S+", lambda m: m.group(0) if m.group(0) == "I" else m.group(0).lower(), text)


_WORDISH = re.compile(r"[^\W\d_]{2,}")


def list_marker(piece: str) -> bool:
    """Whether a piece of text (a sentence or line as a splitter cut it) is a list marker or markup, not a sentence:
    it holds no word of two letters ("1.", "-", "**", "2)"). Such a piece opens the sentence after it."""
    return not _WORDISH.search(piece)


def example_cues_v2(text: str) -> list[str]:
    """The example cues of ``text`` under use_of_examples.cues.v2 (``EXAMPLE_CUE_V2``), lower-cased, in order."""
    out = []
    for m in EXAMPLE_CUE_V2.finditer(text):
        if _NEGATED.search(text[max(0, m.start() - 40):m.start()]):
            continue
        out.append(m.group(0).lower())
    return out


#: The least words of a run that :func:`without_repeats` removes as a copy: a whole sentence or line said again
#: (the copy and what it copies both between breaks), a run that starts where a sentence or line starts, and one
#: that starts inside a sentence (a shorter run there is phrasing, not a repeat).
REPEAT_MIN_WORDS_WHOLE = 2
REPEAT_MIN_WORDS = 3
REPEAT_MIN_WORDS_INSIDE = 5

_WORD = re.compile(r"\w+")
_BREAK = re.compile(r"[\n*•]|[.!?;:]\W*\s")


def without_repeats(text: str, glued: bool = False, aligned: bool = False) -> tuple[str, list[int]]:
    """``text`` with every later word-for-word copy of earlier text removed, and where each copy was cut: its offset
    in the returned text (right after the word the copy followed).

    Read left to right, a run of words (case aside) that already occurred, whole, earlier in the text is a copy
    when it ends at a break (a line break, a list bullet or one of ``. ! ? ; :`` and a space before the next word
    — "U.S." or "1.5" is no break —, or the text's end) and is at least one word long when it is a whole sentence or line said again right after itself,
    ``REPEAT_MIN_WORDS_WHOLE`` words when it and its earlier occurrence are whole sentences or lines
    (both between breaks), ``REPEAT_MIN_WORDS`` when it starts at a break, ``REPEAT_MIN_WORDS_INSIDE`` when it starts
    inside a sentence; the longest such run is taken. The text from the end of the word before a copy to the end of
    the copy is cut, so a sentence said again right after itself (on its own line, or glued to its line without a
    break) leaves the text it was said in, however a sentence splitter would have cut it.

    With ``glued`` (the versions after the third), a run said again right after itself that starts, the first time,
    at a break and ends, the second time, at one is a copy from ``REPEAT_MIN_WORDS_WHOLE`` words, with no break
    between the two: "- Clear school glue - Clear school glue" (a hyphen is no break) and "Skip to main content Skip
    to main content". The third versions read the text without it (their definition stays).

    With ``aligned`` too (the versions after the fourth relevance and completeness, fifth coherence), a copy keeps in
    phase with the sentences: a run that starts inside a sentence, copying text that starts inside one too, is a copy
    only up to that sentence's end (it may not cross a break; a run that copies from a break on, such as a list item
    glued after itself, "3. First aid kit 3. First aid kit", is in phase), so a sentence said again right after
    itself whose last words also end the text before it
    ("… for back pain:\n\n1. Find the points that ease back pain. 1. Find the points that ease back pain.") is cut
    as the whole sentence said again, not as "back pain. 1. Find the points" and the rest, which took "back pain" from
    the sentence that stays.
    """
    spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    words = [text[a:b].lower() for a, b in spans]
    n = len(words)
    if n < 2 * REPEAT_MIN_WORDS_WHOLE:
        return text, []
    # brk[k]: a break between word k-1 and word k (brk[0] and brk[n]: the text's ends)
    brk = [True] + [bool(_BREAK.search(text, spans[k - 1][1], spans[k][0])) for k in range(1, n)] + [True]
    seen: dict[str, list[int]] = {}  # each earlier word -> where it occurs
    cut = [False] * n
    copies: list[int] = []  # the first word of each copy
    i = 0
    while i < n:
        best = 0
        for j in seen.get(words[i], ()):
            length = 0
            while i + length < n and j + length < i and words[j + length] == words[i + length]:
                length += 1
            for m in range(length, 0, -1):  # the longest run that is a copy
                if not brk[i + m] or (aligned and not brk[i] and not brk[j] and any(brk[i + 1:i + m])):
                    continue
                whole = brk[i] and brk[j] and brk[j + m]
                least = (1 if whole and j + m == i else REPEAT_MIN_WORDS_WHOLE if whole
                         else REPEAT_MIN_WORDS_WHOLE if glued and j + m == i and brk[j]
                         else REPEAT_MIN_WORDS if brk[i] else REPEAT_MIN_WORDS_INSIDE)
                if m >= least:
                    best = max(best, m)
                    break
        if best and i > 0:
            cut[i:i + best] = [True] * best
            copies.append(i)
            for k in range(i, i + best):  # the copy's own runs are earlier text for what follows
                seen.setdefault(words[k], []).append(k)
            i += best
            continue
        seen.setdefault(words[i], []).append(i)
        i += 1
    if not copies:
        return text, []
    out, pos, k, size = [], 0, 0, 0
    join: dict[int, int] = {}  # the first word of each cut run -> where the text closes over it
    while k < n:
        if not cut[k]:
            k += 1
            continue
        e = k
        while e < n and cut[e]:
            e += 1
        out.append(text[pos:spans[k - 1][1]])  # k > 0: a copy follows what it copies
        size += len(out[-1])
        join.update(dict.fromkeys(range(k, e), size))
        pos = spans[e - 1][1]
        k = e
    out.append(text[pos:])
    return "".join(out), [join[i] for i in copies]
