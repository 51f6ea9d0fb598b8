"""Families that paraphrase instead of copying (issue 56): the checks of :mod:`rubric.validity._families` copy the
question's or the answer's words, so a rubric that reads "without the question's words" passes them by design.
These say the same in other words, with WordNet's synonyms (the commonest sense of each word only: "pump" is a
machine, never a "heart"), or take an answer that is on the topic but to another question:

- ``echo_paraphrase``: the answer replaced by the question restated in other words;
- ``restated_point``: the answer's point (its first sentence) said again in other words at its end;
- ``other_topic_answer``: the answer of another question that shares the most topic words with this one.

A family that needs synonyms declares ``needs=("synonyms",)``; the job passes a synonym source (any object with
``candidates(word) -> list[str]``, :class:`rubric.perturbation.SynonymSource`; ``models.attacks.WordNetSynonyms``
with ``max_senses=1``), and without one the family is not built (the job says why).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from rubric.perturbation import STOPWORDS, SynonymSource, replace_words, synonym_candidates, words
from rubric.cpu_profile import plain_case
from rubric.validity._families import _RESTATE, _family, _never_outrank, Row
from rubric.validity._text import question_body, split_sentences

__all__ = ["paraphrase", "topic_words"]

#: The share of a text's replaceable words (those WordNet has a synonym for) a paraphrase replaces: all of them.
#: A word WordNet gives no synonym for stays; a text with none is no paraphrase (the family does not apply).


def _synonym(word: str, synonyms: SynonymSource) -> str | None:
    """The commonest-sense synonym of ``word`` (a plural read through its singular: "pumps" -> "pump" -> ...s)."""
    got = synonym_candidates(word, synonyms, max_candidates=1)
    if got:
        return got[0]
    if len(word) > 3 and word.lower().endswith("s") and not word.lower().endswith("ss"):
        got = synonym_candidates(word[:-1], synonyms, max_candidates=1)
        if got and not got[0].lower().endswith("s"):
            return got[0] + "s"
    return None


def paraphrase(text: str, synonyms: SynonymSource) -> tuple[str, int]:
    """``text`` with every word that WordNet has a commonest-sense synonym for replaced by it, and how many were.

    Stopwords and words of fewer than three letters stay (``rubric.perturbation.synonym_candidates``'s rules).
    """
    found = words(text)
    replacements = {}
    for w in found:
        if len(w.text) < 3 or w.text.lower() in STOPWORDS:
            continue
        new = _synonym(w.text, synonyms)
        if new is not None:
            replacements[w.index] = new
    if not replacements:
        return text, 0
    return replace_words(text, replacements, found), len(replacements)


def topic_words(question: str) -> set[str]:
    """A question's topic words: its words but stopwords and the question's own form ("how", "does"), lower-cased."""
    return {w.text.lower() for w in words(plain_case(question_body(question) or question))
            if len(w.text) > 2 and w.text.lower() not in STOPWORDS}


@_family("echo_paraphrase", _never_outrank("relevance"),
         "the answer replaced by the question restated in other words (two or three rule rephrasings, every word "
         "WordNet has a commonest-sense synonym for replaced by it)", needs=("synonyms",))
def _echo_paraphrase(row: Row, rng: random.Random, others: Sequence[Row], synonyms: SynonymSource) -> str | None:
    asked = plain_case(" ".join(row.question.split()).rstrip("?.! "))
    if not asked:
        return None
    lowered = asked[:1].lower() + asked[1:] if not asked[:2].isupper() else asked
    chosen = rng.sample(_RESTATE, rng.choice((2, 3)))
    sentences, changed = [], 0
    for template in chosen:
        said, n = paraphrase(template.format(q=lowered), synonyms)
        sentences.append(said[:1].upper() + said[1:])
        changed += n
    return " ".join(sentences) if changed else None


@_family("restated_point", {"completeness": "not_higher"},
         "the answer's first sentence said again in other words at its end (every word WordNet has a commonest-sense "
         "synonym for replaced by it): nothing new", needs=("synonyms",))
def _restated_point(row: Row, rng: random.Random, others: Sequence[Row], synonyms: SynonymSource) -> str | None:
    split = split_sentences(row.answer)
    if not split.sentences:
        return None
    said, n = paraphrase(split.sentences[0], synonyms)
    if n == 0:
        return None
    sep = "\n" if "\n" in "".join(split.seps) else " "
    return row.answer.rstrip() + sep + said


@_family("other_topic_answer", {"relevance": "lower", "completeness": "not_higher"},
         "the answer of another question on the same topic (the one sharing the most topic words with this question) "
         "in its place")
def _other_topic_answer(row: Row, rng: random.Random, others: Sequence[Row]) -> str | None:
    mine = topic_words(row.question)
    if not mine:
        return None
    best, best_key = None, (0, 0.0)
    for o in others:
        if o.question_id == row.question_id or not o.answer.strip() or o.answer == row.answer:
            continue
        theirs = topic_words(o.question)
        shared = len(mine & theirs)
        if not shared:
            continue
        key = (shared, shared / len(mine | theirs))
        if key > best_key:  # the first such answer of the best question, in input order: deterministic
            best, best_key = o, key
    return None if best is None else best.answer
