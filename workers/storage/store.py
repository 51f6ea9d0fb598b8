"""The score store: raw scores of each shard's unique answers, kept under ``OUT/scores/<shard>/``.

Scoring is the expensive step, so its results are kept apart from the job's tables, which the
assemble step rebuilds from them on every run (rescaling, splits and provenance stamps are cheap
and always fresh). A shard's store holds:

- ``key.json``: everything that changes a score: the input file's SHA-256, format and reader
  options, the rubric versions, and every :class:`~rubric.config.ScoringConfig` field except the
  few that cannot (:data:`NOT_SCORE_FIELDS`). A store whose key differs from the current job's is
  emptied, and the log says which field changed;
- ``part-NNNNN.parquet``: scored answers (``answer_id`` plus, per rubric, the JSON-encoded
  :class:`~rubric.scoring.scorer.Score` and :class:`~rubric.scoring.scorer.Provenance`), each written
  atomically as soon as a chunk is scored, so a run killed by an engine failure resumes from the
  last finished chunk;
- ``done.json``: written last, when every unique answer of the shard has a score.

New config fields count as score-changing by default: a field must be listed in
:data:`NOT_SCORE_FIELDS` to be ignored.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rubric.config import ScoringConfig
from rubric.errors import ConfigError
from rubric.io import open_parquet, read_parquet
from rubric.scoring import Provenance, Score, is_abstention, language_checks
from rubric.scoring import RubricSpec
from workers.storage.outdir import atomic_write_bytes, inside, is_scratch, make_dirs, new_temp, no_link, remove_tree

__all__ = ["NOT_SCORE_FIELDS", "score_key", "rubrics_key", "key_differences", "ShardStore", "encode_score",
           "decode_score", "encode_provenance", "decode_provenance", "atomic_write_bytes"]

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


def encode_score(s: Score) -> str:
    # JSON keeps a raw value, an error reason and extras of any mix of types exactly (float repr is exact);
    # the cost (tokens, seconds) travels with the score, so a reused score keeps what it cost
    d = {"raw": s.raw, "error": s.error, "extras": dict(s.extras)}
    if s.cost:
        d["cost"] = dict(s.cost)
    return json.dumps(d, ensure_ascii=False)


def decode_score(text: str) -> Score:
    d = json.loads(text)
    return Score(raw=d["raw"], error=d["error"], extras=d["extras"], cost=d.get("cost") or {})


def encode_provenance(p: Provenance) -> str:
    return json.dumps(asdict(p), sort_keys=True)


def decode_provenance(text: str) -> Provenance:
    return Provenance(**json.loads(text))


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


class ShardStore:
    """The score store of one shard (``root/<name>/``), opened for one score key.

    Opening compares the stored key with ``key``: on any difference the folder is emptied and
    :attr:`why` says what changed; otherwise finished parts are kept for resume, after checking that
    each can be read (a damaged one is removed with a warning, and its answers are scored again).

    Args:
        root: the job's store folder (``OUT/scores``).
        name: the shard's name (``workers.storage.shards.safe_name``).
        key: from :func:`score_key`.

    Raises:
        ConfigError: ``root / name`` is not a folder strictly inside ``root`` (``..``, a separator), ``root``
            or ``root / name`` is a symbolic link, or ``root / name`` holds files but no ``key.json``
            (not a store of ours: nothing in it is deleted).
    """

    def __init__(self, root: Path, name: str, key: Mapping[str, Any]) -> None:
        self.root = Path(root)
        for path in (self.root, self.root / name):
            no_link(path, "a score store")
        self.dir = inside(self.root, self.root / name)
        self.name = name
        self.key = dict(key)
        self.why: str | None = None  # why earlier results were discarded, if they were
        self.earlier: set[str] = set()  # the parts an earlier run stored (their scores are reused)
        self._open()

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
        self.reset()

    def _foreign(self) -> list[str]:
        """Entries of the store folder that are not ours (left in place; :meth:`reset` refuses them)."""
        if not self.dir.is_dir():
            return []
        return sorted(e.name for e in os.scandir(self.dir)
                      if e.is_symlink() or not e.is_file() or not (_OWN.match(e.name) or is_scratch(e.name)))

    def reset(self) -> None:
        """Discard every stored score of this shard and record the current key.

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

    def discard_if_empty(self) -> None:
        """Remove this shard's folder (and an emptied store folder) when it holds no scored part."""
        if self.dir.is_dir() and not self._parts():
            remove_tree(self.root, self.dir)
            try:
                self.root.rmdir()
            except OSError:  # other shards' stores are there
                pass

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
        """True when ``done.json`` matches the current key (every answer of the shard is scored)."""
        path = self.dir / "done.json"
        try:
            return json.loads(path.read_text()).get("key") == _digest(self.key)
        except (OSError, ValueError, AttributeError):
            return False

    def _parts(self) -> list[Path]:
        return sorted(self.dir.glob("part-*.parquet"))

    def _verify_parts(self) -> None:
        """Remove every stored part that cannot be read (and ``done.json`` with it), with a warning.

        The resume then scores those answers again instead of failing on the part later. Only the
        footer is read (a truncated file has none; cheap for a large store); a part damaged inside
        stops the job later in one line (:meth:`parts`).
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

    def scored_ids(self) -> set[str]:
        """Answer ids with a stored score (finished parts only)."""
        ids: set[str] = set()
        for part in self._parts():
            try:
                ids.update(read_parquet(part, columns=["answer_id"]).column("answer_id").to_pylist())
            except Exception as e:  # a damaged part is re-scored, never trusted
                log.warning("ignoring damaged score part %s (%s: %s); its answers are scored again",
                            part, type(e).__name__, e)
        return ids

    def append(self, answer_ids: Sequence[str], scores: Mapping[str, Sequence[Score]],
               provenance: Mapping[str, Provenance]) -> dict[str, list[str]]:
        """Store one finished chunk (atomically); ``scores[r][i]`` belongs to ``answer_ids[i]``. Returns the
        scores as stored (:func:`encode_score`), for a lookup that keeps them the same way."""
        encoded = {r: [encode_score(s) for s in col] for r, col in scores.items()}  # append_encoded checks the lengths
        self.append_encoded(answer_ids, encoded, {r: encode_provenance(provenance[r]) for r in scores})
        return encoded

    def append_encoded(self, answer_ids: Sequence[str], scores: Mapping[str, Sequence[str]],
                       provenance: Mapping[str, str]) -> None:
        """:meth:`append` for scores and provenances already encoded (:func:`encode_score`, :func:`encode_provenance`)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        for r, col in scores.items():
            if len(col) != len(answer_ids):
                raise ConfigError(f"{len(col)} {r} scores for {len(answer_ids)} answers")
        if not answer_ids:
            return
        cols: dict[str, Any] = {"answer_id": pa.array(list(answer_ids), pa.string())}
        for r, col in scores.items():
            cols[f"score__{r}"] = pa.array(list(col), pa.string())
            cols[f"prov__{r}"] = pa.array([provenance[r]] * len(answer_ids), pa.string())
        # after the last part's number: a removed damaged part leaves a gap that must not be refilled
        n = max((int(p.stem.split("-")[1]) for p in self._parts() if p.stem.split("-")[1].isdigit()), default=-1) + 1
        path = self.dir / f"part-{n:05d}.parquet"
        tmp = new_temp(self.dir, path.name)
        try:
            pq.write_table(pa.table(cols), tmp)
            os.replace(tmp, path)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)

    def finish(self, n_answers: int) -> None:
        """Mark the shard complete: every one of its ``n_answers`` unique answers has a score."""
        atomic_write_bytes(self.dir / "done.json",
                           json.dumps({"key": _digest(self.key), "n_answers": n_answers}).encode())

    def parts(self, rubrics: Sequence[str], *, latest_first: bool = False,
              ) -> Iterator[tuple[list[str], dict[str, list[str]], dict[str, Provenance]]]:
        """Each stored part in order (``latest_first``: the last written first, so a reader keeping the first
        score of an id keeps the newest, a retried one): its answer ids, their encoded scores per rubric, and
        its provenance.

        Raises:
            ConfigError: two parts of this shard record different provenances for one rubric.
        """
        for ids, encoded, prov, _ in self.parts_reused(rubrics, latest_first=latest_first):
            yield ids, encoded, prov

    def parts_reused(self, rubrics: Sequence[str], *, latest_first: bool = False,
                     ) -> Iterator[tuple[list[str], dict[str, list[str]], dict[str, Provenance], bool]]:
        """:meth:`parts`, each with whether an earlier run stored it (its scores are reused by this one)."""
        prov: dict[str, Provenance] = {}
        for part in (reversed(self._parts()) if latest_first else self._parts()):
            try:
                t = read_parquet(part).to_pydict()
            except Exception as e:  # damaged after this store was opened
                raise ConfigError(f"score part {part} cannot be read ({type(e).__name__}); run the job again to "
                                  "re-score its answers") from None
            for r in rubrics:
                for text in set(t[f"prov__{r}"]):
                    p = decode_provenance(text)
                    if prov.setdefault(r, p) != p:
                        raise ConfigError(f"shard {self.name}: stored {r!r} scores were made two ways: {prov[r]} and "
                                          f"{p}; delete {self.dir} to re-score")
            yield t["answer_id"], {r: t[f"score__{r}"] for r in rubrics}, dict(prov), part.name in self.earlier

    def failed_ids(self, rubrics: Sequence[str]) -> dict[str, list[str]]:
        """Stored id -> the rubrics whose newest stored score failed (ids with none failed are left out)."""
        newest: dict[str, dict[str, str]] = {}
        for ids, encoded, _ in self.parts(rubrics, latest_first=True):
            for i, aid in enumerate(ids):
                if aid not in newest:
                    newest[aid] = {r: encoded[r][i] for r in rubrics}
        out: dict[str, list[str]] = {}
        for aid, enc in newest.items():
            # an abstention is the rubric's answer for the row, not a failure: a retry would give it again
            bad = [r for r in rubrics if (e := decode_score(enc[r]).error) is not None and not is_abstention(e)]
            if bad:
                out[aid] = bad
        return out

    def newest(self, rubrics: Sequence[str], ids: Sequence[str]) -> dict[str, dict[str, str]]:
        """The newest stored encoded scores of ``ids`` (id -> rubric -> encoded score)."""
        want = set(ids)
        out: dict[str, dict[str, str]] = {}
        for part_ids, encoded, _ in self.parts(rubrics, latest_first=True):
            for i, aid in enumerate(part_ids):
                if aid in want and aid not in out:
                    out[aid] = {r: encoded[r][i] for r in rubrics}
        return out

    def load(self, rubrics: Sequence[str]) -> tuple[dict[str, dict[str, Score]], dict[str, Provenance]]:
        """Every stored score: answer_id -> rubric -> Score, and the one provenance per rubric.

        Raises:
            ConfigError: two parts of this shard record different provenances for one rubric.
        """
        scores: dict[str, dict[str, Score]] = {}
        prov: dict[str, Provenance] = {}
        for ids, encoded, prov in self.parts(rubrics):
            for i, aid in enumerate(ids):
                scores[aid] = {r: decode_score(encoded[r][i]) for r in rubrics}
        return scores, prov
