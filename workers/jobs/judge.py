"""The judge job: LLM judges over pairs, in both orders, with the score job's readers, splits and resume.

    check the LLM backend -> list shards -> open each shard's judge store (OUT/judge_scores/<stem>/,
      keyed by the input's sha256, reader options, judge versions, mode and engine settings)
      -> judge the pending pairs in checkpointed chunks (models.judging.judges.JudgeScorer: both orders of
         every pair in one engine call), in this process or on a Ray pool of judge actors
      -> assemble: pairs of all inputs (ids unique across inputs), the same splits as `score` gives
         the same inputs and seed, one row per pair x judge x order (rubric.judging)
      -> OUT/judgments.parquet, rejects.jsonl (and a protocol's report.md), manifest.json (last)

The splits are the score job's (``rubric.tables.assemble.job_splits`` on the same pairs and seed), so
``analyze`` can put a judge and a rubric model on the same test pairs. A judge output folder is
not a score output folder: the job refuses to write next to an ``answers.parquet``. The line is
:func:`workers.runner.run`'s (the score job's); :class:`JudgeKind` supplies what is the judge job's own.
A pairwise protocol (``workers.protocols``) is a subclass of :class:`JudgeKind` with its judge, its
``protocol`` name and its :meth:`JudgeKind.page`: from the judged pairs it makes a :class:`ProtocolPage`
(report, rejects of its own reading, manifest fields), staged and published with the judge's tables,
in the one manifest.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rubric.tables import JobInput, combine_inputs, job_splits
from rubric.config import ScoringConfig, check_range
from rubric.errors import BatchMismatchError, ConfigError, InputError
from rubric.tables import word_count
from rubric.io import PairRecord, read_whole
from rubric.scoring import Provenance, Score
from workers.runner import KindManifest, FunctionScorer, JobKind, JobRun, ScoreIndex, prebuilt, run

__all__ = ["JudgeSettings", "protocol_settings", "JudgeKind", "ProtocolPage", "run_judge_job", "judgment_rows",
           "CHECKPOINT_PAIRS"]

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
        check_range("n_votes", n_votes, low=1)
        check_range("temperature", temperature, low=0)
        check_range("max_reasoning_tokens", max_reasoning_tokens, low=1)
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


def protocol_settings(version: str, judge_kwargs: Mapping[str, Any] | None) -> JudgeSettings:
    """A protocol's judge settings: its own judge ``version`` with the command's mode, votes, temperature
    and seed (``tie`` is dropped: a protocol template always offers its tie)."""
    kw = dict(judge_kwargs or {})
    kw.pop("tie", None)
    return JudgeSettings(version, **kw)


@dataclass
class ProtocolPage:
    """What a pairwise protocol adds to a judge job's output, published with its tables.

    Attributes:
        report: ``OUT/report.md``.
        fields: the protocol's own manifest fields.
        rejects: the protocol's own input rejects, written before the judge's in ``rejects.jsonl`` and
            counted in ``counts.rejected``.
    """

    report: str
    fields: dict = field(default_factory=dict)
    rejects: list = field(default_factory=list)


def _scorer(settings: JudgeSettings, config: ScoringConfig):
    """The one judge scorer of every judge in ``settings``: each judge names its scorer where its prompt is
    declared (``JudgeSpec.scorer``), built by ``models.backends.build_judge_scorer``."""
    from models.backends import build_judge_scorer

    return build_judge_scorer(settings, config)


class JudgeKind(JobKind):
    """The judge job: items are a unit's pairs, stored by pair id, one verdict per judge (both orders).

    Args:
        fmt, options: the input format and reader options; settings: the judges (``JudgeSettings`` or
        its ``arguments()``); config: engine settings; seed: the split seed; scorer_factory: testing only,
        ``factory(settings, config)`` builds the scorer instead of the engine judge.

    Attributes:
        protocol: a protocol's name (``workers.protocols``), recorded as the manifest's ``protocol``;
            None for the pairwise judges.
    """

    kind = "judge"
    store_dir = "judge_scores"
    what = "judge"
    status_done = "judged"
    outputs = ("judgments.parquet", "rejects.jsonl", "report.md", "costs.parquet")  # report.md: a protocol's page
    item_type = PairRecord
    protocol: str | None = None

    def __init__(self, fmt: str, options: Mapping[str, Any], settings, config: ScoringConfig, seed: int = 0,
                 scorer_factory=None) -> None:
        self.fmt, self.options, self.config, self.seed = fmt, dict(options), config, seed
        self.settings = settings if isinstance(settings, JudgeSettings) else JudgeSettings(**settings)
        self.names = [s.version for s in self.settings.specs]
        self.key_fields = {"judge": self.settings.key()}
        self.checkpoint = max(CHECKPOINT_PAIRS, config.batch_size)
        self.scorer_factory = scorer_factory
        self._reads: dict[str, Any] = {}

    def arguments(self) -> dict:
        return {"fmt": self.fmt, "options": self.options, "settings": self.settings.arguments(),
                "config": self.config, "seed": self.seed, "scorer_factory": self.scorer_factory}

    def check(self) -> None:
        from models.backends import check_backends

        check_backends([], self.config, backends=["llm"])

    def prepare(self, shards: Sequence[str], out: Path) -> None:
        if (out / "answers.parquet").exists():
            raise ConfigError(f"{out} holds a score job's tables; write judgments to their own folder "
                              "(analyze takes both)")

    def _read(self, uri: str):
        if uri not in self._reads:  # the assemble step needs every read again
            self._reads[uri] = read_whole(uri, self.fmt, self.options)
        return self._reads[uri]

    def work_items(self, uri: str, block) -> tuple[list, list[list[str]]]:
        pairs = list(self._read(uri).pairs)
        return pairs, [[p.pair_id] for p in pairs]

    def scorer(self, stage=None) -> FunctionScorer:
        """The judge (``judge_pairs``, ``provenance``) as the runner's step scorer."""
        built = (self.scorer_factory or _scorer)(self.settings, self.config)
        b = self.config.batch_size

        def judge(items: Sequence[PairRecord]) -> list[list[dict[str, Score]]]:
            from models.scorer_set import share_seconds

            # a lost pair is the runner's BatchMismatchError (runner.check_results, StageActor); each batch's
            # seconds are shared over its pairs x judges (models.scorer_set.share_seconds)
            out: list[list[dict[str, Score]]] = []
            for i in range(0, len(items), b):
                t0 = time.perf_counter()
                got = built.judge_pairs(items[i:i + b])
                out += [[r] for r in share_seconds(got, time.perf_counter() - t0)]
            return out

        return FunctionScorer(judge, {v: built.provenance(v) for v in self.names})

    def dedupe_key(self, item: PairRecord) -> str:
        """The pair's content without its id and row: the same pair in two inputs is judged once on Ray."""
        import hashlib

        d = asdict(item)
        for identity in ("pair_id", "row"):
            d.pop(identity)
        return hashlib.sha256(json.dumps(d, ensure_ascii=False, sort_keys=True).encode()).hexdigest()

    def page(self, *, pairs: Sequence[PairRecord], table, fields: Mapping[str, Any],
             shards: Sequence[str]) -> ProtocolPage | None:
        """A protocol's report (None: the pairwise judges write none), made on the driver after the judging.

        Args:
            pairs: the pairs judged (in table order); table: the judgments table; fields: the judge
                job's manifest fields (judges, settings, counts); shards: its inputs.
        """
        return None

    def assemble(self, job: JobRun, scores: ScoreIndex, provenance: Mapping[str, Provenance]) -> KindManifest:
        from rubric.judging import judgments_table

        job_inputs = [JobInput(name=u.name, read=self._read(u.uri), fmt=self.fmt, sha256=u.sha) for u in job.units]
        pairs, rejects, per_input = combine_inputs(job_inputs)
        if not pairs:
            raise InputError(f"no usable pair in {', '.join(repr(u.uri) for u in job.units)}: {len(rejects)} row(s) "
                             "rejected" + (f"; first reason: {rejects[0].reason}" if rejects else ""))
        splits, split_source = job_splits(pairs, seed=self.seed, fractions=self.config.split_fractions)
        verdicts = scores.get([p.pair_id for p in pairs])
        lost = [p.pair_id for p in pairs if p.pair_id not in verdicts]
        if lost:
            raise BatchMismatchError(f"{len(lost)} pairs have no verdict (first: {lost[0]})")
        versions = self.names
        provenance = {v: provenance[v] for v in versions if v in provenance}
        table = judgments_table(judgment_rows(pairs, splits, verdicts, provenance, mode=self.settings.mode))
        errors = {v: sum(1 for p in pairs if verdicts[p.pair_id][v].error is not None) for v in versions}
        fields = {"counts": {"rows_in": sum(c["rows_in"] for c in per_input.values()),
                             "rows_ok": sum(c["rows_ok"] for c in per_input.values()), "rejected": len(rejects),
                             "pairs": len(pairs), "judgment_rows": table.num_rows, "errors_by_judge": errors,
                             "splits": {s: splits.count(s) for s in ("train", "dev", "test")}},
                  "judges": {v: {**asdict(provenance[v]), "mode": self.settings.mode} for v in versions},
                  "settings": self.settings.key(), "split_seed": self.seed,
                  "split_fractions": list(self.config.split_fractions), "split_source": split_source}
        page = self.page(pairs=pairs, table=table, fields=fields, shards=job.shards)
        if page is not None:
            rejects = [*page.rejects, *rejects]
            fields["counts"]["rejected"] = len(rejects)
            fields.update({"protocol": self.protocol, **page.fields})
            job.output.text("report.md", page.report)
        job.output.table("judgments.parquet", table)
        job.output.jsonl("rejects.jsonl", (r.to_dict() for r in rejects))
        log.info("wrote %s: %d pairs x %d judge(s) x 2 orders = %d rows (%d judged now); errors by judge: %s",
                 job.out / "judgments.parquet", len(pairs), len(versions), table.num_rows, job.step.scored, errors)
        return KindManifest(fields, per_input=per_input, job={"pairs_judged_now": job.step.scored})


