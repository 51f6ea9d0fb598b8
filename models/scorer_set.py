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

The scorers of the ``text`` pool (``models.backends``: spaCy's conciseness, Harper, LanguageTool, length, ROUGE: no
torch model, no LLM engine) run beside the others in a process of their own (:class:`TextLane`, which builds its own
copies of them), so the CPU profile's parts overlap instead of adding up: in one process they would take turns with
the GIL (spaCy and the Python around every model hold it). A :class:`ScorerSet` built for a whole job starts it when
a call scores at least ``TextLane.min_items`` answers (a small job does not pay for its start); each scorer still runs
over every batch in order, with the same bisection, so the scores are those of one process
(``tests/models/test_scorer_set.py``); the text scorers' provenance is checked to be the same in both.

Each score's ``cost`` gets its ``seconds``: the wall seconds of the scorer's call on the batch it rode in
(its bisection included), shared over the batch's scores (every rubric of every answer the call made)
in proportion to the tokens the engine computed for each (prompt tokens not served from the prefix
cache, plus generated tokens) when the scorer reported them for every score of the batch, else evenly.
The shares of a batch add up to its seconds, so a rubric's seconds summed over its rows are the time
its scorer spent (:func:`share_seconds`). Tokens come from the scorer (``models.llm.scorer``).
"""

from __future__ import annotations

import logging
import multiprocessing
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from tqdm.auto import tqdm

from rubric.errors import BackendUnavailableError, BatchMismatchError, ConfigError, EngineError
from rubric.io import AnswerItem
from rubric.config import ScoringConfig
from rubric.scoring import RUBRICS, Provenance, RubricSpec, Score, ScoreSet, Scorer, check_batch

__all__ = ["ScoreRun", "score_items", "ScorerSet", "share_seconds", "TextLane", "LANE_POOL"]

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


def _work(s: Score) -> float | None:
    """Tokens the engine computed for one score (None: not reported)."""
    n = s.cost.get("prompt_tokens")
    if n is None:
        return None
    return max(0, n - (s.cost.get("cached_prompt_tokens") or 0)) + (s.cost.get("generated_tokens") or 0)


def share_seconds(results: Sequence[ScoreSet], seconds: float) -> list[dict[str, Score]]:
    """``results`` with each score's ``cost["seconds"]`` its share of ``seconds`` (see the module docstring)."""
    cells = [(i, n) for i, r in enumerate(results) for n in r]
    if not cells:
        return [dict(r) for r in results]
    work = [_work(results[i][n]) for i, n in cells]
    total = sum(w for w in work if w is not None)
    even = any(w is None for w in work) or total <= 0
    out: list[dict[str, Score]] = [dict(r) for r in results]
    for (i, n), w in zip(cells, work):
        share = seconds / len(cells) if even else seconds * w / total  # type: ignore[operator]
        s = out[i][n]
        out[i][n] = replace(s, cost={**s.cost, "seconds": share})
    return out


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
        spent = 0.0  # the scorer's own seconds, batch by batch: what its rows' shares add up to
        with tqdm(total=len(items), desc=f"scoring {label}", unit="ans", disable=not progress,
                  mininterval=2.0, leave=False) as bar:
            for start in range(0, len(items), batch_size):
                batch = items[start:start + batch_size]
                t_batch = time.perf_counter()
                results = _score_bisect(scorer, batch, names)
                seconds = time.perf_counter() - t_batch
                spent += seconds
                results = share_seconds(results, seconds)
                for n in names:
                    run.scores[n].extend(r[n] for r in results)
                bar.update(len(batch))
        run.seconds[label] = spent
    return run


#: The pool whose scorers run in :class:`TextLane`'s process (``models.backends.POOLS``).
LANE_POOL = "text"


def _lane_main(conn, versions: list[str], config: ScoringConfig) -> None:
    """The text lane's process: build the scorers of ``versions``, send their provenance, then score what comes."""
    try:
        from models.backends import build_scorers

        scorers = build_scorers([RUBRICS.get(v) for v in versions], config)
        conn.send(("ready", {s.name: sc.provenance(s.name) for sc in scorers for s in sc.specs}))
        while (items := conn.recv()) is not None:
            conn.send(("scored", score_items(items, scorers, batch_size=config.batch_size, progress=False)))
    except EOFError:  # the parent is gone
        return
    except BaseException as e:  # noqa: BLE001 - the parent re-raises it (a fatal error; the lane ends)
        try:
            conn.send(("error", e))
        except Exception:  # an exception that does not pickle: its text, as the engine error it is
            conn.send(("error", EngineError(f"{type(e).__name__}: {e}")))


def _close_lane(conn, proc) -> None:
    try:
        conn.send(None)
    except (OSError, ValueError):
        pass
    proc.join(timeout=5)
    if proc.is_alive():
        proc.terminate()
        proc.join(timeout=5)
    conn.close()


