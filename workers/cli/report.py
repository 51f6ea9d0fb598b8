"""``lfqa-rubric report OUT [OUT ...] --html FILE``: one self-contained HTML page for output folders.

The page (:mod:`rubric.html_report`) shows the same result objects as ``evaluate``'s and
``analyze``'s Markdown and the protocol jobs' ``report.md``, computed with the same split, bootstrap
replicates and seed, so its numbers are theirs.
"""

from __future__ import annotations

import argparse
import logging
import sys

__all__ = ["add_report", "report", "html_report"]

log = logging.getLogger("lfqa_rubric")


def html_report(outputs, html, **kwargs):
    """Write the page for ``outputs`` to ``html`` and print its path (the line a user clicks); returns the path.

    Each folder is read as one published snapshot (``rubric.html_report.report_html``), a protocol's
    output through the section its declaration gives (``workers.protocols.html_sections``); the page is
    written through ``workers.storage.outdir.output_file`` (an exclusive temp file beside it, never a link).
    """
    from rubric.html_report import report_html
    from workers.storage.outdir import out_path, output_file
    from workers.protocols import html_sections

    page = report_html(outputs, sections=html_sections(), **kwargs)
    path = out_path(html)
    with output_file(path) as tmp:
        tmp.write_text(page, encoding="utf-8")
    log.info("HTML report written to %s (%.0f KB)", path, path.stat().st_size / 1024)
    sys.stdout.write(f"{path}\n")
    return path


def report(args) -> int:
    """The ``report`` command: the page from ``args.outputs`` written to ``args.html``."""
    from rubric.analysis import parse_perturbed

    html_report(args.outputs, args.html, model=args.model, split=args.split, n_boot=args.n_boot, seed=args.seed,
                perturbed=parse_perturbed(args.perturbed), allow_provenance_mismatch=args.allow_provenance_mismatch)
    return 0


def add_report(r: argparse.ArgumentParser) -> None:
    """The ``report`` command's options (registered in ``workers.cli.COMMANDS``)."""
    r.add_argument("outputs", nargs="+", metavar="OUT",
                   help="output folders: score (with model.json for the model and pair sections), judge, "
                        "judge --protocol NAME")
    r.add_argument("--html", required=True, metavar="FILE", help="the HTML file to write")
    r.add_argument("--model", default=None, help="model JSON for the first score output (default: OUT/model.json)")
    r.add_argument("--split", default="test", choices=("train", "dev", "test", "all"),
                   help="split the model and the analyses are evaluated on (as evaluate/analyze --split)")
    r.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates (as evaluate/analyze --n-boot)")
    r.add_argument("--seed", type=int, default=0, help="bootstrap seed (as evaluate/analyze --seed)")
    r.add_argument("--perturbed", nargs="+", action="extend", default=[], metavar="[NAME=]OUT",
                   help="outputs over perturbed copies of the pairs, for Table 8 (as analyze --perturbed)")
    r.add_argument("--allow-provenance-mismatch", action="store_true",
                   help="apply the model even if the table's rubrics were made differently")

