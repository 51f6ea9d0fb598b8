"""The neighbouring pairwise protocols as jobs: RAG-QA Arena and LFQA-E (``lfqa-rubric judge --protocol
arena|lfqa-e``); LINKAGE is :mod:`workers.linkage_job`.

Both are the judge job (:func:`workers.judge_job.run_judge_job`) with the protocol's judge
(``arena.pairwise.v1``, ``lfqa_e.reference_tie.v1``): the same store, resume rules, ``judgments.parquet``,
rejects and manifest, and the same Ray step (``ray=workers.ray_pipeline.RayStep(...)`` or
``scripts/run_job.py --protocol``). RAG-QA Arena's input is an annotation file plus one answers file per
system; their join is written as ``OUT/arena_pairs.jsonl`` (lfqa_eval format: the system's answer is
``a``, the reference ``b``, the human label ``overall_preference``) and that file is the judge job's
input, so its sha256 keys the store. Each job's report (:mod:`rubric.protocols` tables in
:mod:`rubric.protocols.pages`' page) is the judge job's ``page`` (``workers.judge_job.ProtocolPage``): the
assemble step writes ``OUT/report.md`` with the judgments, the protocol's own rejects and its manifest
fields, and they are published together under one manifest.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rubric.config import ScoringConfig
from rubric.errors import ConfigError, InputError
from workers.judge_job import JudgeKind, JudgeSettings, ProtocolPage, run_judge_job
from workers.outdir import OutputFolder

__all__ = ["run_arena_job", "run_lfqa_e_job"]

log = logging.getLogger(__name__)


# --- pairwise protocols --------------------------------------------------------------------------

def _judge_settings(version: str, judge_kwargs: Mapping[str, Any] | None):
    kw = dict(judge_kwargs or {})
    kw.pop("tie", None)  # a protocol template always offers its tie
    return JudgeSettings(version, **kw)


def run_arena_job(annotations: str | Path, systems: Mapping[str, str | Path], out: str | Path, *,
                  config: ScoringConfig, judge_kwargs: Mapping[str, Any] | None = None,
                  max_questions: int | None = None, answer_mapping: str | None = None, n_boot: int = 1000,
                  seed: int = 0, progress: bool = True, scorer=None, ray=None, scorer_factory=None,
                  command: str = "", reasoning_tokens: int = 0, force: bool = False) -> dict:
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
        ray: a :class:`workers.ray_pipeline.RayStep`: judge on a Ray pool of judge actors.
        scorer_factory: testing only (``workers.judge_job.JudgeKind``).
        command: the command line, quoted in the report.
        reasoning_tokens: 0 reads the rating after an empty ``<thinking></thinking>``
            (``arena.pairwise.v1``); N > 0 has the judge write its own reasoning first, greedy, at most
            N tokens (``arena.pairwise_reasoning.v1``; N is its ``max_reasoning_tokens``, in the store key).
        force: write into a folder that is not an lfqa-rubric output (``workers.outdir.OutputFolder``).

    Raises:
        ConfigError: a system name is empty, repeated or contains ':'; ``reasoning_tokens`` < 0.
        InputError: a file cannot be read, or no pair is left.
    """
    # held from before anything is read until the judge job (the same folder, re-entered) has published
    with OutputFolder(out, outputs=JudgeKind.outputs, own=JudgeKind.own_files, stores=(JudgeKind.store_dir,),
                      inputs=[annotations, *systems.values()], force=force) as folder:
        return _arena(annotations, systems, folder, config=config, judge_kwargs=judge_kwargs,
                      max_questions=max_questions, answer_mapping=answer_mapping, n_boot=n_boot, seed=seed,
                      progress=progress, scorer=scorer, ray=ray, scorer_factory=scorer_factory, command=command,
                      reasoning_tokens=reasoning_tokens, force=force)


