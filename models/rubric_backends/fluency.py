"""Harper's fluency versions (backend ``harper_fluency``): fluency.harper.v1 and v2, read from the same Harper lint
as grammar.harper.v1 when both are served (``models.rubric_backends.grammar.HarperPass``)."""

from __future__ import annotations

import hashlib
import importlib.metadata
from collections.abc import Sequence
from typing import Any

from models.rubric_backends.cpu_rubrics import english_zipf, text_problem
from models.rubric_backends.grammar import HarperPass, harper_linter
from models.rubric_backends.language import abstain_if_not_english
from models.rubric_backends.single_spec import SingleSpecScorer
from rubric.io import AnswerItem
from rubric.cpu_profile import (
    FLUENCY_HARPER_KINDS, UNKNOWN_WORD_ZIPF, count_fluency_lints, count_fluency_lints_v2, fluency_score,
)
from rubric.scoring import Provenance, RubricSpec, Score, ScoreSet

__all__ = ["HarperFluencyScorer", "FLUENCY_V1", "FLUENCY_V2"]

#: The two versions this scorer serves (registered in ``rubric/scoring/specs.py``).
FLUENCY_V1 = "fluency.harper.v1"
FLUENCY_V2 = "fluency.harper.v2"


class HarperFluencyScorer(SingleSpecScorer):
    """``fluency.harper.v1`` (Harper's findings of the kinds in ``FLUENCY_HARPER_KINDS``) or ``fluency.harper.v2``
    (those plus the spelling findings on words general English hardly uses, ``count_fluency_lints_v2``), scored 1-5.

    Args:
        specs: exactly one of ``(RUBRICS.get("fluency.harper.v1"),)``, ``(RUBRICS.get("fluency.harper.v2"),)``.

    Raises:
        ConfigError: wrong specs.
        BackendUnavailableError: harper-py (or, for v2, wordfreq) is not installed.
    """

    def __init__(self, specs: tuple[RubricSpec, ...]) -> None:
        version = specs[0].version if len(specs) == 1 and specs[0].version == FLUENCY_V2 else FLUENCY_V1
        self._serve(specs, version)
        self._linter = harper_linter()  # built here, so a missing harper-py fails the build
        self._revision = importlib.metadata.version("harper-py")
        rule = ",".join(sorted(FLUENCY_HARPER_KINDS))
        self._zipf = None
        if version == FLUENCY_V2:
            self._zipf, words = english_zipf(FLUENCY_V2)
            self._revision += f"; {words}"
            rule += f";Spelling<{UNKNOWN_WORD_ZIPF}"
        self._kinds_hash = hashlib.sha256(rule.encode()).hexdigest()[:12]

    def provenance(self, rubric: str) -> Provenance:
        return self._provenance(rubric, backend="harper_fluency", model_id="harper-py", model_revision=self._revision,
                                template_hash=self._kinds_hash)

    def precheck(self, item: AnswerItem) -> Score | None:
        bad = text_problem(item.answer, "answer")
        return abstain_if_not_english(item.answer) if bad is None else Score.failed(bad)

    def read_lints(self, item: AnswerItem, lints: list[Any]) -> Score:
        kinds = [lint.lint_kind for lint in lints]
        spelling = ([self._zipf(lint.problem_text.strip().lower()) for lint in lints
                     if lint.lint_kind == "Spelling"] if self._zipf else [])
        n = count_fluency_lints_v2(kinds, spelling) if self._zipf else count_fluency_lints(kinds)
        extras = {"n_unknown_words": n - count_fluency_lints(kinds)} if self._zipf else {}
        return Score.ok(fluency_score(n, item.answer), n_errors=n, n_lints=len(kinds),
                        n_words=len(item.answer.split()), **extras)

    def score_batch(self, items: Sequence[AnswerItem]) -> list[ScoreSet]:
        """One ``{"fluency": Score}`` per item, in order; a text Harper fails on gets ``Score.failed``. Beside
        grammar.harper.v1, one ``models.rubric_backends.grammar.HarperPass`` lints each answer once for both."""
        return HarperPass([self]).score_batch(items)
