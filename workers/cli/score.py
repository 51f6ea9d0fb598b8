"""``score`` (answers -> feature tables, in process or on Ray) and ``demo`` (the bundled sample end to end)."""

from __future__ import annotations

import argparse
import logging
from importlib import resources
from pathlib import Path

from workers.cli.options import (add_input_args, add_ray_args, add_scoring_args, config_for_pools, ray_step,
                                 reader_options, scoring_config)

__all__ = ["add_score", "score", "add_demo", "demo", "DEMO_RUBRICS"]

log = logging.getLogger("lfqa_rubric")

DEMO_RUBRICS = ("conciseness,grammar,coherence,relevance,fluency,completeness,use_of_examples,specificity,"
                "factuality")


def add_score(p: argparse.ArgumentParser) -> None:
    add_input_args(p, slices=True)
    p.add_argument("--out", required=True)
    add_scoring_args(p, "conciseness,grammar")
    p.add_argument("--ray", action="store_true", help="run the Ray Data pipeline (local Ray or $RAY_ADDRESS; docs/ray.md)")
    add_ray_args(p)


def score(args) -> int:
    from rubric.scoring import resolve_rubrics
    from workers.job import run_job

    run_job(args.inputs, args.format, resolve_rubrics(args.rubrics), args.out,
            config=config_for_pools(scoring_config(args), args) if args.ray else scoring_config(args),
            reader_options=reader_options(args), seed=args.seed, progress=not args.quiet,
            ray=ray_step(args) if args.ray else None)
    return 0


def add_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="demo-out")
    add_scoring_args(p, DEMO_RUBRICS)


def _parse(add_arguments, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed by one command's options: every default comes from the command's own parser."""
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(argv)


def demo(args) -> int:
    from workers.cli.tables import add_evaluate, add_fit, evaluate, fit

    data = resources.files("rubric") / "data"
    out = Path(args.out)
    with resources.as_file(data / "sample_pairs.jsonl") as path, \
            resources.as_file(data / "sample_corpus.jsonl") as corpus:
        score_args = _parse(add_score, [str(path), "--format", "lfqa-hp", "--out", str(out)])
        score(argparse.Namespace(**{**vars(score_args), **vars(args), "inputs": [str(path)], "format": "lfqa-hp",
                                    "out": str(out), "factuality_corpus": args.factuality_corpus or str(corpus),
                                    "corpus_id_field": args.corpus_id_field or "id"}))
    model_path = out / "model.json"
    fit(_parse(add_fit, [str(out), "--out", str(model_path)]))
    # Held-out pairs only: the sample's test split is 2 questions, and the report says its CIs are
    # unreliable. That is the honest result; reporting every pair would present in-sample numbers.
    evaluate(_parse(add_evaluate, [str(out), "--model", str(model_path), "--split", "test",
                                   "--report", str(out / "report.md")]))
    from workers.report_cmd import html_report

    html_report([out], out / "report.html")
    log.info("demo outputs in %s: answers.parquet, pairs.parquet, claims.parquet, rejects.jsonl, manifest.json, "
             "model.json, report.md, report.png", out)
    return 0
