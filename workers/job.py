"""The scoring job, one straight line for both paths::

    check backends -> list shards -> open each shard's score store (resume or re-score, and why)
      -> score the pending shards (single process, or Ray pools)
      -> re-read every shard and assemble the whole job once (rubric.assemble)
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

from rubric.assemble import Assembled, JobInput, assemble
from rubric.config import ScoringConfig
from rubric.errors import BatchMismatchError, ConfigError, InputError
from rubric.readers import ReadResult
from rubric.records import explode
from rubric.scoring import Provenance, Score, Scorer
from rubric.specs import RubricSpec
from workers.shards import list_shards, read_shard, shard_name, shard_sha256
from workers.store import ShardStore, atomic_write_bytes, score_key

__all__ = ["PendingShard", "StepResult", "run_job", "local_step", "write_outputs"]

log = logging.getLogger(__name__)

@dataclass
class PendingShard:
    """A shard whose store is not complete for the current score key."""

    name: str
    uri: str
    store: ShardStore


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


def local_step(pending: Sequence[PendingShard], *, fmt: str, options: Mapping[str, Any],
               specs: Sequence[RubricSpec], config: ScoringConfig, progress: bool,
               scorers: Sequence[Scorer] | None = None) -> StepResult:
    """Score pending shards in this process, resuming each from its finished chunks.

    Args:
        scorers: prebuilt scorers for ``specs``; default: built here, once, when the first answer
            needs scoring (so an unreadable input fails before any model loads).
    """
    from workers.local import score_chunks

    result = StepResult()
    if not pending:
        return result
    for sh in pending:
        try:
            read = read_shard(sh.uri, fmt, options)
        except InputError as e:
            log.error("input %s cannot be read: %s", sh.uri, e)
            result.failed[sh.uri] = str(e)
            continue
        result.reads[sh.uri] = read
        items = explode(read.pairs)
        done = sh.store.scored_ids()
        todo = [it for it in items if it.answer_id not in done]
        if todo and scorers is None:  # built once, and only when there is something to score
            from models.backends import build_scorers

            t0 = time.perf_counter()
            scorers = build_scorers(specs, config)
            result.seconds["load_backends"] = round(time.perf_counter() - t0, 3)
        if len(todo) < len(items):
            log.info("shard %s: resuming, %d of %d answers already scored", sh.name, len(items) - len(todo), len(items))
        secs = score_chunks(todo, scorers, sh.store, batch_size=config.batch_size, progress=progress,
                            desc=f"scoring {sh.name}")
        sh.store.finish(len(items))
        result.answers_scored += len(todo)
        for k, v in secs.items():
            result.seconds[k] = round(result.seconds.get(k, 0.0) + v, 3)
    return result


def _load_scores(plan: Sequence[tuple[str, str, str, ShardStore]], specs: Sequence[RubricSpec]
                 ) -> tuple[dict[str, dict[str, Score]], dict[str, Provenance]]:
    """Merge the shards' stores: the first shard's score of an answer wins; provenances must agree."""
    names = [s.name for s in specs]
    scores: dict[str, dict[str, Score]] = {}
    prov: dict[str, tuple[Provenance, str]] = {}
    for name, _uri, _sha, store in plan:
        shard_scores, shard_prov = store.load(names)
        for r, p in shard_prov.items():
            first = prov.setdefault(r, (p, name))
            if first[0] != p:
                raise ConfigError(f"rubric {r!r} was scored two ways in one job: shard {first[1]} by {first[0]}, "
                                  f"shard {name} by {p}; re-score one of them (delete OUT/scores/{name})")
        for aid, s in shard_scores.items():
            scores.setdefault(aid, s)
    return scores, {r: p for r, (p, _) in prov.items()}


def write_outputs(out: Path, assembled: Assembled, manifest: dict) -> None:
    """Write the job's tables, rejects and manifest (last); remove outputs this job does not make."""
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    # No old manifest may vouch for new tables while they are being written.
    (out / "manifest.json").unlink(missing_ok=True)

    def parquet(table, name: str) -> None:
        path = out / name
        tmp = path.with_name(f".{name}.tmp-{os.getpid()}")
        pq.write_table(table, tmp)
        os.replace(tmp, path)

    parquet(assembled.answers, "answers.parquet")
    parquet(assembled.pairs, "pairs.parquet")
    if assembled.claims is not None:
        parquet(assembled.claims, "claims.parquet")
    else:
        (out / "claims.parquet").unlink(missing_ok=True)
    if assembled.fitted is not None:
        atomic_write_bytes(out / "rescale.json", assembled.fitted.to_json_bytes())
    else:
        (out / "rescale.json").unlink(missing_ok=True)
    atomic_write_bytes(out / "rejects.jsonl", "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n"
                                                      for r in assembled.rejects).encode())
    atomic_write_bytes(out / "manifest.json", json.dumps(manifest, indent=2, default=str).encode())