def _arena(annotations, systems, folder: OutputFolder, *, config, judge_kwargs, max_questions, answer_mapping,
           n_boot, seed, progress, scorer, ray, scorer_factory, command, reasoning_tokens, force) -> dict:
    from rubric.protocols import ArenaQuestions, join_arena, read_arena_annotations, read_arena_answers
    from rubric.protocols import arena_page
    from rubric.protocols import arena_tables
    from rubric.protocols import PAIRWISE_PROTOCOLS
    from rubric.protocols import ARENA_REASONING_VERSION
    from rubric.protocols import ARENA_PAIRS_FILE

    out = folder.path
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
    pairs_file = out / ARENA_PAIRS_FILE
    data = ("\n".join(lines) + "\n").encode()
    if pairs_file.is_symlink() or not pairs_file.is_file() or pairs_file.read_bytes() != data:
        folder.write_bytes(ARENA_PAIRS_FILE, data)  # same bytes: same sha256, the store is reused
    version = PAIRWISE_PROTOCOLS["arena"]
    if reasoning_tokens:
        version = ARENA_REASONING_VERSION
        judge_kwargs = {**(judge_kwargs or {}), "max_reasoning_tokens": reasoning_tokens}
    def page(*, table, fields, **_) -> ProtocolPage:
        from rubric.io import question_id
        from rubric.judging import pair_decisions

        _, dec = pair_decisions(table, version)
        pairs = [p for p in joined.pairs if p.pair_id in dec]
        tables = arena_tables([p.system for p in pairs], [dec[p.pair_id] for p in pairs],
                              [question_id(p.question) for p in pairs], [p.human for p in pairs], n_boot=n_boot,
                              seed=seed)
        report = arena_page(version=version, model=next(iter(fields["judges"].values()))["model_id"],
                            mode=fields["settings"]["mode"], reasoning_tokens=reasoning_tokens,
                            annotations=str(annotations), n_questions=len(qs.questions),
                            systems={n: str(p) for n, p in systems.items()}, command=command, tables=tables)
        return ProtocolPage(report, {"protocol": "arena", "arena": {
            "annotations": str(annotations), "systems": {n: str(p) for n, p in systems.items()},
            "questions": len(qs.questions), "pairs": len(joined.pairs)}}, rejects)

    return run_judge_job(pairs_file, "lfqa-eval", _judge_settings(version, judge_kwargs), out, config=config,
                         seed=seed, progress=progress, scorer=scorer, ray=ray, scorer_factory=scorer_factory, page=page,
                         force=force)


def run_lfqa_e_job(inputs: str | Path | Sequence[str | Path], fmt: str, out: str | Path, *, config: ScoringConfig,
                   judge_kwargs: Mapping[str, Any] | None = None, reader_options: Mapping[str, Any] | None = None,
                   rubric_scores: str | Path | None = None, rubric_model: str | Path | None = None,
                   n_boot: int = 1000, seed: int = 0, progress: bool = True, scorer=None, ray=None,
                   scorer_factory=None, command: str = "", force: bool = False) -> dict:
    """LFQA-E: the reference-based three-way judge on every pair, both orders; accuracy / macro-F1 report.

    Args:
        inputs, fmt, reader_options: as the judge job's (pairs need a ``reference``: graded WebGLM lists
            give their best ``groundK``, lfqa_eval/table inputs a ``reference`` field).
        rubric_scores: a score output over the same input (pairs.parquet): the rubric model is put in the
            same table, predicting a / b / tie (``fit --ties three_way``; a binary model never says tie).
        rubric_model: its model JSON (default ``RUBRIC_SCORES/model.json``).
        Others: as :func:`run_arena_job`.
    """
    from rubric.protocols import PAIRWISE_PROTOCOLS, lfqa_e_page, lfqa_e_tables

    version = PAIRWISE_PROTOCOLS["lfqa-e"]

    def page(*, pairs, table, fields, shards) -> ProtocolPage:
        from rubric.judging import pair_decisions

        _, dec = pair_decisions(table, version)  # every pair of the job is in the table
        decisions: dict[str, list[str | None]] = {version: [dec[p.pair_id] for p in pairs]}
        notes = {version: f"{fields['settings']['mode']} mode, both orders, order-debiased"}
        if rubric_scores is not None:
            from rubric.preference import PreferenceModel, predict_pairs, read_pairs

            model_path = Path(rubric_model) if rubric_model else Path(rubric_scores) / "model.json"
            model = PreferenceModel.from_json(model_path)
            t = predict_pairs(model, read_pairs(rubric_scores), split=None).to_pydict()
            pred = dict(zip(t["pair_id"], t["predicted"]))
            split = dict(zip(t["pair_id"], t["split"])) if "split" in t else {}
            name = f"rubric model ({model.ties})"
            decisions[name] = [pred.get(p.pair_id) for p in pairs]
            n_train = sum(1 for p in pairs if split.get(p.pair_id) == "train")
            notes[name] = (f"{model_path}; {n_train} of {len(pairs)} pairs are in its train split (in-sample)"
                           + ("; binary model: never predicts tie" if model.ties != "three_way" else ""))
        tables = lfqa_e_tables(pairs, decisions, n_boot=n_boot, seed=seed, notes=notes)
        report = lfqa_e_page(version=version, model=next(iter(fields["judges"].values()))["model_id"],
                             inputs=list(shards), fmt=fmt, n_pairs=len(pairs), command=command, tables=tables)
        return ProtocolPage(report, {"protocol": "lfqa-e"})

    return run_judge_job(inputs, fmt, _judge_settings(version, judge_kwargs), out, config=config,
                         reader_options=reader_options, seed=seed, progress=progress, scorer=scorer, ray=ray,
                         scorer_factory=scorer_factory, page=page, force=force)
