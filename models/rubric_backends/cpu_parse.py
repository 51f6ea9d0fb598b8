"""What the CPU profile reads of a spaCy parse (``models.rubric_backends.cpu_rubrics``'s shared pass): an answer's
sentences, as the sentence recogniser gives them and cut at line breaks too, each one's content terms, words with
digits and words; a question's terms and words; and the readings of an answer the profile's versions choose from
(:data:`READINGS`: with or without its copies, under which of the question's words).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rubric.scoring import CONCRETE_POS, QUESTION_TERM_POS, list_marker, without_repeats

__all__ = ["Parsed", "parse_answer", "parse_question", "sentences_of", "Reading", "READINGS", "COPY_RULES"]


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


#: The rules that cut an answer's word-for-word copies of earlier text (:func:`rubric.scoring.without_repeats`):
#: "clean", the third versions'; "tidy", the versions after them, which also cut a copy glued right after itself;
#: "aligned", the versions after those, which keep a copy in phase with the sentences.
COPY_RULES: dict[str, Callable[[str], tuple[str, list[int]]]] = {
    "clean": without_repeats,
    "tidy": functools.partial(without_repeats, glued=True),
    "aligned": functools.partial(without_repeats, glued=True, aligned=True),
}

#: The readings, each named by the need (``CPUUnit.needs``) that asks for it; the answer's copies are cut, parsed and
#: embedded only for a reading a served unit needs.
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
#:   function words (``_open_words``), whatever the tagger calls them (relevance.minilm.v6, completeness.coverage.v6;
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
    words: set[str] = field(default_factory=set)  # the question's words, stop list or not (questions: _question_words)
    open: set[str] = field(default_factory=set)  # its words but its function words (questions: _open_words)
    lemmas: set[str] = field(default_factory=set)  # every lemma and lower-cased form (answers)
    sentence_terms: list[set[str]] = field(default_factory=list)  # each sentence's content lemmas (answers)
    sentence_codes: list[set[str]] = field(default_factory=list)  # each sentence's words with digits (answers)
    sentence_words: list[list[tuple[str, str, str]]] = field(default_factory=list)  # (text and space, lemma, lower)
    lines: "Parsed | None" = None  # the same sentences cut again at line breaks (answers: _lines)
    n_words: int = 0
    n_concrete: int = 0
    n_entities: int = 0


def _word_like(tok: Any) -> bool:
    return tok.is_alpha or tok.like_num or tok.pos_ == "NUM"


def _content_words(tokens) -> list:
    """Content words: nouns, proper nouns, verbs, adjectives and numbers that are not stop words."""
    return [t for t in tokens if t.pos_ in QUESTION_TERM_POS and not t.is_stop and (t.is_alpha or t.like_num)]


def _content_terms(tokens) -> set[str]:
    """Content lemmas (of :func:`_content_words`), lower-cased."""
    return {t.lemma_.lower() for t in _content_words(tokens)}


def _is_code(t: Any) -> bool:
    """A word written with letters and digits ("ww1", "mp3", "B12"): a name or a code, which
    :func:`_content_words` leaves out (spaCy reads it neither as alphabetic nor as a number)."""
    return t.text.isalnum() and any(c.isalpha() for c in t.text) and any(c.isdigit() for c in t.text)


def _codes(tokens) -> set[str]:
    """The words written with letters and digits, lower-cased, whatever their tag."""
    return {t.lower_ for t in tokens if _is_code(t)}


def _question_words(tokens) -> set[str]:
    """What the question says, for the fourth reading: its nouns, proper nouns, verbs, adjectives and numbers
    *whether or not spaCy's stop list holds them* ("back" in "How To Crack Your Back", "make", "side", "top" are on
    it) and its words written with digits, each lower-cased as written and as its lemma."""
    said = [t for t in tokens if (t.pos_ in QUESTION_TERM_POS and (t.is_alpha or t.like_num)) or _is_code(t)]
    return {t.lower_ for t in said} | {t.lemma_.lower() for t in said}


_PIECE = re.compile(r"[^\W_]+")


def _open_words(tokens) -> set[str]:
    """What the question says, for the "open" readings (the sixth versions): every word but its function words,
    whatever the tagger calls it (spaCy tags "far" and "away" adverbs, "mint.com" X, a rare word a pronoun or a
    determiner: none of them is among :func:`_question_words`), each lower-cased as written, as its lemma and as the
    pieces punctuation joins ("mint.com": "mint", "com"). A function word is a word on spaCy's stop list ("what",
    "the", "ever") or punctuation; :func:`_question_words` keeps the stop-listed nouns, verbs, adjectives and numbers
    ("back", "make")."""
    out = set()
    for t in tokens:
        pieces = _PIECE.findall(t.lower_)
        if pieces and not (t.is_stop or t.is_punct):
            out |= {t.lower_, t.lemma_.lower(), *pieces}
    return out


def _kept_sents(doc: Any) -> list:
    return [s for s in doc.sents if any(c.isalnum() for c in s.text)]


def _lines(doc: Any) -> list:
    """spaCy's sentences cut again at every line break: a list's items, a heading and the line after it are
    sentences of their own (the sentence recogniser reads a numbered list without full stops as one sentence, so a
    coherent list of ten steps had no link to judge)."""
    out = []
    for sent in doc.sents:
        start = sent.start
        for t in sent:
            if "\n" in t.text or "\n" in t.whitespace_:
                end = t.i if t.is_space else t.i + 1
                out.append(doc[start:end])
                start = t.i + 1
        out.append(doc[start:sent.end])
    kept, marker = [], None
    for span in out:  # a piece without a word of two letters ("1.", "-", "**") is a list marker: it opens the next
        if marker is not None:
            span, marker = doc[marker.start:span.end], None
        if list_marker(span.text):
            marker = span
        elif any(c.isalnum() for c in span.text):
            kept.append(span)
    return kept


def _sentence_parse(sents: list, **counts: Any) -> Parsed:
    """What the rubrics read of each of ``sents`` (spans of one parsed answer)."""
    return Parsed(sentences=[s.text.strip() for s in sents], sentence_terms=[_content_terms(s) for s in sents],
                   sentence_codes=[_codes(s) for s in sents],
                   sentence_words=[[(t.text_with_ws, t.lemma_.lower(), t.lower_) for t in s] for s in sents], **counts)


def parse_answer(doc: Any, lines: bool = False) -> Parsed:
    """What the rubrics read of an answer's parse; with ``lines``, also its sentences cut at line breaks."""
    words = [t for t in doc if _word_like(t)]
    concrete = sum(1 for t in words if t.ent_type_ or t.pos_ in CONCRETE_POS or t.like_num)
    lemmas = {t.lemma_.lower() for t in doc} | {t.lower_ for t in doc}
    return _sentence_parse(_kept_sents(doc), lemmas=lemmas, n_words=len(words), n_concrete=concrete,
                           n_entities=len(doc.ents), lines=_sentence_parse(_lines(doc)) if lines else None)


def parse_question(doc: Any) -> Parsed:
    return Parsed(sentences=[doc.text.strip()], terms=_content_terms(doc),
                   forms={t.lower_ for t in _content_words(doc)}, words=_question_words(doc),
                   open=_open_words(doc))


def sentences_of(doc: Any) -> list[str]:
    return [s.text.strip() for s in _kept_sents(doc)]
