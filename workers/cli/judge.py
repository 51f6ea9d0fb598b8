"""``judge`` (LLM judges over pairs; ``--protocol NAME``, a protocol of ``workers.protocols``) and the Ray job
of ``scripts/run_job.py`` (a score, judge or protocol job with its step on Ray)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from rubric.errors import RubricError
from workers.cli.options import (add_budget_args, add_input_args, add_judge_args, add_out_args, add_protocol_args,
                                 add_ray_args, add_scoring_args, config_for_pools, judge_settings,
                                 protocol_options, ray_step, reader_options, score_kind, scoring_config)

__all__ = ["add_judge", "judge", "add_ray_job", "ray_job", "protocol_flag_errors", "judge_protocol"]

def add_judge(j: argparse.ArgumentParser) -> None:
    add_input_args(j, format_required=False)
    add_out_args(j, "output folder (its own: not a score output folder)")
    j.add_argument("--judges", default="plain", help="comma-separated judges: plain, cot, rubrics (or versions)")
    add_judge_args(j)
    add_scoring_args(j, "")
    add_budget_args(j, retry=False)
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
        raise RubricError("judge needs --format (or --protocol NAME)")
    from workers.jobs import run_judge_job

    run_judge_job(
        args.inputs, args.format, judge_settings(args), args.out, config=config, reader_options=reader_options(args),
        seed=args.seed, progress=not args.quiet, ray=ray, force=args.force, max_failed=args.max_failed)
    return 0


def protocol_flag_errors(args) -> list[str]:
    """Flags that the chosen ``--protocol`` (or the plain judges) does not take, as one message each."""
    errors = protocol_options(args, None)[1] if args.protocol is None else []
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
        ray: a ``workers.cluster.pipeline.RayStep`` (the protocol's engine actors: its "llm" pool).
        command: the command line quoted in the report (default: this process's, for ``lfqa-rubric``).
        config: the engine settings (default: from ``args``).
    """
    from workers.protocols import PROTOCOLS, ProtocolRun

    _check_flags(args)
    options, errors = protocol_options(args, args.protocol)
    if errors:
        raise RubricError("; ".join(errors))
    if command is None:
        command = shlex.join(["lfqa-rubric", *sys.argv[1:]]) if sys.argv and "lfqa" in Path(sys.argv[0]).name else ""
    judge_kwargs = {"mode": args.mode, "n_votes": args.n_votes, "temperature": args.temperature, "seed": args.seed,
                    "max_reasoning_tokens": args.max_reasoning_tokens}
    run = ProtocolRun(inputs=list(args.inputs), out=args.out, config=config or scoring_config(args), fmt=args.format,
                      judge=judge_kwargs, reader_options=reader_options(args) if args.format else {},
                      seed=args.seed, n_boot=args.n_boot, progress=not args.quiet, command=command, ray=ray,
                      force=args.force)
    # a protocol's judge keeps the default failure budget (``ProtocolRun`` does not carry --max-failed)
    PROTOCOLS.get(args.protocol).run(run, options)
    return 0


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
    add_budget_args(p, retry=False)
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
        raise RubricError("--format is required (or --protocol NAME)")
    if args.judges:
        from workers.jobs import run_judge_job

        run_judge_job(
            args.inputs, args.format, judge_settings(args), args.out, config=config,
            reader_options=reader_options(args), seed=args.seed, progress=not args.quiet, ray=ray, force=args.force,
            max_failed=args.max_failed)
        return 0
    from workers.runner import run

    run(score_kind(args, ray=True), args.inputs, args.out, progress=not args.quiet,
        step=ray, force=args.force)
    return 0
