"""LINKAGE runs beside the pairwise systems: per-question correlation with the graded labels.

A LINKAGE output (``OUT/linkage.parquet``, one row per answer x system: the listwise judge, the
pointwise and pairwise baselines, ROUGE / MiniLM / length and any rubric score) is not over pairs, so
it gets its own table in the ``analyze`` report, computed by the same code as the LINKAGE job's
report (:func:`rubric.protocols.report.linkage_results`): the mean per-question Kendall's tau-b,
Spearman's rho and Pearson's r with question-bootstrap CIs, and how many questions were undefined.

Two scopes: every question of the LINKAGE run, and the questions of the split ``analyze`` reads
(the same question ids as the pairs of Table 4), so the rows can be read against the pairwise
systems on the same questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rubric.errors import InputError
from rubric.protocols import LinkageCorrelations
from rubric.protocols import linkage_results

__all__ = ["LINKAGE_FILE", "LINKAGE_COLUMNS", "LinkageScope", "LinkageRun", "read_linkage_rows", "linkage_run"]

#: A LINKAGE run's per-answer table inside its output folder.
LINKAGE_FILE = "linkage.parquet"
#: The columns the table needs.
LINKAGE_COLUMNS: tuple[str, ...] = ("question_id", "answer_id", "label", "system", "score")


@dataclass(frozen=True)
class LinkageScope:
    """LINKAGE's metric for every system on one set of questions.

    Attributes:
        name: what the questions are ("all questions of the run", "questions of the test split").
        n_questions: questions in scope.
        n_answers: distinct answers in scope.
        results: one per system, in the table's order.
    """

    name: str
    n_questions: int
    n_answers: int
    results: list[LinkageCorrelations]


@dataclass(frozen=True)
class LinkageRun:
    """One LINKAGE output read by ``analyze``.

    Attributes:
        source: the file read.
        scopes: all of its questions, then (when any overlap) those of the analysed split.
    """

    source: str
    scopes: list[LinkageScope]


def read_linkage_rows(path: str | Path) -> list[dict]:
    """The rows of a LINKAGE output's ``linkage.parquet`` (a folder or the file).

    Raises:
        InputError: the file is missing, unreadable or lacks a column; or a folder given is not one
            run's complete set (``rubric.io.check_published``).
    """
    from rubric.io import check_published, read_parquet

    path = file = Path(path)
    if path.is_dir():
        check_published(path)
        file = path / LINKAGE_FILE
    table = read_parquet(file, message=f"cannot read {file} (missing, damaged or not Parquet)")
    missing = [c for c in LINKAGE_COLUMNS if c not in table.column_names]
    if missing:
        raise InputError(f"{file} is not a LINKAGE table: no column(s) {missing}")
    return table.select(list(LINKAGE_COLUMNS)).to_pylist()


def _scope(name: str, rows: Sequence[dict], n_boot: int, seed: int) -> LinkageScope:
    return LinkageScope(name=name, n_questions=len({r["question_id"] for r in rows}),
                        n_answers=len({r["answer_id"] for r in rows}),
                        results=linkage_results(rows, n_boot=n_boot, seed=seed))


def linkage_run(rows: Sequence[dict], *, source: str, split: str, split_questions: set[str], n_boot: int = 1000,
                seed: int = 0) -> LinkageRun:
    """LINKAGE's metric on all the run's questions and on those of the analysed split.

    Args:
        rows: :func:`read_linkage_rows`.
        source: where they were read from.
        split: the analysed split's name.
        split_questions: its question ids.
        n_boot: bootstrap replicates.
        seed: their seed.

    Raises:
        InputError: the table has no rows.
    """
    if not rows:
        raise InputError(f"{source} has no LINKAGE rows")
    scopes = [_scope("all questions of the run", rows, n_boot, seed)]
    inside = [r for r in rows if r["question_id"] in split_questions]
    if inside and len(inside) < len(rows):
        scopes.append(_scope(f"questions of the {split} split (those of the pairs above)", inside, n_boot, seed))
    return LinkageRun(source=source, scopes=scopes)
