"""RAG-QA Arena (``judge --protocol arena``): every system's answer against the LFRQA reference, in both
orders, by the protocol's judge; win rates, Elo and Bradley-Terry ratings with CIs.

Its input is an annotation file plus one answers file per system; their join is written as
``OUT/arena_pairs.jsonl`` (lfqa_eval format: the system's answer is ``a``, the reference ``b``, the
human label ``overall_preference``) and that file is the judge job's input, so its sha256 keys the
store. The job is the judge job (:class:`ArenaKind`, a ``workers.jobs.judge.JudgeKind``): the same store,
resume rules, ``judgments.parquet``, rejects, manifest and Ray step; its page is the report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rubric.config import ScoringConfig, check_range
from rubric.errors import ConfigError, InputError
from rubric.html_report import HtmlSection, plot_win_rates
from rubric.protocols import ARENA_PAIRS_FILE, ARENA_REASONING_VERSION, HumanAgreement, RatingInterval, WinRate
from workers.jobs import JudgeKind, ProtocolPage, protocol_settings
from workers.storage.outdir import OutputFolder
from workers.protocols import ProtocolOptions, ProtocolRun, ProtocolSpec, option, register_protocol
from workers.runner import prebuilt, run as run_job

__all__ = ["ArenaOptions", "ArenaKind", "ArenaSection", "run_arena_job", "JUDGE_VERSION"]

#: The protocol's judge (``arena.pairwise.v1``; with reasoning tokens :data:`rubric.protocols.ARENA_REASONING_VERSION`).
JUDGE_VERSION = "arena.pairwise.v1"


@dataclass(frozen=True)
class ArenaOptions(ProtocolOptions):
    systems: list[str] = option([], metavar="NAME=FILE", help=(
        "one answers file per system (JSONL/Parquet/CSV keyed by qid)"))
    answer_map: str | None = option(help="the answers files' columns, e.g. qid=id,answer=text,label=human")
    max_questions: int | None = option(low=1, help="only the first N annotated questions")
    reasoning_tokens: int = option(0, low=0, metavar="N", help=(
        "the judge first writes its own reasoning (greedy, at most N tokens, cut at </thinking>), then the rating "
        "is read (arena.pairwise_reasoning.v1); default: the rating after an empty <thinking></thinking>"))


@dataclass
class ArenaContext:
    """What the arena page needs on the driver: the join, the rejects of reading it, and the report's inputs."""

    joined: Any
    questions: Any
    rejects: list
    annotations: str
    systems: dict[str, str]
    reasoning_tokens: int
    n_boot: int
    command: str
    seed: int


