"""The CPU profile's readings of an answer's text, before or without a parse: its word-for-word copies of earlier
text (:func:`without_repeats`, :func:`copied_sentences`), a sentence without the question's words, a heading in plain
case, list markers; the example cues of use_of_examples (v1, v2) and the Harper findings fluency counts (v1, v2).
What each version reads and why is in ``rubric.cpu_profile._formulas``' docstring."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rubric.errors import ConfigError
from rubric.scoring import grammar_score

__all__ = [
    "UNKNOWN_WORD_ZIPF", "EXAMPLE_CUE", "EXAMPLE_CUE_V2", "FLUENCY_HARPER_KINDS", "example_cues", "example_cues_v2",
    "count_fluency_lints", "count_fluency_lints_v2", "fluency_score", "copied_sentences", "without_question_words",
    "plain_case", "list_marker", "REPEAT_MIN_WORDS_WHOLE", "REPEAT_MIN_WORDS", "REPEAT_MIN_WORDS_INSIDE",
    "without_repeats",
]

#: fluency.harper.v2 counts a Harper spelling finding only on a word general English hardly uses: a Zipf
#: frequency (wordfreq) below this. Typos made by character edits land at 0-1.2 ("thgih" 0, "approch" 1.2);
#: technical terms and names sit above ("subducted" 1.91, "tenderloin" 2.58, "skincare" 3.32), and so do the
#: commonest misspellings ("recieve" 2.75, "teh" 3.04), which wordfreq has seen often enough to list.
UNKNOWN_WORD_ZIPF = 1.5

#: The explicit cues that introduce an example. "like" and "consider" are left out: most of their
#: uses are not examples ("feels like", "consider using").
EXAMPLE_CUE = re.compile(
    r"(?<![\w.])(?:for example|for instance|e\.\s?g\.|such as|examples?|to illustrate|imagine|suppose|"
    r"let'?s say|say you)(?!\w)", re.IGNORECASE)

#: use_of_examples.cues.v2's cues: v1's less the readings that introduce no example. "imagine" and
#: "suppose" only as an invitation (sentence-initial, or after "just"/"now"/"let's", followed by what is
#: imagined), never after "I"/"can't"; "example(s)" only as "for example", "as an example", "one/an example
#: (is|of|would be)", "examples include" or "example:"; a cue right after a negation ("no", "not",
#: "without", "never") is not one (:func:`example_cues_v2`).
EXAMPLE_CUE_V2 = re.compile(
    r"(?<![\w.])(?:for example|for instance|e\.\s?g\.|such as|to illustrate|as an example|"
    r"(?:an?|one|another|good|classic|simple|common|typical) example (?:is|of|would be|being)|examples include|"
    r"example\s*:|let'?s say|(?:^|(?<=[.!?:;,]\s))say (?:you|your)|"
    r"(?:(?:^|(?<=[.!?:;]\s)|(?<=\bjust\s)|(?<=\bnow\s)|(?<=\bso\s)|(?<=\blet's\s))(?:imagine|suppose|picture)\s+"
    r"(?:that|you|your|we|a|an|the|if|someone|there)))(?!\w)", re.IGNORECASE | re.MULTILINE)

_NEGATED = re.compile(r"(?:\b(?:no|not|without|never|nor)|n't)\s+(?:\w+\s+)?$", re.IGNORECASE)

#: Harper lint kinds fluency counts: the prose's surface errors that grammar does not count.
#: Left out: grammar's own kinds; Spelling (on web answers mostly words outside Harper's
#: dictionary: names and technical terms, which specificity rewards); Formatting (whitespace of
#: extracted text); house-style preferences (Style: the Oxford comma, WordChoice: closed compounds,
#: Enhancement, Nonstandard, Regionalism) and the Miscellaneous catch-all.
FLUENCY_HARPER_KINDS: frozenset[str] = frozenset({
    "Typo", "BoundaryError", "Eggcorn", "Malapropism", "Capitalization", "Punctuation", "Repetition",
    "Readability", "Redundancy"})


def example_cues(text: str) -> list[str]:
    """The example cues in ``text``, lower-cased, in order (``EXAMPLE_CUE``)."""
    return [m.group(0).lower() for m in EXAMPLE_CUE.finditer(text)]


def count_fluency_lints(kinds: Iterable[str]) -> int:
    """How many Harper lints (by ``lint_kind``) fluency counts (``FLUENCY_HARPER_KINDS``)."""
    return sum(1 for k in kinds if k in FLUENCY_HARPER_KINDS)


def count_fluency_lints_v2(kinds: Iterable[str], spelling_zipfs: Iterable[float]) -> int:
    """fluency.harper.v2's count: v1's (``count_fluency_lints``) plus the spelling findings whose word's Zipf
    frequency is below ``UNKNOWN_WORD_ZIPF`` (``spelling_zipfs``: one per Spelling finding)."""
    return count_fluency_lints(kinds) + sum(1 for z in spelling_zipfs if z < UNKNOWN_WORD_ZIPF)


def fluency_score(n_errors: int, text: str) -> float:
    """fluency.harper.v1: grammar's error-rate score (1-5) of the fluency findings."""
    return grammar_score(n_errors, text)


