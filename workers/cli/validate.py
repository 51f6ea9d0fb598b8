"""``validate``: do the rubric versions move the way their names say on minimal pairs (``rubric.validity``)? With
``--human``: do they agree with people's ratings of their aspect (``rubric.validity.agreement_table``)?"""

from __future__ import annotations

import argparse
import logging
import sys

from rubric.errors import ConfigError
from workers.cli.options import add_input_args, add_scoring_args, reader_options, scoring_config

__all__ = ["add_validate", "validate", "VALIDATE_HELP"]

log = logging.getLogger("lfqa_rubric")

VALIDATE_HELP = ("score minimal pairs (an answer and a copy that changes one quality: shuffled, echoed, cut, filler, "
                 "typos, a changed fact, ...) and report per rubric version and family how often the copy moves the "
                 "expected way (report.md, validity.parquet)")


def add_validate(p: argparse.ArgumentParser) -> None:
    from rubric.validity import DEFAULT_TOLERANCE, FAMILIES, family_names
    from workers.jobs import N_BOOT

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
    p.add_argument("--human", action="store_true",
                   help="instead of minimal pairs, compare each rubric version with people's ratings of each aspect: "
                        "rated answers (--format jsonl/parquet/csv with --map question=COL,answer=COL[,source=COL,"
                        "system=COL,reference=COL,docs=COL,id=COL], or --format graded, its grades the one aspect "
                        "named) or pairs with aspect judgements (lfqa-eval); Spearman and Kendall within each source, "
                        "pooled and per system, with length and every rubric beside each other (report.md, "
                        "agreement.parquet)")
    p.add_argument("--aspects", default=None, metavar="ASPECT[=COLUMN],...",
                   help="--human: the rating columns, each an aspect (coherence,fluency,factuality=consistency reads "
                        "the aspect factuality from the column consistency); a rubric's own aspect is the one of its "
                        "name. Pairs: which of their aspect judgements (default: all, and the overall label)")


def _human_options(args) -> dict:
    """Reader options of ``--human``: rated tables map the ratings fields (``rubric.io.RATING_FIELDS``); any other
    format reads as it does everywhere."""
    from rubric.io import mapping_entries
    from workers.jobs import RATED_FORMATS

    if args.format in RATED_FORMATS and args.format != "graded":
        if not args.map:
            from rubric.io import RATING_FIELDS

            raise ConfigError(f"--human --format {args.format} needs --map naming the rated answers' columns: "
                              f"{', '.join(RATING_FIELDS)} (question and answer required)")
        return {"mapping": mapping_entries(args.map), "max_answer_chars": args.max_answer_chars,
                "max_question_chars": args.max_question_chars}
    return reader_options(args)


def human(args) -> int:
    """``validate --human``: the agreement job, then its summary-level table as the job computed it."""
    from rubric.scoring import resolve_rubrics
    from rubric.validity import agreement_markdown, read_agreement
    from workers.jobs import run_agreement_job

    if args.families is not None:
        raise ConfigError("--families names minimal-pair families; --human compares with people's ratings instead")
    run_agreement_job(args.inputs, args.format, resolve_rubrics(args.rubrics), args.out, config=scoring_config(args),
                      reader_options=_human_options(args), aspects=args.aspects, n_boot=args.n_boot, seed=args.seed,
                      progress=not args.quiet, force=args.force)
    shown = read_agreement(args.out)
    sys.stdout.write(agreement_markdown(shown["table"]))
    log.info("every level, each rubric against its own aspect: %s/report.md", args.out)
    return 0


def validate(args) -> int:
    from rubric.scoring import resolve_rubrics

    if args.human:
        return human(args)
    if args.aspects is not None:
        raise ConfigError("--aspects is --human's: the rating columns to compare the rubrics with")
    from rubric.validity import read_validity, table_markdown
    from workers.jobs import run_validate_job

    run_validate_job(args.inputs, args.format, resolve_rubrics(args.rubrics), args.out, config=scoring_config(args),
                     reader_options=reader_options(args), seed=args.seed, families=args.families,
                     tolerance=args.tolerance, max_questions=args.first_questions, n_boot=args.n_boot,
                     progress=not args.quiet, force=args.force)
    shown = read_validity(args.out)  # the table the job published, not computed again
    sys.stdout.write(table_markdown(shown["table"]))
    log.info("the table, the families and failing examples: %s/report.md", args.out)
    return 0
