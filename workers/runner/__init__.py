"""The one job runner: every kind of job (score answers, judge pairs, LINKAGE lists) on one straight line::

    check backends -> list shards -> plan units (a shard, or a block of one: name, uri, sha256 and
      score store, each computed once) -> resume (a finished store is reused, a changed key starts
      the unit over, a partial store keeps its scores) -> the step (in this process, :func:`local_step`,
      or on Ray, :class:`workers.cluster.pipeline.RayStep`, both driving each unit through its store)
      -> every store merged into the job's index (a score made two ways is refused) -> the kind's
      assemble step (its tables) -> manifest.json (last)

A job kind is a small object (:class:`JobKind`) that says only what differs: as values, its store
folder, the fields of its store key, its score names, its item type (the Ray codec is read from it),
checkpoint size and the files it publishes (an OUT holding another kind's files is refused); as
methods, the backend check, a unit's work items with their store ids, the scorer it needs (an
object that scores a chunk and says how: :class:`StepScorer`) and its assemble step, which hands its
tables, rejects and report to the run's staging (``JobRun.output``, a :class:`workers.storage.outdir.Staging`)
and returns its manifest fields (:class:`KindManifest`). The runner alone opens the output folder,
stages, writes and publishes: no kind writes a file. The runner opens the job's score index before
the step, merges the stores into it before the assemble step and closes it after. The runner and both steps are the same code for every kind,
so the single-process and Ray paths, and the kinds, cannot drift apart.

The runner is three modules behind this face: ``_contract`` (what a kind supplies and returns, what a
step scores with and reports, a plan's unit, the two rules every step keeps: one result per store id,
checkpoints that never split an item), ``_local`` (the local step and the retry of failed cells, each
driving a unit through its store, ``workers.storage.store.UnitStore``, over the job's one index,
``workers.storage.index.ScoreIndex``) and ``_run`` (plan, resume, step, merge, assemble, manifest,
publish). Other modules import this face, never the three.

The ``perturb`` and ``encoder`` jobs are not runner kinds: the encoder's input is one score output and
its step one fit over the whole training split (no units to plan, store or resume), and an attack's
items are not independent (an answer changed while attacking one pair keeps that text in every later
pair), which per-item stored scores and dedupe would break.
"""

from workers.runner._contract import (
    Unit, Work, StepResult, StepScorer, FunctionScorer, prebuilt, JobKind, KindManifest, JobRun, check_results,
    checkpoints,
)
from workers.runner._local import work, local_step
from workers.runner._run import run
from workers.storage.index import ScoreIndex

__all__ = ["Unit", "Work", "StepResult", "StepScorer", "FunctionScorer", "prebuilt", "JobKind", "JobRun",
           "KindManifest", "ScoreIndex", "run", "local_step", "work", "check_results", "checkpoints"]