def judgment_rows(pairs, splits: Sequence[str], verdicts: Mapping[str, Mapping[str, Score]],
                  provenance: Mapping[str, Provenance], *, mode: str) -> list[dict[str, Any]]:
    """One row per pair x judge x order, in pair order (the ``rubric.judging`` schema)."""
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


def run_judge_job(inputs: str | Path | Sequence[str | Path], fmt: str, settings: JudgeSettings, out: str | Path, *,
                  config: ScoringConfig, reader_options: Mapping[str, Any] | None = None, seed: int = 0,
                  progress: bool = True, scorer=None, ray=None, scorer_factory=None, force: bool = False,
                  max_failed: float | None = None) -> dict:
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
        ray: a :class:`workers.cluster.pipeline.RayStep` to judge on a Ray pool of judge actors (its "llm" pool).
        scorer_factory: testing only, see :class:`JudgeKind` (the backend check is skipped).
        force: write into a folder that is not an lfqa-rubric output (``workers.storage.outdir.OutputFolder``).
        max_failed: the failure budget (``JobKind.max_failed``; default ``rubric.tables.DEFAULT_MAX_FAILED``).

    Returns:
        The manifest (also ``OUT/manifest.json``).

    Raises:
        FailureBudgetError: a judge's failed fraction is over ``max_failed`` (after publishing).
    """
    if scorer is not None:  # a prebuilt judge is built by a factory that returns it
        scorer_factory = prebuilt(scorer)
    kind = JudgeKind(fmt, dict(reader_options or {}), settings, config, seed, scorer_factory)
    if max_failed is not None:
        kind.max_failed = max_failed
    return run(kind, inputs, out, progress=progress, step=ray, check=scorer_factory is None, force=force)
