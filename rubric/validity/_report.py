"""The check's tables and page: the Markdown table the command prints, ``report.md`` (the table, the families
and a few failing examples), the Parquet tables it publishes, and the same table read back from an output
folder (the HTML report's section)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from rubric.errors import InputError
from rubric.validity._families import FAMILIES
from rubric.validity._stats import Outcome, ValidityRow, ValidityTable, failing_examples

__all__ = ["OUTCOMES_FILE", "SUMMARY_FILE", "REPORT_FILE", "VALIDATE_KIND", "table_markdown", "validity_page",
           "outcomes_table", "summary_table", "read_validity", "EXPECT_WORDS", "UNINFORMATIVE"]

#: The files a validate run publishes (besides its manifest).
OUTCOMES_FILE = "validity_pairs.parquet"
SUMMARY_FILE = "validity.parquet"
REPORT_FILE = "report.md"
#: The manifest's ``kind`` of a validate run.
VALIDATE_KIND = "validate"

#: What a row says when the rubric passes no more pairs than a constant scorer or length: the pass says nothing.
UNINFORMATIVE = "uninformative"

#: How each expectation reads in a table.
EXPECT_WORDS = {"lower": "lower", "not_higher": "not higher", "same": "same (invariance)"}


def _rate(r: ValidityRow) -> str:
    if math.isnan(r.pass_rate):
        return "n/a"
    lo, hi = r.ci
    ci = "" if math.isnan(lo) else f" [{lo:.2f}, {hi:.2f}]"
    return f"{r.pass_rate:.3f}{ci}"


def _plain(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def table_markdown(table: ValidityTable) -> str:
    """The table per rubric version and family, as Markdown (what the command prints), each row beside the pass
    rates of a constant scorer and of length on the same pairs, marked when the rubric does not beat them."""
    lines = ["| rubric version | family | expects | n | pass rate [95% CI] | constant | length | ties | fails | missing "
             "| |", "|---|---|---|---:|---|---:|---:|---:|---:|---:|---|"]
    for r in table.rows:
        mark = "" if r.informative or math.isnan(r.pass_rate) else UNINFORMATIVE
        lines.append(f"| {r.version} | {r.family} | {EXPECT_WORDS[r.expectation]} | {r.n} | {_rate(r)} | "
                     f"{_plain(r.constant_rate)} | {_plain(r.length_rate)} | {r.ties} | {r.fails} | {r.missing} | "
                     f"{mark} |")
    out = "\n".join(lines) + "\n"
    if table.unchecked:
        out += f"\nNo selected family checks {', '.join(table.unchecked)}.\n"
    return out


def _cell(text: str, limit: int = 240) -> str:
    one = " ".join(text.split())
    one = one if len(one) <= limit else one[:limit - 1] + "\u2026"
    return one.replace("|", "\\|")


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def validity_page(table: ValidityTable, *, inputs: Sequence[str], seed: int, families: Sequence[str],
                  n_boot: int) -> str:
    """``report.md``: the settings, the table, what each family does and a few failing examples."""
    parts = ["# Rubric validity: minimal pairs\n",
             f"Inputs: {', '.join(f'`{i}`' for i in inputs)}. Seed {seed}; families: {', '.join(families)}. "
             f"A pair passes when the perturbed copy's raw score moves the expected way by more than "
             f"{table.tolerance:g} (a tie passes *not higher* and *same*, and fails *lower*); pass rates are over "
             f"the pairs scored on both sides, with 95% CIs from {n_boot} bootstrap replicates over questions. "
             "Beside each row, the pass rate on the same pairs of a constant scorer (every pair a tie: it passes every "
             "*not higher* and *same* row) and of the answer's length in words; a row whose rubric does not beat both "
             f"is marked *{UNINFORMATIVE}*: its pass says nothing about the rubric. Nothing is fitted.\n",
             table_markdown(table),
             "\n## Families\n",
             "| family | what changes | expectations |", "|---|---|---|"]
    for f in families:
        fam = FAMILIES.get(f)
        exp = ", ".join(f"{r}: {EXPECT_WORDS[e]}" for r, e in fam.expect.items())
        parts.append(f"| {f} | {fam.description} | {exp} |")
    failing = [r for r in table.rows if r.examples]
    if failing:
        parts.append("\n## Failing examples\n")
        for r in failing:
            ties = f", {r.ties} tie" if r.expectation == "lower" and r.ties else ""
            parts.append(f"### {r.version} under {r.family} ({EXPECT_WORDS[r.expectation]}): of {r.n - r.missing} "
                         f"pairs scored, {r.fails} fail{ties}\n")
            parts.append("| question | original | perturbed | scores (original \u2192 perturbed) |")
            parts.append("|---|---|---|---|")
            for o in r.examples:
                parts.append(f"| {_cell(o.question, 120)} | {_cell(o.original)} | {_cell(o.perturbed)} | "
                             f"{_num(o.original_score)} \u2192 {_num(o.perturbed_score)} |")
            parts.append("")
    return "\n".join(parts).rstrip() + "\n"


_OUTCOME_FIELDS = tuple(Outcome.__dataclass_fields__)


def outcomes_table(results: Sequence[Outcome]):
    """One row per minimal pair and rubric (a pyarrow table)."""
    import pyarrow as pa

    schema = pa.schema([("family", pa.string()), ("rubric", pa.string()), ("version", pa.string()),
                        ("expectation", pa.string()), ("question_id", pa.string()), ("question", pa.string()),
                        ("original_id", pa.string()), ("perturbed_id", pa.string()), ("original", pa.string()),
                        ("perturbed", pa.string()), ("original_score", pa.float64()),
                        ("perturbed_score", pa.float64()), ("difference", pa.float64()), ("outcome", pa.string()),
                        ("passed", pa.bool_()), ("seed", pa.int64())])
    return pa.Table.from_pylist([asdict(o) for o in results], schema=schema)


def summary_table(table: ValidityTable):
    """One row per rubric version and family (a pyarrow table), without the examples."""
    import pyarrow as pa

    rows = [{"rubric": r.rubric, "version": r.version, "family": r.family, "expectation": r.expectation, "n": r.n,
             "passes": r.passes, "ties": r.ties, "fails": r.fails, "missing": r.missing,
             "pass_rate": None if math.isnan(r.pass_rate) else r.pass_rate,
             "ci_low": None if math.isnan(r.ci[0]) else r.ci[0], "ci_high": None if math.isnan(r.ci[1]) else r.ci[1],
             "n_questions": r.n_questions, "tolerance": table.tolerance,
             "constant_pass_rate": None if math.isnan(r.constant_rate) else r.constant_rate,
             "length_pass_rate": None if math.isnan(r.length_rate) else r.length_rate,
             "informative": r.informative} for r in table.rows]
    schema = pa.schema([("rubric", pa.string()), ("version", pa.string()), ("family", pa.string()),
                        ("expectation", pa.string()), ("n", pa.int64()), ("passes", pa.int64()), ("ties", pa.int64()),
                        ("fails", pa.int64()), ("missing", pa.int64()), ("pass_rate", pa.float64()),
                        ("ci_low", pa.float64()), ("ci_high", pa.float64()), ("n_questions", pa.int64()),
                        ("tolerance", pa.float64()), ("constant_pass_rate", pa.float64()),
                        ("length_pass_rate", pa.float64()), ("informative", pa.bool_())])
    return pa.Table.from_pylist(rows, schema=schema)


def read_validity(folder: str | Path, *, n_boot: int | None = None, seed: int | None = None) -> dict:
    """A validate output folder's table as its run computed it: the rows of the table it published
    (``validity.parquet``: its pass rates, CIs and baselines), each with its failing examples picked from the pairs it
    published as the run picked them (:func:`failing_examples`). Nothing is summarised again (``n_boot`` and ``seed``
    are accepted for the HTML report's call and not used): the command prints, and the HTML report shows, the job's
    own numbers. Both tables are checked against the sha256 the manifest records, so they are one run's.

    Raises:
        InputError: the folder is not one validate run's complete set, a table is not the one its manifest records (a
            publish is going on), or a table cannot be read (read through one open file, ``rubric.io.read_parquet``,
            as every table of ours: a publish renaming a new table in while it is read cannot make it read half of
            each).
    """
    from rubric.io import check_published, published_digests, read_parquet

    folder = Path(folder)
    manifest = check_published(folder)
    if manifest.get("kind") != VALIDATE_KIND:
        raise InputError(f"{folder} is not a validate output")
    v, digests = manifest["validity"], published_digests(manifest)
    by_key: dict[tuple[str, str], list[Outcome]] = {}
    for row in read_parquet(folder / OUTCOMES_FILE, sha256=digests.get(OUTCOMES_FILE)).to_pylist():
        o = Outcome(**{k: row[k] for k in _OUTCOME_FIELDS})
        by_key.setdefault((o.rubric, o.family), []).append(o)
    rows = [ValidityRow(r["rubric"], r["version"], r["family"], r["expectation"], r["n"], r["passes"], r["ties"],
                        r["fails"], r["missing"], _nan(r["pass_rate"]), (_nan(r["ci_low"]), _nan(r["ci_high"])),
                        r["n_questions"], failing_examples(by_key.get((r["rubric"], r["family"]), [])),
                        _nan(r["constant_pass_rate"]), _nan(r["length_pass_rate"]))
            for r in read_parquet(folder / SUMMARY_FILE, sha256=digests.get(SUMMARY_FILE)).to_pylist()]
    table = ValidityTable(rows, float(v["tolerance"]), list(v.get("unchecked", [])))
    return {"folder": str(folder), "table": table, "seed": v["seed"], "n_boot": v["n_boot"], "families": v["families"],
            "descriptions": {f: FAMILIES.get(f).description for f in v["families"] if f in FAMILIES},
            "expect_words": EXPECT_WORDS, "uninformative": UNINFORMATIVE}


def _nan(x: float | None) -> float:
    """A Parquet null (a rate or CI bound with nothing to compute it on) as the table's nan."""
    return math.nan if x is None else float(x)