def copied_sentences(text: str, sentences: Sequence[str], cuts: Sequence[int]) -> list[bool]:
    """For each of ``text``'s ``sentences`` (in order, each a substring of ``text``), whether a copy was cut from it
    (one of the ``cuts``, offsets in ``text`` as :func:`without_repeats` returns them, lies inside it or at its end):
    the sentence that was said twice, or what is left of a sentence that held a copy.

    Raises:
        ConfigError: a sentence that is not in ``text`` after the one before it.
    """
    out, pos = [], 0
    for sent in sentences:
        at = text.find(sent, pos)
        if at < 0:
            raise ConfigError(f"sentence {sent[:40]!r} is not in the text after the sentence before it")
        pos = at + len(sent)
        out.append(any(at < c <= pos for c in cuts))
    return out


def without_question_words(words: Iterable[tuple[str, str, str]], asked: set[str]) -> str:
    """A sentence without the question's words: its ``words`` (each its text with the space after it, its lemma and
    its lower-cased form, both lower-case) but those whose lemma or form is in ``asked``, joined and stripped; ""
    when nothing with a letter or digit is left (the sentence only said the question's words)."""
    text = "".join(t for t, lemma, lower in words if lemma not in asked and lower not in asked).strip()
    return text if any(c.isalnum() for c in text) else ""


def plain_case(text: str) -> str:
    """A heading's capitals lowered ("How To Eat Sardines" -> "how to eat sardines"): when more than half of its
    words (more than two) start with a capital, every word but "I" is lower-cased; any other text is returned as it
    is. A parser reads a heading's capitalised words as names; the plain text reads as the question it asks."""
    ws = [w for w in text.split() if w[:1].isalpha()]
    if not (len(ws) > 2 and sum(w[:1].isupper() for w in ws) > len(ws) / 2):
        return text
    return re.sub(r"\S+", lambda m: m.group(0) if m.group(0) == "I" else m.group(0).lower(), text)


_WORDISH = re.compile(r"[^\W\d_]{2,}")


def list_marker(piece: str) -> bool:
    """Whether a piece of text (a sentence or line as a splitter cut it) is a list marker or markup, not a sentence:
    it holds no word of two letters ("1.", "-", "**", "2)"). Such a piece opens the sentence after it."""
    return not _WORDISH.search(piece)


def example_cues_v2(text: str) -> list[str]:
    """The example cues of ``text`` under use_of_examples.cues.v2 (``EXAMPLE_CUE_V2``), lower-cased, in order."""
    out = []
    for m in EXAMPLE_CUE_V2.finditer(text):
        if _NEGATED.search(text[max(0, m.start() - 40):m.start()]):
            continue
        out.append(m.group(0).lower())
    return out


#: The least words of a run that :func:`without_repeats` removes as a copy: a whole sentence or line said again
#: (the copy and what it copies both between breaks), a run that starts where a sentence or line starts, and one
#: that starts inside a sentence (a shorter run there is phrasing, not a repeat).
REPEAT_MIN_WORDS_WHOLE = 2
REPEAT_MIN_WORDS = 3
REPEAT_MIN_WORDS_INSIDE = 5

_WORD = re.compile(r"\w+")
_BREAK = re.compile(r"[\n*•]|[.!?;:]\W*\s")


