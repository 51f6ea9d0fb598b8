"""The perturbation families: each changes one quality of an answer and as little else as possible, and says
for which rubrics that change has a known direction (CheckList's minimal pairs, Ribeiro et al. 2020;
Sai et al. 2021's perturbation checklists for NLG metrics).

A family's ``build(row, rng, others)`` returns the perturbed answer, or None when it cannot apply to the
row (one sentence to shuffle, no example to drop, no evidence to contradict). ``rng`` is a
``random.Random`` seeded from the run's seed, the family and the answer; ``others`` are the rows of the
other questions (``splice`` and ``other_answer`` take from them). A family that ``needs`` a tool (``synonyms``:
:mod:`rubric.validity._paraphrase`'s) gets it as a keyword argument of that name. Nothing is fitted and no rubric's
formula is copied: the rules are about the text.

Expectations (what a rubric of that name should do on the perturbed copy, against the original):
``lower`` (pass: lower by more than the tolerance), ``not_higher`` (pass: not higher by more than the
tolerance; a tie passes) and ``same`` (an invariance: pass when the difference is within it).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from rubric.errors import ConfigError
from rubric.perturbation import STOPWORDS, char_edits, match_case, replace_words, words
from rubric.registry import Registry
from rubric.cpu_profile import plain_case
from rubric.validity._text import insert_after, join, main_noun_phrase, names, numbers, question_body, split_sentences

__all__ = ["Row", "Family", "FAMILIES", "EXPECTATIONS", "TOOLS", "family_names", "EXAMPLE_CUE"]

#: The expectations a family may declare for a rubric.
EXPECTATIONS: tuple[str, ...] = ("lower", "not_higher", "same")
#: The tools a family may need (``Family.needs``): ``synonyms``, a source of a word's synonyms (``candidates(word)``).
TOOLS: tuple[str, ...] = ("synonyms",)


@dataclass(frozen=True)
class Row:
    """One distinct answer read from an input, with what a family may need.

    Attributes:
        question_id: the question's id (the bootstrap's cluster).
        question: the question.
        answer: the answer.
        reference: the question's reference answer, if the input has one.
        docs: the answer's attached documents.
        answer_id: the original's id (``rubric.io.content_id``).
    """

    question_id: str
    question: str
    answer: str
    reference: str | None = None
    docs: tuple[str, ...] = ()
    answer_id: str = ""


Builder = Callable[[Row, random.Random, Sequence[Row]], "str | None"]


@dataclass(frozen=True)
class Family:
    """One perturbation family.

    Attributes:
        name: the family's name (``--families``).
        expect: rubric name -> its expectation (:data:`EXPECTATIONS`).
        description: one line for the report.
        build: ``build(row, rng, others[, tool=...]) -> perturbed answer | None``.
        needs: the tools ``build`` takes by keyword (:data:`TOOLS`), given by the job.
    """

    name: str
    expect: Mapping[str, str]
    description: str
    build: Builder = field(repr=False, compare=False)
    needs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        bad = {r: e for r, e in self.expect.items() if e not in EXPECTATIONS}
        if bad:
            raise ConfigError(f"family {self.name!r}: expectations must be one of {', '.join(EXPECTATIONS)}, got {bad}")
        unknown = [n for n in self.needs if n not in TOOLS]
        if unknown:
            raise ConfigError(f"family {self.name!r} needs {unknown}; the tools a job gives: {', '.join(TOOLS)}")
        object.__setattr__(self, "expect", MappingProxyType(dict(self.expect)))
        object.__setattr__(self, "needs", tuple(self.needs))


#: Every family, by name.
FAMILIES: Registry[Family] = Registry("validity family")


_ORDER: list[str] = []


def _family(name: str, expect: Mapping[str, str], description: str,
            needs: Sequence[str] = ()) -> Callable[[Builder], Builder]:
    def register(fn: Builder) -> Builder:
        FAMILIES.register(name, Family(name, expect, description, fn, tuple(needs)))
        _ORDER.append(name)
        return fn
    return register


def family_names() -> list[str]:
    """The families in declaration order (the report's order)."""
    return [n for n in _ORDER if n in FAMILIES]


# Echo, repetition and a topical non-answer never outrank the answer they were made from on these (issue 44).
_NEVER_OUTRANK = ("relevance", "coherence", "completeness")


def _never_outrank(own: str) -> dict[str, str]:
    return {r: ("lower" if r == own else "not_higher") for r in _NEVER_OUTRANK}


# --- coherence -------------------------------------------------------------------------------------

@_family("shuffle", {"coherence": "lower", "grammar": "same", "conciseness": "same", "specificity": "same"},
         "sentences in another order (the same sentences, the layout kept)")
def _shuffle(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    split = split_sentences(row.answer)
    sents = list(split.sentences)
    if len(set(sents)) < 2:
        return None
    order = list(range(len(sents)))
    for _ in range(20):  # bounded: with two distinct sentences a shuffle differs half the time
        rng.shuffle(order)
        if [sents[i] for i in order] != sents:
            return join(split, [sents[i] for i in order])
    order = list(range(1, len(sents))) + [0]  # a rotation always differs when two sentences do
    return join(split, [sents[i] for i in order])


@_family("repeat", _never_outrank("coherence"), "one sentence repeated right after itself")
def _repeat(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    split = split_sentences(row.answer)
    if not split.sentences:
        return None
    i = rng.randrange(len(split.sentences))
    return insert_after(split, i, split.sentences[i])


def _other(row: Row, rng: random.Random, others: Sequence[Row]) -> Row | None:
    """A row of another question, drawn by ``rng`` (a few draws first: an input holds many questions)."""
    for _ in range(32):
        if not others:
            return None
        o = others[rng.randrange(len(others))]
        if o.question_id != row.question_id and o.answer.strip():
            return o
    pool = [o for o in others if o.question_id != row.question_id and o.answer.strip()]
    return rng.choice(pool) if pool else None


@_family("splice", {"coherence": "lower"}, "a sentence of another question's answer spliced into the middle")
def _splice(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    split = split_sentences(row.answer)
    other = _other(row, rng, others)
    if len(split.sentences) < 2 or other is None:
        return None
    foreign = [s for s in split_sentences(other.answer).sentences if len(s.split()) >= 4] or \
        list(split_sentences(other.answer).sentences)
    return insert_after(split, len(split.sentences) // 2 - 1, rng.choice(foreign))


# --- relevance -------------------------------------------------------------------------------------

_RESTATE = (
    "The question is {q}.",
    "This is about {q}.",
    "People often ask {q}.",
    "Many wonder {q}.",
    "So, {q}?",
)


@_family("echo", _never_outrank("relevance"),
         "the answer replaced by the question restated: the question, then two or three rephrasings made by rules")
def _echo(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    q = " ".join(row.question.split()).rstrip()
    if not q:
        return None
    asked = q.rstrip("?.! ")
    asked = plain_case(asked)  # "How To Cook Pork Tenderloin": a heading's capitals, not names
    lowered = asked[:1].lower() + asked[1:] if not asked[:2].isupper() else asked
    body = question_body(asked)
    rephrasings = [t.format(q=lowered) for t in _RESTATE]
    if body:  # the question word dropped: a statement of the question's own words
        rephrasings.append(body[:1].upper() + body[1:] + ".")
    rng.shuffle(rephrasings)
    first = q if q.endswith(("?", ".", "!")) else q + "?"
    return " ".join([first, *rephrasings[:rng.choice((2, 3))]])


@_family("other_answer", {"relevance": "lower"}, "the answer of another question in its place")
def _other_answer(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    other = _other(row, rng, others)
    return None if other is None or other.answer == row.answer else other.answer


_NON_ANSWER = (
    "{NP} is a topic that many people are curious about.",
    "There are many different opinions about {np}.",
    "{NP} can be looked at from several points of view.",
    "It is worth thinking carefully about {np}.",
    "Questions about {np} come up quite often.",
    "People have been interested in {np} for a long time.",
    "A lot has been written about {np} over the years.",
    "Understanding {np} can take some time and effort.",
    "Everyone has their own experience with {np}.",
    "{NP} means different things to different people.",
)


@_family("non_answer", _never_outrank("relevance"),
         "a topical non-answer: generic sentences about the question's main noun phrase that answer nothing")
def _non_answer(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    np_ = main_noun_phrase(row.question)
    chosen = rng.sample(_NON_ANSWER, rng.choice((3, 4)))
    cap = np_[:1].upper() + np_[1:]
    return " ".join(t.format(np=np_, NP=cap) for t in chosen)


# --- completeness ----------------------------------------------------------------------------------

@_family("first_sentence", {"completeness": "lower"}, "the answer cut to its first sentence")
def _first_sentence(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    split = split_sentences(row.answer)
    return join(split, split.sentences[:1]) if len(split.sentences) >= 2 else None


@_family("first_half", {"completeness": "lower"}, "the answer cut to the first half of its sentences")
def _first_half(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    split = split_sentences(row.answer)
    n = len(split.sentences)
    return join(split, split.sentences[:n // 2]) if n >= 2 else None


# --- conciseness -----------------------------------------------------------------------------------

_FILLER = (
    "It is important to note that this is something that is worth keeping in mind.",
    "In other words, as was mentioned above, this is basically how it is.",
    "All in all, at the end of the day, that is really what it all comes down to.",
    "Needless to say, there are of course a number of other things that could also be said about this.",
    "As a matter of fact, it is fair to say that this is the way that it is.",
    "To put it simply, that is more or less all there is to it.",
)


@_family("filler", {"conciseness": "lower"}, "generic filler sentences appended")
def _filler(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    split = split_sentences(row.answer)
    if not split.sentences:
        return None
    return join(split, [*split.sentences, *rng.sample(_FILLER, rng.choice((2, 3)))])


# --- specificity -----------------------------------------------------------------------------------

_VAGUE_NUMBERS = ("some", "several", "a few", "a number of")
_VAGUE_NAMES = ("something", "a certain one", "somewhere", "someone")


@_family("vague", {"specificity": "lower"}, "numbers and capitalised names replaced by vague words")
def _vague(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    split = split_sentences(row.answer)
    out, changed = [], 0
    for s in split.sentences:
        spans = [(m.start(), m.end(), rng.choice(_VAGUE_NUMBERS)) for m in numbers(s)]
        taken = [(a, b) for a, b, _ in spans]
        for m in names(s):
            if not any(a < m.end() and m.start() < b for a, b in taken):
                spans.append((m.start(), m.end(), rng.choice(_VAGUE_NAMES)))
        for a, b, word in sorted(spans, reverse=True):
            s = s[:a] + word + s[b:]
            changed += 1
        out.append(s)
    return join(split, out) if changed else None


# --- use of examples -------------------------------------------------------------------------------

#: An explicit example: the cues a reader takes as "here is an example" (narrow on purpose: "imagine",
#: "suppose" and "like" also open other things, and a row without a real example must not be perturbed).
EXAMPLE_CUE = re.compile(r"\b(?:for example|for instance|e\.g\.|such as|to illustrate|as an example|an example)\b",
                         re.IGNORECASE)


@_family("drop_example", {"use_of_examples": "lower"}, "the sentences with an explicit example removed")
def _drop_example(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    split = split_sentences(row.answer)
    kept = [s for s in split.sentences if not EXAMPLE_CUE.search(s)]
    if len(kept) == len(split.sentences) or not kept:
        return None
    return join(split, kept)


# --- grammar and fluency ---------------------------------------------------------------------------

_AGREEMENT = {"is": "are", "are": "is", "was": "were", "were": "was", "has": "have", "have": "has",
              "does": "do", "do": "does", "isn't": "aren't", "aren't": "isn't", "wasn't": "weren't",
              "weren't": "wasn't", "doesn't": "don't", "don't": "doesn't"}
_LANGUAGE = {"grammar": "lower", "fluency": "lower"}


@_family("agreement", _LANGUAGE, "subject-verb agreement errors (is/are, was/were, has/have, does/do swapped)")
def _agreement(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    found = words(row.answer)
    verbs = [w for w in found if w.text.lower().replace("\u2019", "'") in _AGREEMENT]
    if not verbs:
        return None
    k = min(len(verbs), 3)
    chosen = rng.sample(verbs, k)
    return replace_words(row.answer, {w.index: match_case(w.text, _AGREEMENT[w.text.lower().replace("\u2019", "'")])
                                      for w in chosen}, found)


@_family("typos", _LANGUAGE, "character typos in about one content word in ten (DeepWordBug's edits)")
def _typos(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    found = words(row.answer)
    content = [w for w in found if w.text.lower() not in STOPWORDS and len(w.text) >= 4]
    k = min(len(content), max(2, math.ceil(0.1 * len(content))))
    if k == 0:
        return None
    replacements = {}
    for w in rng.sample(content, k):
        edits = char_edits(w.text, rng)
        if edits:
            replacements[w.index] = rng.choice(edits)
    return replace_words(row.answer, replacements, found) if replacements else None


_FUNCTION_WORDS = frozenset("a an the of to in on at for with by from into about".split())


@_family("drop_function_words", _LANGUAGE, "half of the articles and prepositions dropped")
def _drop_function_words(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    found = [w for w in words(row.answer) if w.text.lower() in _FUNCTION_WORDS]
    if not found:
        return None
    k = max(1, math.ceil(len(found) / 2))
    text = row.answer
    for w in sorted(rng.sample(found, k), key=lambda w: w.start, reverse=True):
        rest = text[w.end:]
        gap = len(rest) - len(rest.lstrip(" "))
        rest = rest[gap:] if gap else rest
        if w.text[:1].isupper() and rest[:1].islower():  # "The cat" -> "Cat", not "cat"
            rest = rest[:1].upper() + rest[1:]
        text = text[:w.start] + rest if gap else text[:w.start].rstrip(" ") + rest
    return text


# --- factuality ------------------------------------------------------------------------------------

_OTHER_NAMES = ("Norway", "Brazil", "Kenya", "Portugal", "Edison", "Newton", "Tokyo", "Chicago", "Mercury", "Oslo")


def _changed_number(text: str, rng: random.Random) -> str:
    digits = re.sub(r"\D", "", text.split("-")[0].split("\u2013")[0])
    value = int(digits[:9] or "0")
    new = value * rng.choice((2, 3)) + rng.randint(1, 9)
    return str(new)


@_family("changed_fact", {"factuality": "lower"},
         "a number or capitalised name that the evidence also has changed in the answer (rows with evidence only)")
def _changed_fact(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    evidence = " ".join([row.reference or "", *row.docs])
    if not evidence.strip():
        return None
    candidates: list[str] = []
    for s in split_sentences(row.answer).sentences:
        for m in numbers(s):
            candidates.append(m.group())
        for m in names(s):
            candidates.append(m.group())
    supported = sorted({c for c in candidates if re.search(rf"(?<![\w.]){re.escape(c)}(?![\w])", evidence)})
    if not supported:
        return None
    target = rng.choice(supported)
    if target[:1].isdigit():
        new = _changed_number(target, rng)
    else:
        pool = [n for n in _OTHER_NAMES if n not in evidence and n not in row.answer]
        new = rng.choice(pool) if pool else target[::-1].capitalize()
    return re.sub(rf"(?<![\w.]){re.escape(target)}(?![\w])", new, row.answer)
