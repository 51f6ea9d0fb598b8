"""LINKAGE's table, ``linkage.parquet``: one row per answer x system, its declared columns, the join of
another output's rubric scores onto the same answers, and the metrics its manifest records.

Pure: the LINKAGE job (``workers.protocols.linkage``) scores the questions and hands the scores here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from rubric.protocols.linkage_metric import LinkageCorrelations
from rubric.scoring import Provenance, Score

__all__ = ["LINKAGE_TABLE_COLUMNS", "RUBRIC_SCORE_PREFIX", "linkage_rows", "linkage_rows_table",
           "join_rubric_scores", "linkage_metrics"]

#: ``linkage.parquet``'s columns, in order, with their types: the answer, its system's score, the
#: system's provenance and the input it came from.
LINKAGE_TABLE_COLUMNS: dict[str, pa.DataType] = {
    "question_id": pa.string(), "answer_id": pa.string(), "answer_key": pa.string(), "label": pa.int64(),
    "answer_system": pa.string(), "n_references": pa.int64(), "system": pa.string(), "score": pa.float64(),
    "rank": pa.float64(), "mass": pa.float64(), "error": pa.string(), "version": pa.string(),
    "template_hash": pa.string(), "model": pa.string(), "model_revision": pa.string(), "backend": pa.string(),
    "source": pa.string(),
}

#: A rubric score joined from a score output is the system ``rubric:<rubric>``.
RUBRIC_SCORE_PREFIX = "rubric:"


def linkage_rows(questions: Sequence[Any], scores: Mapping[str, Mapping[str, Score]],
                 provenance: Mapping[str, Provenance], systems: Sequence[str], *, source: str) -> list[dict[str, Any]]:
    """One row per answer x system, in question and candidate order (:data:`LINKAGE_TABLE_COLUMNS`).

    Args:
        questions: ``LinkageQuestion``s; scores: answer id -> system -> score (a missing one is a row error);
        provenance: system -> its provenance; systems: the systems, in column order; source: the input.
    """
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


def linkage_rows_table(rows: list[dict[str, Any]]) -> pa.Table:
    """:func:`linkage_rows` as the ``linkage.parquet`` table (:data:`LINKAGE_TABLE_COLUMNS`)."""
    return pa.Table.from_pylist(rows, schema=pa.schema(list(LINKAGE_TABLE_COLUMNS.items())))


def join_rubric_scores(answers: pa.Table, answer_ids: set[str], *, source: str
                       ) -> tuple[dict[str, dict[str, Score]], dict[str, Provenance]]:
    """Each rubric's 1-5 score of the given answers, from a score output's ``answers`` table.

    Args:
        answers: the score output's ``answers.parquet`` (its rubrics are in its schema metadata).
        answer_ids: the answers to take (others are left out).
        source: the score output, recorded as each joined system's provenance.

    Returns:
        answer id -> ``rubric:<rubric>`` -> its score (a null value is a failed score with the row's error),
        and each ``rubric:<rubric>``'s provenance, in the table's rubric order.
    """
    from rubric.tables import table_rubrics

    rubrics = table_rubrics(answers)
    cols = answers.to_pydict()
    out: dict[str, dict[str, Score]] = {}
    for i, aid in enumerate(cols["answer_id"]):
        if aid not in answer_ids:
            continue
        row = {}
        for r in rubrics:
            v, err = cols.get(r, [None] * (i + 1))[i], cols.get(f"{r}_error", [None] * (i + 1))[i]
            row[RUBRIC_SCORE_PREFIX + r] = Score.ok(v) if v is not None else Score.failed(err or "no value")
        out[aid] = row
    names = [RUBRIC_SCORE_PREFIX + r for r in rubrics]
    return out, {n: Provenance(n, "score output", source, "", "") for n in names}


def linkage_metrics(results: Sequence[LinkageCorrelations]) -> dict[str, dict[str, Any]]:
    """The manifest's ``metrics``: each system's mean per-question correlations and how many were defined."""
    return {r.system: {"kendall": r.kendall.value, "spearman": r.spearman.value, "pearson": r.pearson.value,
                       "n_defined": r.kendall.n, "n_undefined": r.n_undefined} for r in results}
