"""Adversarial perturbations of answers against a victim preference model (the paper's section 5.3).

Two black-box attacks in the manner of TextAttack's recipes, written here from their published
descriptions (Jin et al. 2020; Gao et al. 2018) rather than by depending on TextAttack:

- ``deepwordbug``: a character edit inside a word: swap two adjacent letters, substitute one letter,
  delete one letter, or insert one letter (positions and letters drawn from a seeded RNG);
- ``textfooler``: a synonym in place of a word (stopwords are never replaced), from a
  :class:`SynonymSource` (``models.attacks.synonyms``: WordNet, or MiniLM neighbours).

Both follow TextAttack's greedy search with word importance ranking:

1. The victim's probability of the human label, ``P(label)``, is computed for the pair. A pair the
   victim already gets wrong, a tie and an unlabeled pair are skipped (there is no decision to flip).
2. Each candidate word of either answer is scored by leave-one-out: the drop in ``P(label)`` when the
   word alone is removed from its answer.
3. Words are visited from the most important down. For each, every candidate replacement is tried,
   and the one that lowers ``P(label)`` most is kept if it lowers it at all. The search stops as soon
   as the victim's decision flips (a success) or when the budget is spent.

The budget is per answer: at most ``ceil(budget * n_words)`` of its words change (``n_words`` as
:func:`words` counts them). Only the chosen words' characters change; every other character of the
answer (whitespace, punctuation, numbers, markdown) is kept exactly.

A victim is anything with ``p_a(triples) -> array``, the probability that answer a is preferred for
each ``(question, answer_a, answer_b)``: ``models.baselines.encoder.EncoderVictim`` (the trained-encoder
baseline: each probe re-embeds one answer) or ``RubricVictim`` (the rubric preference model:
each probe re-scores one answer with every rubric of the model). Cost: a pair of answers with ``n``
words in all needs ``n`` leave-one-out probes plus up to 4 (deepwordbug) or ``max_candidates``
(textfooler) probes per word visited, so a rubric victim is only practical with cheap CPU rubrics
such as conciseness (spaCy) and grammar (Harper, ~0.3 s per answer); LLM rubrics would need an
LLM call per probe.

:mod:`rubric.perturbation.victim` holds :class:`RubricVictim`; :mod:`rubric.perturbation.rewrite`
rewrites an input file with perturbed answers, in its own format (``rewrite_input``): same records,
same ids and labels, only answer texts changed.
"""

from __future__ import annotations

import logging
import math
import random
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from rubric.config import check_range
from rubric.errors import ConfigError

if TYPE_CHECKING:
    pass

__all__ = [
    "ATTACKS", "STOPWORDS", "Word", "words", "word_budget", "match_case", "char_edits", "same_stem",
    "SynonymSource", "synonym_candidates", "replace_words", "remove_word", "Victim", "decide", "p_label",
    "word_importance", "WordChange", "AttackResult", "attack_pair",
]

log = logging.getLogger(__name__)

#: The attacks :func:`attack_pair` knows.
ATTACKS: tuple[str, ...] = ("deepwordbug", "textfooler")

#: Function words a synonym attack never replaces (TextFooler filters stopwords the same way): their
#: "synonyms" are other function words that change the grammar, not paraphrases.
STOPWORDS: frozenset[str] = frozenset("""
a about above across after afterwards again against all almost alone along already also although always am
among amongst an and another any anyhow anyone anything anyway anywhere are around as at be became because
become becomes becoming been before beforehand behind being below beside besides between beyond both but by
can cannot could did do does doing done down due during each either else elsewhere enough etc even ever every
everyone everything everywhere except few for former formerly from further had has have having he hence her
here hereafter hereby herein hereupon hers herself him himself his how however i if in indeed into is it its
itself just last latter latterly least less many may me meanwhile might mine more moreover most mostly much
must my myself namely neither never nevertheless next no nobody none noone nor not nothing now nowhere of off
often on once one only onto or other others otherwise our ours ourselves out over own per perhaps please
quite rather re same seem seemed seeming seems several she should since so some somehow someone something
sometime sometimes somewhere still such than that the their theirs them themselves then thence there
thereafter thereby therefore therein thereupon these they this those though through throughout thru thus to
together too toward towards under unless until up upon us used very via was we well were what whatever when
whence whenever where whereafter whereas whereby wherein whereupon wherever whether which while whither who
whoever whole whom whose why will with within without would yet you your yours yourself yourselves
""".split())

