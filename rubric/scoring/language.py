"""Whether an answer is English: the check the English-only rubric versions make before they score one.

spaCy's English pipeline and Harper read English only. Given Hindi or Japanese, Harper finds no English
grammar or spelling error and spaCy's English tagger finds no content word it can count, so grammar,
fluency, conciseness and specificity gave top or meaningless marks with no flag anywhere (issue 59). Those
versions (:data:`ENGLISH_ONLY`) abstain on an answer :func:`not_english` calls another language: its value
is missing, with the reason, like any abstention (``rubric.scoring.Score.abstain``), and the manifest counts
it (``abstained_by_rubric``).

Two signals, both cheap and offline:

1. The script: an answer whose letters are mostly not Latin (Devanagari, kana and kanji, Cyrillic, Arabic,
   Hangul, ...) is not English.
2. The words of a Latin-script answer: the share that read as English words, a word being English when its
   English frequency (wordfreq's Zipf scale) is at least :data:`WORD_ZIPF` and no less than its frequency in
   any of :data:`OTHER_LANGUAGES`. Under :data:`MIN_ENGLISH_SHARE` the answer is not English. English
   frequency alone does not separate: Spanish and French share so many words with English's long tail that
   about half their words have an English Zipf of 3 or more (0.47 and 0.49 of the examples' words), more than
   the lowest English texts (0.385; 0.600 at the 0.1% quantile).

Measured (``python scripts/language_margin.py``; the examples are ``tests/rubric/language_examples.json``,
which ``tests/rubric/scoring/test_language.py`` checks): over the 36,927 English texts of ``../shared/data`` (WebGLM,
TREC-DL-NF, RAG-QA Arena, SummEval) and the bundled sample with at least 8 words, the lowest English share is
0.150 (a list of Iowa towns; LaTeX-heavy answers next, 0.20-0.22), the 0.1% quantile 0.408, the median 0.826,
and none of the 36,933 texts is called another language; answers written in Spanish, French, German,
Portuguese, Italian, Dutch, Polish, Czech, Turkish, Indonesian, Vietnamese, Romanian, Catalan, Danish, Finnish,
Hungarian, Swahili and romanised Hindi have 0.00-0.05. An answer of fewer than :data:`MIN_WORDS` words is not
judged by its words (too few to tell).

The word frequencies are given (``frequency``): this module reads no file; ``models.rubric_backends.language``
looks them up in wordfreq's lists.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable

__all__ = ["ENGLISH_ONLY", "LANGUAGE_CHECK", "OTHER_LANGUAGES", "WORD_ZIPF", "MIN_ENGLISH_SHARE", "MIN_LATIN_SHARE",
           "MIN_WORDS", "WordFrequency", "letter_scripts", "latin_words", "english_share", "not_english",
           "language_checks"]

#: The registered versions that read English only (spaCy's English pipeline, Harper): each abstains on an answer
#: :func:`not_english` calls another language.
ENGLISH_ONLY: frozenset[str] = frozenset({
    "conciseness.lexical_density.v1", "grammar.harper.v1", "fluency.harper.v1", "fluency.harper.v2",
    "specificity.concrete.v1",
})

#: The check's name and rule version, in the score store's key of every job with one of :data:`ENGLISH_ONLY`
#: (:func:`language_checks`): a store made before the check (a Hindi answer's 5.0) is scored again, never mixed
#: with abstentions under the same version name.
LANGUAGE_CHECK = "english.script-and-words.v1"

#: The Latin-script languages a word's English frequency is compared with (wordfreq's "small" lists: ~4 MB each
#: in memory). A language not here (Finnish, Hungarian, Swahili) still has few words that read as English.
OTHER_LANGUAGES: tuple[str, ...] = ("es", "fr", "de", "pt", "it", "nl", "sv", "da", "pl", "cs", "ro", "tr", "id",
                                    "vi")

#: The English Zipf frequency from which a word counts as an English word (3: once per million words).
WORD_ZIPF = 3.0
#: Under this share of its words read as English, a Latin-script answer is another language's.
MIN_ENGLISH_SHARE = 0.1
#: Under this share of its letters Latin, an answer is another script's.
MIN_LATIN_SHARE = 0.5
#: Fewer words than this: not judged.
MIN_WORDS = 3

#: ``frequency(word) -> (English Zipf, highest Zipf in OTHER_LANGUAGES)`` of a lower-cased word.
WordFrequency = Callable[[str], tuple[float, float]]

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


def _script(c: str) -> str:
    if c < "\x80":
        return "LATIN"
    name = unicodedata.name(c, "")
    return name.split(" ", 1)[0] if name else "UNKNOWN"


def letter_scripts(text: str) -> Counter:
    """How many of ``text``'s letters are of each script (the first word of their Unicode name: LATIN, CJK,
    HIRAGANA, DEVANAGARI, CYRILLIC, ...)."""
    return Counter(_script(c) for c in text if c.isalpha())


def latin_words(text: str) -> list[str]:
    """``text``'s words of Latin letters, two letters or more (a lone letter, "x" in a formula or "a", is a word of
    many languages and says nothing of which)."""
    return [w for w in _WORD.findall(text) if len(w) > 1 and all(_script(c) == "LATIN" for c in w)]


def english_share(words: Iterable[str], frequency: WordFrequency) -> tuple[float, int]:
    """(the share of ``words`` that read as English, how many words): a word reads as English when its English Zipf
    frequency is at least :data:`WORD_ZIPF` and no less than its frequency in any other language."""
    n = english = 0
    for w in words:
        n += 1
        en, other = frequency(w.lower())
        english += en >= WORD_ZIPF and en >= other
    return (english / n if n else 0.0), n


def not_english(text: str, frequency: WordFrequency) -> str | None:
    """Why ``text`` is not English (an abstention's reason, one line), or None (English, or too short to tell).

    Args:
        text: the answer.
        frequency: each lower-cased word's English and highest other-language Zipf frequency.
    """
    if not isinstance(text, str):
        return None
    scripts = letter_scripts(text)
    letters = sum(scripts.values())
    if not letters:
        return None
    latin = scripts.get("LATIN", 0) / letters
    if latin < MIN_LATIN_SHARE:
        top = ", ".join(s if len(s) <= 3 else s.title() for s, _ in scripts.most_common(2) if s != "LATIN")
        return (f"not English: {latin:.0%} of its letters are Latin (mostly {top}); this version reads English "
                "only")
    share, n = english_share(latin_words(text), frequency)
    if n >= MIN_WORDS and share < MIN_ENGLISH_SHARE:
        return (f"not English: {share:.0%} of its {n} words read as English words (under {MIN_ENGLISH_SHARE:.0%}); "
                "this version reads English only")
    return None


def language_checks(versions: Iterable[str]) -> dict[str, str]:
    """Version -> :data:`LANGUAGE_CHECK` for each of ``versions`` that checks its answers' language (the score
    store's key holds it, so a store made before the check is scored again)."""
    return {v: LANGUAGE_CHECK for v in sorted(set(versions)) if v in ENGLISH_ONLY}
