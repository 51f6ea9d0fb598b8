"""``score`` (answers -> feature tables, in process or on Ray) and ``demo`` (the bundled sample end to end)."""

from __future__ import annotations

import argparse
import logging
import sys
from importlib import resources

from workers.cli.options import (add_budget_args, add_input_args, add_out_args, add_ray_args, add_scoring_args,
                                 ray_step, score_kind)

__all__ = ["add_score", "score", "add_demo", "demo", "demo_rubrics", "DEMO_RUBRICS", "DEMO_PROFILE_LINES"]

log = logging.getLogger("lfqa_rubric")

#: The demo's rubrics: the paper's nine names, each taken in the cpu preset's version (a named version,
#: ``coherence.geval.v1``, runs as named), and the preset's signals (qa_similarity, information), on purpose: the
#: demo fits the preset's model.
DEMO_RUBRICS = ("conciseness,grammar,coherence,relevance,fluency,completeness,use_of_examples,specificity,"
                "factuality,qa_similarity,information")

#: What the demo says about the profile it runs, one line each.
DEMO_PROFILE_LINES = (
    "the paper's LLM rubrics (coherence, relevance, fluency, completeness, use of examples, specificity, factuality) "
    "need a GPU model to mean anything: lfqa-rubric score ... --llm-profile gpu (docs/llm.md)",
    "this demo runs the cpu preset instead: CPU versions of the nine that stand in for them (MiniLM sentence "
    "embeddings, spaCy, Harper, example cues), each with its measured information in docs/cpu-profile.md",
)


def add_score(p: argparse.ArgumentParser) -> None:
    add_input_args(p, slices=True)
    add_out_args(p, "output folder: a new or empty one, or one an earlier lfqa-rubric score run wrote")
    add_scoring_args(p, "conciseness,grammar")
    p.add_argument("--ray", action="store_true", help="run the Ray Data pipeline (local Ray or $RAY_ADDRESS; docs/ray.md)")
    add_budget_args(p, retry=True)
    add_ray_args(p)


def score(args) -> int:
    """Exit status 0; a rubric over the failure budget (the run published; ``--max-failed``) raises, and the
    dispatch (:func:`workers.cli.run_command`) exits 3."""
    from workers.runner import run

    run(score_kind(args, ray=args.ray), args.inputs, args.out, progress=not args.quiet,
        step=ray_step(args) if args.ray else None, force=args.force,
        retry_failed=getattr(args, "retry_failed", False))
    return 0


#: The demo's claim-extraction budget (the job's default is ``DEFAULT_MAX_CLAIM_TOKENS``, 256): on the
#: sample, 96 tokens per sentence keep 195 of the 204 claims and halve factuality's generated tokens
#: (docs/factuality.md, "The extraction budget, and the demo's"). Recorded in factuality's provenance like any budget.
DEMO_MAX_CLAIM_TOKENS = 96


def add_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="demo-out")
    add_scoring_args(p, DEMO_RUBRICS)
    # the whole sample in one batch: one engine call per stage; the MiniLM rubrics encode as the cpu preset's do
    from rubric.presets import CPU

    p.set_defaults(batch_size=64, factuality_max_claim_tokens=DEMO_MAX_CLAIM_TOKENS, minilm_encoder=CPU.minilm_encoder)


def _parse(add_arguments, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed by one command's options: every default comes from the command's own parser."""
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(argv)


def demo_rubrics(names: str) -> tuple[str, bool]:
    """The demo's ``--rubrics``: a bare name takes the cpu preset's version, a named version stays as named.

    Returns:
        The comma-separated versions, and whether every one is the cpu preset's (the model is then
        recorded as fitted with ``--preset cpu``).
    """
    from rubric.presets import CPU

    versions = [CPU.versions.get(n, n) for n in (x.strip() for x in names.split(",")) if n]
    return ",".join(versions), set(versions) <= set(CPU.versions.values())


def _append_cost(out) -> None:
    """The score run's cost section (``rubric.tables.cost_markdown``) at the end of ``OUT/report.md``."""
    from rubric.io import read_manifest
    from rubric.tables import cost_markdown
    from workers.storage.outdir import output_file

    cost = (read_manifest(out) or {}).get("cost")
    if not cost:
        return
    text = (out / "report.md").read_text(encoding="utf-8")
    with output_file(out / "report.md") as tmp:
        tmp.write_text(text.rstrip("\n") + "\n\n" + cost_markdown(cost, max_failed=cost.get("max_failed")),
                       encoding="utf-8")


def demo(args) -> int:
    from rubric.preference import (PreferenceModel, evaluate_model, predict_pairs, read_output_table, read_pairs,
                                   readable_view, write_predictions, write_report)
    from workers.cli.tables import add_fit, fit
    from workers.storage.outdir import out_path, output_file
    from workers.cli.report import html_report

    for line in DEMO_PROFILE_LINES:
        log.info("%s", line)
    rubrics, profile_only = demo_rubrics(args.rubrics)
    data = resources.files("rubric") / "data"
    out = out_path(args.out)
    with (resources.as_file(data / "sample_pairs.jsonl") as path,
          resources.as_file(data / "sample_corpus.jsonl") as corpus):
        score_args = _parse(add_score, [str(path), "--format", "lfqa-hp", "--out", str(out)])
        score(argparse.Namespace(**{**vars(score_args), **vars(args), "inputs": [str(path)], "format": "lfqa-hp",
                                    "out": str(out), "rubrics": rubrics,
                                    "factuality_corpus": args.factuality_corpus or str(corpus),
                                    "corpus_id_field": args.corpus_id_field or "id"}))
    model_path = out / "model.json"
    # the cpu preset's model settings are fit's defaults; the preset is recorded when every rubric is its
    fit(argparse.Namespace(**{**vars(_parse(add_fit, [str(out), "--out", str(model_path)])),
                              "preset": "cpu" if profile_only else None}))
    model, pairs = PreferenceModel.from_json(model_path), read_pairs(out)
    # Held-out pairs only: the sample's test split is 2 questions, and the report says its CIs are
    # unreliable. That is the honest result; reporting every pair would present in-sample numbers.
    ev = evaluate_model(model, pairs, split="test", n_boot=1000, seed=int(args.seed))
    write_report(ev, model, out / "report.md")
    _append_cost(out)
    first = ev.rows[0]
    log.info("held-out check: %s accuracy %.3f on %d test pairs of %d questions (too few for a meaningful CI; "
             "the baselines and the ablation are in %s)", first.system, first.values.get("accuracy", float("nan")),
             first.n, first.n_questions, out / "report.md")
    predictions = predict_pairs(model, pairs, split=None)
    with output_file(out / "predictions.parquet") as tmp:
        write_predictions(predictions, tmp)
    claims = "the claims behind factuality in `claims.parquet`, " if (out / "claims.parquet").is_file() else ""
    where = (f"Full tables in `{out}/`: every answer's vector with errors and provenance in `answers.parquet`, every "
             "pair with its differences in `pairs.parquet`, every prediction with its contributions in "
             f"`predictions.parquet`, {claims}the model in `model.json`, "
             "the metrics (held-out, with baselines, ablation and calibration) in `report.md`, and all of it as "
             "one page in `report.html`.")
    view = readable_view(read_output_table(out, "answers"), pairs, model, predictions, where=where)
    with output_file(out / "summary.md") as tmp:
        tmp.write_text(view, encoding="utf-8")
    sys.stdout.write("\n" + view)
    log.info("this view is in %s", out / "summary.md")
    html_report([out], out / "report.html")
    return 0
