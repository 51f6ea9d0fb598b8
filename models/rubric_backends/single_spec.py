"""What every backend that serves exactly one rubric version shares.

A single-spec scorer (conciseness, grammar, length, ROUGE-L, specificity, factuality) is built with
exactly one spec, answers ``provenance`` for that rubric's name only, and returns one
``{name: Score}`` per item. :class:`SingleSpecScorer` does those three things once; a scorer calls
:meth:`~SingleSpecScorer._serve` in its constructor, :meth:`~SingleSpecScorer._provenance` with its
backend's fields, and :meth:`~SingleSpecScorer._score_sets` on its list of scores.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rubric.errors import ConfigError, UnknownNameError
from rubric.scoring import RUBRICS, Provenance, RubricSpec, Score, ScoreSet

__all__ = ["SingleSpecScorer"]


class SingleSpecScorer:
    """Mixin of a scorer that serves exactly one rubric version (``self.specs == (spec,)``)."""

    specs: tuple[RubricSpec, ...]

    def _serve(self, specs: Sequence[RubricSpec], version: str, *, by_version: bool = False) -> None:
        """Keep ``specs`` as ``self.specs``.

        Args:
            specs: what the scorer is built with.
            version: the rubric version it serves.
            by_version: accept any one spec of ``version`` (a model backend whose spec may carry
                other settings), not only the registered spec itself.

        Raises:
            ConfigError: ``specs`` is not exactly one spec of ``version`` (the registered one unless
                ``by_version``).
        """
        specs = tuple(specs)
        ok = (len(specs) == 1 and specs[0].version == version) if by_version else specs == (RUBRICS.get(version),)
        if not ok:
            raise ConfigError(f"{type(self).__name__} serves exactly ({version!r},), "
                              f"got {[s.version for s in specs]}")
        self.specs = specs

    @property
    def spec(self) -> RubricSpec:
        """The one spec served."""
        return self.specs[0]

    def _provenance(self, rubric: str, **fields: Any) -> Provenance:
        """``Provenance(rubric_version=<the spec's version>, **fields)`` for the served rubric.

        Raises:
            UnknownNameError: ``rubric`` is not the served rubric's name.
        """
        if rubric != self.spec.name:
            raise UnknownNameError(f"{type(self).__name__} has no rubric {rubric!r}; it serves {self.spec.name!r}")
        return Provenance(rubric_version=self.spec.version, **fields)

    def _score_sets(self, scores: Iterable[Score]) -> list[ScoreSet]:
        """One ``{name: Score}`` per score, in order."""
        name = self.spec.name
        return [{name: s} for s in scores]
