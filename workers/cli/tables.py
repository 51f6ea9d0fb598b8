"""The commands over a score output's tables: ``fit``, ``evaluate``, ``predict``, ``export``, ``transfer``, ``analyze``."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from rubric.errors import ConfigError, ProvenanceError

from workers.cli.options import C_value

__all__ = ["add_fit", "fit", "add_evaluate", "evaluate", "add_predict", "predict", "add_export", "export",
           "add_transfer", "transfer", "add_analyze", "analyze"]

log = logging.getLogger("lfqa_rubric")

_SPLITS = ("train", "dev", "test", "all")
#: ``analyze --judge-failures`` (rubric.analysis.JUDGE_FAILURES; restated here so --help needs no import of it).
JUDGE_FAILURES = ("miss", "drop")


def _provenance_error(e: ProvenanceError, what: str) -> ProvenanceError:
    """The table's (or model's) message, saying which files it is about."""
    return ProvenanceError(f"{what}: {e}")


def _add_missing(p: argparse.ArgumentParser) -> None:
    from rubric.tables import DEFAULT_MISSING, MISSING_MODES

    p.add_argument("--missing", choices=MISSING_MODES, default=DEFAULT_MISSING,
                   help="a rubric with no value for one answer of a pair (it abstained, or its score failed): 'mean' "
                        "(default) reads that side as the rubric's mean on the training answers and adds a "
                        "missing_<rubric> column the model fits; 'zero' reads the difference as 0, with the column; "
                        "'drop' leaves the pair out (no prediction for it)")


_ALLOW_OVER_BUDGET = ("fit even when a rubric it uses had more failed rows than its score run's --max-failed budget "
                      "(by default {} refuses such a table, in one line)")


def add_fit(f: argparse.ArgumentParser) -> None:
    f.add_argument("outdir")
    f.add_argument("--out", required=True, help="model JSON path")
    f.add_argument("--split", default="train")
    f.add_argument("--C", type=C_value, default=1.0,
                   help="inverse regularisation strength, or 'cv' to choose it from 1e-3..1e2 by GroupKFold "
                        "cross-validation on the split with each question's pairs in one fold")
    f.add_argument("--cv-folds", type=int, default=5, help="folds for --C cv (fewer with fewer questions)")
    f.add_argument("--ties", choices=("drop", "three_way"), default="drop")
    f.add_argument("--features", default=None, help="comma-separated rubrics to use (default: all with values)")
    f.add_argument("--style", action=argparse.BooleanOptionalAction, default=True,
                   help="fit with style covariates (normalised length and markdown differences) beside the rubrics "
                        "(default: on). Raters reward longer, more formatted answers; without the covariates that "
                        "preference is credited to whichever rubrics correlate with length, and the weights "
                        "overstate them. With them, evaluate also reports the style-controlled model "
                        "(Chatbot Arena style control, AlpacaEval LC). --no-style reproduces the paper's model")
    f.add_argument("--decorrelate", action="store_true",
                   help="residualise each rubric against answer length on the train answers first (ArmoRM-style; "
                        "the betas are saved in the model)")
    _add_missing(f)
    f.add_argument("--weight-boot", type=int, default=200,
                   help="replicates of the bootstrap over training questions for the weights' 95%% CIs (0: none)")
    f.add_argument("--seed", type=int, default=0, help="seed of the weight bootstrap")
    f.add_argument("--allow-over-budget", action="store_true", help=_ALLOW_OVER_BUDGET.format("fit"))


def _refuse_over_budget(args, outdir: str, used: list[str] | None, *, features: bool = True) -> None:
    """``fit``'s and ``transfer``'s refusal of a table whose run had a rubric it uses over its failure budget
    (``rubric.tables.budget_refusal``), unless ``--allow-over-budget``.

    Raises:
        ConfigError: the one line.
    """
    from rubric.io import read_manifest
    from rubric.tables import budget_refusal

    if getattr(args, "allow_over_budget", False):
        return
    manifest = read_manifest(Path(outdir)) if (Path(outdir) / "manifest.json").is_file() else {}
    why = budget_refusal((manifest or {}).get("cost"), used, str(outdir), features=features)
    if why:
        raise ConfigError(why)


def fit(args) -> int:
    from rubric.preference import fit_model, read_pairs
    from rubric.tables import table_rubrics

    pairs = read_pairs(args.outdir)
    features = args.features.split(",") if args.features else None
    _refuse_over_budget(args, args.outdir, features or table_rubrics(pairs))
    try:
        model, dm = fit_model(pairs, split=args.split, C=args.C, ties=args.ties, features=features, style=args.style,
                              decorrelate=args.decorrelate, cv_folds=args.cv_folds,
                              n_boot_weights=args.weight_boot, seed=args.seed, missing=args.missing)
    except ProvenanceError as e:  # the message comes from the table; say which file it is
        raise _provenance_error(e, str(Path(args.outdir) / "pairs.parquet")) from None
    from workers.storage.outdir import output_file

    with output_file(args.out, inputs=[Path(args.outdir) / "pairs.parquet"]) as tmp:  # not into a folder in use
        model.to_json(tmp, trained_on=str(args.outdir), split=args.split, n_pairs=int(len(dm.y)),
                      excluded=dm.excluded, n_missing_rows=dm.n_missing_rows,
                      preset=getattr(args, "preset", None))
    if dm.excluded:
        log.warning("rubrics left out: %s", dm.excluded)
    filled = ", ".join(f"{r} {n}" for r, n in dm.n_filled.items())
    log.info("fitted on %d %s pairs (%d ties dropped, %d left out for a missing rubric, %d unlabeled left out; "
             "a rubric missing on one answer read by %r%s; C=%g; style covariates: %s) -> %s", len(dm.y), args.split,
             dm.n_ties_dropped, dm.n_missing_rows, dm.n_unlabeled, model.missing_.mode,
             f" in {filled}" if filled else "", model.C, ", ".join(model.style_features_) or "none", args.out)
    return 0


def add_evaluate(e: argparse.ArgumentParser) -> None:
    e.add_argument("outdir")
    e.add_argument("--model", required=True)
    e.add_argument("--split", default="test", choices=_SPLITS)
    e.add_argument("--report", default=None, help="Markdown path (default OUTDIR/report_<split>.md)")
    e.add_argument("--n-boot", type=int, default=1000, help="question-clustered bootstrap replicates")
    e.add_argument("--allow-provenance-mismatch", action="store_true",
                   help="evaluate even if the table's rubrics were made differently from the model's "
                        "(the report lists every difference)")
    e.add_argument("--seed", type=int, default=0, help="bootstrap seed")


def evaluate(args) -> int:
    from rubric.preference import evaluate_model, read_pairs, write_report
    from rubric.preference import PreferenceModel

    model = PreferenceModel.from_json(args.model)
    pairs = read_pairs(args.outdir)
    try:
        ev = evaluate_model(model, pairs, split=args.split, n_boot=args.n_boot,
                            allow_provenance_mismatch=args.allow_provenance_mismatch, seed=args.seed)
    except ProvenanceError as e:
        raise _provenance_error(e, f"model {args.model} vs table {Path(args.outdir) / 'pairs.parquet'}") from None
    from workers.storage.outdir import out_path, output_file

    report = out_path(args.report) if args.report else Path(args.outdir) / f"report_{args.split}.md"
    with output_file(report, command="evaluate") as staged:  # the charts beside it go in with it
        text = write_report(ev, model, staged)
        if any(c.startswith("aspect_") for c in pairs.column_names):
            # per-aspect human judgements (lfqa_eval): each rubric against its own aspect and the overall one
            from rubric.preference import agreement_markdown, aspect_agreement_from_table

            rows = aspect_agreement_from_table(pairs, split=args.split, n_boot=args.n_boot, seed=args.seed)
            text += ("\n## Each rubric against people, aspect by aspect\n\n" + agreement_markdown(rows, split=args.split)
                     + "\n")
            staged.write_text(text)
    sys.stdout.write(text + "\n")
    log.info("report written to %s", report)
    return 0


def add_predict(pr: argparse.ArgumentParser) -> None:
    pr.add_argument("outdir")
    pr.add_argument("--model", required=True)
    pr.add_argument("--out", required=True, help="predictions Parquet path")
    pr.add_argument("--split", default="all", choices=_SPLITS)
    pr.add_argument("--allow-provenance-mismatch", action="store_true",
                    help="predict even if the table's rubrics were made differently from the model's "
                         "(the differences are logged and saved in the output's metadata)")


def predict(args) -> int:
    from rubric.preference import read_pairs
    from rubric.preference import predict_pairs, write_predictions
    from rubric.preference import PreferenceModel

    model = PreferenceModel.from_json(args.model)
    pairs = read_pairs(args.outdir)
    try:
        table = predict_pairs(model, pairs, split=args.split, allow_provenance_mismatch=args.allow_provenance_mismatch)
    except ProvenanceError as e:
        raise _provenance_error(e, f"model {args.model} vs table {Path(args.outdir) / 'pairs.parquet'}") from None
    from workers.storage.outdir import output_file

    with output_file(args.out, inputs=[args.model, Path(args.outdir) / "pairs.parquet"]) as tmp:
        write_predictions(table, tmp)
    n_labeled = sum(1 for x in table.column("label").to_pylist() if x is not None)
    log.info("%d predictions (%d labeled, %d unlabeled) -> %s", table.num_rows, n_labeled, table.num_rows - n_labeled,
             args.out)
    return 0


def add_export(x: argparse.ArgumentParser) -> None:
    x.add_argument("outdir")
    x.add_argument("--to", required=True)
    x.add_argument("--table", choices=("pairs", "answers"), default="pairs")


def export(args) -> int:
    from rubric.preference import read_output_table
    from workers.jobs import write_table

    from workers.storage.outdir import output_file

    table = read_output_table(args.outdir, args.table)
    with output_file(args.to, inputs=[Path(args.outdir) / f"{args.table}.parquet"]) as tmp:
        write_table(table, tmp)
    log.info("exported %d rows of %s (%s) to %s", table.num_rows, args.outdir, args.table, args.to)
    return 0


def add_transfer(t: argparse.ArgumentParser) -> None:
    t.add_argument("--train", nargs="+", required=True, metavar="OUT", help="score outputs to fit on")
    t.add_argument("--eval", nargs="+", required=True, metavar="OUT",
                   help="score outputs to evaluate on (a training output here is its in-distribution cell)")
    t.add_argument("--out", required=True, help="Markdown path")
    t.add_argument("--split", default="test", choices=("dev", "test"), help="evaluated split of each --eval output")
    t.add_argument("--C", type=float, default=1.0)
    t.add_argument("--ties", choices=("drop", "three_way"), default="drop")
    t.add_argument("--style", action=argparse.BooleanOptionalAction, default=True,
                   help="fit with the style covariates (length, markdown) and add the style-controlled table")
    _add_missing(t)
    t.add_argument("--n-boot", type=int, default=1000, help="question-clustered bootstrap replicates per cell")
    t.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    t.add_argument("--allow-over-budget", action="store_true", help=_ALLOW_OVER_BUDGET.format("transfer"))


def transfer(args) -> int:
    from rubric.preference import transfer_markdown
    from rubric.presets import preset_title
    from workers.jobs import run_transfer

    for outdir in dict.fromkeys(args.train):  # every rubric of a training table is fitted on
        _refuse_over_budget(args, outdir, None, features=False)
    result = run_transfer(args.train, args.eval, C=args.C, ties=args.ties, style=args.style, split=args.split,
                          n_boot=args.n_boot, seed=args.seed, missing=args.missing)
    from workers.storage.outdir import out_path, output_file

    text = transfer_markdown(result, title=preset_title("Transfer of the preference model",
                                                        getattr(args, "preset", None)))
    out = out_path(args.out)
    with output_file(out) as tmp:
        tmp.write_text(text)
    sys.stdout.write(text)
    log.info("transfer table written to %s", out)
    return 0


def add_analyze(an: argparse.ArgumentParser) -> None:
    an.add_argument("inputs", nargs="+", metavar="OUT",
                    help="score outputs (pairs.parquet, with model.json or --model), judge outputs "
                         "(judgments.parquet) and predictions Parquet files over the same pairs; LINKAGE outputs "
                         "(linkage.parquet) get a table of their own")
    an.add_argument("--model", default=None, help="model JSON applied to the score output (default: OUT/model.json)")
    an.add_argument("--predictions", nargs="+", action="extend", default=[], metavar="FILE",
                    help="predictions Parquet files (pair_id, predicted[, p_a, system, error])")
    an.add_argument("--perturbed", nargs="+", action="extend", default=[], metavar="[NAME=]OUT",
                    help="outputs over perturbed copies of the pairs (same pair ids); one NAME over several "
                         "outputs is one perturbed set")
    an.add_argument("--out", required=True, help="Markdown path; the charts are written beside it")
    an.add_argument("--split", default="test", choices=_SPLITS)
    an.add_argument("--n-boot", type=int, default=1000, help="question-clustered bootstrap replicates")
    an.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    an.add_argument("--allow-provenance-mismatch", action="store_true",
                    help="apply the model even if the table's rubrics were made differently")
    an.add_argument("--judge-failures", choices=JUDGE_FAILURES, default="miss",
                    help="a system's failure on a pair (a judge's error: no majority vote, no parseable vote, a "
                         "context overflow): 'miss' (default) counts it as that system's miss and every other system "
                         "keeps the pair; 'drop' leaves the pair out for every system (Tables 4, 7 and 8)")


def _analyze_command(args) -> str:
    """The command line of an ``analyze`` run, rebuilt from its arguments (the report quotes it)."""
    import shlex

    parts = ["lfqa-rubric", "analyze", *args.inputs]
    if args.model:
        parts += ["--model", args.model]
    if args.predictions:
        parts += ["--predictions", *args.predictions]
    if args.perturbed:
        parts += ["--perturbed", *args.perturbed]
    parts += ["--split", args.split, "--n-boot", str(args.n_boot), "--seed", str(args.seed)]
    if args.allow_provenance_mismatch:
        parts.append("--allow-provenance-mismatch")
    parts += ["--judge-failures", args.judge_failures]
    if getattr(args, "preset", None):
        parts += ["--preset", args.preset]
    return shlex.join([*parts, "--out", args.out])


def analyze(args) -> int:
    from rubric.analysis import analyze as run_analysis
    from rubric.analysis import parse_perturbed, write_analysis

    analysis = run_analysis(args.inputs, model=args.model, predictions=args.predictions,
                            perturbed=parse_perturbed(args.perturbed), split=args.split, n_boot=args.n_boot,
                            seed=args.seed, allow_provenance_mismatch=args.allow_provenance_mismatch,
                            preset=getattr(args, "preset", None), judge_failures=args.judge_failures)
    from workers.storage.outdir import out_path, output_file

    out = out_path(args.out)
    with output_file(out, command="analyze") as staged:  # the charts beside it go in with it
        text = write_analysis(analysis, staged, command=_analyze_command(args))
    sys.stdout.write(text + "\n")
    log.info("analysis of %d systems on %d %s pairs written to %s", len(analysis.systems),
             len(analysis.comparison.pair_ids), args.split, args.out)
    return 0
