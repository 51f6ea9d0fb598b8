"""The scoring job, one straight line for both paths::

    check backends -> list shards -> open each shard's score store (resume or re-score, and why)
      -> score the pending shards (single process, or Ray pools)
      -> re-read every shard and assemble the whole job once (rubric.tables.assemble)
      -> write OUT/answers.parquet, pairs.parquet, [claims.parquet], rejects.jsonl, [rescale.json],
         manifest.json (last)

Only the score step differs between ``runner="local"`` and ``runner="ray"``; everything before
and after it is this module, so the two paths give the same tables in the same layout.

A shard that cannot be read does not stop the others from being scored (their scores are kept
in ``OUT/scores/``), but the job then stops before assembling: tables missing an input would
have other splits and rescaling than the whole job, so none are written.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rubric.tables import Assembled, JobInput, StreamAssembled, assemble_stream
from rubric.config import ScoringConfig
from rubric.errors import BatchMismatchError, ConfigError, InputError
from rubric.io import Block, ReadResult
from rubric.io import explode
from rubric.scoring import Provenance, Score, Scorer
from rubric.scoring import RubricSpec
from workers.shards import list_shards, read_unit, shard_blocks, shard_name, shard_sha256, unit_name
from workers.outdir import atomic_write_bytes, locks_out, publish, remove_tree
from workers.store import ShardStore, decode_score, encode_score, score_key

__all__ = ["PendingShard", "StepResult", "run_job", "local_step"]

log = logging.getLogger(__name__)

@dataclass
class PendingShard:
    """A unit of work (a shard, or one block of it) whose store is not complete for the current score key."""

    name: str
    uri: str
    store: ShardStore
    block: Block | None = None


@dataclass
class _Unit:
    """One unit of the job's plan: a whole shard or one block of it, with its score store."""

    name: str
    uri: str
    sha: str
    store: ShardStore
    block: Block | None
    shard: str  # the shard's name (per-input counts in the manifest)


@dataclass
class StepResult:
    """What a score step reports back to the job.

    Attributes:
        failed: shard uri -> why it could not be read.
        answers_scored: answers scored by this run (resumed ones excluded).
        seconds: seconds per scorer or pool.
        info: runner-specific facts for the manifest (pools, actors).
        reads: shard uri -> what the step read, so the assemble step need not read it again.
    """

    failed: dict[str, str] = field(default_factory=dict)
    answers_scored: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    reads: dict[str, ReadResult] = field(default_factory=dict)


ScoreStep = Callable[..., StepResult]


class _RunScores:
    """Scores by answer id on disk (SQLite), so memory does not grow with the job: the answers this
    run has scored (an answer met again in a later block is copied, not scored again), and the
    job's merged scores for the assemble step (an :class:`rubric.tables.assemble_stream.ScoreLookup`)."""

    def __init__(self, folder: Path, name: str = "run") -> None:
        import sqlite3

        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.path = folder / f".{name}-scores-{os.getpid()}.sqlite"
        remove_tree(folder, self.path)
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                              "CREATE TABLE s (aid TEXT PRIMARY KEY, scores TEXT) WITHOUT ROWID;")
        self.provenance: dict[str, Provenance] = {}

    def get(self, ids: Sequence[str]) -> dict[str, dict[str, Score]]:
        out: dict[str, dict[str, Score]] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start:start + 500])
            q = f"SELECT aid, scores FROM s WHERE aid IN ({','.join('?' * len(chunk))})"
            for aid, text in self.db.execute(q, chunk):
                out[aid] = {r: decode_score(v) for r, v in json.loads(text).items()}
        return out

    def put(self, ids: Sequence[str], scores: Mapping[str, Sequence[Score]], provenance: Mapping[str, Provenance]) -> None:
        self.provenance.update(provenance)
        self.put_encoded(ids, {r: [encode_score(s) for s in col] for r, col in scores.items()})

    def put_encoded(self, ids: Sequence[str], encoded: Mapping[str, Sequence[str]]) -> None:
        """Add scores already encoded (``workers.store.encode_score``); an answer stored before keeps its scores."""
        rows = ((aid, json.dumps({r: col[i] for r, col in encoded.items()})) for i, aid in enumerate(ids))
        self.db.execute("BEGIN")
        self.db.executemany("INSERT OR IGNORE INTO s VALUES (?, ?)", rows)
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()
        remove_tree(self.folder, self.path)