class TextLane:
    """The text pool's scorers in a process of their own, scoring a call's answers while the caller scores its own.

    Args:
        versions: the rubric versions it serves (each of a backend of :data:`LANE_POOL`).
        config: the job's scoring settings (the process builds its scorers with ``models.backends.build_scorers``).
        min_items: calls with fewer answers are left to the caller (the process starts on the first larger one).

    Raises (from :meth:`result`):
        EngineError: the process died; whatever fatal error its scorers raised.
    """

    def __init__(self, versions: Sequence[str], config: ScoringConfig, *, min_items: int = 64) -> None:
        self.versions, self.config, self.min_items = list(versions), config, min_items
        self.names = [RUBRICS.get(v).name for v in self.versions]
        self._conn = self._proc = None
        self.provenance: dict[str, Provenance] | None = None

    def start(self) -> None:
        """Start the process and wait for its scorers (spawned: nothing of this process's threads is copied)."""
        if self._proc is not None:
            return
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_lane_main, args=(child, self.versions, self.config), daemon=True,
                                 name="lfqa-rubric text lane")
        self._proc.start()
        child.close()
        weakref.finalize(self, _close_lane, self._conn, self._proc)
        self.provenance = self._answer("ready")

    def submit(self, items: Sequence[AnswerItem]) -> None:
        """Hand ``items`` to the process (it scores them while the caller goes on)."""
        self.start()
        self._conn.send(list(items))

    def result(self) -> ScoreRun:
        """The run of the last :meth:`submit`."""
        return self._answer("scored")

    def discard(self) -> None:
        """Wait for the last :meth:`submit`'s answer and drop it (the caller's own scoring failed)."""
        try:
            self.result()
        except Exception:  # noqa: BLE001 - the caller's error is the one to report
            log.debug("the text lane's answer after a failure was dropped", exc_info=True)

    def _answer(self, kind: str):
        try:
            got, value = self._conn.recv()
        except (EOFError, OSError) as e:
            raise EngineError(f"the text scorers' process ({', '.join(self.versions)}) ended without an answer "
                              f"(exit code {self._proc.exitcode})") from e
        if got == "error":
            raise value
        assert got == kind, (got, kind)
        return value


class ScorerSet:
    """Built scorers of one job (or one Ray stage), as the runner's step uses them.

    Args:
        scorers: built scorers (``models.backends.build_scorers``; tests pass their own).
        batch_size: answers per ``score_batch`` call.

    Attributes:
        provenance: rubric name -> how its scores are made (fixed when the scorers are built).
        seconds: seconds per scorer, summed over every :meth:`score` call.
    """

    def __init__(self, scorers: Sequence[Scorer], batch_size: int, lane: TextLane | None = None) -> None:
        self.scorers = list(scorers)
        self.batch_size = batch_size
        self.lane = lane
        self.provenance: dict[str, Provenance] = {s.name: sc.provenance(s.name) for sc in self.scorers
                                                  for s in sc.specs}
        self.seconds: dict[str, float] = {}

    @classmethod
    def build(cls, specs: Sequence[RubricSpec], config: ScoringConfig,
              stage: Sequence[str] | None = None) -> "ScorerSet":
        """The scorers of ``specs`` (or of the rubric versions in ``stage``: one Ray stage's, where each pool is its
        own actor already); a whole job's text pool also gets a :class:`TextLane` when other scorers are beside it."""
        from models.backends import BACKEND_POOLS, build_scorers

        chosen = list(specs) if stage is None else [RUBRICS.get(v) for v in stage]
        text = [s.version for s in chosen if BACKEND_POOLS.get(s.backend) == LANE_POOL]
        lane = TextLane(text, config) if stage is None and text and len(text) < len(chosen) else None
        return cls(build_scorers(chosen, config), config.batch_size, lane)

    def score(self, items: Sequence[AnswerItem], only: Sequence[str] | None = None) -> list[list[dict[str, Score]]]:
        """Per answer, its one store id's scores (rubric name -> Score), in order (:func:`score_items`).

        ``only``: run just the scorers that make one of these rubrics (a retry of failed cells); a scorer
        making several rubrics in one call makes its others too.
        """
        scorers = self.scorers if only is None else [sc for sc in self.scorers
                                                     if any(s.name in only for s in sc.specs)]
        lane = self.lane if self.lane is not None and len(items) >= self.lane.min_items else None
        beside = [sc for sc in scorers if lane is not None and sc.specs[0].name in lane.names]
        if beside:
            lane.start()
            if lane.provenance != {n: self.provenance[n] for n in lane.names}:
                raise ConfigError(f"the text lane's scorers report another provenance than this process's: "
                                  f"{lane.provenance} against {self.provenance}")
            lane.submit(items)
        mine = [sc for sc in scorers if not any(sc is b for b in beside)]
        try:
            run = score_items(items, mine, batch_size=self.batch_size, progress=False)
        except BaseException:
            if beside:
                lane.discard()  # its answer to this call, so the next call reads its own
            raise
        if beside:
            other = lane.result()
            run.scores.update(other.scores)
            run.seconds.update(other.seconds)
        for k, v in run.seconds.items():
            self.seconds[k] = self.seconds.get(k, 0.0) + v
        names = [s.name for sc in scorers for s in sc.specs]  # the scorers' order, whichever process made them
        return [[{n: run.scores[n][i] for n in names}] for i in range(len(items))]
