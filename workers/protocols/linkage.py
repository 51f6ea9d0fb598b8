"""LINKAGE (``judge --protocol linkage``): graded answer lists -> each candidate ranked among its question's
references -> per-question correlation with the graded labels; its declaration (options, run, HTML section)
and its job kind, in one module as RAG-QA Arena's and LFQA-E's::

    list shards -> read each (rubric.protocols: questions, reference lists, candidates, rejects)
      -> with --references generated: the LLM writes each question's list from its golden answer
         (models.linkage.references, cached in OUT/generated_references.jsonl; a question whose
         generation does not parse is a reject with the reason, never given the data's list)
      -> per shard a store (OUT/linkage_scores/<stem>/, keyed by the input's sha256, reader options,
         systems, mode, templates and engine settings) -> score the questions not yet stored in
         checkpointed chunks (models.linkage.LinkageScorer), in this process or on a Ray pool
      -> the reference signals (models.linkage.signals) and any rubric score of a score output, on
         the same answers (rubric.protocols.join_rubric_scores)
      -> OUT/linkage.parquet (one row per answer x system: rubric.protocols.linkage_rows), rejects.jsonl,
         report.md, manifest.json (last)

The line is :func:`workers.runner.run`'s (the score and judge jobs'); :class:`LinkageKind` supplies
what is LINKAGE's own: whole questions are the work items (a candidate is ranked among its question's).
The science (the rows, their table, the rubric-score join, the metrics) is ``rubric.protocols``'.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rubric.config import ScoringConfig, check_range
from rubric.errors import BatchMismatchError, ConfigError, InputError
from rubric.protocols import LinkageQuestion
from rubric.protocols import (CREATE_REFERENCES_VERSIONS, GENERATED_REFERENCES_FILE, LINKAGE_NOTES, LINKAGE_SYSTEMS,
                              REFERENCE_MAX_TOKENS, REFERENCE_MAX_TOKENS_LIMIT, LinkageCorrelations, linkage_metrics,
                              linkage_results, linkage_rows, linkage_rows_table, join_rubric_scores, references_lines)
from rubric.html_report import HtmlSection, plot_linkage
from rubric.scoring import Provenance
from workers.protocols import ProtocolOptions, ProtocolRun, ProtocolSpec, option, register_protocol
from workers.runner import KindManifest, FunctionScorer, JobKind, JobRun, ScoreIndex, prebuilt, run as run_job
from workers.storage.outdir import no_link

__all__ = ["GENERATED_REFERENCES_FILE", "LinkageSettings", "LinkageKind", "run_linkage_job",
           "LINKAGE_CHECKPOINT_ANSWERS", "LinkageOptions", "LinkageSection"]

log = logging.getLogger(__name__)

#: The files a LINKAGE run publishes (the manifest besides).
OUTPUTS = ("linkage.parquet", "rejects.jsonl", "report.md")

#: Candidates per store part (a checkpoint); a chunk is whole questions.
LINKAGE_CHECKPOINT_ANSWERS = 32


class LinkageSettings:
    """How LINKAGE runs; everything here changes a score, so all of it is in the store key.

    Args:
        systems: which of ``models.linkage.LINKAGE_SYSTEMS`` to score.
        mode: ``logprob`` or ``parse``.
        max_pairwise_candidates: cap on candidates per question for the pairwise baseline.
        references: ``data`` (the file's reference lists) or ``generated`` (written by the LLM from one
            golden answer per question, ``linkage.create_multi_step_answer.v1``).
        reference_max_tokens: the cap on new tokens of each generated list.
        reference_template: the generation prompt, ``linkage.create_multi_step_answer.v1`` (LINKAGE's)
            or ``.v2`` (pre-filled with ``Answer1:``).
    """

    def __init__(self, systems: Sequence[str] | str | None = None, *, mode: str = "logprob",
                 max_pairwise_candidates: int = 12, references: str = "data",
                 reference_max_tokens: int = REFERENCE_MAX_TOKENS, reference_template: str | None = None) -> None:
        from rubric.protocols import (CREATE_REFERENCES_VERSION, CREATE_REFERENCES_VERSIONS, LINKAGE_SYSTEM_TEMPLATES,
                                      LINKAGE_SYSTEMS, OLD_SYSTEM_NAMES, get_protocol_template)

        all_systems = LINKAGE_SYSTEMS
        if systems is None:
            systems = all_systems
        if isinstance(systems, str):
            systems = [s.strip() for s in systems.split(",") if s.strip()]
        systems = tuple(OLD_SYSTEM_NAMES.get(s, s) for s in systems)
        unknown = sorted(set(systems) - set(all_systems))
        if not systems or unknown:
            raise ConfigError(f"unknown LINKAGE system(s) {unknown or '(none given)'}; known: {', '.join(all_systems)}")
        if mode not in ("logprob", "parse"):
            raise ConfigError(f"'mode' must be 'logprob' or 'parse', got {mode!r}")
        if references not in ("data", "generated"):
            raise ConfigError(f"'references' must be 'data' or 'generated', got {references!r}")
        check_range("reference_max_tokens", reference_max_tokens, low=1, high=REFERENCE_MAX_TOKENS_LIMIT, integer=True)
        self.systems, self.mode, self.max_pairwise_candidates = systems, mode, max_pairwise_candidates
        reference_template = reference_template or CREATE_REFERENCES_VERSION
        if reference_template not in CREATE_REFERENCES_VERSIONS:
            raise ConfigError(f"unknown reference generation template {reference_template!r}; known: "
                              f"{', '.join(CREATE_REFERENCES_VERSIONS)}")
        if reference_template != CREATE_REFERENCES_VERSION and references != "generated":
            raise ConfigError(f"'reference_template' {reference_template!r} applies to references='generated'")
        self.references, self.reference_max_tokens = references, reference_max_tokens
        self.reference_template = reference_template
        self.templates = {s: get_protocol_template(LINKAGE_SYSTEM_TEMPLATES[s]).template_hash for s in systems}

    def key(self) -> dict:
        key = {"systems": list(self.systems), "mode": self.mode, "templates": self.templates,
               "max_pairwise_candidates": self.max_pairwise_candidates}
        if self.references != "data":  # keys of data-reference stores stay as they were
            key["references"] = self.references
            key["reference_max_tokens"] = self.reference_max_tokens
            if self.reference_template != "linkage.create_multi_step_answer.v1":  # v1 keys stay as they were
                key["reference_template"] = self.reference_template
        return key

    def arguments(self) -> dict:
        """Plain data that rebuilds these settings (``LinkageSettings(**s.arguments())``, e.g. on a Ray actor)."""
        return {"systems": list(self.systems), "mode": self.mode,
                "max_pairwise_candidates": self.max_pairwise_candidates, "references": self.references,
                "reference_max_tokens": self.reference_max_tokens, "reference_template": self.reference_template}


def _reference_generator(settings: LinkageSettings, config: ScoringConfig):
    from models.linkage import ReferenceGenerator
    from models.llm import build_engine

    engine = build_engine(config, logprobs_k=config.llm_logprobs_k)  # the scorer's engine (built once per process)
    return ReferenceGenerator(engine, max_tokens=settings.reference_max_tokens, version=settings.reference_template)


def _generate_references(read, generator, cache) -> tuple[Any, dict]:
    """``read`` with each question's generated list filled in; a failed question's candidates are rejects."""
    from dataclasses import replace

    from models.linkage import ReferenceRequest
    from rubric.protocols import LinkageRead
    from rubric.io import Reject

    results = generator.references([ReferenceRequest(q.question_id, q.question, q.golden) for q in read.questions],
                                   cache)
    kept, rejects = [], list(read.rejects)
    for q, r in zip(read.questions, results):
        if r.error is None:
            kept.append(replace(q, references=r.references))
            continue
        for c in q.candidates:
            rejects.append(Reject(row=q.index, field="reference", source_file=read.source_file,
                                  extra={"answer": c.key},
                                  reason=f"question {q.index} answer {c.key}: no generated reference list: {r.error}"))
    stats = {"questions": len(read.questions), "generated_now": sum(1 for r in results if not r.cached and r.text),
             "from_cache": sum(1 for r in results if r.cached), "failed": sum(1 for r in results if r.error),
             "answers_rejected": sum(len(q.candidates) for q, r in zip(read.questions, results) if r.error),
             "failures": [r.error for r in results if r.error]}
    new = LinkageRead(questions=kept, rejects=rejects, rows_in=read.rows_in, n_references=read.n_references,
                      n_capped=read.n_capped, source_file=read.source_file)
    return new, stats


def _lists_digest(questions: Sequence[Any]) -> str:
    """sha256 of every question's reference list: a store scored against other lists is never reused."""
    import hashlib

    h = hashlib.sha256()
    for q in questions:
        h.update(json.dumps([q.question_id, list(q.references)], ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def _linkage_scorer(settings: LinkageSettings, config: ScoringConfig):
    from models.llm import build_engine
    from models.linkage import LinkageScorer

    engine = build_engine(config, logprobs_k=config.llm_logprobs_k)
    return LinkageScorer(engine, settings.systems, mode=settings.mode, min_mass=config.llm_min_mass,
                         max_pairwise_candidates=settings.max_pairwise_candidates)


class LinkageKind(JobKind):
    """LINKAGE: items are whole questions, stored by candidate answer id, one score per system.

    Args:
        options: ``rubric.linkage_data.read_linkage`` options; settings: ``LinkageSettings`` (or its
        ``arguments()``); config: engine settings; reference_generator: a prebuilt generator (tests);
        scorer_factory: testing only, ``factory(settings, config)`` builds the scorer.
        signals, rubric_scores, n_boot, seed, command: as :func:`run_linkage_job`.
    """

    kind = "judge"  # the manifest's "kind" of every `judge --protocol` output (readers tell LINKAGE by "protocol")
    store_dir = "linkage_scores"
    what = "LINKAGE system"
    fmt = "graded"
    outputs = OUTPUTS
    own_files = (GENERATED_REFERENCES_FILE,)
    item_type = LinkageQuestion

    def __init__(self, options: Mapping[str, Any], settings, config: ScoringConfig, *, signals: bool = True,
                 rubric_scores: str | Path | None = None, n_boot: int = 1000, seed: int = 0, command: str = "",
                 reference_generator=None, scorer_factory=None) -> None:
        self.options, self.config = dict(options), config
        self.settings = settings if isinstance(settings, LinkageSettings) else LinkageSettings(**settings)
        self.names = list(self.settings.systems)
        # a question's candidates are its store ids: a checkpoint holds whole questions
        self.checkpoint = max(LINKAGE_CHECKPOINT_ANSWERS, config.batch_size)
        self.signals, self.rubric_scores, self.n_boot, self.seed = signals, rubric_scores, n_boot, seed
        self.command, self.reference_generator, self.scorer_factory = command, reference_generator, scorer_factory
        self._reads: dict[str, Any] = {}
        self._generation: dict[str, dict] = {}

    def arguments(self) -> dict:
        return {"options": self.options, "settings": self.settings.arguments(), "config": self.config,
                "scorer_factory": self.scorer_factory}

    def check(self) -> None:
        from models.backends import check_backends

        check_backends([], self.config, backends=["llm"])

    def prepare(self, shards: Sequence[str], out: Path) -> None:
        """Read every shard (the keys of generated lists hold their digest) and generate the reference lists."""
        from rubric.protocols import read_linkage

        failed = {}
        for uri in shards:
            try:
                self._reads[uri] = read_linkage(uri, references=self.settings.references, **self.options)
            except InputError as e:
                failed[uri] = str(e)
        if failed:
            raise InputError(f"{len(failed)} of {len(shards)} input(s) could not be read, so nothing was written: "
                             + "; ".join(f"{u}: {e}" for u, e in failed.items()))
        if self.settings.references == "generated":
            from models.linkage import ReferenceCache

            generator = self.reference_generator or _reference_generator(self.settings, self.config)
            cache = ReferenceCache(no_link(out / GENERATED_REFERENCES_FILE, "the generated references' cache"))
            for uri in shards:
                self._reads[uri], g = _generate_references(self._reads[uri], generator, cache)
                self._generation[uri] = g
                log.info("%s: %d reference lists generated now, %d from the cache, %d failed (%d answers rejected)",
                         uri, g["generated_now"], g["from_cache"], g["failed"], g["answers_rejected"])

    def unit_key(self, uri: str) -> dict:
        linkage = self.settings.key()
        if self.settings.references == "generated":
            linkage["reference_lists"] = _lists_digest(self._reads[uri].questions)
        return {"linkage": linkage}

    def work_items(self, uri: str, block) -> tuple[list, list[list[str]]]:
        questions = list(self._reads[uri].questions)
        return questions, [[c.answer_id for c in q.candidates] for q in questions]

    def scorer(self, stage=None) -> FunctionScorer:
        """The LINKAGE scorer (``score_questions``, ``provenance``) as the runner's step scorer."""
        built = (self.scorer_factory or _linkage_scorer)(self.settings, self.config)
        return FunctionScorer(lambda items: [list(g) for g in built.score_questions(list(items))],
                              {s: built.provenance(s) for s in self.settings.systems})

    def _no_question(self, job: JobRun, refs: list[str]) -> KindManifest:
        """No usable question: an InputError, or, when reference lists were generated, a failed run that
        publishes its rejects and report (the generations that failed are the finding)."""
        from rubric.protocols import linkage_empty_page

        reads, gen = self._reads, self._generation
        first = next((r.rejects[0].reason for r in reads.values() if r.rejects), "none")
        if not gen:
            raise InputError(f"no usable LINKAGE question in {', '.join(job.shards)}; first reject: {first}")
        job.output.jsonl("rejects.jsonl", (r.to_dict() for rd in reads.values() for r in rd.rejects))
        job.output.text("report.md", linkage_empty_page(shards=job.shards, command=self.command, references=refs))
        first += (f" ({sum(g['failed'] for g in gen.values())} of {sum(g['questions'] for g in gen.values())} "
                  f"generated reference lists failed; {job.out / 'rejects.jsonl'}, {job.out / 'report.md'})")
        # published as a set of their own: the earlier run's table goes, no mix of two runs
        return KindManifest({"protocol": "linkage", "settings": self.settings.key()},
                            failed=f"no usable LINKAGE question in {', '.join(job.shards)}; first reject: {first}")

    def assemble(self, job: JobRun, lookup: ScoreIndex, provenance: Mapping[str, Provenance]) -> KindManifest:
        from rubric.protocols import linkage_page, linkage_table

        out, settings, reads = job.out, self.settings, self._reads
        refs = references_lines(settings.references, settings.reference_template, settings.reference_max_tokens,
                                self._generation)
        questions = [q for uri in job.shards for q in reads[uri].questions]
        if not questions:
            return self._no_question(job, refs)
        answer_ids = [c.answer_id for q in questions for c in q.candidates]
        scores = lookup.get(answer_ids)
        provenance = dict(provenance)
        lost = [a for a in answer_ids if a not in scores]
        if lost:
            raise BatchMismatchError(f"{len(lost)} LINKAGE answers have no score (first: {lost[0]})")
        systems = list(settings.systems)
        if self.signals:
            from models.linkage import LINKAGE_SIGNALS, reference_signals, signal_provenance

            for aid, row in reference_signals(questions).items():
                scores[aid].update(row)
            provenance.update(signal_provenance())
            systems += list(LINKAGE_SIGNALS)
        if self.rubric_scores is not None:
            from rubric.preference import read_output_table

            got, joined = join_rubric_scores(read_output_table(self.rubric_scores, "answers"), set(answer_ids),
                                             source=str(self.rubric_scores))
            for aid, row in got.items():
                scores[aid].update(row)
            provenance.update(joined)
            systems += list(joined)
        rows = [r for uri in job.shards for r in linkage_rows(reads[uri].questions, scores, provenance, systems,
                                                               source=uri)]
        n_rows = job.output.table("linkage.parquet", linkage_rows_table(rows))
        rejects = [r for uri in job.shards for r in reads[uri].rejects]
        job.output.jsonl("rejects.jsonl", (r.to_dict() for r in rejects))
        results = linkage_results(rows, n_boot=self.n_boot, seed=self.seed)
        notes = {**LINKAGE_NOTES,
                 **{n: "rubric score (1-5) from the score output" for n in systems if n.startswith("rubric:")}}
        errors = {s: sum(1 for r in rows if r["system"] == s and r["error"]) for s in systems}
        page = linkage_page(model=next((p.model_id for s, p in provenance.items() if s in settings.systems), ""),
                            shards=job.shards, n_questions=len(questions), n_candidates=len(answer_ids),
                            n_rejected=len(rejects), n_boot=self.n_boot, command=self.command, references=refs,
                            table=linkage_table(results, notes=notes), errors=errors)
        job.output.text("report.md", page)
        log.info("wrote %s: %d rows (%d answers scored now); report %s", out / "linkage.parquet", n_rows,
                 job.step.scored, out / "report.md")
        gen = self._generation
        return KindManifest({
            "protocol": "linkage",
            "counts": {"questions": len(questions), "rows": n_rows, "rejected": len(rejects),
                       "errors_by_system": errors},
            "systems": {s: asdict(provenance[s]) for s in systems if s in provenance},
            "settings": settings.key(),
            **({"generated_references": {"file": str(out / GENERATED_REFERENCES_FILE),
                                         **{k: sum(g[k] for g in gen.values())
                                            for k in ("questions", "generated_now", "from_cache", "failed",
                                                      "answers_rejected")}}} if gen else {}),
            "metrics": linkage_metrics(results),
        }, per_input={u.shard: _input_counts(reads[u.uri]) for u in job.units},
            job={"answers_scored_now": job.step.scored})


def _input_counts(read) -> dict:
    """One input's counts in the manifest."""
    return {"rows_in": read.rows_in, "questions": len(read.questions), "candidates": read.n_candidates,
            "references": read.n_references, "rejected": len(read.rejects), "capped": read.n_capped}


def run_linkage_job(inputs: str | Path | Sequence[str | Path], out: str | Path, *, config: ScoringConfig,
                    settings: LinkageSettings | None = None, reader_options: Mapping[str, Any] | None = None,
                    signals: bool = True, rubric_scores: str | Path | None = None, n_boot: int = 1000, seed: int = 0,
                    progress: bool = True, scorer=None, reference_generator=None, command: str = "",
                    ray=None, scorer_factory=None, force: bool = False) -> dict:
    """LINKAGE on graded inputs: OUT/linkage.parquet, rejects.jsonl, report.md, manifest.json (module docstring).

    Args:
        inputs: graded JSON files (WebGLM or TREC-DL style), folders or globs (one file = one shard).
        out: output folder.
        config: engine settings.
        settings: systems and mode (default: all four judge systems, logprob).
        reader_options: :func:`rubric.linkage_data.read_linkage` options (``max_questions``,
            ``max_answers_per_question``, ``seed``, length limits).
        signals: add ROUGE-1/ROUGE-L, MiniLM similarity and length.
        rubric_scores: a score output folder whose answers.parquet scored the same answers.
        n_boot: bootstrap replicates of the report's CIs.
        seed: their seed.
        progress: progress bars.
        scorer: a prebuilt scorer (tests); default built here when a question needs scoring.
        reference_generator: a prebuilt ``models.linkage.references.ReferenceGenerator`` (tests); with
            ``settings.references == "generated"`` default built on the scorer's engine.
        command: the command line, quoted in the report.
        ray: a :class:`workers.cluster.pipeline.RayStep` to score on a Ray pool of LINKAGE actors (its "llm" pool).
        scorer_factory: testing only, see :class:`LinkageKind` (the backend check is skipped).
        force: write into a folder that is not an lfqa-rubric output (``workers.storage.outdir.OutputFolder``).

    Returns:
        The manifest.

    Raises:
        InputError: an input cannot be read, or no question is usable.
        EngineError: the engine failed (finished chunks stay in the store).
    """
    if scorer is not None:  # a prebuilt scorer is built by a factory that returns it
        scorer_factory = prebuilt(scorer)
    kind = LinkageKind(dict(reader_options or {}), settings or LinkageSettings(), config, signals=signals,
                       rubric_scores=rubric_scores, n_boot=n_boot, seed=seed, command=command,
                       reference_generator=reference_generator, scorer_factory=scorer_factory)
    return run_job(kind, inputs, out, progress=progress, step=ray, check=scorer_factory is None, force=force)


# --- the declaration ---------------------------------------------------------------------------

@dataclass(frozen=True)
class LinkageOptions(ProtocolOptions):
    linkage_systems: str | None = option(help=f"comma-separated of {','.join(LINKAGE_SYSTEMS)} (default all)")
    references: str = option("data", choices=("data", "generated"), help=(
        "reference lists from the data (default: WebGLM's groundK, one answer per grade) or generated by the judge "
        "model from each question's golden answer (cached in OUT/generated_references.jsonl)"))
    reference_max_tokens: int | None = option(help=(  # bounded by LinkageSettings
        f"--references generated: cap on new tokens per generated list (default {REFERENCE_MAX_TOKENS})"))
    reference_template: str | None = option(choices=CREATE_REFERENCES_VERSIONS, help=(
        "--references generated: v1 is LINKAGE's prompt (default), v2 the same with the assistant turn pre-filled "
        "with 'Answer1:'"))
    max_questions: int | None = option(low=1, help="only the first N questions")
    max_answers_per_question: int | None = option(low=1, help="at most N candidates per question (seeded draw)")
    no_signals: bool = option(False, help="leave out ROUGE-1/ROUGE-L, MiniLM similarity and length")
    rubric_scores: str | None = option(metavar="SCORE_OUT", help=(
        "add each rubric's score (a score output over the same answers)"))

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("reference_max_tokens", "reference_template"):
            if getattr(self, name) is not None and self.references != "generated":
                raise ConfigError(f"--{name.replace('_', '-')} applies to --references generated")


def run(r: ProtocolRun, o: LinkageOptions) -> dict:
    if r.fmt not in (None, "graded"):
        raise ConfigError(f"--protocol linkage reads graded answer lists (--format graded), not {r.fmt!r}")
    reader = {"max_questions": o.max_questions, "max_answers_per_question": o.max_answers_per_question,
              "seed": r.seed, "max_answer_chars": r.config.max_answer_chars,
              "max_question_chars": r.config.max_question_chars}
    settings = LinkageSettings(
        o.linkage_systems, mode="parse" if r.judge.get("mode") == "vote" else "logprob", references=o.references,
        reference_max_tokens=REFERENCE_MAX_TOKENS if o.reference_max_tokens is None else o.reference_max_tokens,
        reference_template=o.reference_template)
    return run_linkage_job(r.inputs, r.out, config=r.config, settings=settings, reader_options=reader,
                           signals=not o.no_signals, rubric_scores=o.rubric_scores, n_boot=r.n_boot,
                           seed=r.seed, progress=r.progress, command=r.command, ray=r.ray, force=r.force)


@dataclass(frozen=True)
class LinkageSection:
    """A LINKAGE output: every system's mean per-question correlations, and their chart."""

    folder: str
    n_questions: int
    n_answers: int
    results: list[LinkageCorrelations]
    chart: str


def read_section(folder: str | Path, *, n_boot: int = 1000, seed: int = 0) -> LinkageSection:
    """``OUT/linkage.parquet`` and what its report.md shows (same function, same seed)."""
    from rubric.analysis import read_linkage_rows

    rows = read_linkage_rows(folder)
    results = linkage_results(rows, n_boot=n_boot, seed=seed)
    return LinkageSection(folder=str(folder), n_questions=len({r["question_id"] for r in rows}),
                          n_answers=len({r["answer_id"] for r in rows}), results=results,
                          chart=plot_linkage(results) if results else "")


register_protocol(ProtocolSpec(
    name="linkage", help="LINKAGE listwise ranking on graded lists (--format graded)", options=LinkageOptions,
    run=run, section=HtmlSection(read_section, "section_linkage.html.j2")))
