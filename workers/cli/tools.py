"""``encoder`` (the trained-encoder baseline), ``perturb`` (attacks), ``lfq`` (the long-form question filter)
``rubrics`` (the registry) and ``protocols`` (the protocols loaded, and the plugins left out)."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from workers.cli.options import C_value, add_input_args, add_scoring_args, reader_options, scoring_config

__all__ = ["add_encoder", "encoder", "add_perturb", "perturb", "add_lfq", "lfq", "add_rubrics", "rubrics", "add_protocols",
           "protocols"]

log = logging.getLogger("lfqa_rubric")

_SPLITS = ("train", "dev", "test", "all")


def add_encoder(en: argparse.ArgumentParser) -> None:
    en.add_argument("outdir", help="a score output folder (answers.parquet, pairs.parquet)")
    en.add_argument("--out", default=None, help="head folder to write (default OUTDIR/encoder)")
    en.add_argument("--head", default=None, help="apply this trained head folder instead of training one")
    en.add_argument("--predictions", default=None, help="predictions Parquet (default OUTDIR/encoder_predictions.parquet)")
    en.add_argument("--encoder", default=None,
                    help="sentence encoder: a Hub id or a folder (default: the packaged all-MiniLM-L6-v2, offline)")
    en.add_argument("--device", default=None, help="torch device (default: CUDA when visible, else CPU)")
    en.add_argument("--batch-size", type=int, default=32, help="texts per forward pass")
    en.add_argument("--C", type=C_value, default="cv",
                    help="inverse regularisation of the head, or 'cv' (default) to choose it by GroupKFold "
                         "cross-validation over the training questions")
    en.add_argument("--split", default="train", choices=_SPLITS, help="split to train on")
    en.add_argument("--n-boot", type=int, default=1000, help="question-clustered bootstrap replicates of the test CI")
    en.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    en.add_argument("--quiet", action="store_true", help="no progress bars")
    en.add_argument("--force", action="store_true",
                    help="write the head into an existing folder that is not an lfqa-rubric output (refused "
                         "otherwise), replacing its head.json and head.safetensors, and no other file")


def encoder(args) -> int:
    from workers.jobs import run_encoder_job

    summary = run_encoder_job(args.outdir, out=args.out, head_dir=args.head, predictions=args.predictions,
                              encoder=args.encoder, device=args.device, batch_size=args.batch_size, C=args.C,
                              split=args.split, n_boot=args.n_boot, seed=args.seed, progress=not args.quiet,
                              force=args.force)
    test = summary["test"]
    if test is not None:
        acc, (lo, hi) = test["values"]["accuracy"], test["ci"]["accuracy"]
        sys.stdout.write(f"{summary['system']}: test accuracy {acc:.4f} (95% CI {lo:.4f}-{hi:.4f}, question-clustered "
                         f"bootstrap; {test['n']} pairs, {test['n_questions']} questions"
                         f"{', in-sample' if test['in_sample'] else ''})\n")
    else:
        sys.stdout.write(f"{summary['system']}: no test accuracy (the test split has no pairs labelled a or b)\n")
    log.debug("encoder summary: %s", json.dumps(summary, default=str))
    return 0


def add_perturb(pt: argparse.ArgumentParser) -> None:
    add_input_args(pt, many=False)
    pt.add_argument("--attack", required=True, choices=("deepwordbug", "textfooler"))
    pt.add_argument("--victim", required=True,
                    help="an encoder head folder (lfqa-rubric encoder) or a preference model (model.json, or a folder "
                         "holding it; its rubrics are re-scored for every probe: cheap CPU rubrics only)")
    pt.add_argument("--out", required=True, help="the perturbed copy (same extension as the input)")
    pt.add_argument("--budget", type=float, default=0.1,
                    help="share of each answer's words that may change: at most ceil(budget * words)")
    pt.add_argument("--split", default="test", choices=_SPLITS,
                    help="split to attack, as a single-input score job with the same --seed assigns it")
    pt.add_argument("--synonyms", choices=("auto", "wordnet", "embedding"), default="auto",
                    help="textfooler's synonym source: WordNet (primary; Debian's wordnet-base) or MiniLM neighbours "
                         "over the input's words (auto: WordNet when installed)")
    pt.add_argument("--max-candidates", type=int, default=8, help="textfooler: synonyms tried per word")
    pt.add_argument("--device", default=None, help="torch device of an encoder victim")
    add_scoring_args(pt, "")


def perturb(args) -> int:
    from rubric.perturbation import word_budget
    from workers.jobs import load_victim, run_perturb_job

    from workers.storage.outdir import OutLock, out_path

    word_budget(1, args.budget)  # a bad --budget fails before the victim loads
    with OutLock(out_path(args.out).parent):  # a folder another command writes into: refused before the victim loads
        victim = load_victim(args.victim, device=args.device, batch_size=args.batch_size, config=scoring_config(args))
        summary = run_perturb_job(args.input, args.format, attack=args.attack, victim=victim, out=args.out,
                                  reader_options=reader_options(args), budget=args.budget, seed=args.seed,
                                  split=args.split, synonyms=args.synonyms, max_candidates=args.max_candidates,
                                  progress=not args.quiet, split_fractions=args.split_fractions)

    def share(x) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    sys.stdout.write(f"{args.attack} vs {summary['victim']}: attack success rate "
                     f"{share(summary['attack_success_rate'])} ({summary['n_flipped']} of {summary['n_attacked']} "
                     f"attacked pairs flipped; {summary['counts']['skipped']} skipped); victim accuracy on the "
                     f"{args.split} split {share(summary['victim_accuracy_before'])} -> "
                     f"{share(summary['victim_accuracy_after'])} ({summary['n_scored']} pairs)\n")
    return 0


def add_lfq(q: argparse.ArgumentParser) -> None:
    add_input_args(q, many=False)
    q.add_argument("--out", required=True, help="questions table (Parquet): is_lfq, p_yes, log_score, confident")
    add_scoring_args(q, "")


def lfq(args) -> int:
    from workers.jobs import run_lfq_job

    run_lfq_job(args.input, args.format, args.out, config=scoring_config(args), reader_options=reader_options(args))
    return 0


def add_rubrics(r: argparse.ArgumentParser) -> None:
    """No options."""


def rubrics(args) -> int:
    from rubric.scoring import DEFAULT_VERSIONS, EXTRA_SIGNALS, RUBRICS, agreement_line, measured_agreement

    # Extra signals are opt-in (never in a default list): their bare name is shown, and the last
    # column says they are not one of the paper's rubrics. Beside each version, its measured agreement with
    # people's ratings of its own aspect (rubric/data/agreement.json), where it was measured.
    lines = ["| version | backend | raw range | default for | kind | agreement with people's ratings of its aspect |",
             "|---|---|---|---|---|---|"]
    defaults = {v: k for k, v in {**DEFAULT_VERSIONS, **EXTRA_SIGNALS}.items()}
    for name in RUBRICS.names():
        s = RUBRICS.get(name)
        kind = "extra signal" if s.extra_signal else "rubric"
        people = agreement_line(name, s.name) if measured_agreement(name) else ""
        lines.append(f"| {name} | {s.backend} | {s.raw_min:g} to {s.raw_max:.4g} | {defaults.get(name, '')} | {kind} | "
                     f"{people} |")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def add_protocols(r: argparse.ArgumentParser) -> None:
    """No options."""


def protocols(args) -> int:
    """The protocols ``judge --protocol`` runs (where each comes from, its flags), then every plugin left out
    and why. The judge command's parser is built first, as every command builds it, so a plugin whose flag
    clashes with the command's is listed as left out here too."""
    from workers.protocols import LEFT_OUT, SOURCES, load_protocols, option_flag

    from dataclasses import fields

    loaded = load_protocols()
    lines = ["| protocol | from | flags | help |", "|---|---|---|---|"]
    for name in loaded:
        spec = loaded.get(name)
        flags = " ".join(option_flag(f.name) for f in fields(spec.options))
        lines.append(f"| {name} | {SOURCES.get(name, 'built-in')} | {flags} | {spec.help} |")
    if LEFT_OUT:
        lines += ["", f"left out ({len(LEFT_OUT)}):"] + [f"- {x.line()}" for x in LEFT_OUT]
    else:
        lines += ["", "left out: none"]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
