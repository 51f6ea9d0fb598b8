"""The English-only versions' language check (``rubric.scoring.not_english``) on wordfreq's word lists.

Each English-only scorer (conciseness, Harper's grammar and fluency, the CPU profile's specificity) asks
:func:`english_check` for its answers: the reason an answer is not English, which it abstains with, or None.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from rubric.errors import BackendUnavailableError
from rubric.scoring import ENGLISH_ONLY, OTHER_LANGUAGES, Score, not_english

__all__ = ["wordfreq_zipf", "english_check", "abstain_if_not_english"]

#: wordfreq's lists compared: the "small" ones (words of Zipf 3 and more), English's too, so that no language's
#: long tail outweighs another's.
_WORDLIST = "small"


def wordfreq_zipf(who: str) -> Callable[..., float]:
    """wordfreq's ``zipf_frequency`` (the one import of it: the CPU profile's word weights use it too).

    Args:
        who: what needs it, named in the error.

    Raises:
        BackendUnavailableError: wordfreq is not installed.
    """
    try:
        from wordfreq import zipf_frequency
    except ImportError as e:
        raise BackendUnavailableError(f"{who} need wordfreq: pip install wordfreq==3.1.1 (or install the [cpu] "
                                      "extra)") from e
    return zipf_frequency


@functools.cache
def english_check() -> Callable[[str], str | None]:
    """``check(text)``: why ``text`` is not English, or None; built once per process (the word lists load on first
    use, ~64 MB for the 15 lists, docs/language.md; each word's frequencies are cached).

    Raises:
        BackendUnavailableError: wordfreq is not installed.
    """
    zipf_frequency = wordfreq_zipf(f"{', '.join(sorted(ENGLISH_ONLY))} (their language check)")

    @functools.lru_cache(maxsize=1 << 16)
    def frequency(word: str) -> tuple[float, float]:
        return (zipf_frequency(word, "en", wordlist=_WORDLIST),
                max(zipf_frequency(word, lang, wordlist=_WORDLIST) for lang in OTHER_LANGUAGES))

    return functools.partial(not_english, frequency=frequency)


def abstain_if_not_english(text: object) -> Score | None:
    """The abstention of an English-only version on ``text`` when it is not English, or None to score it."""
    why = english_check()(text) if isinstance(text, str) else None
    return None if why is None else Score.abstain(why)
