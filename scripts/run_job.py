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
import sys
from pathlib import Path

# `python scripts/run_job.py` puts scripts/ on sys.path, not the checkout (or Ray's --working-dir).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workers.cli import add_ray_job, ray_job, run_command  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="run_job.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_ray_job(p)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    from workers.logs import configure_logging

    # before any engine is imported: vLLM reads its log level at import; engines and Ray at WARNING
    configure_logging(args.verbose, fmt="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return run_command(lambda: ray_job(args, argv), "run_job")


if __name__ == "__main__":
    raise SystemExit(main())