def local_step(pending: Sequence[PendingShard], *, fmt: str, options: Mapping[str, Any],
               specs: Sequence[RubricSpec], config: ScoringConfig, progress: bool,
               scorers: Sequence[Scorer] | None = None) -> StepResult:
    """Score pending units (shards or blocks) in this process, one at a time, each resumed from its chunks.

    An answer that an earlier unit of this run scored is copied into the later unit's store instead
    of being scored again (exact dedupe over the run; the lookup is on disk). Nothing read is kept:
    memory follows one block, not the file.

    Args:
        scorers: prebuilt scorers for ``specs``; default: built here, once, when the first answer
            needs scoring (so an unreadable input fails before any model loads).
    """
    from workers.local import score_chunks

    result = StepResult()
    if not pending:
        return result
    names = [s.name for s in specs]
    run = _RunScores(pending[0].store.dir.parent)
    try:
        for sh in pending:
            try:
                read = read_unit(sh.uri, fmt, options, sh.block)
            except InputError as e:
                log.error("input %s cannot be read: %s", sh.uri, e)
                result.failed[sh.uri] = str(e)
                continue
            items = explode(read.pairs)
            del read
            done = sh.store.scored_ids()
            todo = [it for it in items if it.answer_id not in done]
            known = run.get([it.answer_id for it in todo]) if todo else {}
            if known:
                ids = [it.answer_id for it in todo if it.answer_id in known]
                sh.store.append(ids, {r: [known[a][r] for a in ids] for r in names}, run.provenance)
                todo = [it for it in todo if it.answer_id not in known]
            if todo and scorers is None:  # built once, and only when there is something to score
                from models.backends import build_scorers

                t0 = time.perf_counter()
                scorers = build_scorers(specs, config)
                result.seconds["load_backends"] = round(time.perf_counter() - t0, 3)
            if len(todo) < len(items):
                log.info("%s: %d of %d answers already scored (resumed, or scored in an earlier block)", sh.name,
                         len(items) - len(todo), len(items))
            secs = score_chunks(todo, scorers, sh.store, batch_size=config.batch_size, progress=progress,
                                desc=f"scoring {sh.name}",
                                on_chunk=lambda part, sr: run.put([it.answer_id for it in part], sr.scores,
                                                                  sr.provenance))
            sh.store.finish(len(items))
            result.answers_scored += len(todo)
            for k, v in secs.items():
                result.seconds[k] = round(result.seconds.get(k, 0.0) + v, 3)
    finally:
        run.close()
    return result


def _load_scores(plan: Sequence[_Unit], specs: Sequence[RubricSpec], folder: Path
                 ) -> tuple["_RunScores", dict[str, Provenance]]:
    """Merge the units' stores into one on-disk lookup: the first unit's score of an answer wins;
    provenances must agree. Memory follows one stored part, not the job."""
    names = [s.name for s in specs]
    merged = _RunScores(folder, "merged")
    prov: dict[str, tuple[Provenance, str]] = {}
    try:
        for u in plan:
            for ids, encoded, part_prov in u.store.parts(names):
                for r, p in part_prov.items():
                    first = prov.setdefault(r, (p, u.name))
                    if first[0] != p:
                        raise ConfigError(f"rubric {r!r} was scored two ways in one job: shard {first[1]} by "
                                          f"{first[0]}, shard {u.name} by {p}; re-score one of them (delete "
                                          f"OUT/scores/{u.name})")
                merged.put_encoded(ids, encoded)
    except BaseException:
        merged.close()
        raise
    return merged, {r: p for r, (p, _) in prov.items()}


def _check_backends(specs: Sequence[RubricSpec], config: ScoringConfig) -> None:
    from models.backends import check_backends

    check_backends(specs, config)


