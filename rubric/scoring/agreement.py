"""Each rubric version's measured agreement with people's ratings of its own aspect: what a user reads beside the
column ("coherence (`coherence.minilm.v8`): rho 0.10 with people's coherence, SummEval dev").

The figures are measurements, kept as data (``rubric/data/agreement.json``), written by
``python scripts/measure_agreement.py`` from ``lfqa-rubric validate --human`` runs on the shared aspect sets (its
command and commit are recorded with them). A version without a row was not measured against people's ratings of
its aspect (no shared data rates that aspect, or the version was not run): it says so, never a number.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources

from rubric.errors import InputError

__all__ = ["AGREEMENT_DATA", "MeasuredAgreement", "measured_agreement", "agreement_line", "agreement_record"]

#: The data file (package data of ``rubric``).
AGREEMENT_DATA = "agreement.json"


@dataclass(frozen=True)
class MeasuredAgreement:
    """One version's agreement with people's ratings of its aspect on one data set.

    Attributes:
        version: the rubric version; aspect: the people's rating compared with (the rubric's own aspect).
        data: the data set, in words (what it is, how many sources and answers).
        statistic: how it was computed ("Spearman within each document, averaged over documents").
        value / ci: the statistic and its 95% CI over sources; n: rated answers it rests on.
        length: the same statistic for answer length on the same data (the baseline beside it).
    """

    version: str
    aspect: str
    data: str
    statistic: str
    value: float
    ci: tuple[float, float]
    n: int
    length: float = math.nan


@functools.cache
def _table() -> tuple[dict, tuple[MeasuredAgreement, ...]]:
    try:
        doc = json.loads((resources.files("rubric") / "data" / AGREEMENT_DATA).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, ()
    except ValueError as e:
        raise InputError(f"rubric/data/{AGREEMENT_DATA} is not JSON: {e}") from None
    rows = tuple(MeasuredAgreement(r["version"], r["aspect"], r["data"], r["statistic"], float(r["value"]),
                                   tuple(math.nan if c is None else float(c) for c in r["ci"]), int(r["n"]),
                                   float(r["length"]) if r.get("length") is not None else math.nan)
                 for r in doc.get("rows", []))
    return {k: v for k, v in doc.items() if k != "rows"}, rows


def agreement_record() -> dict:
    """How the figures were measured: the command, the commit, the data sets."""
    return dict(_table()[0])


def measured_agreement(version: str) -> tuple[MeasuredAgreement, ...]:
    """Every measured agreement of ``version`` with people's ratings of its aspect, first the primary data set."""
    return tuple(r for r in _table()[1] if r.version == version)


def agreement_line(version: str, rubric: str | None = None) -> str:
    """One line a user reads beside the column: "rho 0.10 [0.00, 0.18] with people's coherence (SummEval dev ...;
    length 0.01)", or that it was not measured."""
    got = measured_agreement(version)
    if not got:
        aspect = rubric or version.split(".")[0]
        return f"not measured against people's ratings of {aspect}"
    parts = []
    for r in got:
        lo, hi = r.ci
        ci = "" if math.isnan(lo) else f" [{lo:.2f}, {hi:.2f}]"
        base = "" if math.isnan(r.length) else f"; length {r.length:.2f}"
        parts.append(f"\u03c1 {r.value:.2f}{ci} with people's {r.aspect} ({r.data}{base})")
    return "; ".join(parts)
