"""The score output's section: per-rubric distributions, the rubric x rubric and rubric x length
correlations, counts, rejects with their reasons, and each rubric's provenance.

A score output has no Markdown report of its own; what this section shows is read from its files
(``answers.parquet``, ``pairs.parquet``, ``rejects.jsonl``, ``manifest.json``) as they are.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from rubric.errors import InputError
from rubric.io import read_manifest
from rubric.preference import read_output_table
from rubric.tables import table_rubrics
from rubric.html_report._charts import plot_correlations, plot_distributions
from rubric.tables import table_provenance

__all__ = ["ScoreSummary", "read_jsonl", "read_rejects", "spearman_matrix", "score_summary"]

#: The length column the "is it just length?" row and column use (whitespace tokens, as everywhere).
LENGTH = "n_words"


@dataclass(frozen=True)
class ScoreSummary:
    """What one score output holds.

    Attributes:
        folder: the output folder.
        rubrics: its rubric names, in the table's order.
        n_answers / n_pairs: table sizes.
        counts: the manifest's counts (rows in, pairs, rejected, splits, errors by rubric), flattened.
        errors: rubric -> answers whose score failed.
        rejects: the rejected rows (``rejects.jsonl``), each a dict with at least ``reason``.
        reasons: a reject reason's kind (the text after "row N: ") -> count.
        provenance: rubric -> its provenance record (version, backend, model, revision, template hash,
            rescaling).
        corr_names / corr: the Spearman matrix over the rubrics' 1-5 scores and answer length.
        distributions: the SVG histograms; correlations: the SVG heatmap.
    """

    folder: str
    rubrics: list[str]
    n_answers: int
    n_pairs: int
    counts: dict[str, object]
    errors: dict[str, int]
    rejects: list[dict]
    reasons: dict[str, int]
    provenance: dict[str, dict]
    corr_names: list[str]
    corr: np.ndarray
    distributions: str = ""
    correlations: str = ""
    answers: pa.Table | None = field(default=None, repr=False)


def read_jsonl(path: Path) -> list[dict]:
    """The records of a JSONL file an output folder holds; a bad line is one error naming it.

    Raises:
        InputError: a line is not JSON.
    """
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as e:
                raise InputError(f"{path}: line {i} is not JSON ({e})") from None
    return out


def read_rejects(folder: Path) -> list[dict]:
    """``OUT/rejects.jsonl`` (empty when absent)."""
    path = folder / "rejects.jsonl"
    return read_jsonl(path) if path.is_file() else []


def _ranks(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(x)


def spearman_matrix(columns: dict[str, list]) -> np.ndarray:
    """Pairwise Spearman ρ over the rows where both columns have a value (nan when undefined)."""
    names = list(columns)
    data = {n: np.asarray([np.nan if v is None else float(v) for v in columns[n]], dtype=float) for n in names}
    m = np.full((len(names), len(names)), np.nan)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            x, y = data[a], data[b]
            ok = ~(np.isnan(x) | np.isnan(y))
            if ok.sum() < 3:
                continue
            rx, ry = _ranks(x[ok]), _ranks(y[ok])
            if np.ptp(rx) == 0 or np.ptp(ry) == 0:
                continue
            m[i, j] = float(np.corrcoef(rx, ry)[0, 1])
    return m


def _reason_kind(reason: str) -> str:
    # "row 7: field 'answer_2' is empty" -> "field 'answer_2' is empty": rows differ, reasons repeat
    head, sep, rest = str(reason).partition(": ")
    return rest if sep and head.startswith("row ") else str(reason)


def _flat(counts: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in counts.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}: "))
        else:
            out[f"{prefix}{k}"] = v
    return out


def score_summary(folder: str | Path, *, charts: bool = True) -> ScoreSummary:
    """Summarise a score output folder (its pairs table must be there; the rest is optional).

    Raises:
        InputError: a table is missing, damaged or not written by lfqa-rubric.
    """
    folder = Path(folder)
    pairs = read_output_table(folder, "pairs")
    answers = read_output_table(folder, "answers") if (folder / "answers.parquet").is_file() else None
    rubrics = table_rubrics(pairs)
    manifest = read_manifest(folder)
    rejects = read_rejects(folder)
    reasons: dict[str, int] = {}
    for r in rejects:
        k = _reason_kind(r.get("reason", ""))
        reasons[k] = reasons.get(k, 0) + 1
    try:
        prov = table_provenance(pairs)
    except Exception:  # a table from before provenance: the section says so rather than failing
        prov = {}
    errors: dict[str, int] = {}
    values: dict[str, list] = {}
    if answers is not None:
        for r in rubrics:
            if r in answers.column_names:
                values[r] = answers.column(r).to_pylist()
            if f"{r}_error" in answers.column_names:
                errors[r] = sum(1 for e in answers.column(f"{r}_error").to_pylist() if e)
        if LENGTH in answers.column_names:
            values["length (words)"] = answers.column(LENGTH).to_pylist()
    counts = _flat(manifest.get("counts", {})) if manifest else {"pairs": pairs.num_rows}
    corr = spearman_matrix(values) if values else np.zeros((0, 0))
    dist = corr_svg = ""
    if charts and values:
        dist = plot_distributions({k: [math.nan if x is None else float(x) for x in v] for k, v in values.items()})
        corr_svg = plot_correlations(list(values), corr)
    return ScoreSummary(folder=str(folder), rubrics=rubrics, n_answers=answers.num_rows if answers is not None else 0,
                        n_pairs=pairs.num_rows, counts=counts, errors=errors, rejects=rejects, reasons=reasons,
                        provenance=prov, corr_names=list(values), corr=corr, distributions=dist,
                        correlations=corr_svg, answers=answers)
