"""LINKAGE (seed 001): the listwise judge's score, its reference lists, its prompts and its metric.

Pure: no model here. The listwise and pointwise prompts are declared here (``linkage.*``; the pairwise ones in
:mod:`rubric.protocols.linkage_pairwise`, the reference-list one in :mod:`rubric.protocols.linkage_references`).

Listwise score
    The candidate is placed into a list of reference answers ordered best first, and the judge answers
    ``[[k]]``, the candidate's position (1 = better than every reference, n+1 = worse than all n). After
    the pre-fill ``"[["`` the next token is the digit ``k``; :func:`expected_rank` reads the digit
    distribution over positions 1..n+1 and returns the expected rank ``sum(k * p(k)) / sum(p(k))``
    with the mass on those digits as its confidence, as :func:`rubric.scoring.geval.parse_score` does for the
    G-Eval scores (under ``min_mass`` the row is an error with the reason). LINKAGE's own code parsed
    the first ``[[k]]`` of a sampled text; :func:`parse_rank` does that for generation-only judges.
    A rank is better when lower: :func:`rank_score` turns it into a score where higher is better
    (the reference code's ``-rank``).

Pointwise baselines
    LINKAGE's 0-10 prompts with and without references; :func:`expected_point_score` reads the digit
    distribution after ``"[["``, splitting the probability of ``"1"`` between 1 and 10 by the next
    token when the tokenizer spells 10 as two digits.

Reference lists
    :func:`webglm_references` (WebGLM's ``ground3`` .. ``ground0``, best first, as LINKAGE's code
    orders them), :func:`graded_reference_split` (one reference per grade, taken out of the candidates,
    so every candidate of a question is ranked against the same list), and :func:`references_above`
    (the answers graded above the candidate; see its warning).

Metric
    :func:`linkage_correlations`: per question, Kendall's tau-b, Spearman's rho and Pearson's r between
    the graded labels and a system's scores, averaged over the questions where they are defined, with
    the number of questions where they are not and a question-clustered bootstrap CI of each mean.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


from rubric.config import check_range
from rubric.errors import ConfigError
from rubric.io import RowError, check_text
from rubric.scoring import (
    DEFAULT_MIN_MASS, ChatPrompt, PromptTemplate, TokenReading, fold_token_probs, mass_reading, normalize_token, read_tokens,
)
from rubric.protocols.templates import declare_protocol_prompt, get_protocol_template

__all__ = [
    "LINKAGE_PREFILL",
    "MAX_RANK_POSITIONS",
    "WEBGLM_REFERENCE_KEYS",
    "RankScore",
    "expected_rank",
    "parse_rank",
    "rank_score",
    "expected_point_score",
    "parse_point_score",
    "format_reference_list",
    "listwise_prompt",
    "pointwise_prompt",
    "pairwise_prompt",
    "webglm_references",
    "GradedAnswer",
    "ReferenceSplit",
    "graded_reference_split",
    "references_above",
]

#: Positions are read as one digit token after ``[[``: at most 9 (eight references).
MAX_RANK_POSITIONS = 9
#: WebGLM's reference answers as LINKAGE's code reads them, best first (``ground3`` is the golden answer).
#: Some WebGLM questions also have a ``ground4``, a near copy of ``ground3``; LINKAGE's code ignores it.
WEBGLM_REFERENCE_KEYS: tuple[str, ...] = ("ground3", "ground2", "ground1", "ground0")

_LISTWISE_V1 = "linkage.listwise.v1"
_LISTWISE_N = "linkage.listwise_n.v1"

#: LINKAGE's prompts ask for ``[[k]]`` (``[[A]]`` in the pairwise one): the next token is the verdict.
LINKAGE_PREFILL = "[["
SOURCE = "LINKAGE repo, prompt/"
_DIGITS_0_10 = tuple(str(i) for i in range(11))
_POINT = dict(protocol="linkage", layout="pointwise", prefill=LINKAGE_PREFILL, tokens=_DIGITS_0_10,
              values=tuple(float(i) for i in range(11)))
declare_protocol_prompt(_LISTWISE_V1, protocol="linkage", layout="listwise", source=SOURCE + "LINKAGE.txt",
                        prefill=LINKAGE_PREFILL, tokens=tuple("12345"), values=(1.0, 2.0, 3.0, 4.0, 5.0),
                        fields=("question", "references", "candidate"))
declare_protocol_prompt(_LISTWISE_N, protocol="linkage", layout="listwise",
                        source=SOURCE + "LINKAGE.txt (any list length, by lfqa-rubric)", prefill=LINKAGE_PREFILL,
                        tokens=tuple("123456789"), values=tuple(float(i) for i in range(1, 10)),
                        fields=("question", "references", "candidate", "n_references"))
declare_protocol_prompt("linkage.point_no_ref.v1", source=SOURCE + "no_ref_point_score.txt",
                        fields=("question", "candidate"), **_POINT)  # type: ignore[arg-type]
declare_protocol_prompt("linkage.point_with_ref.v1", source=SOURCE + "with_ref_point_score.txt",
                        fields=("question", "references", "candidate"), **_POINT)  # type: ignore[arg-type]


# --- reading the judge ---------------------------------------------------------------------------

@dataclass(frozen=True)
class RankScore:
    """An expected rank or score read from a digit distribution, or why there is none.

    Attributes:
        value: the expected value ``sum(v * p(v)) / sum(p(v))``; None when ``error`` is set.
        mass: the probability mass on the valid digits (the confidence), in [0, 1].
        probs: folded probability of each valid value, as a string (``"1"`` .. ``"5"``, ``"0"`` .. ``"10"``).
        error: why there is no value.
    """

    value: float | None
    mass: float
    probs: Mapping[str, float] = field(default_factory=dict)
    error: str | None = None


def _check_min_mass(min_mass: float) -> None:
    check_range("min_mass", min_mass, low=0, below=1)


def _expected(r: TokenReading) -> RankScore:
    """The expected value of a digit distribution (each digit's value is itself), or why there is none."""
    if r.error is not None:
        return RankScore(None, r.mass, r.probs, r.error)
    total = sum(r.probs.values())
    return RankScore(sum(int(k) * p for k, p in r.probs.items()) / total, r.mass, r.probs)


def expected_rank(token_probs: Mapping[str, float], n_positions: int, *, min_mass: float = DEFAULT_MIN_MASS,
                  top_k: int | None = None, logprobs: bool = False) -> RankScore:
    """The expected rank of a candidate from the digit distribution after the ``"[["`` pre-fill.

    Args:
        token_probs: token string (as the tokenizer spells it) -> probability (or log-probability) of
            the first token after the pre-fill. Digits outside 1..``n_positions`` and other tokens
            are not ranks and only lower the mass.
        n_positions: how many positions the candidate can take: the number of references + 1.
        min_mass: below this mass on the rank digits the result is an error, not a rank.
        top_k: how many tokens the engine looked at (None: the full distribution); for the message.
        logprobs: the values are log-probabilities.

    Returns:
        A :class:`RankScore`: the expected rank in [1, n_positions] (lower is better) and its mass;
        never raises for a model that did not answer with a rank.

    Raises:
        ConfigError: ``n_positions`` is not in 2..9 (a rank past 9 is two tokens), or ``min_mass``
            is not in [0, 1).
    """
    if isinstance(n_positions, bool) or not isinstance(n_positions, int) or not 2 <= n_positions <= MAX_RANK_POSITIONS:
        raise ConfigError(f"'n_positions' must be an integer in 2..{MAX_RANK_POSITIONS} (one digit token), "
                          f"got {n_positions!r}")
    tokens = tuple(str(k) for k in range(1, n_positions + 1))
    return _expected(read_tokens(token_probs, tokens, min_mass=min_mass, top_k=top_k, logprobs=logprobs,
                                 what="rank digit"))


# "[[3]]", "[[ 3 ]]"; any number, so that an out-of-range rank is reported rather than skipped
_RANK_RE = re.compile(r"\[\[\s*(\d+)\s*\]\]")


def parse_rank(text: str, n_positions: int) -> RankScore:
    """A rank from generated text: the first ``[[k]]``, as LINKAGE's code reads it.

    LINKAGE's code gave a candidate whose text had no ``[[k]]`` the score -2 (rank 2) and went on;
    here it is an error with the reason, and so is a ``k`` outside 1..``n_positions``.

    Args:
        text: the generated continuation only (the prompt itself contains ``[[1]]`` and ``[[5]]``).
        n_positions: the number of references + 1.

    Returns:
        A :class:`RankScore` with the rank as its value and mass 1, or an error.
    """
    check_range("n_positions", n_positions, low=2, integer=True)
    m = _RANK_RE.search(text or "")
    if m is None:
        snip = " ".join((text or "").split())[:60]
        return RankScore(None, 0.0, {}, f"no [[k]] rank in {snip!r}")
    k = int(m.group(1))
    if not 1 <= k <= n_positions:
        return RankScore(None, 0.0, {}, f"rank [[{k}]] is outside 1..{n_positions}")
    return RankScore(float(k), 1.0, {str(k): 1.0})


def rank_score(rank: float) -> float:
    """A rank turned into a score where higher is better: ``-rank``, as LINKAGE's code does."""
    return -float(rank)




def expected_point_score(token_probs: Mapping[str, float], after_one: Mapping[str, float] | None = None, *,
                         min_mass: float = DEFAULT_MIN_MASS, top_k: int | None = None,
                         logprobs: bool = False) -> RankScore:
    """The expected 0-10 score of LINKAGE's pointwise prompts from the digits after ``"[["``.

    A tokenizer that spells digits one by one writes 10 as ``"1"`` then ``"0"``, so ``P("1")`` after
    ``"[["`` is P(1) + P(10). With ``after_one`` (the next-token distribution after ``"[[1"``) that
    probability is split: the share of ``"0"`` against the tokens that close the verdict (``"]"``,
    ``"]]"``) goes to 10, the rest to 1. Without it, ``"1"`` counts as 1 and a ``"10"`` token as 10
    (right for a tokenizer that has 10 as one token).

    Args:
        token_probs: the first-token distribution after the pre-fill.
        after_one: the next-token distribution after ``"[[1"``, or None.
        min_mass: below this mass on the score digits the result is an error.
        top_k: how many tokens the engine looked at, for the message.
        logprobs: the values (of both distributions) are log-probabilities.

    Returns:
        A :class:`RankScore` with the expected score in [0, 10] (higher is better); never raises for
        a model that did not answer with a score.

    Raises:
        ConfigError: ``min_mass`` is not in [0, 1).
    """
    _check_min_mass(min_mass)
    try:
        probs = fold_token_probs(token_probs, _DIGITS_0_10, logprobs=logprobs)
        if after_one is not None and probs["1"] > 0.0:
            zero = fold_token_probs(after_one, ("0",), logprobs=logprobs)["0"]
            close = 0.0
            for tok, v in after_one.items():
                if normalize_token(tok).startswith("]"):
                    p = math.exp(v) if logprobs else float(v)
                    if not (math.isfinite(p) and 0.0 <= p <= 1.0 + 1e-6):
                        raise ValueError(f"token {tok!r} has an invalid probability {v!r}")
                    close += p
            if zero + close <= 0.0:
                return RankScore(None, 0.0, probs, "after '[[1' neither '0' nor ']' is seen: cannot tell 1 from 10")
            ten = probs["1"] * zero / (zero + close)
            probs["1"] -= ten
            probs["10"] += ten
    except ValueError as e:
        return RankScore(None, 0.0, {}, str(e))
    return _expected(mass_reading(probs, min_mass=min_mass, top_k=top_k, what="score digit"))


_SCORE_RE = re.compile(r"\[\[\s*(\d+(?:\.\d+)?)\s*\]\]")


def parse_point_score(text: str) -> RankScore:
    """A 0-10 score from generated text: the first ``[[s]]``; outside 0..10 is an error."""
    m = _SCORE_RE.search(text or "")
    if m is None:
        snip = " ".join((text or "").split())[:60]
        return RankScore(None, 0.0, {}, f"no [[score]] in {snip!r}")
    s = float(m.group(1))
    if not 0.0 <= s <= 10.0:
        return RankScore(None, 0.0, {}, f"score [[{m.group(1)}]] is outside 0..10")
    return RankScore(s, 1.0, {m.group(1): 1.0})


# --- prompts -------------------------------------------------------------------------------------

def _texts(references: Sequence[str], what: str = "references") -> list[str]:
    refs = list(references)
    for i, r in enumerate(refs, start=1):
        if not isinstance(r, str) or not r.strip():
            raise ConfigError(f"{what}: entry {i} is empty or not a string")
    return refs


def format_reference_list(references: Sequence[str]) -> str:
    """The reference list as LINKAGE's code writes it: ``"Answer 1:<text>\\n"`` per reference, best first.

    Raises:
        ConfigError: the list is empty or holds an empty reference.
    """
    refs = _texts(references)
    if not refs:
        raise ConfigError("the reference list is empty")
    return "".join(f"Answer {i}:{r}\n" for i, r in enumerate(refs, start=1))


def _spec(version: str, kind: str) -> PromptTemplate:
    spec = get_protocol_template(version)
    if spec.protocol != "linkage" or spec.layout != kind:
        raise ConfigError(f"{version} is not a LINKAGE {kind} template")
    return spec


def listwise_prompt(question: str, references: Sequence[str], candidate: str, *, version: str = _LISTWISE_V1,
                    prefill: bool = True) -> ChatPrompt:
    """LINKAGE's listwise prompt: rank ``candidate`` within ``references`` (ordered best first).

    Args:
        question: the question.
        references: reference answers, best first.
        candidate: the answer to place.
        version: ``linkage.listwise.v1`` (LINKAGE's wording, which says "four references": exactly four)
            or ``linkage.listwise_n.v1`` (1 to 8 references).
        prefill: pre-fill the assistant turn with ``"[["`` (logprob mode).

    Returns:
        The chat prompt; the rank is then read with :func:`expected_rank` over ``len(references) + 1``
        positions.

    Raises:
        ConfigError: the template is not a listwise one, the list has the wrong length, or a text is empty.
    """
    spec = _spec(version, "listwise")
    refs = _texts(references)
    fields: dict[str, object] = {"question": question, "references": format_reference_list(refs),
                                 "candidate": candidate}
    if version == _LISTWISE_V1:
        if len(refs) != 4:
            raise ConfigError(f"{version} says 'four references' and needs exactly 4, got {len(refs)}; "
                              f"use {_LISTWISE_N} for other lengths")
    else:
        if not 1 <= len(refs) <= MAX_RANK_POSITIONS - 1:
            raise ConfigError(f"{version} takes 1 to {MAX_RANK_POSITIONS - 1} references (a rank is one digit), "
                              f"got {len(refs)}")
        fields["n_references"] = len(refs)
    return spec.render(prefill=prefill, **fields)


def pointwise_prompt(question: str, candidate: str, references: Sequence[str] | None = None, *,
                     prefill: bool = True) -> ChatPrompt:
    """LINKAGE's pointwise 0-10 prompt: ``linkage.point_with_ref.v1`` with references, else ``point_no_ref``.

    Raises:
        ConfigError: a text is empty, or ``references`` is given but empty.
    """
    if references is None:
        return _spec("linkage.point_no_ref.v1", "pointwise").render(prefill=prefill, question=question,
                                                                    candidate=candidate)
    return _spec("linkage.point_with_ref.v1", "pointwise").render(
        prefill=prefill, question=question, references=format_reference_list(references), candidate=candidate)


def pairwise_prompt(question: str, answer_1: str, answer_2: str, *, prefill: bool = True,
                    version: str = "linkage.pairwise.v1") -> ChatPrompt:
    """LINKAGE's pairwise baseline prompt, ``answer_1`` shown as assistant A: ``linkage.pairwise.v1``
    (eq. 2, two candidates) or ``linkage.pairwise_reference.v1`` (eq. 3, a candidate and a reference)."""
    return _spec(version, "pairwise").render(prefill=prefill, question=question, answer_1=answer_1, answer_2=answer_2)


# --- reference lists -----------------------------------------------------------------------------

def webglm_references(entry: Mapping[str, object]) -> list[str]:
    """WebGLM's reference answers of one question, best first (``ground3`` .. ``ground0``).

    Args:
        entry: one question's value in ``WEBGLM_50.json`` (``{"doc_list": [...], "ground0": ..., ...}``).

    Returns:
        The four reference texts.

    Raises:
        ConfigError: a ``groundK`` is missing, not a string, empty or not valid Unicode (a lone surrogate).
    """
    out: list[str] = []
    for key in WEBGLM_REFERENCE_KEYS:
        text = entry.get(key)
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"WebGLM reference {key!r} is missing or empty")
        try:
            check_text(text, key)
        except RowError as e:
            raise ConfigError(f"WebGLM reference {e.reason}") from None
        out.append(text)
    return out