@locks_out()
def run_job(inputs: str | Path | Sequence[str | Path], fmt: str, specs: Sequence[RubricSpec], out: str | Path, *,
            config: ScoringConfig, reader_options: Mapping[str, Any] | None = None, seed: int = 0,
            progress: bool = True, runner: str = "local", step: ScoreStep | None = None) -> dict:
    """Score every input and write the job's tables (see the module docstring).

    Args:
        inputs: a file, or a list of files, directories, globs or URIs (one file = one shard).
        fmt: input format (``rubric.io.readers.FORMATS``), the same for every input.
        specs: the rubrics to score.
        out: output folder.
        config: scoring settings.
        reader_options: passed to the reader of every input.
        seed: split seed.
        progress: show progress bars.
        runner: "local" or "ray" (recorded in the manifest).
        step: the score step; default :func:`local_step`.

    Returns:
        The manifest (also written to ``OUT/manifest.json``).

    Raises:
        BackendUnavailableError: a backend's package or model is missing (before any data is read).
        InputError: an input does not exist, cannot be read, or the job has no usable pair.
    """
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    _check_backends(specs, config)
    options = dict(reader_options or {})
    out = Path(out)
    raw_inputs = [inputs] if isinstance(inputs, (str, Path)) else list(inputs)
    shards = list_shards(raw_inputs, fmt)
    plan: list[_Unit] = []
    shard_sha: dict[str, str] = {}
    for uri in shards:
        sha = shard_sha256(uri, fmt, options)
        shard_sha[uri] = sha
        try:
            blocks = shard_blocks(uri, fmt, options)
        except InputError as e:  # a Hugging Face input that cannot be opened: reported like an unreadable file
            raise InputError(f"input {uri!r} cannot be read: {e}") from e
        for block in (blocks or [None]):
            name = unit_name(uri, block, fmt)
            key = score_key(path=uri, sha256=sha, fmt=fmt, options=options, specs=specs, config=config,
                            block=None if block is None else block.bounds())
            plan.append(_Unit(name, uri, sha, ShardStore(out / "scores", name, key), block, shard_name(uri, fmt)))
    pending = [PendingShard(u.name, u.uri, u.store, u.block) for u in plan if not u.store.done]
    status: dict[str, str] = {}
    why: dict[str, str] = {}
    for u in plan:  # per input: "scored" if any of its blocks was scored now
        status[u.shard] = "scored" if (not u.store.done or status.get(u.shard) == "scored") else "reused"
        if u.store.why and u.shard not in why:
            why[u.shard] = u.store.why
    n_shards = len(shards)
    log.info("%d input(s) in %d unit(s): %d already scored, %d to score", n_shards, len(plan),
             len(plan) - len(pending), len(pending))
    timings["plan"] = round(time.perf_counter() - t_start, 3)

    t0 = time.perf_counter()
    step_result = (step or local_step)(pending, fmt=fmt, options=options, specs=specs, config=config,
                                       progress=progress)
    timings["score"] = round(time.perf_counter() - t0, 3)
    if step_result.failed:
        for u in plan:  # an unreadable input's store holds nothing but its key
            if u.uri in step_result.failed:
                u.store.discard_if_empty()
        lines = "; ".join(f"{u}: {e}" for u, e in step_result.failed.items())
        kept = (f" (the other inputs' scores are kept under {out / 'scores'} and a re-run resumes them)"
                if len(step_result.failed) < n_shards else "")
        raise InputError(f"{len(step_result.failed)} of {n_shards} input(s) could not be read, so no tables were "
                         f"written{kept}: {lines}")

    t0 = time.perf_counter()
    for u in plan:
        if not u.store.done:
            raise BatchMismatchError(f"shard {u.name} is not completely scored after the score step")
    scores, provenance = _load_scores(plan, specs, out / "scores")
    for s in specs:  # a job whose every answer was rejected still says how it would have scored
        provenance.setdefault(s.name, Provenance(s.version, s.backend))

    def read_inputs():
        for u in plan:  # one unit at a time: nothing of an earlier unit is kept
            read = step_result.reads.get(u.uri) if u.block is None else None
            yield JobInput(name=u.name if u.block is None else u.shard, read=read or read_unit(u.uri, fmt, options, u.block),
                           fmt=fmt, sha256=u.sha, group=None if u.block is None else u.shard)

    try:
        writer = _TableWriter(out)
    except BaseException:
        scores.close()
        raise
    try:
        try:
            assembled = assemble_stream(read_inputs, scores, provenance, specs, write_pairs=writer.pairs,
                                        write_rejects=writer.rejects, write_answers=writer.answers,
                                        write_claims=writer.claims, rescale=config.rescale, seed=seed,
                                        workdir=str(writer.tmpdir))
        finally:
            scores.close()
        for uri, sha in shard_sha.items():
            if shard_sha256(uri, fmt, options) != sha:
                raise InputError(f"{uri!r} changed while the job ran; run it again")
        timings["assemble"] = round(time.perf_counter() - t0, 3)
        manifest = _manifest(assembled, shards, specs=specs, provenance=provenance, fmt=fmt, options=options,
                             config=config, seed=seed, runner=runner, status=status, why=why, step=step_result,
                             timings={**timings, "total": round(time.perf_counter() - t_start, 3)},
                             names={uri: shard_name(uri, fmt) for uri in shards},
                             blocks={u.shard: sum(1 for v in plan if v.shard == u.shard) for u in plan})
        writer.commit(assembled, manifest)
    finally:
        writer.abort()
    c = manifest["counts"]
    log.info("wrote %s: %d rows in, %d pairs, %d rejected, %d unique answers (%d scored now); errors by rubric: %s",
             out, c["rows_in"], c["pairs"], c["rejected"], c["unique_answers"], step_result.answers_scored,
             c["errors_by_rubric"])
    return manifest


