"""What the CPU profile reads of a spaCy parse (``models.rubric_backends.cpu_rubrics``'s shared pass), as a
``rubric.cpu_profile.Parsed``: an answer's sentences, as the sentence recogniser gives them and cut at line breaks too,
each one's content terms, words with digits and words; a question's terms and words. The readings of an answer the
versions choose from are ``rubric.cpu_profile.READINGS``.
"""

from __future__ import annotations

import re
from typing import Any

from rubric.cpu_profile import CONCRETE_POS, QUESTION_TERM_POS, Parsed, list_marker

__all__ = ["parse_answer", "parse_question", "sentences_of"]


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
