"""Minimal pairs: each distinct answer of an input beside its perturbed copies, one per family that applies."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rubric.errors import ConfigError
from rubric.io import AnswerItem, content_id, question_id
from rubric.validity._families import FAMILIES, Row, family_names

__all__ = ["MinimalPair", "minimal_pairs", "rows_of", "pair_items", "resolve_families"]


@dataclass(frozen=True)
class MinimalPair:
    """An answer and its perturbed copy.

    Attributes:
        family: the family that made the copy.
        expect: (rubric name, expectation) for each rubric the family has a direction for.
        question_id: the question's id (the bootstrap's cluster).
        question: the question both are scored for.
        original / perturbed: the two answer texts.
        original_id / perturbed_id: their ids (``rubric.io.content_id``: the score store's keys).
        seed: the run's seed.
        reference / docs: the original's reference answer and documents (the copy is scored with them too).
    """

    family: str
    expect: tuple[tuple[str, str], ...]
    question_id: str
    question: str
    original: str
    perturbed: str
    original_id: str
    perturbed_id: str
    seed: int
    reference: str | None = None
    docs: tuple[str, ...] = ()

    @property
    def rubrics(self) -> tuple[str, ...]:
        return tuple(r for r, _ in self.expect)


def rows_of(items: Iterable[AnswerItem | Row]) -> list[Row]:
    """The rows of ``items`` (``rubric.io.AnswerItem`` or :class:`Row`), distinct answers in first-seen order."""
    out: dict[str, Row] = {}
    for it in items:
        if isinstance(it, Row):
            row = it if it.answer_id else Row(it.question_id, it.question, it.answer, it.reference, it.docs,
                                               content_id(it.question, it.answer, it.docs, it.reference))
        else:
            row = Row(question_id(it.question), it.question, it.answer, it.reference, tuple(it.docs), it.answer_id)
        out.setdefault(row.answer_id, row)
    return list(out.values())


def resolve_families(names: str | Sequence[str] | None) -> list[str]:
    """``--families``: comma-separated names (None or empty: every family), in the registry's order.

    Raises:
        UnknownNameError: a name is not a family (lists them).
    """
    if names is None:
        return family_names()
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names:
        raise ConfigError("no families given; known: " + ", ".join(family_names()))
    for n in names:
        FAMILIES.get(n)
    return [n for n in family_names() if n in set(names)]


def minimal_pairs(items: Iterable[AnswerItem | Row], families: str | Sequence[str] | None = None,
                  seed: int = 0, *, synonyms=None) -> list[MinimalPair]:
    """Every family's perturbed copy of every distinct answer it applies to.

    Deterministic for a seed: each copy's random choices come from a generator seeded by the seed, the family
    and the answer's id, so adding answers or families leaves the other copies as they were.

    Args:
        items: the distinct answers of an input (``rubric.io.explode`` of its pairs).
        families: family names (default: all, but those that need a tool not given).
        seed: the seed.
        synonyms: the synonym source of the families that need one (``Family.needs``).

    Returns:
        The pairs, by answer then family; a copy equal to its original is left out.

    Raises:
        ConfigError: a family named in ``families`` needs a tool that was not given.
    """
    rows = rows_of(items)
    chosen = [FAMILIES.get(n) for n in resolve_families(families)]
    tools = {"synonyms": synonyms}
    lacking = sorted({f"{fam.name} ({n})" for fam in chosen for n in fam.needs if tools.get(n) is None})
    if lacking and families is not None:
        raise ConfigError(f"families {', '.join(lacking)} need a tool that was not given")
    chosen = [fam for fam in chosen if all(tools.get(n) is not None for n in fam.needs)]
    out: list[MinimalPair] = []
    for row in rows:
        for fam in chosen:
            rng = random.Random(f"{seed}\x00{fam.name}\x00{row.answer_id}")
            text = fam.build(row, rng, rows, **{n: tools[n] for n in fam.needs})
            if text is None or not text.strip() or text == row.answer:
                continue
            out.append(MinimalPair(fam.name, tuple(fam.expect.items()), row.question_id, row.question, row.answer,
                                   text, row.answer_id, content_id(row.question, text, row.docs, row.reference), seed, row.reference,
                                   row.docs))
    return out


def pair_items(pairs: Sequence[MinimalPair]) -> list[AnswerItem]:
    """The answers to score for ``pairs``: every original and every copy once, in first-seen order."""
    out: dict[str, AnswerItem] = {}
    for p in pairs:
        for aid, text in ((p.original_id, p.original), (p.perturbed_id, p.perturbed)):
            if aid not in out:
                out[aid] = AnswerItem(aid, p.question, text, p.docs, p.reference)
    return list(out.values())