# A word: letters (any script), with apostrophes or hyphens joining letter runs ("don't", "well-known").
# Digits and underscores are not letters, so numbers ("425", "20-25") are never words and never change.
_WORD = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")


@dataclass(frozen=True)
class Word:
    """One word of a text: its position among the words, its character span, and its text."""

    index: int
    start: int
    end: int
    text: str


def words(text: str) -> list[Word]:
    """The words of ``text``, in order: maximal runs of letters, joined by inner ``'`` or ``-``.

    Args:
        text: any text.

    Returns:
        One :class:`Word` per match; ``text[w.start:w.end] == w.text``.
    """
    return [Word(i, m.start(), m.end(), m.group()) for i, m in enumerate(_WORD.finditer(text))]


def word_budget(n_words: int, budget: float) -> int:
    """How many of an answer's ``n_words`` words an attack may change: ``ceil(budget * n_words)``.

    The product is rounded to 9 decimals first, so 0.1 * 30 allows 3 words, not 4.

    Raises:
        ConfigError: ``budget`` is not in (0, 1] or ``n_words`` is negative.
    """
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not 0 < budget <= 1:
        raise ConfigError(f"'budget' must be a fraction in (0, 1], got {budget!r}")
    check_range("n_words", n_words, low=0)
    return math.ceil(round(budget * n_words, 9))


def match_case(template: str, word: str) -> str:
    """``word`` in the case pattern of ``template``: UPPER, Capitalised or as given (lower)."""
    if len(template) > 1 and template.isupper():
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def char_edits(word: str, rng: random.Random) -> list[str]:
    """DeepWordBug's four edits of one word, each at a position drawn from ``rng``.

    In order: swap two adjacent letters, substitute a letter, delete a letter (words of 2+ letters),
    insert a letter. Only letters are edited (an apostrophe or hyphen stays where it is); a new letter
    is an ASCII letter in the case of the one it replaces (lower case when inserted, upper case when
    the word is all upper case). Edits that give the word back unchanged are dropped, and so are
    repeats.

    Args:
        word: the word (as :func:`words` finds it).
        rng: the source of positions and letters; the same state gives the same edits.

    Returns:
        Up to 4 distinct variants of ``word``, none equal to it.
    """
    letters = [i for i, ch in enumerate(word) if ch.isalpha()]
    upper = len(word) > 1 and word.isupper()
    out: list[str] = []

    def add(variant: str) -> None:
        if variant != word and variant not in out and variant:
            out.append(variant)

    swaps = [i for i in letters if i + 1 in letters and word[i].lower() != word[i + 1].lower()]
    if swaps:
        i = rng.choice(swaps)
        add(word[:i] + word[i + 1] + word[i] + word[i + 2:])
    if letters:
        i = rng.choice(letters)
        new = rng.choice([c for c in string.ascii_lowercase if c != word[i].lower()])
        add(word[:i] + (new.upper() if word[i].isupper() else new) + word[i + 1:])
    if len(letters) >= 2:
        i = rng.choice(letters)
        add(word[:i] + word[i + 1:])
    if letters:
        # inside the word: between two characters; a one-letter word gets it before or after
        i = rng.randint(1, len(word) - 1) if len(word) >= 2 else rng.randint(0, 1)
        new = rng.choice(string.ascii_lowercase)
        add(word[:i] + (new.upper() if upper else new) + word[i:])
    return out


def same_stem(a: str, b: str) -> bool:
    """Whether two words look like forms of one stem ("cook"/"cooking", "run"/"runs").

    Such a pair is an inflection, not a synonym; replacing one by the other changes the grammar
    rather than paraphrasing. The test is crude on purpose: a shared prefix of at least 3 letters
    that covers all but at most one letter of the shorter word.
    """
    a, b = a.lower(), b.lower()
    if a == b:
        return True
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n >= 3 and n >= min(len(a), len(b)) - 1


