"""``validate``: do the rubric versions move the way their names say on minimal pairs (``rubric.validity``)?"""

from __future__ import annotations

import argparse
import logging
import sys

from workers.cli.options import add_input_args, add_scoring_args, reader_options, scoring_config

__all__ = ["add_validate", "validate", "VALIDATE_HELP"]

log = logging.getLogger("lfqa_rubric")

VALIDATE_HELP = ("score minimal pairs (an answer and a copy that changes one quality: shuffled, echoed, cut, filler, "
                 "typos, a changed fact, ...) and report per rubric version and family how often the copy moves the "
                 "expected way (report.md, validity.parquet)")


def add_validate(p: argparse.ArgumentParser) -> None:
    from rubric.validity import DEFAULT_TOLERANCE, FAMILIES, family_names
    from workers.jobs.validate import N_BOOT

    add_input_args(p)
    add_scoring_args(p, "conciseness,grammar")
    p.add_argument("--out", default="validate-out",
                   help="output folder: a new or empty one, or one an earlier validate run wrote (its scores are "
                        "reused)")
    p.add_argument("--force", action="store_true",
                   help="write into an existing folder that is not an lfqa-rubric output folder (as score --force)")
    p.add_argument("--families", default=None,
                   help="comma-separated families (default: every family that checks one of the rubrics): "
                        + "; ".join(f"{f} ({', '.join(FAMILIES.get(f).expect)})" for f in family_names()))
    # its own dest: reader_options reads ``max_questions`` as the graded reader's slice; this one cuts any format
    p.add_argument("--max-questions", type=int, default=None, dest="first_questions", metavar="N",
                   help="only the answers of the first N questions of each input (any format)")
    p.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                   help=f"largest |perturbed - original| raw-score difference read as a tie (default "
                        f"{DEFAULT_TOLERANCE:g}: above the LLM rubrics' measured batch noise)")
    p.add_argument("--n-boot", type=int, default=N_BOOT, help="bootstrap replicates of the pass rates' CIs")


def validate(args) -> int:
    from rubric.scoring import resolve_rubrics
    from rubric.validity import read_validity, table_markdown
    from workers.jobs.validate import run_validate_job

    run_validate_job(args.inputs, args.format, resolve_rubrics(args.rubrics), args.out, config=scoring_config(args),
                     reader_options=reader_options(args), seed=args.seed, families=args.families,
                     tolerance=args.tolerance, max_questions=args.first_questions, n_boot=args.n_boot,
                     progress=not args.quiet, force=args.force)
    shown = read_validity(args.out, n_boot=args.n_boot, seed=args.seed)
    sys.stdout.write(table_markdown(shown["table"]))
    log.info("the table, the families and failing examples: %s/report.md", args.out)
    return 0
