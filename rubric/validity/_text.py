"""The text pieces the families work on, without a parser (``rubric/`` imports no spaCy): sentences as
spans that keep the text between them, a question's main noun phrase, numbers and capitalised names.

A perturbation rearranges sentence *slots*: each sentence keeps its neighbours' separators (a
newline, a list's line break, one space), so a shuffled or cut answer keeps the original's layout and
only the quality a family is about changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rubric.perturbation import STOPWORDS

__all__ = ["Split", "split_sentences", "join", "insert_after", "main_noun_phrase", "NUMBER", "names", "numbers", "question_body"]

# A sentence ends at . ! ? (closing quotes or brackets after it) followed by whitespace, or at a newline.
_END = re.compile(r"(?<=[.!?])[\"')\]\u201d\u2019]*\s+|\s*\n\s*")
# A piece with no word of two letters ("1.", "-", "**") is a list marker or markup: it joins the next piece.
_WORDISH = re.compile(r"[^\W\d_]{2,}")
# Abbreviations whose full stop does not end a sentence.
_ABBREV = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|Dr|Mr|Mrs|Ms|St|No|approx|U\.S|a\.m|p\.m)\.)$", re.IGNORECASE)


@dataclass(frozen=True)
class Split:
    """A text cut into sentences: ``head`` + s0 + sep0 + s1 + sep1 + ... + s(n-1) + ``tail`` is the text.

    Attributes:
        head: whitespace before the first sentence.
        sentences: the sentences, stripped.
        seps: the text between sentence i and i+1 (``len(sentences) - 1`` of them).
        tail: whitespace after the last sentence.
    """

    head: str
    sentences: tuple[str, ...]
    seps: tuple[str, ...]
    tail: str


def split_sentences(text: str) -> Split:
    """Cut ``text`` into sentences (see :class:`Split`); ``join(split_sentences(t)) == t``."""
    body = text.strip()
    head = text[:len(text) - len(text.lstrip())]
    tail = text[len(text.rstrip()):] if body else ""
    if not body:
        return Split(text, (), (), "")
    pieces: list[str] = []
    seps: list[str] = []
    start = 0
    for m in _END.finditer(body):
        if m.end() >= len(body):
            break
        piece = body[start:m.start()]
        if "\n" not in m.group() and (_ABBREV.search(piece) or body[m.end()].islower()):
            continue  # "e.g. the", "it costs 3.5 p.m. at" : not a sentence end
        pieces.append(piece)
        seps.append(m.group())
        start = m.end()
    pieces.append(body[start:])
    # list markers and markup join the piece after them (with the separator between)
    out: list[str] = []
    out_seps: list[str] = []
    carry = ""
    last = len(pieces) - 1
    for i, piece in enumerate(pieces):
        if not _WORDISH.search(piece):
            if i < last:
                carry += piece + seps[i]
                continue
            if out:  # marker-only pieces at the end: part of the last sentence
                out[-1] += out_seps.pop() + carry + piece
                continue
        out.append(carry + piece)
        carry = ""
        if i < last:
            out_seps.append(seps[i])
    return Split(head, tuple(out), tuple(out_seps), tail)


def join(split: Split, sentences: list[str] | tuple[str, ...] | None = None) -> str:
    """The text of ``split`` with ``sentences`` in its slots (default: its own). More sentences than slots
    are joined by the last separator (or one space); fewer keep the first separators."""
    sents = list(split.sentences if sentences is None else sentences)
    if not sents:
        return ""
    seps = list(split.seps) or [" "]
    while len(seps) < len(sents) - 1:
        seps.append(seps[-1] if "\n" in seps[-1] else " ")
    parts = [split.head]
    for i, s in enumerate(sents):
        parts.append(s)
        if i < len(sents) - 1:
            parts.append(seps[i])
    parts.append(split.tail)
    return "".join(parts)


def insert_after(split: Split, i: int, sentence: str) -> str:
    """The text of ``split`` with ``sentence`` right after sentence ``i``, one space between them; every other
    separator stays where it was (a paragraph break after sentence ``i`` now follows the inserted one)."""
    sents = list(split.sentences)
    seps = list(split.seps)
    parts = [split.head]
    for k, s in enumerate(sents):
        parts.append(s)
        if k == i:
            parts.extend([" ", sentence])
        if k < len(seps):
            parts.append(seps[k])
    parts.append(split.tail)
    return "".join(parts)


# The opening of a question that is no part of its topic: a question word and the auxiliaries after it.
_QUESTION_WORDS = frozenset("how why what when where which who whom whose is are was were do does did can could "
                            "should would will shall may might has have had to explain describe tell".split())
_WORD = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*|\d+")
_DETERMINERS = frozenset("a an the my your our their his her its this that these those".split())


def question_body(question: str) -> str:
    """The question without its question word, auxiliaries and final mark: "How does a heat pump heat a
    house?" -> "a heat pump heat a house" (empty when nothing is left)."""
    words = question.strip().rstrip("?.! ").split()
    k = 0
    while k < len(words) and words[k].lower().strip(",") in _QUESTION_WORDS:
        k += 1
    return " ".join(words[k:])