def _check_backends(specs: Sequence[RubricSpec], config: ScoringConfig) -> None:
    from models.backends import check_backends

    check_backends(specs, config)


def run_job(inputs: str | Path | Sequence[str | Path], fmt: str, specs: Sequence[RubricSpec], out: str | Path, *,
            config: ScoringConfig, reader_options: Mapping[str, Any] | None = None, seed: int = 0,
            progress: bool = True, runner: str = "local", step: ScoreStep | None = None) -> dict:
    """Score every input and write the job's tables (see the module docstring).

    Args:
        inputs: a file, or a list of files, directories, globs or URIs (one file = one shard).
        fmt: input format (``rubric.readers.FORMATS``), the same for every input.
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
    shards = list_shards(raw_inputs)
    plan: list[tuple[str, str, str, ShardStore]] = []
    for uri in shards:
        sha = shard_sha256(uri)
        key = score_key(path=uri, sha256=sha, fmt=fmt, options=options, specs=specs, config=config)
        plan.append((shard_name(uri), uri, sha, ShardStore(out / "scores", shard_name(uri), key)))
    pending = [PendingShard(name, uri, store) for name, uri, _, store in plan if not store.done]
    status = {name: ("scored" if not store.done else "reused") for name, _, _, store in plan}
    why = {name: store.why for name, _, _, store in plan if store.why}
    log.info("%d input(s): %d already scored, %d to score", len(plan), len(plan) - len(pending), len(pending))
    timings["plan"] = round(time.perf_counter() - t_start, 3)

    t0 = time.perf_counter()
    step_result = (step or local_step)(pending, fmt=fmt, options=options, specs=specs, config=config,
                                       progress=progress)
    timings["score"] = round(time.perf_counter() - t0, 3)
    if step_result.failed:
        lines = "; ".join(f"{u}: {e}" for u, e in step_result.failed.items())
        raise InputError(f"{len(step_result.failed)} of {len(plan)} input(s) could not be read, so no tables were "
                         f"written (the other inputs' scores are kept under {out / 'scores'} and a re-run resumes "
                         f"them): {lines}")

    t0 = time.perf_counter()
    job_inputs = []
    for name, uri, sha, store in plan:
        if not store.done:
            raise BatchMismatchError(f"shard {name} is not completely scored after the score step")
        read = step_result.reads.get(uri) or read_shard(uri, fmt, options)
        if shard_sha256(uri) != sha:
            raise InputError(f"{uri!r} changed while the job ran; run it again")
        job_inputs.append(JobInput(name=name, read=read, fmt=fmt, sha256=sha))
    scores, provenance = _load_scores(plan, specs)
    for s in specs:  # a job whose every answer was rejected still says how it would have scored
        provenance.setdefault(s.name, Provenance(s.version, s.backend))
    assembled = assemble(job_inputs, scores, provenance, specs, rescale=config.rescale, seed=seed)
    timings["assemble"] = round(time.perf_counter() - t0, 3)

    manifest = _manifest(assembled, plan, specs=specs, provenance=provenance, fmt=fmt, options=options,
                         config=config, seed=seed, runner=runner, status=status, why=why, step=step_result,
                         timings={**timings, "total": round(time.perf_counter() - t_start, 3)})
    write_outputs(out, assembled, manifest)
    c = manifest["counts"]
    log.info("wrote %s: %d rows in, %d pairs, %d rejected, %d unique answers (%d scored now); errors by rubric: %s",
             out, c["rows_in"], c["pairs"], c["rejected"], c["unique_answers"], step_result.answers_scored,
             c["errors_by_rubric"])
    return manifest


def _manifest(assembled: Assembled, plan, *, specs, provenance, fmt, options, config, seed, runner, status, why,
              step: StepResult, timings) -> dict:
    from rubric.provenance import rubric_provenance

    counts = dict(assembled.counts)
    per_input = counts.pop("per_input")
    rubrics = {}
    for s in specs:
        rubrics[s.name] = {**rubric_provenance(provenance[s.name], s, assembled.fitted),
                           "raw_range": [s.raw_min, s.raw_max]}
    seconds = timings.get("score", 0.0)
    return {
        "tool": "lfqa-rubric",
        "inputs": [{"name": name, "path": uri, "format": fmt, "options": options, "status": status[name],
                    **({"rescored_because": why[name]} if name in why else {}), **per_input[name]}
                   for name, uri, _sha, _store in plan],
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
