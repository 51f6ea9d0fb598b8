"""Score shards on Ray: the entry point of ``ray job submit``.

    ray job submit --working-dir . -- python scripts/run_job.py data/ --format lfqa-hp \\
        --rubrics conciseness,grammar,coherence --out /shared/out

Inputs are shard files, directories of shards, globs, or pyarrow filesystem URIs (s3://, gs://).
Shards are scored on Ray; the job is then assembled once (splits over the whole job, rescaling
fitted once) into the same --out layout as `lfqa-rubric score`: answers.parquet, pairs.parquet,
rejects.jsonl, manifest.json, with per-shard raw scores under OUT/scores/ for resume.
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

from workers.cli import FORMATS, add_scoring_args, reader_options, scoring_config  # noqa: E402
from rubric.errors import RubricError  # noqa: E402

log = logging.getLogger("lfqa_rubric.run_job")


def build_parser() -> argparse.ArgumentParser:
    from workers.ray_pipeline import add_ray_arguments

    p = argparse.ArgumentParser(prog="run_job.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", help="shard files, directories, globs or URIs")
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("--out", required=True, help="output folder (local to the driver, e.g. a shared mount)")
    p.add_argument("--map", default=None, help="column mapping for jsonl/parquet/csv: question=q,answer_a=...")
    p.add_argument("--labels", default=None, help="label value mapping, e.g. 1=a,2=b,0=tie")
    p.add_argument("--max-pairs-per-question", type=int, default=50, help="graded lists: cap per question")
    p.add_argument("--include-references", action="store_true", help="graded lists: also pair reference answers")
    p.add_argument("-v", "--verbose", action="store_true")
    add_scoring_args(p, "conciseness,grammar")
    add_ray_arguments(p)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from rubric.specs import resolve_rubrics
    from workers.ray_pipeline import config_for_pools, pools_from_args, run_ray_job

    try:
        run_ray_job(args.inputs, args.format, resolve_rubrics(args.rubrics), args.out,
                    config=config_for_pools(scoring_config(args), args), reader_options=reader_options(args),
                    seed=args.seed, pools=pools_from_args(args), address=args.address,
                    global_dedupe=args.global_dedupe, progress=not args.quiet)
    except (RubricError, OSError) as e:
        sys.stderr.write(f"run_job: error: {e}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
