"""The agreement check's tables and page: ``report.md`` (G-Eval's Table 1 layout: a row per scorer, a column per
aspect; then each rubric against its own aspect beside length and its other aspects; pooled, system-level and
pairwise tables), the Parquet tables it publishes, and the same table read back from an output folder (the HTML
report's section)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path

from rubric.errors import InputError
from rubric.validity._agreement import LENGTH_SCORER, STATISTICS, AgreementRow, AgreementTable

__all__ = ["AGREEMENT_FILE", "AGREEMENT_ANSWERS_FILE", "HUMAN_KIND", "agreement_rows_table", "agreement_page",
           "agreement_markdown", "own_aspect_rows", "read_agreement", "OwnAspect", "registry_rows"]

#: The files a ``validate --human`` run publishes (besides ``report.md`` and its manifest).
AGREEMENT_FILE = "agreement.parquet"
AGREEMENT_ANSWERS_FILE = "agreement_answers.parquet"
#: The manifest's ``kind`` of a ``validate --human`` run.
HUMAN_KIND = "validate-human"

_SYMBOL = {"spearman": "\u03c1", "kendall": "\u03c4", "agreement": "agreement"}
_LEVEL_WORDS = {
    "source": "within each source (document or question) across its answers, averaged over sources (SummEval's and "
              "G-Eval's summary level)",
    "pooled": "over all rated answers at once",
    "system": "each system's mean score against its mean rating, across systems",
    "pairs": "pairs people judged on the aspect: the share where the scorer's higher answer is the one they preferred "
             "(ties of either left out)",
}


def _v(x: float, fmt: str = ".2f") -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def _ci(ci) -> str:
    lo, hi = ci
    return "" if lo is None or math.isnan(lo) else f" [{lo:.2f}, {hi:.2f}]"


def _name(table: AgreementTable, scorer: str) -> str:
    rubric = table.rubric_of.get(scorer)
    return f"{scorer}" if rubric is None else f"{rubric} (`{scorer}`)"


def agreement_markdown(table: AgreementTable, level: str = "source") -> str:
    """A row per scorer, a column per aspect and statistic at ``level``; each rubric's own aspect in bold, CIs on
    rho (what ``validate --human`` prints)."""
    stats = STATISTICS[level]
    aspects = [a for a in table.aspects if any(r.aspect == a and r.level == level for r in table.rows)]
    if not aspects:
        return ""
    head = "| scorer | " + " | ".join(f"{a} {_SYMBOL[s]}" for a in aspects for s in stats) + " | n |"
    lines = [head, "|---|" + "---:|" * (len(aspects) * len(stats) + 1)]
    for scorer in table.scorers:
        cells, n = [], 0
        for a in aspects:
            for s in stats:
                r = table.get(scorer, a, level, s)
                if r is None:
                    cells.append("n/a")
                    continue
                n = max(n, r.n)
                text = _v(r.value) + (_ci(r.ci) if s in ("spearman", "agreement") else "")
                cells.append(f"**{text}**" if r.own else text)
        lines.append(f"| {_name(table, scorer)} | " + " | ".join(cells) + f" | {n} |")
    return "\n".join(lines) + "\n"


class OwnAspect:
    """One rubric against the aspect it is named for, beside length and its other aspects (source level, rho)."""

    def __init__(self, row: AgreementRow, length: AgreementRow | None, best_other: AgreementRow | None) -> None:
        self.row, self.length, self.best_other = row, length, best_other

    @property
    def reading(self) -> str:
        r, lo = self.row, self.row.vs_length_ci[0]
        if math.isnan(r.value):
            return "nothing to compare"
        parts = []
        if not math.isnan(lo) and lo > 0:
            parts.append("tracks its aspect beyond length")
        elif not math.isnan(r.vs_length) and r.vs_length_ci[1] < 0:
            parts.append("below length")
        else:
            parts.append("not distinguishable from length")
        if self.best_other is not None and self.best_other.value > r.value:
            parts.append(f"follows {self.best_other.aspect} more than {r.aspect}")
        return "; ".join(parts)


def own_aspect_rows(table: AgreementTable, level: str = "source") -> list[OwnAspect]:
    """Each rubric whose name is one of the aspects, against that aspect (``level``, Spearman)."""
    out = []
    for r in table.rows:
        if not (r.own and r.level == level and r.statistic == "spearman"):
            continue
        length = table.get(LENGTH_SCORER, r.aspect, level, "spearman")
        others = [o for o in table.rows if o.scorer == r.scorer and o.level == level and o.statistic == "spearman"
                  and o.aspect != r.aspect and not math.isnan(o.value)]
        out.append(OwnAspect(r, length, max(others, key=lambda o: o.value) if others else None))
    return out


def _own_markdown(table: AgreementTable) -> str:
    rows = own_aspect_rows(table)
    if not rows:
        return ""
    lines = ["| rubric version | its aspect | \u03c1 [95% CI] | length's \u03c1 | \u03c1 \u2212 length's [95% CI] | "
             "its best other aspect | reading |", "|---|---|---:|---:|---:|---|---|"]
    for o in rows:
        r = o.row
        other = "n/a" if o.best_other is None else f"{o.best_other.aspect} ({_v(o.best_other.value)})"
        lines.append(f"| `{r.scorer}` | {r.aspect} | {_v(r.value)}{_ci(r.ci)} | "
                     f"{_v(o.length.value if o.length else math.nan)} | {_v(r.vs_length, '+.2f')}{_ci(r.vs_length_ci)} | "
                     f"{other} | {o.reading} |")
    return "\n".join(lines) + "\n"


def agreement_page(table: AgreementTable, *, inputs: Sequence[str], counts: Mapping[str, object],
                   columns: Mapping[str, str] | None = None) -> str:
    """``report.md``: the settings, the summary-level table, each rubric against its aspect, then the other levels."""
    named = ", ".join(f"{a} (column `{c}`)" if c != a else a for a, c in (columns or {a: a for a in table.aspects}).items())
    parts = ["# Agreement with people's ratings, aspect by aspect\n",
             f"Inputs: {', '.join(f'`{i}`' for i in inputs)}. Aspects: {named}. "
             + ", ".join(f"{k}: {v}" for k, v in counts.items()) + ". "
             f"95% CIs: percentile bootstrap over sources ({table.n_boot} replicates, seed {table.seed}), the same "
             "replicates for every scorer. Length (whitespace words) is a scorer of its own, beside every rubric. "
             "As in G-Eval's meta-evaluation, a source where the ratings or the scorer's values are all equal is left "
             "out of that scorer's summary-level row (a correlation is undefined there; the row's n counts the "
             "answers of the sources it rests on). Nothing is fitted.\n"]
    for level, title in (("source", "Summary level"), ("pooled", "Pooled"), ("system", "System level"),
                         ("pairs", "Pairwise aspect judgements")):
        md = agreement_markdown(table, level)
        if not md:
            continue
        parts.append(f"## {title}: {_LEVEL_WORDS[level]}\n")
        parts.append(md)
        if level == "source":
            own = _own_markdown(table)
            if own:
                parts.append("\n### Each rubric against the aspect it is named for\n")
                parts.append("A rubric that means its name agrees with people's ratings of its aspect more than length "
                             "does, and more than it agrees with the other aspects. \u03c1 \u2212 length's is paired "
                             "over the same sources.\n")
                parts.append(own)
    missing = sorted({(r.scorer, r.n_missing) for r in table.rows if r.n_missing and r.level in ("source", "pairs")})
    if missing:
        parts.append("\nRated answers without a score, left out of that scorer's rows (failed or abstained; the "
                     "reasons are in agreement_answers.parquet): "
                     + "; ".join(f"`{s}` {n}" for s, n in dict(missing).items()) + ".\n")
    return "\n".join(parts).rstrip() + "\n"


def registry_rows(table: AgreementTable, data: str) -> list[dict]:
    """The rows ``rubric/data/agreement.json`` keeps of a run (``rubric.scoring.measured_agreement``): each rubric
    version against the aspect of its own name, summary level, Spearman, with length's on the same data beside it."""
    out = []
    for o in own_aspect_rows(table):
        r = o.row
        if math.isnan(r.value):
            continue
        out.append({"version": r.scorer, "aspect": r.aspect, "data": data,
                    "statistic": "Spearman within each source, averaged over sources", "value": round(r.value, 4),
                    "ci": [round(r.ci[0], 4), round(r.ci[1], 4)] if not math.isnan(r.ci[0]) else [None, None],
                    "n": r.n, "length": None if o.length is None or math.isnan(o.length.value)
                    else round(o.length.value, 4)})
    return out


