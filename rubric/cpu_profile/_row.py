"""What the CPU profile's shared pass hands each item's versions: :class:`CPURow`, the answer's parse and
embeddings under each reading a served version reads, the question's, the evidence's, and what each sentence says
about the question (relevance, completeness and coherence share it). The pass that fills it (spaCy, MiniLM) is
``models.rubric_backends``'; nothing here loads a model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rubric.cpu_profile._formulas import distinct_sentences, novelty, sentence_information
from rubric.cpu_profile._readings import READINGS, Parsed
from rubric.io import AnswerItem

__all__ = ["CPURow"]


@dataclass
class CPURow:
    """What the shared pass gives one item's versions.

    Attributes:
        item: the answer item.
        answer: its parse (sentences, each one's content lemmas, counts).
        question: the question's parse (its content lemmas); None when no served version needs it.
        S / q: the answer's sentence embeddings and the question's (None without embeddings).
        evidence / E: the evidence sentences a version that needs "evidence" reads (reference, then the answer's
            documents; at most the pass's ``MAX_EVIDENCE_SENTENCES``) and their embeddings; ``evidence_cut`` when a
            cap cut them.
        reference / R: the question's reference answer's sentences and embeddings (what a version that needs
            "reference" reads).
        free: per copy rule (:data:`COPY_RULES`) a served reading reads, the answer without its word-for-word copies
            of earlier text: its parse, its text and where in that text each copy was cut.
        X: per reading but "given" (:data:`READINGS`) a served version reads, its sentences' embeddings.
        M: per reading without copies a served version reads, the answer's sentences without the question's words
            (:func:`rubric.cpu_profile.without_question_words`), one embedding each (None: nothing else is left).
        question_terms: the question's content words and their lemmas, read as written and in plain case (the
            "terms" and "words" readings'): an answer's "Sardines" (a name to the tagger, lemma "sardines") is the
            question's "sardines".
        question_words: the question's words for the "words" readings (``Parsed.words``), as
            written and in plain case.
        question_open: the question's words but its function words, for the "open" readings (``Parsed.open``), as
            written and in plain case.

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
