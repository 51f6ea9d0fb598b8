"""The neighbouring protocols' section: LINKAGE's per-question correlations, RAG-QA Arena's win rates
and ratings, LFQA-E's three-way accuracy by pair type.

The numbers come from the functions the protocol jobs' own ``report.md`` is built with
(:func:`rubric.protocols.report.linkage_results`; :func:`rubric.protocols.arena.win_rates`,
:func:`rubric.protocols.report.arena_ratings` and :func:`rubric.protocols.arena.human_agreement`, which
:func:`rubric.protocols.report.arena_tables` renders; :func:`rubric.protocols.lfqa_e.breakdown_by_pair_type`, as
:func:`rubric.protocols.report.lfqa_e_tables`), on the rows the job wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rubric.analysis import read_linkage_rows
from rubric.protocols import (
    HumanAgreement, RatingInterval, WinRate, battles_against, human_agreement, win_rates,
)
from rubric.errors import InputError
from rubric.html_report._charts import plot_linkage, plot_win_rates
from rubric.judging import pair_decisions, read_judgments
from rubric.protocols import PairTypeBreakdown, breakdown_by_pair_type
from rubric.protocols import LinkageCorrelations
from rubric.html_report._score import read_jsonl
from rubric.protocols import ARENA_PAIRS_FILE, arena_ratings, linkage_results
from rubric.io import question_id

__all__ = ["LinkageSection", "ArenaSection", "LfqaESection", "linkage_section", "arena_section", "lfqa_e_section",
           "ARENA_PAIRS_FILE"]

_HUMAN = {-1: "a", 0: "tie", 1: "b"}


@dataclass(frozen=True)
class LinkageSection:
    """A LINKAGE output: every system's mean per-question correlations, and their chart."""

    folder: str
    n_questions: int
    n_answers: int
    results: list[LinkageCorrelations]
    chart: str


def linkage_section(folder: str | Path, *, n_boot: int = 1000, seed: int = 0) -> LinkageSection:
    """Read ``OUT/linkage.parquet`` and compute what its report.md shows (same function, same seed)."""
    rows = read_linkage_rows(folder)
    results = linkage_results(rows, n_boot=n_boot, seed=seed)
    return LinkageSection(folder=str(folder), n_questions=len({r["question_id"] for r in rows}),
                          n_answers=len({r["answer_id"] for r in rows}), results=results,
                          chart=plot_linkage(results) if results else "")


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


def _debiased(folder: Path) -> tuple[str, dict[str, str | None]]:
    """The protocol judge's name and its order-debiased decision per pair (``judgments.parquet``)."""
    return pair_decisions(read_judgments(folder))


def arena_section(folder: str | Path, *, n_boot: int = 1000, seed: int = 0) -> ArenaSection:
    """Join ``arena_pairs.jsonl`` with the judge's order-debiased decisions, as the arena job's report does.

    Raises:
        InputError: the pairs file is missing or not JSONL.
    """
    folder = Path(folder)
    path = folder / ARENA_PAIRS_FILE
    if not path.is_file():
        raise InputError(f"{path} not found: not a RAG-QA Arena output (lfqa-rubric judge --protocol arena)")
    pairs = read_jsonl(path)
    judge, dec = _debiased(folder)
    pairs = [p for p in pairs if p["pair_id"] in dec]
    systems = [p["answer_a_type"] for p in pairs]
    outcomes = [dec[p["pair_id"]] for p in pairs]
    qids = [question_id(p["question"]) for p in pairs]
    humans = [_HUMAN.get(p.get("overall_preference")) for p in pairs]
    wr = win_rates(systems, outcomes, qids, n_boot=n_boot, seed=seed)
    battles = battles_against(systems, outcomes, qids)
    ratings, notes = arena_ratings(battles, n_boot=n_boot, seed=seed) if battles else ({}, [])
    agreement = human_agreement(outcomes, humans) if any(h is not None for h in humans) else None
    return ArenaSection(folder=str(folder), judge=judge, n_pairs=len(pairs), win_rates=wr, ratings=ratings,
                        notes=notes, agreement=agreement, chart=plot_win_rates(wr) if wr else "")


@dataclass(frozen=True)
class LfqaESection:
    """An LFQA-E output: the judge's three-way accuracy and macro-F1, overall and by pair type."""

    folder: str
    judge: str
    breakdown: PairTypeBreakdown
    note: str = ""


def lfqa_e_section(folder: str | Path, *, n_boot: int = 1000, seed: int = 0) -> LfqaESection:
    """The judge's row of LFQA-E's report: its pairs re-read from the inputs its manifest names (as the job
    reads them), joined with the order-debiased decisions in ``judgments.parquet``.

    Raises:
        InputError: an input is gone or is a URI (the page reads local files only).
    """
    from rubric.io import read_manifest
    from rubric.io import read_input
    from rubric.tables import JobInput, combine_inputs

    folder = Path(folder)
    judge, dec = _debiased(folder)
    reads = []
    for inp in read_manifest(folder).get("inputs", []):
        path = str(inp.get("path", ""))
        if "://" in path or not Path(path).exists():
            raise InputError(f"{path} (an input of {folder}) is not a local file here: LFQA-E's pairs and labels are "
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