class ArenaKind(JudgeKind):
    """The judge job on the joined pairs, with RAG-QA Arena's page (``context`` on the driver only)."""

    protocol = "arena"
    own_files = (ARENA_PAIRS_FILE,)

    def __init__(self, *args, context: ArenaContext | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.context = context

    def page(self, *, pairs, table, fields, shards) -> ProtocolPage:
        from rubric.io import question_id
        from rubric.judging import pair_decisions
        from rubric.protocols import arena_page, arena_tables

        c = self.context
        version = self.names[0]
        _, dec = pair_decisions(table, version)
        joined = [p for p in c.joined.pairs if p.pair_id in dec]
        tables = arena_tables([p.system for p in joined], [dec[p.pair_id] for p in joined],
                              [question_id(p.question) for p in joined], [p.human for p in joined], n_boot=c.n_boot,
                              seed=c.seed)
        report = arena_page(version=version, model=next(iter(fields["judges"].values()))["model_id"],
                            mode=fields["settings"]["mode"], reasoning_tokens=c.reasoning_tokens,
                            annotations=c.annotations, n_questions=len(c.questions.questions), systems=c.systems,
                            command=c.command, tables=tables)
        return ProtocolPage(report, {"arena": {"annotations": c.annotations, "systems": c.systems,
                                               "questions": len(c.questions.questions),
                                               "pairs": len(c.joined.pairs)}}, c.rejects)


def run_arena_job(annotations: str | Path, systems: Mapping[str, str | Path], out: str | Path, *,
                  config: ScoringConfig, judge_kwargs: Mapping[str, Any] | None = None,
                  max_questions: int | None = None, answer_mapping: str | None = None, n_boot: int = 1000,
                  seed: int = 0, progress: bool = True, scorer=None, ray=None, scorer_factory=None,
                  command: str = "", reasoning_tokens: int = 0, force: bool = False) -> dict:
    """RAG-QA Arena: every system's answer against the LFRQA reference, both orders; report with ratings.

    Args:
        annotations: an ``annotations_<domain>_with_citation.jsonl`` file.
        systems: system name -> its answers file (keyed by qid; see :func:`rubric.protocols.read_arena_answers`).
        out: output folder.
        config: engine settings.
        judge_kwargs: ``JudgeSettings`` options (mode, n_votes, temperature, seed).
        max_questions: only the first N annotated questions.
        answer_mapping: the answers files' column mapping (``qid=id,answer=text,label=human``).
        n_boot: bootstrap replicates of the report.
        seed: split and bootstrap seed.
        progress: progress bars.
        scorer: a prebuilt judge scorer (tests).
        ray: a :class:`workers.cluster.pipeline.RayStep`: judge on a Ray pool of judge actors.
        scorer_factory: testing only (``workers.jobs.judge.JudgeKind``).
        command: the command line, quoted in the report.
        reasoning_tokens: 0 reads the rating after an empty ``<thinking></thinking>``
            (``arena.pairwise.v1``); N > 0 has the judge write its own reasoning first, greedy, at most
            N tokens (``arena.pairwise_reasoning.v1``; N is its ``max_reasoning_tokens``, in the store key).
        force: write into a folder that is not an lfqa-rubric output (``workers.storage.outdir.OutputFolder``).

    Raises:
        ConfigError: a system name is empty, repeated or contains ':'; ``reasoning_tokens`` < 0.
        InputError: a file cannot be read, or no pair is left.
    """
    # held from before anything is read until the judge job (the same folder, re-entered) has published
    with OutputFolder(out, outputs=ArenaKind.outputs, own=ArenaKind.own_files, stores=(ArenaKind.store_dir,),
                      inputs=[annotations, *systems.values()], force=force) as folder:
        if not systems:
            raise ConfigError("RAG-QA Arena needs at least one system: --systems NAME=FILE")
        for name in systems:
            if ":" in name:
                raise ConfigError(f"system name {name!r} must not contain ':' (pair ids are SYSTEM:QID)")
        check_range("max_questions", max_questions, low=1, optional=True)
        check_range("reasoning_tokens", reasoning_tokens, low=0, integer=True)
        joined, questions, rejects = _join(annotations, systems, folder, max_questions=max_questions,
                                           answer_mapping=answer_mapping)
        context = ArenaContext(joined, questions, rejects, str(annotations), {n: str(p) for n, p in systems.items()},
                               reasoning_tokens, n_boot, command, seed)
        version = JUDGE_VERSION
        if reasoning_tokens:
            version = ARENA_REASONING_VERSION
            judge_kwargs = {**(judge_kwargs or {}), "max_reasoning_tokens": reasoning_tokens}
        if scorer is not None:
            scorer_factory = prebuilt(scorer)
        kind = ArenaKind("lfqa-eval", {}, protocol_settings(version, judge_kwargs), config, seed, scorer_factory,
                         context=context)
        return run_job(kind, folder.path / ARENA_PAIRS_FILE, folder.path, progress=progress, step=ray,
                       check=scorer_factory is None, force=force)


def _join(annotations, systems, folder: OutputFolder, *, max_questions, answer_mapping) -> tuple[Any, Any, list]:
    """Read and join the annotations and the systems' answers (the join, the questions read, the rejects);
    write the join as the judge job's input."""
    from rubric.protocols import ArenaQuestions, join_arena, read_arena_annotations, read_arena_answers

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
    pairs_file = folder.path / ARENA_PAIRS_FILE
    data = ("\n".join(lines) + "\n").encode()
    if pairs_file.is_symlink() or not pairs_file.is_file() or pairs_file.read_bytes() != data:
        folder.write_bytes(ARENA_PAIRS_FILE, data)  # same bytes: same sha256, the store is reused
    return joined, qs, rejects


def _systems(entries: list[str]) -> dict[str, str]:
    """``--systems NAME=FILE ...`` as an ordered dict; a malformed or repeated entry is an error."""
    if not entries:
        raise ConfigError("--protocol arena needs --systems NAME=FILE [NAME=FILE ...] (answers keyed by qid)")
    out: dict[str, str] = {}
    for e in entries:
        name, sep, path = e.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ConfigError(f"--systems entry {e!r} must look like NAME=FILE")
        if name in out:
            raise ConfigError(f"--systems names {name!r} twice")
        out[name.strip()] = path.strip()
    return out


def run(r: ProtocolRun, o: ArenaOptions) -> dict:
    if len(r.inputs) != 1 or r.fmt is not None:
        raise ConfigError("--protocol arena takes one annotation file (annotations_<domain>_with_citation.jsonl) "
                          "and no --format; the systems' answers come with --systems NAME=FILE")
    return run_arena_job(r.inputs[0], _systems(o.systems), r.out, config=r.config, judge_kwargs=r.judge,
                         max_questions=o.max_questions, answer_mapping=o.answer_map, n_boot=r.n_boot, seed=r.seed,
                         progress=r.progress, command=r.command, ray=r.ray, reasoning_tokens=o.reasoning_tokens,
                         force=r.force)


@dataclass(frozen=True)
class ArenaSection:
    """A RAG-QA Arena output: win rates against the reference, Elo and Bradley-Terry with CIs."""

    folder: str
    judge: str
    n_pairs: int
    win_rates: list[WinRate]
    ratings: dict[str, list[RatingInterval]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    agreement: HumanAgreement | None = None
    chart: str = ""


def read_section(folder: str | Path, *, n_boot: int = 1000, seed: int = 0) -> ArenaSection:
    """``arena_pairs.jsonl`` joined with the judge's order-debiased decisions, as the job's report does.

    Raises:
        InputError: the pairs file is missing or not JSONL.
    """
    from rubric.html_report import read_jsonl
    from rubric.io import question_id
    from rubric.judging import pair_decisions, read_judgments
    from rubric.protocols import arena_ratings, battles_against, human_agreement, win_rates

    folder = Path(folder)
    path = folder / ARENA_PAIRS_FILE
    if not path.is_file():
        raise InputError(f"{path} not found: not a RAG-QA Arena output (lfqa-rubric judge --protocol arena)")
    pairs = read_jsonl(path)
    judge, dec = pair_decisions(read_judgments(folder))
    pairs = [p for p in pairs if p["pair_id"] in dec]
    human = {-1: "a", 0: "tie", 1: "b"}
    systems = [p["answer_a_type"] for p in pairs]
    outcomes = [dec[p["pair_id"]] for p in pairs]
    qids = [question_id(p["question"]) for p in pairs]
    humans = [human.get(p.get("overall_preference")) for p in pairs]
    wr = win_rates(systems, outcomes, qids, n_boot=n_boot, seed=seed)
    battles = battles_against(systems, outcomes, qids)
    ratings, notes = arena_ratings(battles, n_boot=n_boot, seed=seed) if battles else ({}, [])
    agreement = human_agreement(outcomes, humans) if any(h is not None for h in humans) else None
    return ArenaSection(folder=str(folder), judge=judge, n_pairs=len(pairs), win_rates=wr, ratings=ratings,
                        notes=notes, agreement=agreement, chart=plot_win_rates(wr) if wr else "")


register_protocol(ProtocolSpec(
    name="arena", help="RAG-QA Arena: systems against the LFRQA reference (one annotation file, --systems)",
    options=ArenaOptions, run=run, section=HtmlSection(read_section, "section_arena.html.j2")))
