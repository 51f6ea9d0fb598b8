"""LFQA-E (``judge --protocol lfqa-e``): the reference-based three-way judge (a / b / tie) on every pair, in
both orders; accuracy and macro-F1 overall and by pair type, beside a rubric model when one is given.

The job is the judge job (:class:`LfqaEKind`, a ``workers.jobs.judge.JudgeKind``) over pairs that carry a
reference answer (graded WebGLM lists give their best ``groundK``; lfqa_eval/table inputs a
``reference`` field): the same store, resume rules, tables, manifest and Ray step; its page is the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rubric.config import ScoringConfig
from rubric.errors import ConfigError, InputError
from rubric.html_report import HtmlSection
from rubric.protocols import PairTypeBreakdown
from workers.jobs import JudgeKind, ProtocolPage, protocol_settings
from workers.protocols import ProtocolOptions, ProtocolRun, ProtocolSpec, option, register_protocol
from workers.runner import prebuilt, run as run_job

__all__ = ["LfqaEOptions", "LfqaEKind", "LfqaESection", "run_lfqa_e_job", "JUDGE_VERSION"]

NAME = "lfqa-e"
#: The protocol's judge.
JUDGE_VERSION = "lfqa_e.reference_tie.v1"


@dataclass(frozen=True)
class LfqaEOptions(ProtocolOptions):
    max_questions: int | None = option(low=1, help="graded lists: only the first N questions")
    rubric_scores: str | None = option(metavar="SCORE_OUT", help=(
        "add the rubric model (a score output over the same input, predicting a / b / tie)"))
    rubric_model: str | None = option(help="the rubric model's JSON (default SCORE_OUT/model.json)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rubric_model is not None and self.rubric_scores is None:
            raise ConfigError("--rubric-model applies with --rubric-scores")


@dataclass
class LfqaEContext:
    """What the LFQA-E page needs on the driver."""

    fmt: str
    rubric_scores: str | Path | None
    rubric_model: str | Path | None
    n_boot: int
    seed: int
    command: str


class LfqaEKind(JudgeKind):
    """The judge job with LFQA-E's judge and page (``context`` on the driver only)."""

    protocol = NAME

    def __init__(self, *args, context: LfqaEContext | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.context = context

    def page(self, *, pairs, table, fields, shards) -> ProtocolPage:
        from rubric.judging import pair_decisions
        from rubric.protocols import lfqa_e_page, lfqa_e_tables

        c, version = self.context, self.names[0]
        _, dec = pair_decisions(table, version)  # every pair of the job is in the table
        decisions: dict[str, list[str | None]] = {version: [dec[p.pair_id] for p in pairs]}
        notes = {version: f"{fields['settings']['mode']} mode, both orders, order-debiased"}
        if c.rubric_scores is not None:
            from rubric.preference import PreferenceModel, predict_pairs, read_pairs

            model_path = Path(c.rubric_model) if c.rubric_model else Path(c.rubric_scores) / "model.json"
            model = PreferenceModel.from_json(model_path)
            t = predict_pairs(model, read_pairs(c.rubric_scores), split=None).to_pydict()
            pred = dict(zip(t["pair_id"], t["predicted"]))
            split = dict(zip(t["pair_id"], t["split"])) if "split" in t else {}
            name = f"rubric model ({model.ties})"
            decisions[name] = [pred.get(p.pair_id) for p in pairs]
            n_train = sum(1 for p in pairs if split.get(p.pair_id) == "train")
            notes[name] = (f"{model_path}; {n_train} of {len(pairs)} pairs are in its train split (in-sample)"
                           + ("; binary model: never predicts tie" if model.ties != "three_way" else ""))
        tables = lfqa_e_tables(pairs, decisions, n_boot=c.n_boot, seed=c.seed, notes=notes)
        report = lfqa_e_page(version=version, model=next(iter(fields["judges"].values()))["model_id"],
                             inputs=list(shards), fmt=c.fmt, n_pairs=len(pairs), command=c.command, tables=tables)
        return ProtocolPage(report)


def run_lfqa_e_job(inputs: str | Path | Sequence[str | Path], fmt: str, out: str | Path, *, config: ScoringConfig,
                   judge_kwargs: Mapping[str, Any] | None = None, reader_options: Mapping[str, Any] | None = None,
                   rubric_scores: str | Path | None = None, rubric_model: str | Path | None = None,
                   n_boot: int = 1000, seed: int = 0, progress: bool = True, scorer=None, ray=None,
                   scorer_factory=None, command: str = "", force: bool = False) -> dict:
    """LFQA-E: the reference-based three-way judge on every pair, both orders; accuracy / macro-F1 report.

    Args:
        inputs, fmt, reader_options: as the judge job's (pairs need a ``reference``).
        rubric_scores: a score output over the same input (pairs.parquet): the rubric model is put in the
            same table, predicting a / b / tie (``fit --ties three_way``; a binary model never says tie).
        rubric_model: its model JSON (default ``RUBRIC_SCORES/model.json``).
        Others: as ``workers.protocols.arena.run_arena_job``.
    """
    if scorer is not None:
        scorer_factory = prebuilt(scorer)
    context = LfqaEContext(fmt, rubric_scores, rubric_model, n_boot, seed, command)
    kind = LfqaEKind(fmt, dict(reader_options or {}), protocol_settings(JUDGE_VERSION, judge_kwargs), config, seed,
                     scorer_factory, context=context)
    return run_job(kind, inputs, out, progress=progress, step=ray, check=scorer_factory is None, force=force)


def run(r: ProtocolRun, o: LfqaEOptions) -> dict:
    if r.fmt is None:
        raise ConfigError("--protocol lfqa-e needs --format (pairs with a reference answer, e.g. graded WebGLM "
                          "lists or lfqa-eval with a 'reference' field)")
    reader = dict(r.reader_options)
    if o.max_questions is not None:  # only when given: an uncapped run's key is unchanged
        if r.fmt != "graded":
            raise ConfigError(f"--max-questions reads a slice of graded lists (--format graded), not {r.fmt!r}")
        reader["max_questions"] = o.max_questions
    return run_lfqa_e_job(r.inputs, r.fmt, r.out, config=r.config, judge_kwargs=r.judge, reader_options=reader,
                          rubric_scores=o.rubric_scores, rubric_model=o.rubric_model, n_boot=r.n_boot, seed=r.seed,
                          progress=r.progress, command=r.command, ray=r.ray, force=r.force)


@dataclass(frozen=True)
class LfqaESection:
    """An LFQA-E output: the judge's three-way accuracy and macro-F1, overall and by pair type."""

    folder: str
    judge: str
    breakdown: PairTypeBreakdown
    note: str = ""


def read_section(folder: str | Path, *, n_boot: int = 1000, seed: int = 0) -> LfqaESection:
    """The judge's row of the report: its pairs re-read from the inputs its manifest names (as the job
    reads them), joined with the order-debiased decisions in ``judgments.parquet``.

    Raises:
        InputError: an input is gone or is a URI (the page reads local files only).
    """
    from rubric.io import read_input, read_manifest
    from rubric.judging import pair_decisions, read_judgments
    from rubric.protocols import breakdown_by_pair_type
    from rubric.tables import JobInput, combine_inputs

    folder = Path(folder)
    judge, dec = pair_decisions(read_judgments(folder))
    reads = []
    for inp in read_manifest(folder).get("inputs", []):
        path = str(inp.get("path", ""))
        if "://" in path or not Path(path).exists():
            raise InputError(f"{path} (an input of {folder}) is not a local file here: the pairs and labels are "
                             "read from the job's inputs")
        reads.append(JobInput(name=str(inp.get("name", path)), fmt=inp["format"],
                              read=read_input(path, inp["format"], **dict(inp.get("options") or {}))))
    pairs = [p for p in combine_inputs(reads)[0] if p.pair_id in dec]  # as the job: a repeated id was a reject
    report = folder / "report.md"
    note = ("the rubric model's row (judge --rubric-scores) is in report.md only"
            if report.is_file() and "| rubric model (" in report.read_text(encoding="utf-8") else "")
    return LfqaESection(folder=str(folder), judge=judge, note=note,
                        breakdown=breakdown_by_pair_type(pairs, [dec[p.pair_id] for p in pairs], system=judge,
                                                         n_boot=n_boot, seed=seed))


register_protocol(ProtocolSpec(
    name=NAME, help="LFQA-E reference-based three-way judging (pairs with a reference; --format)",
    options=LfqaEOptions, run=run, section=HtmlSection(read_section, "section_lfqa_e.html.j2")))