@dataclass(frozen=True)
class GradedAnswer:
    """One graded answer of a question.

    Attributes:
        key: the answer's key in its file (index or docid), to trace it back.
        text: the answer.
        grade: its integer grade; higher is better.
    """

    key: str
    text: str
    grade: int


@dataclass(frozen=True)
class ReferenceSplit:
    """A question's answers split into one reference list and the candidates ranked against it.

    Attributes:
        references: one answer per grade, best grade first (empty when ``error`` is set).
        candidates: the other answers, in input order (empty when ``error`` is set).
        skipped: (key, reason) of answers that are neither (a repeated text).
        error: why the question gets no list (fewer than two grades, too many grades), else None.
    """

    references: tuple[GradedAnswer, ...]
    candidates: tuple[GradedAnswer, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    error: str | None = None

    @property
    def texts(self) -> list[str]:
        """The references' texts, best first (for :func:`listwise_prompt`)."""
        return [r.text for r in self.references]


def _unique(answers: Sequence[GradedAnswer]) -> tuple[list[GradedAnswer], list[tuple[str, str]]]:
    seen: dict[str, str] = {}
    kept: list[GradedAnswer] = []
    skipped: list[tuple[str, str]] = []
    for a in answers:
        norm = " ".join(a.text.split())
        if norm in seen:
            skipped.append((a.key, f"same text as answer {seen[norm]}"))
            continue
        seen[norm] = a.key
        kept.append(a)
    return kept, skipped


def graded_reference_split(answers: Sequence[GradedAnswer], *, max_references: int = MAX_RANK_POSITIONS - 1
                           ) -> ReferenceSplit:
    """One reference per grade (the first answer of that grade in input order), the rest candidates.

    Every candidate of the question is ranked against the same list, as in LINKAGE (WebGLM's
    ``groundK``, or references generated from one golden answer), and the references themselves are
    not candidates. A grade whose only answer became its reference has no candidate, so that grade is
    missing from the correlation; that is the price of a list that does not depend on the candidate
    (compare :func:`references_above`).

    Args:
        answers: the question's graded answers.
        max_references: more distinct grades than this raise (a rank is one digit: at most 8).

    Returns:
        The split; an answer whose text repeats an earlier one (up to whitespace) is skipped. A
        question with fewer than two distinct grades (nothing to rank against: real graded files
        have such questions) or more than ``max_references`` gets no list and an ``error``, so that
        the caller can report it as a row-level reject.

    Raises:
        ConfigError: ``max_references`` is not an integer in 1..8.
    """
    check_range("max_references", max_references, low=1, high=MAX_RANK_POSITIONS - 1, integer=True)
    kept, skipped = _unique(answers)
    grades = sorted({a.grade for a in kept}, reverse=True)
    if len(grades) < 2:
        return ReferenceSplit((), (), tuple(skipped), f"a reference list needs two distinct grades, got {grades}")
    if len(grades) > max_references:
        return ReferenceSplit((), (), tuple(skipped),
                              f"{len(grades)} distinct grades, over max_references={max_references}")
    refs = [next(a for a in kept if a.grade == g) for g in grades]
    ref_keys = {r.key for r in refs}
    return ReferenceSplit(references=tuple(refs), candidates=tuple(a for a in kept if a.key not in ref_keys),
                          skipped=tuple(skipped))


def references_above(answers: Sequence[GradedAnswer], candidate: GradedAnswer, *,
                     max_references: int = MAX_RANK_POSITIONS - 1) -> list[GradedAnswer]:
    """The answers graded above ``candidate``'s grade, best first (ties in input order), itself excluded.

    Warning:
        The list's length gives the candidate's grade away: a candidate of the top grade gets an empty
        list and one of the bottom grade the longest, so a judge that always answers "last"
        (``[[n+1]]``) already ranks the candidates in grade order. Use it only for a judge that is
        scored on something the list length cannot explain; the per-question lists of
        :func:`graded_reference_split` do not leak.

    Args:
        answers: the question's graded answers (``candidate`` among them or not).
        candidate: the answer to place.
        max_references: keep at most this many, the best.

    Returns:
        The reference answers (possibly empty: the candidate has the top grade).
    """
    kept, _ = _unique([a for a in answers if a.key != candidate.key])
    above = [a for a in kept if a.grade > candidate.grade]
    above.sort(key=lambda a: -a.grade)  # stable: input order within a grade
    return above[:max_references]
