"""The ``lfqa-rubric`` command line.

Each command is a :class:`Command` in :data:`COMMANDS`: its name, its help, a function that adds
its options and a handler that only turns the parsed options into one call of the job or library
function that does the work. The option groups shared by several commands (inputs, scoring, judges,
protocols, Ray) are defined once, in :mod:`workers.cli.options`. A new command is a module with its
``add_*`` and handler, and one line in :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass

from workers.installed import check_installed

# Before the imports below: a foreign rubric/ or models/ earlier on sys.path would fail them far from the cause.
check_installed()

from rubric.errors import FailureBudgetError, RubricError
from workers.cli import report as report_cmd
from workers.cli.presets import FIXED as PRESET_COMMANDS, add_preset
from workers.cli import judge, score, serve, tables, tools, validate
from workers.cli.options import FORMATS, add_scoring_args, reader_options, scoring_config
from workers.cli.judge import add_ray_job, ray_job
from workers.cli.score import DEMO_RUBRICS

__all__ = ["main", "build_parser", "Command", "COMMANDS", "run_command", "FORMATS", "DEMO_RUBRICS",
           "add_scoring_args", "reader_options", "scoring_config", "add_ray_job", "ray_job"]

log = logging.getLogger("lfqa_rubric")


@dataclass(frozen=True)
class Command:
    """One subcommand: ``add_arguments(parser)`` adds its options, ``run(args) -> exit status`` runs it."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: list[Command] = [
    Command("score", "score answers and write feature tables", score.add_score, score.score),
    Command("fit", "train the preference model on the train split", tables.add_fit, tables.fit),
    Command("evaluate", "metrics with baselines, as Markdown + PNG", tables.add_evaluate, tables.evaluate),
    Command("predict", "P(a preferred), the predicted label and per-feature contributions for every pair, labeled or "
                       "not (Parquet)", tables.add_predict, tables.predict),
    Command("export", "export a feature table to Parquet/CSV/JSONL", tables.add_export, tables.export),
    Command("encoder", "train the trained-encoder baseline (frozen sentence encoder + logistic regression on "
                       "embedding differences) on a score output's train split and predict every pair "
                       "(OUT/encoder_predictions.parquet)", tools.add_encoder, tools.encoder),
    Command("perturb", "DeepWordBug / TextFooler-style attack on one split against a trained victim; writes a "
                       "perturbed copy in the input's format and FILE.changes.jsonl", tools.add_perturb, tools.perturb),
    Command("demo", "score the bundled sample, fit and report", score.add_demo, score.demo),
    Command("lfq", "classify the input's questions as long-form or not (paper appendix A.4)", tools.add_lfq, tools.lfq),
    Command("transfer", "fit on each training output's train split, evaluate on every evaluation output's test split "
                        "(Markdown table)", tables.add_transfer, tables.transfer),
    Command("judge", "LLM judges over pairs, both orders (judgments.parquet); --protocol NAME runs a neighbouring "
                     "protocol (judge --help lists them)", judge.add_judge, judge.judge),
    Command("analyze", "the rubric model, LLM judges and baselines on the same pairs: accuracy, transitivity, position "
                       "and verbosity bias, perturbations (Markdown + PNG)", tables.add_analyze, tables.analyze),
    Command("report", "one self-contained HTML page (no server, no CDN) for score, fit, judge, analyze and protocol "
                      "output folders", report_cmd.add_report, report_cmd.report),
    Command("serve", serve.SERVE_HELP, serve.add_serve, serve.serve),
    Command("rubrics", "list the registered rubric versions", tools.add_rubrics, tools.rubrics),
    Command("validate", validate.VALIDATE_HELP, validate.add_validate, validate.validate),
    Command("protocols", "list the protocols of judge --protocol, and the plugins left out and why", tools.add_protocols,
            tools.protocols),
]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lfqa-rubric", description=__doc__.split("\n\n")[0])
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)
    for c in COMMANDS:
        sp = sub.add_parser(c.name, help=c.help)
        c.add_arguments(sp)
        sp.set_defaults(func=c.run)
        if c.name in PRESET_COMMANDS:  # --preset wraps the handler (workers.cli.presets)
            add_preset(sp, c.name)
    return p


def run_command(run: Callable[[], int], prog: str) -> int:
    """``run()``, the one place that maps what a command raises to its exit status: a run over its failure budget
    (``--max-failed``; it published) becomes its lines on stderr and exit status 3, so a script tells a run over
    budget from one that could not run; a project error or an OS error becomes one line on stderr naming ``prog``,
    and exit status 2."""
    try:
        return run()
    except FailureBudgetError as e:
        for line in e.lines:
            sys.stderr.write(f"{prog}: over budget: {line}\n")
        return 3
    except (RubricError, OSError) as e:
        # One line, whatever the message holds (a list of problems, a library's multi-line text),
        # so the error is what the user sees last and a log grep finds it whole.
        text = "; ".join(line.strip() for line in str(e).split("\n") if line.strip()) or type(e).__name__
        sys.stderr.write(f"{prog}: error: {text}\n")
        return 2


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from workers.logs import configure_logging

    configure_logging(args.verbose)  # before any engine is imported: vLLM reads its level at import
    return run_command(lambda: args.func(args), "lfqa-rubric")
