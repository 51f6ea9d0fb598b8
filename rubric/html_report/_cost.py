"""The cost section: what each score or judge output cost and what failed, from its manifest's ``cost``
(``rubric.tables.cost_summary``: per rubric or judge, seconds and tokens per 1,000 rows as measured, the share
of the run, what was reused, what failed, and the roofline estimate, labelled as one).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rubric.io import read_manifest

__all__ = ["CostSection", "cost_section"]


@dataclass(frozen=True)
class CostSection:
    """One output folder's cost.

    Attributes:
        folder: the output folder.
        what: "rubric" or "judge".
        per_name: the manifest's ``cost.per_name``.
        how: how the seconds were shared.
        max_failed: the failure budget the run had.
        over_budget: the names over it (marked wherever they appear).
        retry: the manifest's ``job.retry_failed`` (None: not a retry).
    """

    folder: str
    what: str
    per_name: dict
    how: str
    max_failed: float | None
    over_budget: list[str]
    retry: dict | None = None


def cost_section(folder: str | Path, what: str) -> CostSection | None:
    """The folder's cost, or None when its manifest records none (a run from before issue 45)."""
    manifest = read_manifest(Path(folder))
    cost = manifest.get("cost") if manifest else None
    if not cost:
        return None
    return CostSection(folder=str(folder), what=what, per_name=dict(cost.get("per_name", {})), how=cost.get("how", ""),
                       max_failed=cost.get("max_failed"), over_budget=list(cost.get("over_budget", [])),
                       retry=(manifest.get("job") or {}).get("retry_failed"))
