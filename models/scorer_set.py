"""A job's rubric scorers run over answers in batches: the score job's step (in process and in each
Ray stage actor) and the service's (``workers.serve``).

:class:`ScorerSet` is what ``workers.jobs.score.ScoreKind.scorer`` hands the runner: the scorers of the
rubrics asked for (``models.backends.build_scorers``), their provenance (fixed when built) and
:meth:`ScorerSet.score`. Reading, resume, checkpoints and assembly are the runner's
(:mod:`workers.runner`).

A batch whose scorer raises an ordinary exception is bisected until the bad rows are found, so
only they carry the error (at most ``2n - 1`` calls for ``n`` rows: bounded). An engine-level
failure (``EngineError``, a missing backend, a lost row, memory) re-raises at once; the chunks
already finished are in the score store, so a re-run resumes after them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from tqdm.auto import tqdm

from rubric.errors import BackendUnavailableError, BatchMismatchError, EngineError
from rubric.io import AnswerItem
from rubric.config import ScoringConfig
from rubric.scoring import RUBRICS, Provenance, RubricSpec, Score, ScoreSet, Scorer, check_batch

__all__ = ["ScoreRun", "score_items", "ScorerSet"]

log = logging.getLogger(__name__)

# Errors that mean the engine (not a row) is broken: re-raise instead of marking rows.
_FATAL = (EngineError, BackendUnavailableError, BatchMismatchError, MemoryError)


@dataclass
class ScoreRun:
    """Scores of some answers, per rubric in answer order, with how they were made."""

    scores: dict[str, list[Score]]
    provenance: dict[str, Provenance]
    seconds: dict[str, float] = field(default_factory=dict)


def _score_bisect(scorer: Scorer, batch: Sequence[AnswerItem], names: list[str]) -> list[ScoreSet]:
    """``scorer.score_batch(batch)``; on an ordinary exception, halve until the failing rows are alone."""
    try:
        results = scorer.score_batch(batch)
        check_batch(scorer, batch, results)
        return list(results)
    except _FATAL:
        raise
    except Exception as e:  # a bad row must not take its batch-mates down: find it
        if len(batch) == 1:
            log.warning("scorer %s failed on answer %s: %s: %s", "+".join(names), batch[0].answer_id,
                        type(e).__name__, e)
            reason = f"{type(e).__name__}: {e}"
            return [{n: Score.failed(reason) for n in names}]
        mid = len(batch) // 2
        return _score_bisect(scorer, batch[:mid], names) + _score_bisect(scorer, batch[mid:], names)


def score_items(items: Sequence[AnswerItem], scorers: Sequence[Scorer], *, batch_size: int,
                progress: bool = True) -> ScoreRun:
    """Run every scorer over ``items`` in batches; one Score per item and rubric, in order.

    Raises:
        EngineError, BackendUnavailableError, BatchMismatchError, MemoryError: the engine, not a row, failed.
    """
    run = ScoreRun(scores={}, provenance={})
    for scorer in scorers:
        names = [s.name for s in scorer.specs]
        for n in names:
            run.scores[n] = []
            run.provenance[n] = scorer.provenance(n)
        label = "+".join(names)
        t0 = time.perf_counter()
        with tqdm(total=len(items), desc=f"scoring {label}", unit="ans", disable=not progress,
                  mininterval=2.0, leave=False) as bar:
            for start in range(0, len(items), batch_size):
                batch = items[start:start + batch_size]
                results = _score_bisect(scorer, batch, names)
                for n in names:
                    run.scores[n].extend(r[n] for r in results)
                bar.update(len(batch))
        run.seconds[label] = time.perf_counter() - t0
    return run


class ScorerSet:
    """Built scorers of one job (or one Ray stage), as the runner's step uses them.

    Args:
        scorers: built scorers (``models.backends.build_scorers``; tests pass their own).
        batch_size: answers per ``score_batch`` call.

    Attributes:
        provenance: rubric name -> how its scores are made (fixed when the scorers are built).
        seconds: seconds per scorer, summed over every :meth:`score` call.
    """

    def __init__(self, scorers: Sequence[Scorer], batch_size: int) -> None:
        self.scorers = list(scorers)
        self.batch_size = batch_size
        self.provenance: dict[str, Provenance] = {s.name: sc.provenance(s.name) for sc in self.scorers
                                                  for s in sc.specs}
        self.seconds: dict[str, float] = {}

    @classmethod
    def build(cls, specs: Sequence[RubricSpec], config: ScoringConfig,
              stage: Sequence[str] | None = None) -> "ScorerSet":
        """The scorers of ``specs`` (or of the rubric versions in ``stage``: one Ray stage's)."""
        from models.backends import build_scorers

        chosen = list(specs) if stage is None else [RUBRICS.get(v) for v in stage]
        return cls(build_scorers(chosen, config), config.batch_size)

    def score(self, items: Sequence[AnswerItem]) -> list[list[dict[str, Score]]]:
        """Per answer, its one store id's scores (rubric name -> Score), in order (:func:`score_items`)."""
        run = score_items(items, self.scorers, batch_size=self.batch_size, progress=False)
        for k, v in run.seconds.items():
            self.seconds[k] = self.seconds.get(k, 0.0) + v
        names = list(run.scores)
        return [[{n: run.scores[n][i] for n in names}] for i in range(len(items))]
