"""The runner's contract: what a job kind supplies (:class:`JobKind`), what it returns from its assemble
step (:class:`KindManifest`), what its assemble step sees of the run (:class:`JobRun`), a plan's unit of
work (:class:`Unit`), what a step scores with (:class:`StepScorer`) and reports back (:class:`StepResult`),
and the two rules every step keeps (:func:`check_results`, :func:`checkpoints`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rubric.config import ScoringConfig
from rubric.errors import BatchMismatchError, ConfigError
from rubric.io import Block, record_from_json, record_json
from rubric.scoring import Provenance, Score
from rubric.tables import DEFAULT_MAX_FAILED
from workers.storage.outdir import OutputFolder, Staging
from workers.storage.index import ScoreIndex
from workers.storage.store import UnitStore

__all__ = ["Unit", "Work", "StepResult", "StepScorer", "FunctionScorer", "prebuilt", "JobKind", "KindManifest",
           "JobRun", "check_results", "checkpoints"]


@dataclass
class Unit:
    """One unit of a job's plan: a whole shard or one block of it, with its score store.

    Attributes:
        name: the store folder (``<shard>`` or ``<shard>@<block>``).
        uri: the shard as given.
        sha: the shard's sha256 (computed once, at planning).
        shard: the shard's name (the manifest counts per input).
        block: the block, or None for the whole shard.
        store: the unit's score store, opened for the job's key over the job's index: what a step drives the
            unit through (``workers.storage.store.UnitStore``).
    """

    name: str
    uri: str
    sha: str
    shard: str
    block: Block | None
    store: UnitStore


@dataclass
class Work:
    """What a unit still needs: the items without every score stored, and the unit's stored-id count."""

    todo: list
    ids: list[list[str]]  # each todo item's store ids
    n_ids: int


@dataclass
class StepResult:
    """What a step reports back to the runner.

    Attributes:
        failed: shard uri -> why it could not be read.
        scored: store ids scored by this run (resumed ones excluded).
        seconds: seconds per scorer or pool.
        info: step-specific facts for the manifest (pools, dedupe).
        retried: (store id, name) cells that had failed, scored again by ``--retry-failed``, per name.
    """

    failed: dict[str, str] = field(default_factory=dict)
    scored: int = 0
    retried: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    info: dict = field(default_factory=dict)


class StepScorer(Protocol):
    """What ``JobKind.scorer`` returns: it scores a chunk of items and says how.

    Attributes:
        provenance: score name -> how its scores are made (fixed when the scorer is built).
        seconds: seconds per scorer or pool, summed over every :meth:`score` call.
    """

    provenance: Mapping[str, Provenance]
    seconds: Mapping[str, float]

    def score(self, items: Sequence[Any], only: Sequence[str] | None = None) -> list[list[dict[str, Score]]]:
        """Per item, per store id, name -> Score (checked by :func:`check_results`). ``only``: the names
        needed (a retry of failed cells); a scorer may skip the others' work, or make them anyway."""
        ...


@dataclass
class FunctionScorer:
    """A :class:`StepScorer` made of a function (items -> per item, per store id, name -> Score) and the
    provenance of the scorer it calls: what the judge and LINKAGE kinds hand the runner."""

    function: Callable[[Sequence[Any]], list[list[dict[str, Score]]]]
    provenance: Mapping[str, Provenance]
    seconds: dict[str, float] = field(default_factory=dict)

    def score(self, items: Sequence[Any], only: Sequence[str] | None = None) -> list[list[dict[str, Score]]]:
        return self.function(items)  # every name: a retry keeps only the failed ones


def prebuilt(scorer: Any) -> Callable[..., Any]:
    """A kind's ``scorer_factory`` that returns ``scorer``, built beforehand (tests: a fake judge)."""
    return lambda *args, **kwargs: scorer


