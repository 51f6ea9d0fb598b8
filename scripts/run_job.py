"""Score shards on Ray: the entry point of ``ray job submit``.

    ray job submit --working-dir . -- python scripts/run_job.py data/ --format lfqa-hp \\
        --rubrics conciseness,grammar,coherence --out /shared/out

Inputs are shard files, directories of shards, globs, or pyarrow filesystem URIs (s3://, gs://).
Shards are scored on Ray; the job is then assembled once (splits over the whole job, rescaling
fitted once) into the same --out layout as `lfqa-rubric score`: answers.parquet, pairs.parquet,
rejects.jsonl, manifest.json, with per-shard raw scores under OUT/scores/ for resume.
With --judges (plain, cot, rubrics), the job judges the pairs instead, in both orders, on a pool
of judge actors sized by the LLM pool's options (--llm-actors, --cpus-per-llm-actor,
--gpus-per-llm-actor, --ray-batch-size), and writes the same folder as `lfqa-rubric judge`:
judgments.parquet, rejects.jsonl, manifest.json, with per-shard verdicts under OUT/judge_scores/:

    ray job submit --working-dir . -- python scripts/run_job.py data/ --format lfqa-hp \
        --judges plain,cot --llm-profile gpu --out /shared/judged

With --protocol linkage|arena|lfqa-e, the job is `lfqa-rubric judge --protocol ...` (the same options,
docs/protocols.md) with its step on Ray: LINKAGE on a pool of LINKAGE actors (whole questions per
Ray batch, a store checkpoint per returned batch), RAG-QA Arena and LFQA-E on the judge actors; it
writes the same folder as the local command, report.md included:

    ray job submit --working-dir . -- python scripts/run_job.py WEBGLM_50.json --protocol linkage \
        --rubric-scores /shared/webglm_score --llm-actors 2 --out /shared/linkage

Exit status: 0 when the tables were written, 2 when they were not (an input could not be read,
a usage error, a missing backend); the message names the cause.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

# `python scripts/run_job.py` puts scripts/ on sys.path, not the checkout (or Ray's --working-dir).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workers.cli import (FORMATS, add_judge_args, add_protocol_args, add_scoring_args,  # noqa: E402
                         judge_protocol, judge_settings, protocol_flag_errors, reader_options, scoring_config)
from rubric.errors import RubricError  # noqa: E402

log = logging.getLogger("lfqa_rubric.run_job")


def build_parser() -> argparse.ArgumentParser:
    from workers.ray_pipeline import add_ray_arguments

    p = argparse.ArgumentParser(prog="run_job.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", help="shard files, directories, globs or URIs")
    p.add_argument("--format", default=None, choices=FORMATS,
                   help="input format (required without --protocol; linkage: graded; arena: none)")
    p.add_argument("--out", required=True, help="output folder (local to the driver, e.g. a shared mount)")
    p.add_argument("--map", default=None, help="column mapping for jsonl/parquet/csv: question=q,answer_a=...")
    p.add_argument("--labels", default=None, help="label value mapping, e.g. 1=a,2=b,0=tie")
    p.add_argument("--max-pairs-per-question", type=int, default=50, help="graded lists: cap per question")
    p.add_argument("--include-references", action="store_true", help="graded lists: also pair reference answers")
    p.add_argument("-v", "--verbose", action="store_true")
    add_scoring_args(p, "conciseness,grammar")
    j = p.add_argument_group("judges (instead of rubrics)")
    j.add_argument("--judges", default=None,
                   help="comma-separated LLM judges (plain, cot, rubrics or versions): judge the pairs in both "
                        "orders instead of scoring rubrics")
    add_judge_args(j)
    add_protocol_args(p)
    add_ray_arguments(p)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from workers.logs import configure_logging

    # before any engine is imported: vLLM reads its log level at import; engines and Ray at WARNING
    configure_logging(args.verbose, fmt="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from rubric.scoring import resolve_rubrics
    from workers.ray_pipeline import config_for_pools, pools_from_args, run_ray_job

    try:
        if (args.protocol is not None or args.judges) and args.llm_batches_in_flight > 1:
            raise RubricError("--llm-batches-in-flight is for the scoring job's llm and factuality pools; judge and "
                              "protocol actors score one batch at a time")
        if args.protocol is not None:
            import shlex

            if args.judges:
                raise RubricError(f"--judges is for the pairwise judges; --protocol {args.protocol} runs its own judge")
            return judge_protocol(args, ray_pool=pools_from_args(args)["llm"], address=args.address,
                                  config=config_for_pools(scoring_config(args), args),
                                  command=shlex.join(["python", "scripts/run_job.py", *(argv or sys.argv[1:])]))
        errors = protocol_flag_errors(args)  # the protocol-only options, given without --protocol
        if errors:
            raise RubricError("; ".join(errors))
        if args.format is None:
            raise RubricError("--format is required (or --protocol linkage|arena|lfqa-e)")
        if args.judges:
            from workers.ray_judges import run_ray_judge_job

            run_ray_judge_job(args.inputs, args.format, judge_settings(args), args.out,
                              config=config_for_pools(scoring_config(args), args), reader_options=reader_options(args),
                              seed=args.seed, pool=pools_from_args(args)["llm"], address=args.address,
                              progress=not args.quiet)
            return 0
        run_ray_job(args.inputs, args.format, resolve_rubrics(args.rubrics), args.out,
                    config=config_for_pools(scoring_config(args), args), reader_options=reader_options(args),
                    seed=args.seed, pools=pools_from_args(args), address=args.address,
                    global_dedupe=args.global_dedupe,
                    read_concurrency=args.read_concurrency, progress=not args.quiet)
    except (RubricError, OSError) as e:
        sys.stderr.write(f"run_job: error: {e}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