@runtime_checkable
class SynonymSource(Protocol):
    """Where a synonym attack gets its candidates (see ``models.attacks.synonyms``).

    ``candidates(word)`` returns candidate replacements for a lower-cased word, best first; the
    attack filters them (:func:`synonym_candidates`).
    """

    name: str

    def candidates(self, word: str) -> list[str]: ...


def synonym_candidates(word: str, source: SynonymSource, *, max_candidates: int = 8,
                       stopwords: frozenset[str] = STOPWORDS) -> list[str]:
    """The replacements a synonym attack tries for ``word``, in its case pattern.

    A candidate is dropped when it is the word itself (in any case), a form of the same stem
    (:func:`same_stem`), not one word as :func:`words` reads it (so the word count of the answer
    stays the same), or a stopword. A stopword itself gets no candidates.

    Args:
        word: the word as it appears in the answer.
        source: the synonym source.
        max_candidates: at most this many are returned (>= 1).
        stopwords: words never replaced nor used as replacements.

    Returns:
        Distinct candidates, best first, none equal to ``word``.
    """
    check_range("max_candidates", max_candidates, low=1)
    low = word.lower()
    if low in stopwords:
        return []
    out: list[str] = []
    seen: set[str] = set()
    for cand in source.candidates(low):
        c = cand.lower()
        if c in seen or c in stopwords or same_stem(c, low) or _WORD.fullmatch(cand) is None:
            continue
        seen.add(c)
        out.append(match_case(word, cand if any(ch.isupper() for ch in cand) else c))
        if len(out) >= max_candidates:
            break
    return out


def replace_words(text: str, replacements: Mapping[int, str], found: Sequence[Word] | None = None) -> str:
    """``text`` with the words at the given indices replaced, every other character unchanged.

    Args:
        text: the original text.
        replacements: word index -> new text of that word.
        found: ``words(text)``, when already computed.

    Raises:
        ConfigError: an index is not a word of ``text``.
    """
    found = words(text) if found is None else found
    parts: list[str] = []
    pos = 0
    for i in sorted(replacements):
        if not 0 <= i < len(found):
            raise ConfigError(f"word index {i} out of range: the text has {len(found)} words")
        w = found[i]
        parts.append(text[pos:w.start])
        parts.append(replacements[i])
        pos = w.end
    parts.append(text[pos:])
    return "".join(parts)


def remove_word(text: str, word: Word) -> str:
    """``text`` without one word (the leave-one-out probe); the spaces around it stay."""
    return text[:word.start] + text[word.end:]


# --- the victim -----------------------------------------------------------------------------------

@runtime_checkable
class Victim(Protocol):
    """A trained preference model under attack.

    ``p_a`` takes ``(question, answer_a, answer_b)`` triples and returns P(a preferred) for each, in
    order, as a float array; NaN where the model cannot score a pair.
    """

    name: str

    def p_a(self, triples: Sequence[tuple[str, str, str]]) -> np.ndarray: ...


def decide(p_a: float) -> str:
    """The victim's decision: "a" when P(a) >= 0.5 (scikit-learn's rule for a binary classifier)."""
    return "a" if p_a >= 0.5 else "b"


def p_label(p_a, label: str):
    """P(label) from P(a): P(a) for label "a", 1 - P(a) for "b" (scalars or arrays)."""
    if label not in ("a", "b"):
        raise ConfigError(f"P(label) is defined for labels 'a' and 'b', got {label!r}")
    return p_a if label == "a" else 1.0 - p_a