def without_repeats(text: str, glued: bool = False, aligned: bool = False) -> tuple[str, list[int]]:
    """``text`` with every later word-for-word copy of earlier text removed, and where each copy was cut: its offset
    in the returned text (right after the word the copy followed).

    Read left to right, a run of words (case aside) that already occurred, whole, earlier in the text is a copy
    when it ends at a break (a line break, a list bullet or one of ``. ! ? ; :`` and a space before the next word
    — "U.S." or "1.5" is no break —, or the text's end) and is at least one word long when it is a whole sentence or line said again right after itself,
    ``REPEAT_MIN_WORDS_WHOLE`` words when it and its earlier occurrence are whole sentences or lines
    (both between breaks), ``REPEAT_MIN_WORDS`` when it starts at a break, ``REPEAT_MIN_WORDS_INSIDE`` when it starts
    inside a sentence; the longest such run is taken. The text from the end of the word before a copy to the end of
    the copy is cut, so a sentence said again right after itself (on its own line, or glued to its line without a
    break) leaves the text it was said in, however a sentence splitter would have cut it.

    With ``glued`` (the versions after the third), a run said again right after itself that starts, the first time,
    at a break and ends, the second time, at one is a copy from ``REPEAT_MIN_WORDS_WHOLE`` words, with no break
    between the two: "- Clear school glue - Clear school glue" (a hyphen is no break) and "Skip to main content Skip
    to main content". The third versions read the text without it (their definition stays).

    With ``aligned`` too (the versions after the fourth relevance and completeness, fifth coherence), a copy keeps in
    phase with the sentences: a run that starts inside a sentence, copying text that starts inside one too, is a copy
    only up to that sentence's end (it may not cross a break; a run that copies from a break on, such as a list item
    glued after itself, "3. First aid kit 3. First aid kit", is in phase), so a sentence said again right after
    itself whose last words also end the text before it
    ("… for back pain:\n\n1. Find the points that ease back pain. 1. Find the points that ease back pain.") is cut
    as the whole sentence said again, not as "back pain. 1. Find the points" and the rest, which took "back pain" from
    the sentence that stays.
    """
    spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    words = [text[a:b].lower() for a, b in spans]
    n = len(words)
    if n < 2 * REPEAT_MIN_WORDS_WHOLE:
        return text, []
    # brk[k]: a break between word k-1 and word k (brk[0] and brk[n]: the text's ends)
    brk = [True] + [bool(_BREAK.search(text, spans[k - 1][1], spans[k][0])) for k in range(1, n)] + [True]
    seen: dict[str, list[int]] = {}  # each earlier word -> where it occurs
    cut = [False] * n
    copies: list[int] = []  # the first word of each copy
    i = 0
    while i < n:
        best = 0
        for j in seen.get(words[i], ()):
            length = 0
            while i + length < n and j + length < i and words[j + length] == words[i + length]:
                length += 1
            for m in range(length, 0, -1):  # the longest run that is a copy
                if not brk[i + m] or (aligned and not brk[i] and not brk[j] and any(brk[i + 1:i + m])):
                    continue
                whole = brk[i] and brk[j] and brk[j + m]
                least = (1 if whole and j + m == i else REPEAT_MIN_WORDS_WHOLE if whole
                         else REPEAT_MIN_WORDS_WHOLE if glued and j + m == i and brk[j]
                         else REPEAT_MIN_WORDS if brk[i] else REPEAT_MIN_WORDS_INSIDE)
                if m >= least:
                    best = max(best, m)
                    break
        if best and i > 0:
            cut[i:i + best] = [True] * best
            copies.append(i)
            for k in range(i, i + best):  # the copy's own runs are earlier text for what follows
                seen.setdefault(words[k], []).append(k)
            i += best
            continue
        seen.setdefault(words[i], []).append(i)
        i += 1
    if not copies:
        return text, []
    out, pos, k, size = [], 0, 0, 0
    join: dict[int, int] = {}  # the first word of each cut run -> where the text closes over it
    while k < n:
        if not cut[k]:
            k += 1
            continue
        e = k
        while e < n and cut[e]:
            e += 1
        out.append(text[pos:spans[k - 1][1]])  # k > 0: a copy follows what it copies
        size += len(out[-1])
        join.update(dict.fromkeys(range(k, e), size))
        pos = spans[e - 1][1]
        k = e
    out.append(text[pos:])
    return "".join(out), [join[i] for i in copies]
