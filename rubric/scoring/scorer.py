"""The scorer interface: batch in, list out, same order (after vLLM's ``LLM.generate``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from rubric.errors import BatchMismatchError, ConfigError
from rubric.io import AnswerItem
from rubric.scoring.specs import RubricSpec

__all__ = ["Score", "Provenance", "Scorer", "ScoreSet", "check_batch", "ABSTAIN_PREFIX", "is_abstention",
           "EVIDENCE_CUT"]

Extra = float | int | str | bool | None

#: How an abstention's reason starts. A rubric *abstains* when its definition has nothing to judge on a row
#: (no evidence shared by the question's answers, one sentence for a sentence-to-sentence measure): the
#: value is missing like an error's, but nothing went wrong. It rides in the error field, so stores, the Ray
#: codec and the tables carry it unchanged; :func:`is_abstention` is the one reader of the prefix. A pair in
#: which *both* answers abstain has difference 0 on that rubric (nothing to compare: it moves no
#: prediction), any other missing side leaves the difference missing (``rubric.tables.pairs_table``), and the
#: manifest counts abstentions apart from errors.
ABSTAIN_PREFIX = "abstains: "


#: The extra a score sets (True) when the evidence it read was cut at a cap (a reference of more sentences than a
#: scorer reads): the manifest counts these per rubric and the job names them in one line, so a cut is never silent.
EVIDENCE_CUT = "evidence_truncated"


def is_abstention(error: str | None) -> bool:
    """Whether a score's error field is an abstention (:meth:`Score.abstain`), not a failure."""
    return isinstance(error, str) and error.startswith(ABSTAIN_PREFIX)


@dataclass(frozen=True)
class Score:
    """One rubric's outcome for one answer: a raw value, or an error reason - never both, never neither.

    ``extras`` carries rubric-specific columns (a confidence, an error count, a truncation flag).
    ``cost`` is what making it took (``prompt_tokens``, ``cached_prompt_tokens``, ``generated_tokens`` where
    an engine reports them; ``seconds``, its share of the engine seconds of the batch it rode in:
    ``models.scorer_set``); it is kept with the score in the store but is not part of its value (two
    scores differing only in cost are equal). ``rubric.tables.costs`` reads it.
    """

    raw: float | None
    error: str | None = None
    extras: Mapping[str, Extra] = field(default_factory=dict)
    cost: Mapping[str, float | int | None] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if (self.raw is None) == (self.error is None):
            raise ConfigError(f"a Score needs exactly one of raw/error, got raw={self.raw!r}, error={self.error!r}")
        if self.raw is not None and not math.isfinite(self.raw):
            raise ConfigError(f"a Score's raw value must be finite, got {self.raw!r}")

    @classmethod
    def ok(cls, raw: float, **extras: Extra) -> "Score":
        return cls(raw=float(raw), extras=extras)

    @classmethod
    def failed(cls, reason: str, **extras: Extra) -> "Score":
        return cls(raw=None, error=reason, extras=extras)

    @classmethod
    def abstain(cls, reason: str, **extras: Extra) -> "Score":
        """The rubric has nothing to judge on this row (see :data:`ABSTAIN_PREFIX`); ``reason`` says why."""
        return cls(raw=None, error=ABSTAIN_PREFIX + reason, extras=extras)

    @property
    def abstained(self) -> bool:
        return is_abstention(self.error)


@dataclass(frozen=True)
class Provenance:
    """How a value was made; recorded on every output row."""

    rubric_version: str
    backend: str
    model_id: str = ""
    model_revision: str = ""
    template_hash: str = ""


#: The scores one scorer produces for one item, keyed by rubric name.
ScoreSet = Mapping[str, Score]


@runtime_checkable
class Scorer(Protocol):
    """Computes one or more rubrics for a batch of answers.

    A scorer that serves several rubrics (the LLM scorer) computes them all in one engine call.
    ``score_batch`` returns one ``ScoreSet`` per input item, in input order, with an entry for
    every rubric in ``specs``; it has no side effects.
    """

    specs: tuple[RubricSpec, ...]

    def provenance(self, rubric: str) -> Provenance: ...

    def score_batch(self, items: Sequence[AnswerItem]) -> list[ScoreSet]: ...


def check_batch(scorer: Scorer, items: Sequence[AnswerItem], results: Sequence[ScoreSet]) -> None:
    """Raise if a scorer broke the one-result-per-item contract (a lost or doubled row)."""
    if len(results) != len(items):
        raise BatchMismatchError(f"{type(scorer).__name__} returned {len(results)} results for {len(items)} items")
    want = {s.name for s in scorer.specs}
    for i, r in enumerate(results):
        if set(r) != want:
            raise BatchMismatchError(
                f"{type(scorer).__name__} result {i} has rubrics {sorted(r)}, expected {sorted(want)}")