def word_importance(victim: Victim, question: str, answers: Mapping[str, str], label: str,
                    candidates: Sequence[tuple[str, Word]], base: float) -> np.ndarray:
    """Leave-one-out importance: the drop in P(label) when each word alone is removed.

    Args:
        victim: the model under attack.
        question: the pair's question.
        answers: {"a": text, "b": text}, the current answers.
        label: the human label ("a" or "b").
        candidates: (side, word) for each word to rank.
        base: P(label) of the unmodified pair.

    Returns:
        ``base - P(label | word removed)`` per candidate (larger: more important); NaN probes count
        as 0 (no evidence the word matters).
    """
    if not candidates:
        return np.zeros(0)
    triples = []
    for side, w in candidates:
        texts = dict(answers)
        texts[side] = remove_word(answers[side], w)
        triples.append((question, texts["a"], texts["b"]))
    probes = p_label(np.asarray(victim.p_a(triples), dtype=float), label)
    return np.nan_to_num(base - probes, nan=0.0)


@dataclass(frozen=True)
class WordChange:
    """One changed word: which answer, its index among the answer's words, its span in the answer
    given to the attack, the old and new text, and its leave-one-out importance."""

    side: str
    index: int
    start: int
    end: int
    old: str
    new: str
    importance: float


@dataclass(frozen=True)
class AttackResult:
    """What an attack did to one pair.

    Attributes:
        status: "success" (the victim's decision flipped), "failed" (the budget or the words ran out
            first) or "skipped" (nothing to flip, or nothing that may change: see ``reason``).
        reason: why the pair was skipped or failed ("" on success).
        answer_a / answer_b: the answers after the attack (unchanged when skipped).
        changes: the changed words, in the order they were changed.
        p_before / p_after: the victim's P(label) before and after (NaN without a label).
        budget: side -> the most words that side may change.
        n_words: side -> the words of that answer.
        n_queries: pairs sent to the victim.
    """

    status: str
    reason: str
    answer_a: str
    answer_b: str
    changes: tuple[WordChange, ...] = ()
    p_before: float = float("nan")
    p_after: float = float("nan")
    budget: Mapping[str, int] = field(default_factory=dict)
    n_words: Mapping[str, int] = field(default_factory=dict)
    n_queries: int = 0

    def to_dict(self) -> dict:
        """JSON-ready fields (changes as dicts, NaN as None)."""
        def num(x: float) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        return {"status": self.status, "reason": self.reason, "p_before": num(self.p_before),
                "p_after": num(self.p_after), "budget": dict(self.budget), "n_words": dict(self.n_words),
                "n_queries": self.n_queries, "changes": [asdict(c) for c in self.changes]}