class _TableWriter:
    """Writes the job's outputs as the assemble step streams them: pairs and rejects go to temp files
    that are renamed into place only when everything is written, and the manifest comes last."""

    def __init__(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        # No old manifest may vouch for new tables while they are being written.
        remove_tree(out, out / "manifest.json")
        self.out = out
        self.tmpdir = out / f".assemble-{os.getpid()}"
        remove_tree(out, self.tmpdir)
        self.tmpdir.mkdir()
        self._tables: dict[str, Any] = {}  # name -> open ParquetWriter
        self._rejects = (self.tmpdir / "rejects.jsonl").open("w", encoding="utf-8")

    def _write(self, name: str, table) -> None:
        import pyarrow.parquet as pq

        if name not in self._tables:
            self._tables[name] = pq.ParquetWriter(self.tmpdir / f"{name}.parquet", table.schema)
        self._tables[name].write_table(table)

    def pairs(self, table) -> None:
        self._write("pairs", table)

    def answers(self, table) -> None:
        self._write("answers", table)

    def claims(self, table) -> None:
        self._write("claims", table)

    def rejects(self, rejects) -> None:
        self._rejects.write("".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in rejects))

    def commit(self, assembled: StreamAssembled, manifest: dict) -> None:
        out = self.out
        for name in ("pairs", "answers") + (("claims",) if assembled.has_claims else ()):
            if name not in self._tables:  # pragma: no cover - assemble_stream raises when there is no pair
                raise BatchMismatchError(f"the assemble step wrote no {name}")
        for w in self._tables.values():
            w.close()
        self._rejects.close()
        names = ["answers.parquet", "pairs.parquet", "rejects.jsonl"]
        if assembled.has_claims:
            names.append("claims.parquet")
        if assembled.fitted is not None:
            atomic_write_bytes(self.tmpdir / "rescale.json", assembled.fitted.to_json_bytes())
            names.append("rescale.json")
        publish(out, {n: self.tmpdir / n for n in names}, manifest,
                remove=[n for n in ("claims.parquet", "rescale.json") if n not in names])

    def abort(self) -> None:
        """Close and remove whatever was not committed (a no-op after :meth:`commit`)."""
        for w in self._tables.values():
            try:
                w.close()
            except Exception:  # already closed by commit
                pass
        self._rejects.close()
        remove_tree(self.out, self.tmpdir)


def _manifest(assembled: Assembled | StreamAssembled, shards: Sequence[str], *, specs, provenance, fmt, options,
              config, seed, runner, status, why, step: StepResult, timings, names: Mapping[str, str],
              blocks: Mapping[str, int]) -> dict:
    from rubric.tables import rubric_provenance

    counts = dict(assembled.counts)
    per_input = counts.pop("per_input")
    rubrics = {}
    for s in specs:
        rubrics[s.name] = {**rubric_provenance(provenance[s.name], s, assembled.fitted),
                           "raw_range": [s.raw_min, s.raw_max]}
    seconds = timings.get("score", 0.0)
    return {
        "tool": "lfqa-rubric",
        "inputs": [{"name": names[uri], "path": uri, "format": fmt, "options": options, "status": status[names[uri]],
                    **({"rescored_because": why[names[uri]]} if names[uri] in why else {}),
                    **({"blocks": blocks[names[uri]]} if blocks.get(names[uri], 1) > 1 else {}),
                    **per_input[names[uri]]}
                   for uri in shards],
        "counts": counts,
        "rubrics": rubrics,
        "config": asdict(config),
        "split_seed": seed,
        "split_source": assembled.split_source,
        "rescale": config.rescale,
        "job": {"runner": runner, "answers_scored_now": step.answers_scored,
                "answers_per_s": round(step.answers_scored / seconds, 3) if seconds > 0 else None,
                "score_seconds": step.seconds, **step.info},
        "timings_s": timings,
        "platform": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()},
    }