def main_noun_phrase(question: str) -> str:
    """A guess at the question's topic without a parser: the longest run of content words; from a
    determiner on, its first two words ("a heat pump heat" -> "heat pump"), otherwise its last two
    ("cook pork tenderloin" -> "pork tenderloin"). Lower case unless a word is capitalised mid-question
    (a name). Falls back to "this topic"."""
    found = [(m.group(), m.start()) for m in _WORD.finditer(question)]
    runs: list[list[int]] = []
    current: list[int] = []
    for i, (w, _) in enumerate(found):
        if w.lower() in STOPWORDS or w.lower() in _QUESTION_WORDS or w.isdigit():
            if current:
                runs.append(current)
            current = []
        else:
            current.append(i)
    if current:
        runs.append(current)
    if not runs:
        return "this topic"
    run = max(runs, key=len)  # first of the longest
    after_det = run[0] > 0 and found[run[0] - 1][0].lower() in _DETERMINERS
    chosen = run[:2] if after_det else run[-2:]
    out = []
    for i in chosen:
        w = found[i][0]
        # a capital inside an all-capitalised question ("How To Cook Pork") is a title's, not a name's
        title = sum(1 for x, _ in found if x[:1].isupper()) > len(found) / 2
        out.append(w if (w[:1].isupper() and i > 0 and not title) else w.lower())
    return " ".join(out)


#: A number: digits with inner separators, an optional sign and decimal part ("425", "1,000", "3.5", "20-25").
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?:[-\u2013]\d+(?:[.,]\d+)*)?(?![\w])")
_CAPITALISED = re.compile(r"\b[A-Z][a-zA-Z]+(?:[-'][A-Za-z]+)?\b")


# A list marker opening a sentence ("1.", "2)", "-", "*"): not a number of the text, and the word after it opens
# the sentence.
_MARKER = re.compile(r"^\s*(?:\d{1,3}[.)]|[-*\u2022])\s+")
_ALPHA = re.compile(r"[^\W\d_]+")


def names(sentence: str) -> list[re.Match]:
    """Capitalised words inside ``sentence``: its first word, the word after a colon or a line break (a list
    item's heading, "Stay Hydrated: Drink...") and "I" are not names."""
    first = _ALPHA.search(sentence)
    skip = first.start() if first else -1
    out = []
    for m in _CAPITALISED.finditer(sentence):
        before = sentence[:m.start()].rstrip(" *")
        if m.start() == skip or m.group() == "I" or before.endswith((":", "\n")) or not before:
            continue
        out.append(m)
    return out


def numbers(sentence: str) -> list[re.Match]:
    """The numbers of ``sentence`` (a list marker that opens it is not one)."""
    marker = _MARKER.match(sentence)
    start = marker.end() if marker else 0
    return [m for m in NUMBER.finditer(sentence) if m.start() >= start]
