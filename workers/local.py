"""The single-process scoring job: read -> dedupe answers -> score in batches -> feature tables.

This is the local path (``lfqa-rubric score`` without ``--ray``). It holds no scoring logic: the
scorers come from ``models.backends`` and the tables from ``rubric.features``.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from rubric.config import ScoringConfig
from rubric.errors import BackendUnavailableError, BatchMismatchError, EngineError
from rubric.features import answers_table, pairs_table
from rubric.readers import ReadResult
from rubric.records import AnswerItem, explode
from rubric.scoring import Provenance, Score, Scorer, check_batch
from rubric.specs import RubricSpec
from rubric.splits import assign_splits

__all__ = ["ScoreRun", "score_items", "write_outputs", "run_score_job", "atomic_write_bytes"]

log = logging.getLogger(__name__)

# Errors that mean the engine (not a row) is broken: re-raise instead of marking rows.
_FATAL = (EngineError, BackendUnavailableError, BatchMismatchError, MemoryError)


@dataclass
class ScoreRun:
    """What one scoring run produced, before it is written out."""

    scores: dict[str, list[Score]]
    provenance: dict[str, Provenance]
    seconds: dict[str, float] = field(default_factory=dict)


def score_items(items: Sequence[AnswerItem], scorers: Sequence[Scorer], *, batch_size: int,
                progress: bool = True) -> ScoreRun:
    """Run every scorer over ``items`` in batches; one Score per item and rubric, in order.

    A batch whose scorer raises an ordinary exception gets that reason on each of its rows and
    the run goes on; an engine-level failure (``EngineError``, a missing backend, a lost row)
    is re-raised.
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
                  mininterval=2.0) as bar:
            for start in range(0, len(items), batch_size):
                batch = items[start:start + batch_size]
                try:
                    results = scorer.score_batch(batch)
                    check_batch(scorer, batch, results)
                except _FATAL:
                    raise
                except Exception as e:  # a bad batch must not kill the run: record why, per row
                    log.exception("scorer %s failed on answers %d-%d", label, start, start + len(batch) - 1)
                    reason = f"{type(e).__name__}: {e}"
                    results = [{n: Score.failed(reason) for n in names} for _ in batch]
                for n in names:
                    run.scores[n].extend(r[n] for r in results)
                bar.update(len(batch))
        run.seconds[label] = time.perf_counter() - t0
    return run


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write via a temp file and rename, so a killed job never leaves a half-written output."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _write_parquet(table, path: Path) -> None:
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def _fit_rescale(pairs, splits: Sequence[str], items: Sequence[AnswerItem], run: ScoreRun):
    """Min-max bounds from the raw scores of the answers in training pairs (never dev/test).

    A rubric with no value on any training answer gets no bounds and keeps its declared range.
    """
    from rubric.rescale import FittedMinMax

    train_ids = {aid for p, s in zip(pairs, splits) if s == "train" for aid in (p.answer_id_a, p.answer_id_b)}
    rows = [i for i, it in enumerate(items) if it.answer_id in train_ids]
    columns = {r: [scores[i].raw for i in rows] for r, scores in run.scores.items()}
    return FittedMinMax.fit({r: v for r, v in columns.items() if any(x is not None for x in v)})


def write_outputs(out: Path, *, read: ReadResult, specs: Sequence[RubricSpec], items: Sequence[AnswerItem],
                  run: ScoreRun, config: ScoringConfig, inputs: dict, seed: int,
                  timings: dict[str, float]) -> dict:
    """Write answers.parquet, pairs.parquet, rejects.jsonl, manifest.json (and claims.parquet when
    factuality was scored) into ``out``.

    Returns:
        The manifest dict.
    """
    out.mkdir(parents=True, exist_ok=True)
    splits = assign_splits(read.pairs, seed=seed)
    fitted = None
    if config.rescale == "fitted":
        fitted = _fit_rescale(read.pairs, splits, items, run)
        atomic_write_bytes(out / "rescale.json", fitted.to_json_bytes())
    answers = answers_table(items, specs, run.scores, run.provenance, fitted=fitted)
    pairs = pairs_table(read.pairs, splits, answers)
    _write_parquet(answers, out / "answers.parquet")
    _write_parquet(pairs, out / "pairs.parquet")
    if "factuality" in run.scores:  # the claims behind each factuality score, one row per claim
        from rubric.claims import claims_table

        _write_parquet(claims_table([it.answer_id for it in items], run.scores["factuality"]), out / "claims.parquet")
    atomic_write_bytes(out / "rejects.jsonl",
                       "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in read.rejects).encode())
    errors = {n: sum(1 for s in run.scores[n] if s.error is not None) for n in run.scores}
    manifest = {
        "tool": "lfqa-rubric",
        "inputs": inputs,
        "counts": {
            "rows_in": read.rows_in,
            "rows_ok": read.rows_ok,
            "pairs": len(read.pairs),
            "rejected": len(read.rejects),
            "unique_answers": len(items),
            "splits": {s: splits.count(s) for s in ("train", "dev", "test")},
            "errors_by_rubric": errors,
        },
        "rubrics": {s.name: {**asdict(run.provenance[s.name]), "raw_range": [s.raw_min, s.raw_max]} for s in specs},
        "config": {k: v for k, v in asdict(config).items()},
        "split_seed": seed,
        "rescale": config.rescale,
        "timings_s": {**timings, **{f"score:{k}": round(v, 3) for k, v in run.seconds.items()}},
        "platform": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()},
    }
    atomic_write_bytes(out / "manifest.json", json.dumps(manifest, indent=2, default=str).encode())
    return manifest


def run_score_job(input_path: str | Path, fmt: str, specs: Sequence[RubricSpec], out: str | Path, *,
                  config: ScoringConfig, reader_options: dict | None = None, seed: int = 0,
                  progress: bool = True) -> dict:
    """The main job on one machine: read, dedupe, score every rubric, write the tables.

    Returns:
        The manifest (also written to ``out/manifest.json``).
    """
    from models.backends import build_scorers
    from rubric.readers import read_input

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    read = read_input(input_path, fmt, **(reader_options or {}))
    timings["read"] = round(time.perf_counter() - t0, 3)
    items = explode(read.pairs)
    log.info("read %d rows: %d pairs, %d rejected, %d unique answers", read.rows_in, len(read.pairs),
             len(read.rejects), len(items))
    t0 = time.perf_counter()
    scorers = build_scorers(specs, config)
    timings["load_backends"] = round(time.perf_counter() - t0, 3)
    run = score_items(items, scorers, batch_size=config.batch_size, progress=progress)
    t0 = time.perf_counter()
    inputs = {"path": str(input_path), "format": fmt, "options": reader_options or {}}
    manifest = write_outputs(Path(out), read=read, specs=specs, items=items, run=run, config=config,
                             inputs=inputs, seed=seed, timings=timings)
    manifest["timings_s"]["write"] = round(time.perf_counter() - t0, 3)
    atomic_write_bytes(Path(out) / "manifest.json", json.dumps(manifest, indent=2, default=str).encode())
    return manifest
