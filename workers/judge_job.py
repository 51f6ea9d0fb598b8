"""The judge job: LLM judges over pairs, in both orders, with the score job's readers, splits and resume.

    check the LLM backend -> list shards -> open each shard's judge store (OUT/judge_scores/<stem>/,
      keyed by the input's sha256, reader options, judge versions, mode and engine settings)
      -> judge the pending pairs in checkpointed chunks (models.judges.JudgeScorer: both orders of
         every pair in one engine call)
      -> assemble: pairs of all inputs (ids unique across inputs), the same splits as `score` gives
         the same inputs and seed, one row per pair x judge x order (rubric.judging.judgments)
      -> OUT/judgments.parquet, rejects.jsonl, manifest.json (last)

The splits are the score job's (``rubric.tables.assemble.job_splits`` on the same pairs and seed), so
``analyze`` can put a judge and a rubric model on the same test pairs. A judge output folder is
not a score output folder: the job refuses to write next to an ``answers.parquet``.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rubric.tables import JobInput, combine_inputs, job_splits
from rubric.config import ScoringConfig
from rubric.errors import BatchMismatchError, ConfigError, InputError
from rubric.tables import word_count
from rubric.scoring import Provenance, Score
from workers.shards import list_shards, read_shard, shard_name, shard_sha256
from workers.outdir import atomic_write_bytes, locks_out, publish
from workers.store import ShardStore, score_key

__all__ = ["JudgeSettings", "JudgePending", "run_judge_job", "local_judge_step", "judgment_rows", "CHECKPOINT_PAIRS"]

log = logging.getLogger(__name__)

#: Pairs per checkpoint (one store part).
CHECKPOINT_PAIRS = 64


class JudgeSettings:
    """How the judges run; everything here changes a verdict, so all of it is in the store key.

    Args:
        judges: judge names or versions ("plain,cot,rubrics" or "judge.plain.v1").
        mode: "logprob" (verdict probabilities from the first-token distribution) or "vote"
            (the paper's: generate n_votes times, parse, majority).
        tie: offer the judges a tie option.
        n_votes, temperature, seed, max_reasoning_tokens: vote mode and CoT settings.
    """

    def __init__(self, judges: str | Sequence[str], *, mode: str = "logprob", tie: bool = False, n_votes: int = 3,
                 temperature: float = 0.0, seed: int = 0, max_reasoning_tokens: int = 256) -> None:
        if mode not in ("logprob", "vote"):
            raise ConfigError(f"'mode' must be 'logprob' or 'vote', got {mode!r}")
        if n_votes < 1:
            raise ConfigError(f"'n_votes' must be >= 1, got {n_votes}")
        if temperature < 0:
            raise ConfigError(f"'temperature' must be >= 0, got {temperature}")
        if max_reasoning_tokens < 1:
            raise ConfigError(f"'max_reasoning_tokens' must be >= 1, got {max_reasoning_tokens}")
        import rubric.protocols  # noqa: F401  (registers the protocols' pairwise judges)
        from rubric.judging import resolve_judges

        names = judges.split(",") if isinstance(judges, str) else list(judges)
        self.specs = resolve_judges(",".join(n.strip() for n in names if n.strip()), tie=tie)
        self.mode, self.tie, self.n_votes, self.temperature = mode, tie, n_votes, temperature
        self.seed, self.max_reasoning_tokens = seed, max_reasoning_tokens

    def arguments(self) -> dict:
        """Keyword arguments that rebuild these settings (plain data: what travels to Ray actors)."""
        return {"judges": [s.version for s in self.specs], "mode": self.mode, "tie": self.tie,
                "n_votes": self.n_votes, "temperature": self.temperature, "seed": self.seed,
                "max_reasoning_tokens": self.max_reasoning_tokens}

    def key(self) -> dict:
        # the template hash too: a prompt edited without a version bump must not reuse old verdicts
        return {"judges": sorted(s.version for s in self.specs),
                "templates": {s.version: s.template_hash for s in self.specs}, "mode": self.mode, "tie": self.tie,
                "n_votes": self.n_votes, "temperature": self.temperature, "seed": self.seed,
                "max_reasoning_tokens": self.max_reasoning_tokens}


def _scorer(settings: JudgeSettings, config: ScoringConfig):
    from models.judges import JudgeScorer
    from models.llm.engines_cache import build_engine
    from rubric.protocols import is_protocol_judge

    if any(is_protocol_judge(s) for s in settings.specs):  # a neighbouring protocol's judge reads its own tokens
        from models.protocols import protocol_scorer_factory

        return protocol_scorer_factory(settings, config)
    engine = build_engine(config, logprobs_k=config.llm_logprobs_k)
    return JudgeScorer(engine, settings.specs, mode=settings.mode, n_votes=settings.n_votes,
                       temperature=settings.temperature, seed=settings.seed,
                       max_reasoning_tokens=settings.max_reasoning_tokens, min_mass=config.llm_min_mass)


def _judge_chunks(pairs, scorer, store: ShardStore, versions: Sequence[str], *, batch_size: int,
                  progress: bool, desc: str) -> int:
    from tqdm.auto import tqdm

    step = max(CHECKPOINT_PAIRS, batch_size)
    with tqdm(total=len(pairs), desc=desc, unit="pair", disable=not progress, mininterval=2.0) as bar:
        for start in range(0, len(pairs), step):
            chunk = pairs[start:start + step]
            results: list[Mapping[str, Score]] = []
            for b in range(0, len(chunk), batch_size):
                batch = chunk[b:b + batch_size]
                got = scorer.judge_pairs(batch)
                if len(got) != len(batch) or any(set(r) != set(versions) for r in got):
                    raise BatchMismatchError(f"the judge returned {len(got)} results for {len(batch)} pairs "
                                             "or results without every judge")
                results.extend(got)
            store.append([p.pair_id for p in chunk], {v: [r[v] for r in results] for v in versions},
                         {v: scorer.provenance(v) for v in versions})
            bar.update(len(chunk))
    return len(pairs)


@dataclass
class JudgePending:
    """One input shard with pairs still to judge: its store, its pair count, and the pairs not yet stored."""

    name: str
    uri: str
    store: ShardStore
    n_pairs: int
    todo: list


def local_judge_step(pending: Sequence[JudgePending], *, settings: JudgeSettings, config: ScoringConfig,
                     progress: bool, scorer=None) -> int:
    """Judge the pending pairs in this process, checkpointing every ``CHECKPOINT_PAIRS``; returns pairs judged.

    Each shard's store is finished once all its pairs are stored (the Ray step,
    ``workers.ray_judges.ray_judge_step``, keeps the same contract).
    """
    versions = [s.version for s in settings.specs]
    judged = 0
    for sh in pending:
        if sh.todo and scorer is None:
            scorer = _scorer(settings, config)
        judged += _judge_chunks(sh.todo, scorer, sh.store, versions, batch_size=config.batch_size,
                                progress=progress, desc=f"judging {sh.name}")
        sh.store.finish(sh.n_pairs)
    return judged


def judgment_rows(pairs, splits: Sequence[str], verdicts: Mapping[str, Mapping[str, Score]],
                  provenance: Mapping[str, Provenance], *, mode: str) -> list[dict[str, Any]]:
    """One row per pair x judge x order, in pair order (the ``rubric.judging.judgments`` schema)."""
    rows: list[dict[str, Any]] = []
    for p, split in zip(pairs, splits):
        for version, prov in provenance.items():
            s = verdicts[p.pair_id][version]
            x = s.extras
            for order in ("ab", "ba"):
                err = x.get(f"error_{order}") or (s.error if x.get(f"decision_{order}") is None else None)
                rows.append({
                    "pair_id": p.pair_id, "question_id": p.question_id, "answer_id_a": p.answer_id_a,
                    "answer_id_b": p.answer_id_b, "label": p.label, "split": split,
                    "n_words_a": word_count(p.answer_a), "n_words_b": word_count(p.answer_b),
                    "judge": version, "mode": mode, "order": order,
                    "p_a": x.get(f"p_a_{order}"), "p_tie": x.get(f"p_tie_{order}"),
                    "decision": x.get(f"decision_{order}"),
                    "p_a_debiased": s.raw, "decision_debiased": x.get("decision"),
                    "error": err, "text": x.get(f"text_{order}"),
                    "model": prov.model_id, "model_revision": prov.model_revision,
                    "template_hash": prov.template_hash, "backend": prov.backend,
                })
    return rows


@locks_out()
def run_judge_job(inputs: str | Path | Sequence[str | Path], fmt: str, settings: JudgeSettings, out: str | Path, *,
                  config: ScoringConfig, reader_options: Mapping[str, Any] | None = None, seed: int = 0,
                  progress: bool = True, scorer=None, step=None, runner: str = "local") -> dict:
    """Judge every pair of the inputs in both orders and write OUT/judgments.parquet (module docstring).

    Args:
        inputs: a file, or files, directories, globs or URIs (one file = one shard).
        fmt: input format (``rubric.io.readers.FORMATS``).
        settings: the judges and how they run.
        out: output folder (not a score output folder).
        config: engine settings (profile, backend, model, engine kwargs, min mass, batch size).
        reader_options: passed to every input's reader.
        seed: split seed (the same as the score job's, so splits agree).
        progress: progress bars.
        scorer: a prebuilt judge scorer (tests); default: built here when a pair needs judging.
        step: the judging step, ``step(pending, settings=, config=, progress=) -> pairs judged``;
            default :func:`local_judge_step` (the Ray one is ``workers.ray_judges.ray_judge_step``).
        runner: "local" or "ray", recorded in the manifest.

    Returns:
        The manifest (also ``OUT/manifest.json``).
    """
    from rubric.judging import judgments_table

    t_start = time.perf_counter()
    out = Path(out)
    if (out / "answers.parquet").exists():
        raise ConfigError(f"{out} holds a score job's tables; write judgments to their own folder "
                          "(analyze takes both)")
    if scorer is None:
        from models.backends import check_backends

        check_backends([], config, backends=["llm"])
    options = dict(reader_options or {})
    versions = [s.version for s in settings.specs]
    shards = list_shards([inputs] if isinstance(inputs, (str, Path)) else list(inputs))
    plan = []
    for uri in shards:
        sha = shard_sha256(uri)
        key = {**score_key(path=uri, sha256=sha, fmt=fmt, options=options, specs=[], config=config),
               "judge": settings.key()}
        plan.append((shard_name(uri), uri, sha, ShardStore(out / "judge_scores", shard_name(uri), key)))
    status = {name: ("reused" if store.done else "judged") for name, _, _, store in plan}
    why = {name: store.why for name, _, _, store in plan if store.why}
    failed: dict[str, str] = {}
    reads = {}
    pending: list[JudgePending] = []
    for name, uri, _sha, store in plan:
        try:
            reads[uri] = read_shard(uri, fmt, options)
        except InputError as e:
            failed[uri] = str(e)
            continue
        if store.done:
            continue
        done = store.scored_ids()
        pending.append(JudgePending(name=name, uri=uri, store=store, n_pairs=len(reads[uri].pairs),
                                    todo=[p for p in reads[uri].pairs if p.pair_id not in done]))
    if step is None:
        def step(todo, **kw):
            return local_judge_step(todo, scorer=scorer, **kw)
    judged_now = step(pending, settings=settings, config=config, progress=progress) if pending else 0
    if failed:
        for _name, uri, _sha, store in plan:  # an unreadable input's store holds nothing but its key
            if uri in failed:
                store.discard_if_empty()
        raise InputError(f"{len(failed)} of {len(plan)} input(s) could not be read, so no judgments were written: "
                         + "; ".join(f"{u}: {e}" for u, e in failed.items()))

    job_inputs = [JobInput(name=name, read=reads[uri], fmt=fmt, sha256=sha) for name, uri, sha, _ in plan]
    pairs, rejects, per_input = combine_inputs(job_inputs)
    if not pairs:
        raise InputError(f"no usable pair in {', '.join(repr(u) for _, u, _, _ in plan)}: {len(rejects)} row(s) "
                         "rejected" + (f"; first reason: {rejects[0].reason}" if rejects else ""))
    splits, split_source = job_splits(pairs, seed=seed)
    verdicts: dict[str, dict[str, Score]] = {}
    provenance: dict[str, Provenance] = {}
    for name, _uri, _sha, store in plan:
        got, prov = store.load(versions)
        for v, p in prov.items():
            if provenance.setdefault(v, p) != p:
                raise ConfigError(f"judge {v!r} ran two ways in one job: {provenance[v]} and {p} (shard {name})")
        for pid, s in got.items():
            verdicts.setdefault(pid, s)
    lost = [p.pair_id for p in pairs if p.pair_id not in verdicts]
    if lost:
        raise BatchMismatchError(f"{len(lost)} pairs have no verdict (first: {lost[0]})")
    table = judgments_table(judgment_rows(pairs, splits, verdicts, provenance, mode=settings.mode))

    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    staged = {"judgments.parquet": out / f".judgments.parquet.tmp-{os.getpid()}",
              "rejects.jsonl": out / f".rejects.jsonl.tmp-{os.getpid()}"}
    pq.write_table(table, staged["judgments.parquet"])
    atomic_write_bytes(staged["rejects.jsonl"], "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n"
                                                        for r in rejects).encode())
    errors = {v: sum(1 for p in pairs if verdicts[p.pair_id][v].error is not None) for v in versions}
    manifest = {
        "tool": "lfqa-rubric", "kind": "judge",
        "inputs": [{"name": name, "path": uri, "format": fmt, "options": options, "status": status[name],
                    **({"rescored_because": why[name]} if name in why else {}), **per_input[name]}
                   for name, uri, _sha, _store in plan],
        "counts": {"rows_in": sum(c["rows_in"] for c in per_input.values()),
                   "rows_ok": sum(c["rows_ok"] for c in per_input.values()), "rejected": len(rejects),
                   "pairs": len(pairs), "judgment_rows": table.num_rows, "errors_by_judge": errors,
                   "splits": {s: splits.count(s) for s in ("train", "dev", "test")}},
        "judges": {v: {**asdict(provenance[v]), "mode": settings.mode} for v in versions},
        "settings": settings.key(), "config": asdict(config), "split_seed": seed, "split_source": split_source,
        "job": {"pairs_judged_now": judged_now, "runner": runner},
        "timings_s": {"total": round(time.perf_counter() - t_start, 3)},
        "platform": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()},
    }
    publish(out, staged, manifest)
    log.info("wrote %s: %d pairs x %d judge(s) x 2 orders = %d rows (%d judged now); errors by judge: %s",
             out / "judgments.parquet", len(pairs), len(versions), table.num_rows, judged_now, errors)
    return manifest