_FIELDS = [f.name for f in fields(AgreementRow)]


def agreement_rows_table(table: AgreementTable):
    """One row per scorer, aspect, level and statistic (a pyarrow table)."""
    import pyarrow as pa

    def clean(x):
        return None if isinstance(x, float) and math.isnan(x) else x

    recs = []
    for r in table.rows:
        d = asdict(r)
        d["ci_low"], d["ci_high"] = (clean(x) for x in d.pop("ci"))
        d["vs_length_ci_low"], d["vs_length_ci_high"] = (clean(x) for x in d.pop("vs_length_ci"))
        d["value"], d["vs_length"] = clean(d["value"]), clean(d["vs_length"])
        recs.append(d)
    schema = pa.schema([("scorer", pa.string()), ("rubric", pa.string()), ("aspect", pa.string()),
                        ("level", pa.string()), ("statistic", pa.string()), ("value", pa.float64()),
                        ("n", pa.int64()), ("n_groups", pa.int64()), ("own", pa.bool_()),
                        ("vs_length", pa.float64()), ("n_missing", pa.int64()), ("ci_low", pa.float64()),
                        ("ci_high", pa.float64()), ("vs_length_ci_low", pa.float64()),
                        ("vs_length_ci_high", pa.float64())])
    return pa.Table.from_pylist(recs, schema=schema)