class JobKind:
    """What one kind of job supplies to the runner; subclasses override the methods that differ.

    Attributes:
        kind: the manifest's ``kind`` (None: none, the score job's manifest).
        store_dir: the stores' folder under OUT.
        what: a score name's noun in messages ("rubric", "judge", "LINKAGE system").
        status_done: an input's manifest status when it was (re)scored by this run.
        fmt: the input format (``rubric.readers.FORMATS``).
        blocks: plan large inputs as blocks (``rubric.readers.plan_blocks``).
        read_on_driver: on Ray, the driver builds the items (they are read for assembly anyway);
            otherwise Ray read tasks read the units.
        config: the engine settings.
        options: the reader options (in every store key).
        key_fields: the kind's own fields of every unit's store key (besides the input, its reader
            options and the config: ``workers.storage.store.score_key``).
        names: the score names every stored id carries (set by the kind's ``__init__``).
        item_type: the dataclass of the work items: they travel to Ray as its JSON
            (``rubric.io.record_json``; :meth:`encode_item`, :meth:`decode_item`).
        checkpoint: store ids per checkpoint (one store part) in the local step; the runner cuts the
            items in order, never splitting one (:func:`checkpoints`).
        outputs: every file the kind may publish into OUT (the manifest besides). One the earlier run
            published and this run does not stage is removed when the run publishes (no earlier run's
            table stays); an OUT whose manifest lists a file outside them holds another kind of job's
            output and is refused (``workers.storage.outdir.OutputFolder``).
        own_files: files the kind writes into OUT before it publishes (generated references; RAG-QA
            Arena's joined pairs, its input): a folder holding them without a manifest is still ours.
    """

    kind: str | None = None
    store_dir = "scores"
    what = "rubric"
    status_done = "scored"
    blocks = False
    read_on_driver = True
    fmt: str | None = None
    config: ScoringConfig
    options: dict
    key_fields: Mapping[str, Any] = {}
    names: list[str]
    item_type: type
    checkpoint: int
    outputs: tuple[str, ...] = ()
    own_files: tuple[str, ...] = ()
    #: The failure budget (``--max-failed``): a name with a larger fraction of failed rows makes the run
    #: exit non-zero after it published (:class:`rubric.errors.FailureBudgetError`).
    max_failed: float = DEFAULT_MAX_FAILED

    # --- planning ---
    def arguments(self) -> dict:
        """Plain data that rebuilds this kind (``type(kind)(**kind.arguments())``, on a Ray worker)."""
        raise NotImplementedError

    def check(self) -> None:
        """Fail before any data is read when a backend is missing."""

    def prepare(self, shards: Sequence[str], out: Path) -> None:
        """Anything the store keys need before the stores open (read on the driver, generated references)."""

    def unit_key(self, uri: str) -> Mapping[str, Any]:
        """The kind's fields of one input's store key: :attr:`key_fields` unless the input adds its own."""
        return self.key_fields

    # --- work ---
    def work_items(self, uri: str, block: Block | None) -> tuple[list, list[list[str]]]:
        """A unit's items and, per item, the store ids its scores are kept under (in the order the
        scorer returns them); InputError when the unit cannot be read."""
        raise NotImplementedError

    def stages(self) -> list[tuple[str, Any]]:
        """(pool, stage) in order: the Ray pools the items pass through, each building ``scorer(stage)``."""
        return [("llm", None)]

    def scorer(self, stage: Any = None) -> StepScorer:
        raise NotImplementedError

    def encode_item(self, item: Any) -> str:
        return record_json(item)

    def decode_item(self, text: str) -> Any:
        return record_from_json(self.item_type, text)

    def dedupe_key(self, item: Any) -> str:
        """Items with one key are scored once per job on Ray (their texts are the same)."""
        import hashlib

        return hashlib.sha256(self.encode_item(item).encode()).hexdigest()

    # --- after the step ---
    def assemble(self, job: "JobRun", scores: ScoreIndex, provenance: Mapping[str, Provenance]) -> "KindManifest":
        """Hand the kind's tables, rejects and report to ``job.output`` (the manifest excepted) and say
        what the manifest records. ``scores`` is the job's index, every unit's scores in it (the runner closes it),
        ``provenance`` one per name."""
        raise NotImplementedError


@dataclass
class KindManifest:
    """What a kind's assemble step returns besides the files it staged.

    Attributes:
        fields: the manifest's top-level fields of the kind (counts, settings, ``protocol``...).
        per_input: an input's name -> the extra fields of its ``inputs`` entry (its counts).
        job: the manifest's ``job`` fields besides the runner's.
        failed: the job has no result: what was staged (the reasons) is published with the manifest,
            which records this, and the run then fails with it (InputError).
    """

    fields: dict
    per_input: dict = field(default_factory=dict)
    job: dict = field(default_factory=dict)
    failed: str | None = None


def check_results(kind: JobKind, ids: Sequence[Sequence[str]], got: Sequence[Sequence[Mapping[str, Score]]],
                  names: Sequence[str]) -> None:
    """One result list per item, one result per store id, each with every name (others are not stored);
    or BatchMismatchError."""
    if (len(got) != len(ids) or any(len(g) != len(i) for g, i in zip(got, ids))
            or any(not set(names) <= set(r) for g in got for r in g)):
        raise BatchMismatchError(f"the scorer returned {len(got)} results for {len(ids)} items, or results without "
                                 f"every id or every {kind.what}")


def checkpoints(items: Sequence[Any], ids: Sequence[Sequence[str]], size: int) -> Iterable[tuple[list, list]]:
    """``(items, their ids)`` in order, cut where the next item would take a checkpoint past ``size`` store
    ids; an item is never split (one with more ids than ``size`` is a checkpoint of its own)."""
    start, n = 0, 0
    for k, i in enumerate(ids):
        if k > start and n + len(i) > size:
            yield list(items[start:k]), list(ids[start:k])
            start, n = k, 0
        n += len(i)
    if start < len(items):
        yield list(items[start:]), list(ids[start:])



@dataclass
class JobRun:
    """One run of a job, as the kind's assemble step sees it.

    The assemble step hands its files to :attr:`output` (the run's staging, in a fresh folder inside
    OUT); the runner publishes them with the manifest (``workers.storage.outdir.OutputFolder.publish``: the
    earlier run's files this run does not write are removed, no other), and removes the staging folder
    afterwards, published or not.
    """

    kind: JobKind
    out: Path
    shards: list[str]
    units: list[Unit]
    step: StepResult
    runner: str
    status: dict[str, str]
    why: dict[str, str]
    timings: dict[str, float]
    output: Staging
    folder: OutputFolder
    index: ScoreIndex
    t_start: float = 0.0

    def merged(self) -> tuple[ScoreIndex, dict[str, Provenance]]:
        """The job's index with every unit's scores in it (what earlier runs stored added now, ``UnitStore.merge``:
        the first unit's score of an id wins) and one provenance per name; the runner closes the index.

        Raises:
            ConfigError: a name was scored two ways in one job.
        """
        prov: dict[str, tuple[Provenance, str]] = {}
        for u in self.units:
            for r, p in u.store.merge().items():
                first = prov.setdefault(r, (p, u.name))
                if first[0] != p:
                    raise ConfigError(f"{self.kind.what} {r!r} was scored two ways in one job: unit "
                                      f"{first[1]} by {first[0]}, unit {u.name} by {p}; re-score one of "
                                      f"them (delete OUT/{self.kind.store_dir}/{u.name})")
        return self.index, {r: p for r, (p, _) in prov.items()}
