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
from rubric.cpu_profile import list_marker

__all__ = ["Split", "split_sentences", "join", "insert_after", "main_noun_phrase", "NUMBER", "names", "numbers", "question_body"]

# A sentence ends at . ! ? (closing quotes or brackets after it) followed by whitespace, or at a newline.
_END = re.compile(r"(?<=[.!?])[\"')\]\u201d\u2019]*\s+|\s*\n\s*")
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
        if list_marker(piece):  # a list marker or markup joins the next piece
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
# A word of a question: letters with the digits written inside it ("ww1", "mp3", "covid-19"); a bare number
# ("1914") is not a topic word.
_WORD = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*")
_DETERMINERS = frozenset("a an the my your our their his her its this that these those".split())
# What a question asks for, not what it is about: "definition of a sigmet", "types of dysarthria".
_ASKING = frozenset("definition definitions define meaning meanings mean means type types kind kinds way ways "
                    "example examples difference differences cause causes".split())
# Words that join two topics into one ("wifi vs bluetooth", "salt and pepper").
_JOINERS = frozenset("vs versus and or &".split())
# Common English verbs in their base form: the verb of "How To Cook Pork Tenderloin" or "what can contour plowing
# reduce" is what the question asks to do, not its topic. A general list (the verbs how-to and why-questions open
# with), not one read off any data set; a verb it misses is still caught after "to".
_VERBS = frozenset("""
act add affect apply ask avoid bake be become begin boil break bring build burn buy calculate call care catch cause
change check choose clean climb close come consist contain convert cook count cover crack create cure cut deal
decide decorate delete describe design die do download draw dress drink drive dry earn eat enter evict explain
fall feel fight fill find fix fly fold follow freeze fry get give go grill grow hang happen have hear help hide
hold identify improve increase install keep kill know learn leave let lift light like live look lose make manage
measure meet move need open own paint pass pay peel pick plan plant play prepare prevent protect pull put raise
reach read reduce register remove repair replace reset respond roast run save say see sell send set sew show
sing sit sleep speak spend stand start stay steam stop store strip study survive take talk teach tell test think
tie train travel treat try tune turn tutor understand use visit wait walk want wash watch wear win work write
""".split())


def question_body(question: str) -> str:
    """The question without its question word, auxiliaries and final mark: "How does a heat pump heat a
    house?" -> "a heat pump heat a house" (empty when nothing is left)."""
    words = question.strip().rstrip("?.! ").split()
    k = 0
    while k < len(words) and words[k].lower().strip(",") in _QUESTION_WORDS:
        k += 1
    return " ".join(words[k:])


def _topic_runs(found: list[str]) -> list[list[int]]:
    """The runs of content words of a question's words, with a verb taken off a run's edges: a run's first
    word when it is a listed verb or follows "to", its last when it is a listed verb and no determiner opens
    the run ("contour plowing reduce" but "the pilot light"). Two runs joined by "vs", "and" or "or" are one."""
    lower = [w.lower() for w in found]
    runs: list[list[int]] = []
    current: list[int] = []
    for i, w in enumerate(lower):
        if w in STOPWORDS or w in _QUESTION_WORDS or w in _ASKING or w.isdigit():
            if current:
                runs.append(current)
            current = []
        else:
            current.append(i)
    if current:
        runs.append(current)
    trimmed = []
    for run in runs:
        before = lower[run[0] - 1] if run[0] > 0 else ""
        if before not in _JOINERS and (lower[run[0]] in _VERBS or before == "to"):
            run = run[1:]
        if len(run) > 1 and lower[run[-1]] in _VERBS and before not in _DETERMINERS:
            run = run[:-1]
        if run:
            trimmed.append(run)
    if not trimmed:  # "How To Lactate": the verb is all there is
        trimmed = runs
    joined: list[list[int]] = []
    for run in trimmed:
        prev = joined[-1] if joined else None
        if prev and run[0] - prev[-1] == 2 and lower[run[0] - 1] in _JOINERS:
            joined[-1] = prev + [run[0] - 1] + run
        else:
            joined.append(run)
    return joined


def main_noun_phrase(question: str) -> str:
    """A guess at the question's topic without a parser: the first of the longest runs of content words
    (verbs taken off its edges, "vs"/"and"/"or" joining two runs into one); from a determiner on, its first
    two words ("a heat pump heat" -> "heat pump"), otherwise its last two ("cook pork tenderloin" -> "pork
    tenderloin"); a joined run whole, two words a side ("wifi vs bluetooth"). Lower case unless a word is
    capitalised mid-question (a name). Falls back to "this topic"."""
    matches = list(_WORD.finditer(question))
    found = [m.group() for m in matches]
    runs = _topic_runs(found)
    if not runs:
        return "this topic"
    run = max(runs, key=lambda r: len([i for i in r if found[i].lower() not in _JOINERS]))  # first of the longest
    joiner = next((k for k, i in enumerate(run) if found[i].lower() in _JOINERS), None)
    after_det = run[0] > 0 and found[run[0] - 1].lower() in _DETERMINERS
    if joiner is not None:
        chosen = run[max(0, joiner - 2):joiner + 3]
    else:
        chosen = run[:2] if after_det else run[-2:]
        if len(chosen) > 1 and found[chosen[0]].lower() in _VERBS:  # "volunteerily enter ww1" -> "ww1"
            chosen = chosen[1:]
    # a capital inside an all-capitalised question ("How To Cook Pork") is a title's, not a name's
    title = sum(1 for x in found if x[:1].isupper()) > len(found) / 2
    out = [found[i] if (found[i][:1].isupper() and i > 0 and not title) else found[i].lower() for i in chosen]
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
