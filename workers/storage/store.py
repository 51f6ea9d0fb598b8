"""The score store of a unit: raw scores of its unique store ids, kept under ``OUT/<store_dir>/<unit>/``.

Scoring is the expensive step, so its results are kept apart from the job's tables, which the
assemble step rebuilds from them on every run (rescaling, splits and provenance stamps are cheap
and always fresh). A unit's store holds:

- ``key.json``: everything that changes a score: the input file's SHA-256, format and reader
  options, the rubric versions, and every :class:`~rubric.config.ScoringConfig` field except the
  few that cannot (:data:`NOT_SCORE_FIELDS`). A store whose key differs from the current job's is
  emptied, and the log says which field changed;
- ``part-NNNNN.parquet``: scored ids (``answer_id`` plus, per name, the JSON-encoded
  :class:`~rubric.scoring.scorer.Score` and :class:`~rubric.scoring.scorer.Provenance`,
  ``workers.storage.codec``), each written atomically as soon as a chunk is scored, so a run killed by an
  engine failure resumes from the last finished chunk;
- ``done.json``: written last, when every unique id of the unit has a score.

A :class:`UnitStore` is the one object a step drives a unit through: what is to do, record a scored chunk
(its part, then its rows in the job's one index, ``workers.storage.index.ScoreIndex``), the failed cells a
retry scores again, finish; after the step, what earlier runs stored goes into the index (:meth:`UnitStore.merge`).

New config fields count as score-changing by default: a field must be listed in
:data:`NOT_SCORE_FIELDS` to be ignored.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rubric.config import ScoringConfig
from rubric.errors import ConfigError
from rubric.io import open_parquet, read_parquet
from rubric.scoring import Provenance, Score, is_abstention, language_checks
from rubric.scoring import RubricSpec
from workers.storage.codec import decode_provenance, decode_score, encode_provenance, encode_score
from workers.storage.index import ScoreIndex, rank
from workers.storage.outdir import atomic_write_bytes, inside, is_scratch, make_dirs, new_temp, no_link, remove_tree

__all__ = ["NOT_SCORE_FIELDS", "score_key", "rubrics_key", "key_differences", "UnitStore"]

log = logging.getLogger(__name__)

#: ScoringConfig fields that cannot change a score: batching, how 1-5 columns are derived (the
#: assemble step redoes that every run), concurrency, caches, and reader limits (which are part
#: of the reader options in the key).
NOT_SCORE_FIELDS: frozenset[str] = frozenset({
    "batch_size", "rescale", "languagetool_threads", "evidence_cache_dir", "max_answer_chars", "max_question_chars",
    "split_fractions",
})


# The files a store folder holds: its key, its finished marker, its parts.
_OWN = re.compile(r"^(key\.json|done\.json|part-\d+\.parquet)$")
_PART = re.compile(r"^part-\d+\.parquet$")


def _canonical(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=str, sort_keys=True))


def score_key(*, path: str, sha256: str, fmt: str | None, options: Mapping[str, Any], config: ScoringConfig,
              block: Mapping[str, Any] | None = None, specs: Sequence[RubricSpec] = (),
              extra: Mapping[str, Any] | None = None) -> dict:
    """What a unit's scores depend on, as a JSON-able dict (see the module docstring).

    ``block``: the bounds of one block of the shard (``rubric.io.blocks.Block.bounds``); the file's
    sha256 stays in the key, so a changed file re-scores every one of its blocks. ``specs``: the
    rubrics (their versions); ``extra``: a job kind's own fields (``JobKind.unit_key``), which win.
    """
    inp = {"path": path, "sha256": sha256, "format": fmt, "options": dict(options)}
    if block is not None:
        inp["block"] = dict(block)
    return _canonical({
        "input": inp,
        **rubrics_key([s.version for s in specs]),
        "config": {k: v for k, v in asdict(config).items() if k not in NOT_SCORE_FIELDS},
        **dict(extra or {}),
    })


def rubrics_key(versions: Sequence[str]) -> dict:
    """The rubric versions' part of a score key: their names, and the language check each English-only one makes
    (``rubric.scoring.language_checks``; absent when none does, so other keys are as they were): a store of
    scores made before the check is scored again, never mixed with its abstentions."""
    checks = language_checks(versions)
    return {"rubrics": sorted(versions), **({"language_checks": checks} if checks else {})}


def key_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Human-readable differences between two score keys ("config.llm_model: 'a' -> 'b'")."""
    out: list[str] = []

    def walk(a: Any, b: Any, where: str) -> None:
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for k in sorted(set(a) | set(b), key=str):
                walk(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{where}.{k}" if where else str(k))
        elif a != b:
            if where == "input.sha256":
                out.append("the input file's content changed (sha256 "
                           f"{str(a)[:12]} -> {str(b)[:12]})")
            else:
                out.append(f"{where}: {a!r} -> {b!r}")

    walk(old, new, "")
    return out


def _digest(key: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


class UnitStore:
    """The score store of one unit (``root/<name>/``), opened for one score key, over the job's index.

    What a step calls (the runner's local step and retry, the Ray collector): :meth:`todo` (the items still to
    score), :meth:`record` / :meth:`record_encoded` (a scored chunk: its part, then its rows in the index),
    :meth:`failed_cells`, :meth:`retry_todo` and :meth:`record_retry` (``--retry-failed``), :meth:`finish`; what
    the runner calls around it: :attr:`done`, :attr:`why`, :meth:`merge` (after the step), :meth:`discard_if_empty`.

    Opening compares the stored key with ``key``: on any difference the folder is emptied and
    :attr:`why` says what changed; otherwise finished parts are kept for resume, after checking that
    each can be read (a damaged one is removed with a warning, and its ids are scored again).

    Args:
        root: the job's store folder (``OUT/scores``).
        name: the unit's name (``workers.storage.shards.safe_name``).
        key: from :func:`score_key`.
        index: the job's index (one per run, shared by every unit's store).
        names: the score names each stored id carries.
        position: the unit's place in the plan (the index keeps the first unit's score of an id).

    Raises:
        ConfigError: ``root / name`` is not a folder strictly inside ``root`` (``..``, a separator), ``root``
            or ``root / name`` is a symbolic link, or ``root / name`` holds files but no ``key.json``
            (not a store of ours: nothing in it is deleted).
    """

    def __init__(self, root: Path, name: str, key: Mapping[str, Any], index: ScoreIndex, names: Sequence[str],
                 position: int = 0) -> None:
        self.root = Path(root)
        for path in (self.root, self.root / name):
            no_link(path, "a score store")
        self.dir = inside(self.root, self.root / name)
        self.name = name
        self.key = dict(key)
        self.index = index
        self.names = list(names)
        self.position = position
        self.why: str | None = None  # why earlier results were discarded, if they were
        self.earlier: set[str] = set()  # the parts an earlier run stored (their scores are reused)
        self._provenance: dict[str, Provenance] = {}  # name -> how every part read or written so far made it
        self._failed: dict[str, list[str]] | None = None  # a retry's failed cells (failed_cells)
        self._retried: dict[str, dict[str, str]] = {}  # a retry's stored rows of the items it scores again
        self._open()

    # --- opening ---
    def _open(self) -> None:
        key_path = self.dir / "key.json"
        if key_path.is_file():
            try:
                old = json.loads(key_path.read_text())
            except (OSError, ValueError) as e:
                old, diffs = None, [f"its key.json cannot be read ({e})"]
            else:
                diffs = key_differences(old, self.key)
            if not diffs:
                self._verify_parts()
                self.earlier = {p.name for p in self._parts()}
                return
            self.why = "; ".join(diffs)
            log.info("re-scoring shard %s: %s", self.name, self.why)
        elif self.dir.exists() and any(self.dir.iterdir()):
            raise ConfigError(f"{self.dir} holds files but no key.json: it is not a score store of lfqa-rubric's, "
                              "and nothing in it is deleted; move it away (or write to another OUT)")
        self._reset()

    def _foreign(self) -> list[str]:
        """Entries of the store folder that are not ours (left in place; :meth:`_reset` refuses them)."""
        if not self.dir.is_dir():
            return []
        return sorted(e.name for e in os.scandir(self.dir)
                      if e.is_symlink() or not e.is_file() or not (_OWN.match(e.name) or is_scratch(e.name)))

    def _reset(self) -> None:
        """Discard every stored score of this unit and record the current key.

        Raises:
            ConfigError: the folder holds something not ours (deleted by nothing; move it away).
        """
        foreign = self._foreign()
        if foreign:
            raise ConfigError(f"{self.dir} holds {', '.join(foreign[:5])}, which is not part of a score store: "
                              "nothing in it is deleted; move it away (or write to another OUT)")
        remove_tree(self.root, self.dir)
        make_dirs(self.root.parent, self.dir)
        atomic_write_bytes(self.dir / "key.json", json.dumps(self.key, indent=2, sort_keys=True).encode())

    def _parts(self) -> list[Path]:
        return sorted(p for p in self.dir.glob("part-*.parquet") if _PART.match(p.name))

    def _verify_parts(self) -> None:
        """Remove every stored part that cannot be read (and ``done.json`` with it), with a warning.

        The resume then scores those ids again instead of failing on the part later. Only the
        footer is read (a truncated file has none; cheap for a large store); a part damaged inside
        stops the job later in one line (:meth:`_read_parts`).
        """
        rows = 0
        for part in self._parts():
            try:
                rows += open_parquet(part, lambda pf: pf.metadata.num_rows)
            except Exception as e:  # pyarrow raises several types for a damaged file
                log.warning("shard %s: score part %s cannot be read (%s: %s); removing it, its answers are "
                            "scored again", self.name, part, type(e).__name__, str(e).split("\n")[0])
                remove_tree(self.root, part)
                remove_tree(self.root, self.dir / "done.json")
        try:
            promised = json.loads((self.dir / "done.json").read_text()).get("n_answers", 0)
        except (OSError, ValueError, AttributeError):
            return
        if isinstance(promised, int) and rows < promised:  # a part deleted by hand
            log.warning("shard %s: its store holds %d scored answers but was finished with %d; the missing ones "
                        "are scored again", self.name, rows, promised)
            remove_tree(self.root, self.dir / "done.json")

    @staticmethod
    def finished(root: Path, name: str, key: Mapping[str, Any]) -> bool:
        """Whether ``root / name`` holds a store of ``key`` that was finished, read without opening it (nothing is
        made, emptied or removed: what a refused ``--retry-failed`` must leave as it was)."""
        folder = Path(root) / name
        try:
            if folder.is_symlink() or json.loads((folder / "key.json").read_text()) != _canonical(key):
                return False
            return json.loads((folder / "done.json").read_text()).get("key") == _digest(key)
        except (OSError, ValueError, AttributeError):
            return False

    @property
    def done(self) -> bool:
        """True when ``done.json`` matches the current key (every id of the unit is scored)."""
        path = self.dir / "done.json"
        try:
            return json.loads(path.read_text()).get("key") == _digest(self.key)
        except (OSError, ValueError, AttributeError):
            return False

    # --- what is to do ---
    def scored_ids(self) -> set[str]:
        """Store ids with a stored score (finished parts only)."""
        ids: set[str] = set()
        for part in self._parts():
            try:
                ids.update(read_parquet(part, columns=["answer_id"]).column("answer_id").to_pylist())
            except Exception as e:  # a damaged part is re-scored, never trusted
                log.warning("ignoring damaged score part %s (%s: %s); its answers are scored again",
                            part, type(e).__name__, e)
        return ids

    def todo(self, items: Sequence[Any], ids: Sequence[Sequence[str]], *, copy: bool = False,
             ) -> tuple[list, list[list[str]]]:
        """The items (``ids[k]``: item ``k``'s store ids) with an id not stored yet, and their ids.

        ``copy``: first store the items every id of which this run scored in an earlier unit, copied from the
        index as they were made (stamped with how this run makes them), and leave them out: an item is scored
        once per run.
        """
        done = self.scored_ids()
        keep = [k for k, i in enumerate(ids) if not all(a in done for a in i)]
        items, ids = [items[k] for k in keep], [list(ids[k]) for k in keep]
        if copy and items:
            known = self.index.made_now([a for i in ids for a in i])
            copied = [a for i in ids if all(a in known for a in i) for a in i]
            if copied:
                # not put in the index again: it holds these ids' rows already (the same scores)
                self._write(copied, [known[a] for a in copied],
                            {r: encode_provenance(p) for r, p in self.index.provenance.items()}, index=False)
                keep = [k for k, i in enumerate(ids) if not all(a in known for a in i)]
                items, ids = [items[k] for k in keep], [ids[k] for k in keep]
        return items, ids

    # --- record ---
    def record(self, ids: Sequence[str], scores: Sequence[Mapping[str, Score]],
               provenance: Mapping[str, Provenance]) -> None:
        """Store one scored chunk (atomically, one part) and put it in the job's index: ``scores[i]``, name -> Score,
        belongs to ``ids[i]`` (names other than the store's are not kept)."""
        self.record_encoded(ids, [{r: encode_score(s[r]) for r in self.names} for s in scores],
                            {r: encode_provenance(provenance[r]) for r in self.names})

    def record_encoded(self, ids: Sequence[str], rows: Sequence[Mapping[str, str]],
                       provenance: Mapping[str, str]) -> None:
        """:meth:`record` for scores and provenances already encoded (``workers.storage.codec``: the Ray rows)."""
        self._write(ids, rows, provenance)
        self.index.provenance.update({r: decode_provenance(provenance[r]) for r in self.names})

    def _write(self, ids: Sequence[str], rows: Sequence[Mapping[str, str]], provenance: Mapping[str, str], *,
               index: bool = True) -> None:
        """One part of ``ids`` (``rows[i]``: ``ids[i]``'s encoded score per name), then, with ``index``, their rows
        in the job's index.

        Raises:
            ConfigError: not one row per id, or a name made another way than this unit's other parts made it.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        if len(rows) != len(ids):
            raise ConfigError(f"{len(rows)} scores for {len(ids)} ids")
        if not ids:
            return
        for r in self.names:
            self._same_way(r, provenance[r])
        rows = [{r: row[r] for r in self.names} for row in rows]  # the store's names only
        cols: dict[str, Any] = {"answer_id": pa.array(list(ids), pa.string())}
        for r in self.names:
            cols[f"score__{r}"] = pa.array([row[r] for row in rows], pa.string())
            cols[f"prov__{r}"] = pa.array([provenance[r]] * len(ids), pa.string())
        # after the last part's number: a removed damaged part leaves a gap that must not be refilled
        n = max((_number(p) for p in self._parts()), default=-1) + 1
        path = self.dir / f"part-{n:05d}.parquet"
        tmp = new_temp(self.dir, path.name)
        try:
            pq.write_table(pa.table(cols), tmp)
            os.replace(tmp, path)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        if index:
            self.index.put(ids, rows, rank=rank(self.position, n))

    def _same_way(self, name: str, provenance: str) -> None:
        p = decode_provenance(provenance)
        if self._provenance.setdefault(name, p) != p:
            raise ConfigError(f"shard {self.name}: stored {name!r} scores were made two ways: {self._provenance[name]} "
                              f"and {p}; delete {self.dir} to re-score")

    def finish(self, n_ids: int) -> None:
        """Mark the unit complete: every one of its ``n_ids`` unique store ids has a score."""
        atomic_write_bytes(self.dir / "done.json",
                           json.dumps({"key": _digest(self.key), "n_answers": n_ids}).encode())

    # --- a retry of failed cells ---
    def failed_cells(self) -> dict[str, list[str]]:
        """Stored id -> the names whose newest stored score failed (ids with none failed are left out; an
        abstention is the rubric's answer for the row, not a failure: a retry would give it again)."""
        if self._failed is None:
            self._failed = {}
            for aid, enc in self._newest(None).items():
                bad = [r for r in self.names if (e := decode_score(enc[r]).error) is not None and not is_abstention(e)]
                if bad:
                    self._failed[aid] = bad
        return self._failed

    def retry_todo(self, items: Sequence[Any], ids: Sequence[Sequence[str]]) -> tuple[list, list[list[str]]]:
        """The items with a failed cell (:meth:`failed_cells`) and their ids; their stored scores are kept for
        :meth:`record_retry`."""
        failed = self.failed_cells()
        keep = [k for k, i in enumerate(ids) if any(a in failed for a in i)]
        items, ids = [items[k] for k in keep], [list(ids[k]) for k in keep]
        self._retried = self._newest({a for i in ids for a in i})
        return items, ids

    def record_retry(self, ids: Sequence[str], scores: Sequence[Mapping[str, Score]],
                     provenance: Mapping[str, Provenance]) -> dict[str, int]:
        """Store a retried chunk as one new part with every name: each failed cell's new score (``scores[i]``
        must hold ``ids[i]``'s failed names), the other cells' stored scores as they were (their cost kept and
        marked reused). Readers keep an id's newest part, so the tables are those of a run where the failed
        cells were made now. Returns the cells retried, per name."""
        failed = self.failed_cells()
        retried: dict[str, int] = {}
        rows: list[dict[str, str]] = []
        for aid, new in zip(ids, scores, strict=True):
            row = {}
            for r in self.names:
                if r in failed.get(aid, ()):
                    row[r] = encode_score(new[r])
                    retried[r] = retried.get(r, 0) + 1
                else:
                    old = decode_score(self._retried[aid][r])
                    row[r] = encode_score(Score(old.raw, old.error, old.extras, {**old.cost, "reused": True}))
            rows.append(row)
        self.record_encoded(ids, rows, {r: encode_provenance(provenance[r]) for r in self.names})
        return retried

    # --- after the step ---
    def merge(self) -> dict[str, Provenance]:
        """Put what earlier runs stored in this unit into the job's index (each earlier part read once; this run's
        rows are there already) and say how this unit's scores of each name were made.

        Raises:
            ConfigError: two parts of this unit made a name two ways, or a part cannot be read any more.
        """
        for part, ids, cols in self._read_parts(earlier_only=True):
            self.index.put(ids, ({r: cols[r][i] for r in self.names} for i in range(len(ids))),
                           rank=rank(self.position, _number(part)), earlier=True)
        return dict(self._provenance)

    def discard_if_empty(self) -> None:
        """Remove this unit's folder (and an emptied store folder) when it holds no scored part."""
        if self.dir.is_dir() and not self._parts():
            remove_tree(self.root, self.dir)
            try:
                self.root.rmdir()
            except OSError:  # other units' stores are there
                pass

    # --- reading the parts ---
    def _read_parts(self, *, earlier_only: bool = False, latest_first: bool = False,
                    ) -> Iterator[tuple[Path, list[str], dict[str, list[str]]]]:
        """Each stored part (``latest_first``: the last written first): its path, ids and encoded scores per name.

        Raises:
            ConfigError: a part cannot be read, or makes a name another way than this unit's other parts.
        """
        for part in (reversed(self._parts()) if latest_first else self._parts()):
            if earlier_only and part.name not in self.earlier:
                continue
            try:
                t = read_parquet(part).to_pydict()
            except Exception as e:  # damaged after this store was opened
                raise ConfigError(f"score part {part} cannot be read ({type(e).__name__}); run the job again to "
                                  "re-score its answers") from None
            for r in self.names:
                for text in set(t[f"prov__{r}"]):
                    self._same_way(r, text)
            yield part, t["answer_id"], {r: t[f"score__{r}"] for r in self.names}

    def _newest(self, ids: Iterable[str] | None) -> dict[str, dict[str, str]]:
        """The newest stored encoded scores of ``ids`` (None: every id): id -> name -> encoded score."""
        want = None if ids is None else set(ids)
        out: dict[str, dict[str, str]] = {}
        for _, part_ids, cols in self._read_parts(latest_first=True):
            for i, aid in enumerate(part_ids):
                if (want is None or aid in want) and aid not in out:
                    out[aid] = {r: cols[r][i] for r in self.names}
        return out


def _number(part: Path) -> int:
    """A part's number (``part-00012.parquet``: 12)."""
    return int(part.stem.split("-")[1])
