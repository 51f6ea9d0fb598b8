"""``judge`` (LLM judges over pairs; ``--protocol`` LINKAGE, RAG-QA Arena, LFQA-E) and the Ray job of
``scripts/run_job.py`` (a score, judge or protocol job with its step on Ray)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from rubric.errors import RubricError
from workers.cli.options import (add_input_args, add_judge_args, add_out_args, add_protocol_args, add_ray_args,
                                 add_scoring_args,
                                 config_for_pools, judge_settings, ray_step, reader_options, score_kind,
                                 scoring_config)

__all__ = ["add_judge", "judge", "add_ray_job", "ray_job", "protocol_flag_errors", "judge_protocol"]

# flag -> (its dest, the protocols that take it)
_PROTOCOL_ONLY = {
    "--systems": ("systems", ("arena",)), "--answer-map": ("answer_map", ("arena",)),
    "--max-questions": ("max_questions", ("linkage", "arena", "lfqa-e")),
    "--max-answers-per-question": ("max_answers_per_question", ("linkage",)),
    "--linkage-systems": ("linkage_systems", ("linkage",)), "--no-signals": ("no_signals", ("linkage",)),
    "--references": ("references", ("linkage",)),
    "--reference-max-tokens": ("reference_max_tokens", ("linkage",)),
    "--reasoning-tokens": ("reasoning_tokens", ("arena",)),
    "--reference-template": ("reference_template", ("linkage",)),
    "--rubric-scores": ("rubric_scores", ("linkage", "lfqa-e")), "--rubric-model": ("rubric_model", ("lfqa-e",)),
}


def add_judge(j: argparse.ArgumentParser) -> None:
    add_input_args(j, format_required=False)
    add_out_args(j, "output folder (its own: not a score output folder)")
    j.add_argument("--judges", default="plain", help="comma-separated judges: plain, cot, rubrics (or versions)")
    add_judge_args(j)
    add_scoring_args(j, "")
    add_protocol_args(j)
    j.add_argument("--ray", action="store_true",
                   help="run the judge step on a Ray pool of engine actors (local Ray, or RAY_ADDRESS), sized and "
                        "set by the Ray options below (the engine options score takes: --llm-actors, "
                        "--llm-batches-in-flight, --tensor-parallel, ...)")
    add_ray_args(j, rubric_pools=False)


def judge(args) -> int:
    ray = ray_step(args) if args.ray else None
    config = config_for_pools(scoring_config(args), args) if args.ray else scoring_config(args)
    if args.protocol is not None:
        return judge_protocol(args, ray=ray, config=config)
    _check_flags(args)
    if args.format is None:
        raise RubricError("judge needs --format (or --protocol linkage|arena|lfqa-e)")
    from workers.judge_job import run_judge_job

    run_judge_job(args.inputs, args.format, judge_settings(args), args.out, config=config,
                  reader_options=reader_options(args), seed=args.seed, progress=not args.quiet, ray=ray,
                  force=args.force)
    return 0


def protocol_flag_errors(args) -> list[str]:
    """Flags that the chosen ``--protocol`` (or the plain judges) does not take, as one message each."""
    errors = []
    for flag, (dest, protocols) in _PROTOCOL_ONLY.items():
        value = getattr(args, dest)
        if value not in (None, False, []) and args.protocol not in protocols:
            errors.append(f"{flag} applies to --protocol {'/'.join(protocols)}, not "
                          f"{args.protocol or 'the pairwise judges (no --protocol)'}")
    if args.reference_max_tokens is not None and args.protocol == "linkage" and args.references != "generated":
        errors.append("--reference-max-tokens applies to --references generated")
    elif args.reference_max_tokens is not None and not 1 <= args.reference_max_tokens <= 4096:
        errors.append(f"--reference-max-tokens must be in 1..4096, got {args.reference_max_tokens}")
    if args.reference_template is not None and args.protocol == "linkage" and args.references != "generated":
        errors.append("--reference-template applies to --references generated")
    if args.protocol is not None and args.judges not in (None, "plain"):
        errors.append(f"--judges is for the pairwise judges; --protocol {args.protocol} runs its own judge")
    if args.protocol is not None and args.tie:
        errors.append(f"--tie is for the pairwise judges; --protocol {args.protocol}'s templates always offer one")
    return errors


def _check_flags(args) -> None:
    errors = protocol_flag_errors(args)
    if errors:
        raise RubricError("; ".join(errors))


def judge_protocol(args, *, ray=None, command: str | None = None, config=None) -> int:
    """Run ``--protocol``; with ``ray`` its score/judge step runs on a Ray actor pool (report alike).

    Args:
        args: the judge command's arguments (or ``scripts/run_job.py``'s, which has the same options).
        ray: a ``workers.ray_pipeline.RayStep`` (LINKAGE actors or the protocol's judge actors: its "llm" pool).
        command: the command line quoted in the report (default: this process's, for ``lfqa-rubric``).
        config: the engine settings (default: from ``args``).
    """
    from workers import protocol_job
    from workers.linkage_job import LinkageSettings, run_linkage_job

    _check_flags(args)
    if command is None:
        command = shlex.join(["lfqa-rubric", *sys.argv[1:]]) if sys.argv and "lfqa" in Path(sys.argv[0]).name else ""
    config = config or scoring_config(args)
    judge_kwargs = {"mode": args.mode, "n_votes": args.n_votes, "temperature": args.temperature, "seed": args.seed,
                    "max_reasoning_tokens": args.max_reasoning_tokens}
    if args.protocol == "linkage":
        if args.format not in (None, "graded"):
            raise RubricError(f"--protocol linkage reads graded answer lists (--format graded), not {args.format!r}")
        opts = {"max_questions": args.max_questions, "max_answers_per_question": args.max_answers_per_question,
                "seed": args.seed, "max_answer_chars": args.max_answer_chars,
                "max_question_chars": args.max_question_chars}
        mode = "parse" if args.mode == "vote" else "logprob"
        run_linkage_job(args.inputs, args.out, config=config,
                        settings=LinkageSettings(args.linkage_systems, mode=mode, references=args.references or "data",
                                                 reference_max_tokens=args.reference_max_tokens or 512,
                                                 reference_template=args.reference_template),
                        reader_options=opts, signals=not args.no_signals, rubric_scores=args.rubric_scores,
                        n_boot=args.n_boot, seed=args.seed, progress=not args.quiet, command=command, ray=ray,
                        force=args.force)
    elif args.protocol == "arena":
        if len(args.inputs) != 1 or args.format is not None:
            raise RubricError("--protocol arena takes one annotation file (annotations_<domain>_with_citation.jsonl) "
                              "and no --format; the systems' answers come with --systems NAME=FILE")
        protocol_job.run_arena_job(args.inputs[0], _systems(args.systems), args.out, config=config,
                                   judge_kwargs=judge_kwargs, max_questions=args.max_questions,
                                   answer_mapping=args.answer_map, n_boot=args.n_boot, seed=args.seed,
                                   progress=not args.quiet, command=command, ray=ray,
                                   reasoning_tokens=args.reasoning_tokens or 0, force=args.force)
    else:
        if args.format is None:
            raise RubricError("--protocol lfqa-e needs --format (pairs with a reference answer, e.g. graded WebGLM "
                              "lists or lfqa-eval with a 'reference' field)")
        opts = reader_options(args)  # with --max-questions (graded lists only)
        protocol_job.run_lfqa_e_job(args.inputs, args.format, args.out, config=config, judge_kwargs=judge_kwargs,
                                    reader_options=opts, rubric_scores=args.rubric_scores,
                                    rubric_model=args.rubric_model, n_boot=args.n_boot, seed=args.seed,
                                    progress=not args.quiet, command=command, ray=ray, force=args.force)
    return 0


def _systems(entries: list[str]) -> dict[str, str]:
    """``--systems NAME=FILE ...`` as an ordered dict; a malformed or repeated entry is an error."""
    if not entries:
        raise RubricError("--protocol arena needs --systems NAME=FILE [NAME=FILE ...] (answers keyed by qid)")
    out: dict[str, str] = {}
    for e in entries:
        name, sep, path = e.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise RubricError(f"--systems entry {e!r} must look like NAME=FILE")
        if name in out:
            raise RubricError(f"--systems names {name!r} twice")
        out[name.strip()] = path.strip()
    return out


def add_ray_job(p: argparse.ArgumentParser) -> None:
    """``scripts/run_job.py``'s options: the score command's, the judges' instead of rubrics, the protocols'."""
    add_input_args(p, format_required=False)
    add_out_args(p, "output folder (local to the driver, e.g. a shared mount)")
    p.add_argument("-v", "--verbose", action="store_true")
    add_scoring_args(p, "conciseness,grammar")
    j = p.add_argument_group("judges (instead of rubrics)")
    j.add_argument("--judges", default=None,
                   help="comma-separated LLM judges (plain, cot, rubrics or versions): judge the pairs in both "
                        "orders instead of scoring rubrics")
    add_judge_args(j)
    add_protocol_args(p)
    add_ray_args(p)


def ray_job(args, argv: list[str]) -> int:
    """``scripts/run_job.py``: the score job, the judge job (``--judges``) or ``--protocol``, with its step on Ray."""
    config, ray = config_for_pools(scoring_config(args), args), ray_step(args)
    if args.protocol is not None:
        if args.judges:
            raise RubricError(f"--judges is for the pairwise judges; --protocol {args.protocol} runs its own judge")
        return judge_protocol(args, ray=ray, config=config, command=shlex.join(["python", "scripts/run_job.py", *argv]))
    _check_flags(args)  # the protocol-only options, given without --protocol
    if args.format is None:
        raise RubricError("--format is required (or --protocol linkage|arena|lfqa-e)")
    if args.judges:
        from workers.judge_job import run_judge_job

        run_judge_job(args.inputs, args.format, judge_settings(args), args.out, config=config,
                      reader_options=reader_options(args), seed=args.seed, progress=not args.quiet, ray=ray,
                      force=args.force)
        return 0
    from workers.runner import run

    run(score_kind(args, ray=True), args.inputs, args.out, progress=not args.quiet, step=ray, force=args.force)
    return 0