def attack_pair(question: str, answer_a: str, answer_b: str, label: str | None, victim: Victim, *,
                attack: str, rng: random.Random, budget: float = 0.1, synonyms: SynonymSource | None = None,
                editable: Sequence[str] = ("a", "b"), max_candidates: int = 8,
                stopwords: frozenset[str] = STOPWORDS) -> AttackResult:
    """Attack one pair: greedy word swaps, most important word first, until the victim's decision flips.

    Args:
        question: the pair's question (never changed).
        answer_a: the first answer.
        answer_b: the second answer.
        label: the human label; only "a" and "b" pairs are attacked.
        victim: the model under attack.
        attack: "deepwordbug" or "textfooler".
        rng: the source of deepwordbug's positions and letters (textfooler uses none).
        budget: the share of each answer's words that may change (``ceil(budget * n_words)`` words).
        synonyms: the synonym source (textfooler only).
        editable: the answers the attack may change (an answer already changed for another pair of a
            graded list stays as it is).
        max_candidates: synonyms tried per word (textfooler).
        stopwords: words textfooler never replaces.

    Returns:
        The result; ``changes`` refer to word indices and spans of the answers as given.

    Raises:
        ConfigError: an unknown attack or side, a bad budget, or textfooler without a synonym source.
    """
    if attack not in ATTACKS:
        raise ConfigError(f"unknown attack {attack!r}; known: {', '.join(ATTACKS)}")
    if attack == "textfooler" and synonyms is None:
        raise ConfigError("the textfooler attack needs a synonym source")
    bad_sides = sorted(set(editable) - {"a", "b"})
    if bad_sides:
        raise ConfigError(f"'editable' must name answers 'a' and/or 'b', got {bad_sides}")
    original = {"a": answer_a, "b": answer_b}
    found = {s: words(t) for s, t in original.items()}
    n_words = {s: len(found[s]) for s in "ab"}
    caps = {s: word_budget(n_words[s], budget) if s in editable else 0 for s in "ab"}

    def result(status: str, reason: str, **kw) -> AttackResult:
        return AttackResult(status=status, reason=reason, answer_a=kw.pop("a", answer_a),
                            answer_b=kw.pop("b", answer_b), budget=caps, n_words=n_words, **kw)

    if label not in ("a", "b"):
        return result("skipped", "tie: no decision to flip" if label == "tie" else "unlabeled pair")
    p0 = float(victim.p_a([(question, answer_a, answer_b)])[0])
    queries = 1
    if not math.isfinite(p0):
        return result("skipped", "the victim cannot score this pair", n_queries=queries)
    base = float(p_label(p0, label))
    if decide(p0) != label:
        return result("skipped", "the victim is already wrong on this pair", p_before=base, p_after=base,
                      n_queries=queries)
    if not any(caps.values()):
        why = ("both answers were already changed while attacking other pairs" if not set(editable) & {"a", "b"}
               else "no answer that may change has a word")
        return result("skipped", why, p_before=base, p_after=base, n_queries=queries)

    # textfooler: a word without a synonym cannot change, so it is not worth a leave-one-out probe
    options: dict[tuple[str, int], list[str]] = {}
    eligible: list[tuple[str, Word]] = []
    for side in "ab":
        if not caps[side]:
            continue
        for w in found[side]:
            if attack == "textfooler":
                cands = synonym_candidates(w.text, synonyms, max_candidates=max_candidates,  # type: ignore[arg-type]
                                           stopwords=stopwords)
                if not cands:
                    continue
                options[(side, w.index)] = cands
            eligible.append((side, w))
    if not eligible:
        return result("failed", "no word of the answers has a synonym", p_before=base,
                      p_after=base, n_queries=queries)
    importance = word_importance(victim, question, original, label, eligible, base)
    queries += len(eligible)
    # most important first; ties in answer order, so the search is deterministic
    order = sorted(range(len(eligible)), key=lambda k: (-importance[k], eligible[k][0], eligible[k][1].index))

    current = dict(original)
    replaced: dict[str, dict[int, str]] = {"a": {}, "b": {}}
    changes: list[WordChange] = []
    cur = base
    for k in order:
        side, w = eligible[k]
        if len(replaced[side]) >= caps[side]:
            if all(len(replaced[s]) >= caps[s] for s in "ab"):
                break
            continue
        cands = char_edits(w.text, rng) if attack == "deepwordbug" else options[(side, w.index)]
        if not cands:
            continue
        texts = []
        for c in cands:
            trial = dict(current)
            trial[side] = replace_words(original[side], {**replaced[side], w.index: c}, found[side])
            texts.append((question, trial["a"], trial["b"]))
        probes = np.nan_to_num(p_label(np.asarray(victim.p_a(texts), dtype=float), label), nan=np.inf)
        queries += len(texts)
        best = int(np.argmin(probes))
        if not probes[best] < cur:
            continue
        replaced[side][w.index] = cands[best]
        current[side] = texts[best][1] if side == "a" else texts[best][2]
        cur = float(probes[best])
        changes.append(WordChange(side=side, index=w.index, start=w.start, end=w.end, old=w.text,
                                  new=cands[best], importance=float(importance[k])))
        p_a_now = cur if label == "a" else 1.0 - cur
        if decide(p_a_now) != label:
            return result("success", "", a=current["a"], b=current["b"], changes=tuple(changes), p_before=base,
                          p_after=cur, n_queries=queries)
    spent = all(len(replaced[s]) >= caps[s] for s in "ab")
    return result("failed", "budget spent" if spent else "no remaining word lowers P(label)", a=current["a"],
                  b=current["b"], changes=tuple(changes), p_before=base, p_after=cur, n_queries=queries)


# --- the rubric preference model as a victim ------------------------------------------------------
