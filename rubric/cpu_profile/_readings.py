"""What a CPU version reads of an answer: the parse it is handed (:class:`Parsed`, filled by the shared pass's spaCy
reading in ``models.rubric_backends``) and the readings of the answer the versions choose from (:data:`READINGS`: with
or without its copies, under which of the question's words, cut at line breaks or not). A new reading is one line of
:data:`READINGS`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from rubric.cpu_profile._text import without_repeats

__all__ = ["QUESTION_TERM_POS", "CONCRETE_POS", "Reading", "COPY_RULES", "READINGS", "Parsed"]

#: Universal POS tags of a question's content words (what an answer should cover).
QUESTION_TERM_POS: frozenset[str] = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "NUM"})

#: POS tags that make a word concrete by themselves (besides being inside a named entity).
CONCRETE_POS: frozenset[str] = frozenset({"PROPN", "NUM"})


@dataclass(frozen=True)
class Reading:
    """One reading of what an answer's sentences say about its question.

    Attributes:
        copies: the copy rule (a key of :data:`COPY_RULES`) the answer is read without; None: the answer as given.
        question: the question's words a sentence's novelty leaves out (and, without copies, its text read without
            them, ``CPURow.M``): "lemmas" (its content lemmas), "terms"
            (its content words and lemmas as written and in plain case, ``CPURow.question_terms``), "words" (those
            and its words whether or not spaCy's stop list holds them, ``CPURow.question_words``) or "open" (those and
            every other word of it but its function words, whatever the tagger calls it, ``CPURow.question_open``).
        codes: a sentence's words written with letters and digits ("ww1") are among its terms.
        lines: the answer's sentences are cut at line breaks too (a list's items are sentences).
    """

    copies: str | None
    question: str
    codes: bool = False
    lines: bool = False


#: The rules that cut an answer's word-for-word copies of earlier text (:func:`without_repeats`):
#: "clean", the third versions'; "tidy", the versions after them, which also cut a copy glued right after itself;
#: "aligned", the versions after those, which keep a copy in phase with the sentences.
COPY_RULES: dict[str, Callable[[str], tuple[str, list[int]]]] = {
    "clean": without_repeats,
    "tidy": functools.partial(without_repeats, glued=True),
    "aligned": functools.partial(without_repeats, glued=True, aligned=True),
}

#: The readings, each named by the declarations that read it (``CPUVersion.reading``); the answer's copies are cut,
#: parsed and embedded only for a reading a served version reads.
#:
#: - "given": the answer as given, its novelty against the question's content lemmas (the second versions);
#: - "clean": the answer without its copies, read without ``question_terms`` (the third versions, coherence.minilm.v4);
#: - "words": without its copies, glued ones too, read without the question's words whether or not spaCy's stop list
#:   holds them, words written with digits counted as words on both sides (relevance.minilm.v4,
#:   completeness.coverage.v4: a question's "ww1" or "back" said again is no information);
#: - "lines": "words" with the sentences cut at line breaks too (coherence.minilm.v5: a list's items are sentences,
#:   with links between them);
#: - "aligned_words", "aligned_lines": "words" and "lines" over the answer without its copies cut in phase with its
#:   sentences (relevance.minilm.v5, completeness.coverage.v5; coherence.minilm.v6);
#: - "open_words", "open_lines": "aligned_words" and "aligned_lines" read without every word of the question but its
#:   function words (``Parsed.open``), whatever the tagger calls them (relevance.minilm.v6, completeness.coverage.v6;
#:   coherence.minilm.v7: a question's "far away", "mint.com" or a word the tagger reads as a pronoun, said again, is
#:   no information).
READINGS: dict[str, Reading] = {
    "given": Reading(None, "lemmas"),
    "clean": Reading("clean", "terms"),
    "words": Reading("tidy", "words", codes=True),
    "lines": Reading("tidy", "words", codes=True, lines=True),
    "aligned_words": Reading("aligned", "words", codes=True),
    "aligned_lines": Reading("aligned", "words", codes=True, lines=True),
    "open_words": Reading("aligned", "open", codes=True),
    "open_lines": Reading("aligned", "open", codes=True, lines=True),
}


@dataclass
class Parsed:
    """What the rubrics read of one parsed text."""

    sentences: list[str]
    terms: set[str] = field(default_factory=set)  # content lemmas (questions)
    forms: set[str] = field(default_factory=set)  # the content words as written, lower-cased (questions)
    words: set[str] = field(default_factory=set)  # the question's words, stop list or not (questions: the "words" readings' words)
    open: set[str] = field(default_factory=set)  # its words but its function words (questions: the "open" readings' words)
    lemmas: set[str] = field(default_factory=set)  # every lemma and lower-cased form (answers)
    sentence_terms: list[set[str]] = field(default_factory=list)  # each sentence's content lemmas (answers)
    sentence_codes: list[set[str]] = field(default_factory=list)  # each sentence's words with digits (answers)
    sentence_words: list[list[tuple[str, str, str]]] = field(default_factory=list)  # (text and space, lemma, lower)
    lines: "Parsed | None" = None  # the same sentences cut again at line breaks (answers: cut at line breaks)
    n_words: int = 0
    n_concrete: int = 0
    n_entities: int = 0