def _rows_from(table) -> list[AgreementRow]:
    out = []
    for d in table.to_pylist():
        nan = math.nan

        def f(x):
            return nan if x is None else x

        out.append(AgreementRow(scorer=d["scorer"], rubric=d["rubric"], aspect=d["aspect"], level=d["level"],
                                statistic=d["statistic"], value=f(d["value"]), ci=(f(d["ci_low"]), f(d["ci_high"])),
                                n=d["n"], n_groups=d["n_groups"], own=d["own"], vs_length=f(d["vs_length"]),
                                vs_length_ci=(f(d["vs_length_ci_low"]), f(d["vs_length_ci_high"])),
                                n_missing=d["n_missing"]))
    return out


def read_agreement(folder: str | Path, *, n_boot: int | None = None, seed: int | None = None) -> dict:
    """A ``validate --human`` output folder's table as its run computed it (its CIs are the run's own: ``n_boot``
    and ``seed`` are accepted for the HTML report's call and not used).

    Raises:
        InputError: the folder is not one ``validate --human`` run's complete set, or its table is damaged.
    """
    from rubric.io import check_published, read_parquet

    folder = Path(folder)
    manifest = check_published(folder)
    if manifest.get("kind") != HUMAN_KIND:
        raise InputError(f"{folder} is not a validate --human output")
    h = manifest["agreement"]
    rows = _rows_from(read_parquet(folder / AGREEMENT_FILE))
    table = AgreementTable(rows, list(h["scorers"]), list(h["aspects"]), int(h["n_boot"]), int(h["seed"]),
                           dict(h["rubric_of"]))
    return {"folder": str(folder), "table": table, "own": own_aspect_rows(table), "columns": h.get("columns", {}),
            "counts": manifest.get("counts", {}), "levels": _LEVEL_WORDS,
            "markdown": {level: agreement_markdown(table, level) for level in _LEVEL_WORDS}}
