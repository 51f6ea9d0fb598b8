"""The normalised record types every reader produces and every scorer consumes."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Literal

from rubric.errors import InputError

__all__ = ["Label", "LABELS", "PairRecord", "AnswerItem", "Reject", "content_id", "question_id", "explode",
           "normalised_text", "self_reference", "SELF_REFERENCE"]

Label = Literal["a", "b", "tie"]
LABELS: tuple[str, ...] = ("a", "b", "tie")


def _hash(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def question_id(question: str) -> str:
    """Stable id of a question (whitespace-normalised), used to keep a question in one split."""
    return _hash(" ".join(question.split()))


def content_id(question: str, answer: str, docs: tuple[str, ...] | list[str] = (), reference: str | None = None) -> str:
    """Stable id of an answer to score: of everything its scores read, so the same id is scored once and
    two answers that could score differently never share one (the batch job and the service alike).

    The question and the answer; and, when there are any, its evidence documents and the question's
    reference answer (a factuality or reference-overlap rubric reads them). An answer with neither keeps
    the id of its (question, answer) alone, as before documents and references counted.
    """
    if not docs and reference is None:
        return _hash(question, answer)
    return _hash(question, answer, "\x00docs", *docs, "\x00reference", "" if reference is None else "\x01" + reference)


@dataclass(frozen=True)
class PairRecord:
    """One human preference judgement between two answers to one question.

    ``row`` is the index of the input record the pair came from (several pairs share it
    for graded lists), so every output can be traced back to its input. ``split`` is the split
    the input itself assigns to the pair ("train", "dev" or "test"), or None when it assigns none.
    ``label`` is None for a pair without a human judgement (``predict`` scores it; ``fit`` and
    ``evaluate`` leave it out and count it). ``reference`` is a reference answer to the question,
    when the input has one; ``aspects`` holds per-aspect human judgements as (aspect, label) pairs,
    e.g. ``(("coherence", "a"), ("factuality", "tie"))``; ``answer_type_a`` / ``answer_type_b``
    say who wrote each answer ("human", a model name) when the input says.
    """

    pair_id: str
    question: str
    answer_a: str
    answer_b: str
    label: Label | None
    source: str = ""
    domain: str = ""
    expert: bool | None = None
    docs_a: tuple[str, ...] = ()
    docs_b: tuple[str, ...] = ()
    row: int = -1
    split: str | None = None
    reference: str | None = None
    aspects: tuple[tuple[str, str], ...] = ()
    answer_type_a: str = ""
    answer_type_b: str = ""

    @property
    def question_id(self) -> str:
        return question_id(self.question)

    @property
    def answer_id_a(self) -> str:
        return content_id(self.question, self.answer_a, self.docs_a, self.reference)

    @property
    def answer_id_b(self) -> str:
        return content_id(self.question, self.answer_b, self.docs_b, self.reference)


@dataclass(frozen=True)
class AnswerItem:
    """A unique (question, answer) to score, with any evidence documents and reference answer attached to it."""

    answer_id: str
    question: str
    answer: str
    docs: tuple[str, ...] = ()
    reference: str | None = None


@dataclass(frozen=True)
class Reject:
    """An input row (or a field of it) that could not become a pair, and why."""

    row: int | None
    reason: str
    field: str | None = None
    pair_id: str | None = None
    source_file: str = ""
    extra: dict = dc_field(default_factory=dict)

    def to_dict(self) -> dict:
        """The reject as JSON-able data; a lone surrogate in its text (the bad id that made it a reject, a
        file name with undecodable bytes) is written as its ``\\uXXXX`` escape, so the rejects file can
        always be written."""
        out = {"row": self.row, "pair_id": self.pair_id, "field": self.field, "reason": self.reason,
               "source_file": self.source_file}
        out.update(self.extra)
        return {k: _escape_surrogates(v) if isinstance(v, str) else v for k, v in out.items()}


_LONE = re.compile("[\ud800-\udfff]")


def _escape_surrogates(text: str) -> str:
    return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def normalised_text(text: str) -> str:
    """``text`` as two copies of one answer compare equal: case folded, punctuation (Unicode category P) taken out,
    runs of spaces one space ("The answer." and "the answer" are one text)."""
    kept = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text.casefold())
    return " ".join(kept.split())


#: Why an answer equal to its reference is not scored (a reject's reason, after what names the row or answer).
SELF_REFERENCE = "up to case, spaces and punctuation: an answer cannot be scored against itself"


def self_reference(p: PairRecord) -> str | None:
    """Which of the pair's answers (``"answer_a"``, ``"answer_b"``) is its reference (:func:`normalised_text`), or
    None."""
    if p.reference is None:
        return None
    ref = normalised_text(p.reference)
    return next((side for side, ans in (("answer_a", p.answer_a), ("answer_b", p.answer_b))
                 if normalised_text(ans) == ref), None)


def _refuse_self_references(pairs: list[PairRecord]) -> None:
    """The scoring path rejects a pair whose reference is one of its answers before it gets here
    (``rubric.io.without_self_references``, ``rubric.preference.preference_pair``): one that came anyway would be read
    against itself, so it is refused rather than scored. (A judge protocol may pair an answer with the reference on
    purpose, RAG-QA Arena does: this is the scoring path's rule, not the readers'.)

    Raises:
        InputError: a pair's reference equals its answer_a or answer_b (:func:`self_reference`).
    """
    bad = [(p, side) for p in pairs if (side := self_reference(p)) is not None]
    if bad:
        p, side = bad[0]
        raise InputError(f"{len(bad)} pair(s) have a reference answer equal to one of their answers, e.g. pair "
                         f"{p.pair_id!r} (row {p.row}): its reference is its {side} {SELF_REFERENCE}")


def explode(pairs: list[PairRecord]) -> list[AnswerItem]:
    """Unique answers of ``pairs`` in first-seen order; an answer shared by many pairs appears once.

    An answer is unique by everything its scores read (:func:`content_id`): the same (question, answer)
    with other documents or another reference is another answer, scored with its own.
    """
    _refuse_self_references(pairs)
    seen: dict[str, AnswerItem] = {}
    for p in pairs:
        for aid, ans, docs in ((p.answer_id_a, p.answer_a, p.docs_a), (p.answer_id_b, p.answer_b, p.docs_b)):
            if aid not in seen:
                seen[aid] = AnswerItem(answer_id=aid, question=p.question, answer=ans, docs=docs,
                                       reference=p.reference)
    return list(seen.values())
