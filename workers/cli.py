"""The ``lfqa-rubric`` command line: score, fit, evaluate, export, demo, rubrics."""

from __future__ import annotations

import argparse
import logging
import sys
from importlib import resources
from pathlib import Path

from rubric.errors import ProvenanceError, RubricError

__all__ = ["main", "build_parser", "add_scoring_args", "scoring_config", "reader_options", "FORMATS"]

log = logging.getLogger("lfqa_rubric")

FORMATS = ("lfqa-hp", "lfqa-eval", "graded", "jsonl", "parquet", "csv", "hf")
DEMO_RUBRICS = ("conciseness,grammar,coherence,relevance,fluency,completeness,use_of_examples,specificity,"
                "factuality")


def add_scoring_args(p: argparse.ArgumentParser, default_rubrics: str) -> None:
    p.add_argument("--rubrics", default=default_rubrics,
                   help="comma-separated rubric names or versions (see 'lfqa-rubric rubrics')")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-answer-chars", type=int, default=50_000,
                   help="answers longer than this are rejected with a reason")
    p.add_argument("--max-question-chars", type=int, default=20_000,
                   help="questions longer than this are rejected with a reason")
    p.add_argument("--seed", type=int, default=0, help="seed for the splits and graded-pair sampling")
    p.add_argument("--llm-backend", choices=("vllm", "transformers"), default="vllm")
    p.add_argument("--llm-profile", default="cpu", help="model profile for the LLM rubrics (cpu, gpu)")
    p.add_argument("--llm-model", default=None, help="override the profile's model (Hub id or folder)")
    p.add_argument("--llm-layout", choices=("paper", "answer_first"), default="paper",
                   help="prompt layout: the paper's, or answer-first (shares the cached prefix across rubrics)")
    p.add_argument("--languagetool-url", default=None, help="LanguageTool server for grammar.languagetool.v1")
    p.add_argument("--factuality-corpus", default=None,
                   help="JSONL/Parquet corpus for BM25 evidence (default: documents attached to each answer)")
    p.add_argument("--corpus-text-field", default="text", help="the corpus's text field")
    p.add_argument("--corpus-id-field", default=None, help="the corpus's id field")
    p.add_argument("--specificity-model", default="gtfintechlab/SubjECTiveQA-SPECIFIC",
                   help="Hub id or folder of the SubjECTive-QA classifier (specificity.subjectiveqa.v1)")
    p.add_argument("--rescale", choices=("declared", "fitted"), default="declared",
                   help="1-5 by each rubric's declared range (paper) or by min-max fitted on the train split")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def add_judge_args(p: argparse.ArgumentParser) -> None:
    """How the judges run (``judge`` and ``scripts/run_job.py --judges``); the judges option is the caller's."""
    p.add_argument("--mode", choices=("logprob", "vote"), default="logprob",
                   help="logprob: verdict probabilities from one forward pass per order; vote: the paper's "
                        "generate-parse-majority")
    p.add_argument("--tie", action="store_true", help="offer the judges a tie option")
    p.add_argument("--n-votes", type=int, default=3, help="vote mode: generations per order")
    p.add_argument("--temperature", type=float, default=0.0, help="vote mode: 0 greedy (the paper), 1 sampled")
    p.add_argument("--max-reasoning-tokens", type=int, default=256, help="CoT judge: reasoning budget")


def judge_settings(args):
    """The ``JudgeSettings`` named by ``--judges`` and :func:`add_judge_args`'s options."""
    from workers.judge_job import JudgeSettings

    return JudgeSettings(args.judges, mode=args.mode, tie=args.tie, n_votes=args.n_votes,
                         temperature=args.temperature, seed=args.seed, max_reasoning_tokens=args.max_reasoning_tokens)


def scoring_config(args):
    import os

    from rubric.config import ScoringConfig

    return ScoringConfig(batch_size=args.batch_size, max_answer_chars=args.max_answer_chars,
                         max_question_chars=args.max_question_chars,
                         languagetool_url=args.languagetool_url or os.environ.get("LANGUAGETOOL_URL"),
                         llm_profile=args.llm_profile, llm_backend=args.llm_backend, llm_model=args.llm_model,
                         llm_layout=args.llm_layout, rescale=args.rescale, specificity_model=args.specificity_model,
                         factuality_corpus=args.factuality_corpus, factuality_text_field=args.corpus_text_field,
                         factuality_id_field=args.corpus_id_field)


def reader_options(args) -> dict:
    from rubric.readers import parse_mapping

    opts: dict = {"max_answer_chars": args.max_answer_chars, "max_question_chars": args.max_question_chars}
    if args.format == "graded":
        opts.update(max_pairs_per_question=args.max_pairs_per_question, seed=args.seed,
                    include_references=args.include_references)
    if getattr(args, "max_questions", None) is not None:  # only when given: an uncapped run's key is unchanged
        if args.format != "graded":
            raise RubricError(f"--max-questions reads a slice of graded lists (--format graded), not {args.format!r}")
        opts["max_questions"] = args.max_questions
    if args.format in ("jsonl", "parquet", "csv"):
        if not args.map:
            raise RubricError(f"format {args.format!r} needs --map "
                              "question=COL,answer_a=COL,answer_b=COL[,label=COL]")
        opts["mapping"] = parse_mapping(args.map)
        if args.labels:
            opts["label_values"] = parse_mapping(args.labels)
    if args.format == "hf":  # LFQA-HP-1M's field names unless --map names other columns
        if args.map:
            opts["mapping"] = parse_mapping(args.map)
            if args.labels:
                opts["label_values"] = parse_mapping(args.labels)
        if getattr(args, "hf_split", None):
            opts["split"] = args.hf_split
    return opts


def _score(args) -> int:
    from rubric.specs import resolve_rubrics

    specs = resolve_rubrics(args.rubrics)
    if getattr(args, "ray", False):
        from workers.ray_pipeline import config_for_pools, pools_from_args, run_ray_job

        run_ray_job(args.inputs, args.format, specs, args.out, config=config_for_pools(scoring_config(args), args),
                    reader_options=reader_options(args), seed=args.seed, pools=pools_from_args(args),
                    address=args.address, global_dedupe=args.global_dedupe,
                    read_concurrency=args.read_concurrency, progress=not args.quiet)
        return 0
    from workers.job import run_job

    run_job(args.inputs, args.format, specs, args.out, config=scoring_config(args),
            reader_options=reader_options(args), seed=args.seed, progress=not args.quiet)
    return 0


def _C_value(text: str) -> float | str:
    """``--C``: a positive number, or "cv" to choose it by cross-validation over questions."""
    if text == "cv":
        return "cv"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0 or 'cv', got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def _fit(args) -> int:
    from rubric.evaluate import fit_model, read_pairs

    pairs = read_pairs(args.outdir)
    features = args.features.split(",") if args.features else None
    # _demo builds its own Namespace without the newer flags, hence the defaults (the parser's)
    style = bool(getattr(args, "style", True))
    try:
        model, dm = fit_model(pairs, split=args.split, C=args.C, ties=args.ties, features=features, style=style,
                              decorrelate=bool(getattr(args, "decorrelate", False)),
                              cv_folds=int(getattr(args, "cv_folds", 5)),
                              n_boot_weights=int(getattr(args, "weight_boot", 200)),
                              seed=int(getattr(args, "seed", 0)))
    except ProvenanceError as e:  # the message comes from the table; say which file it is
        raise ProvenanceError(f"{Path(args.outdir) / 'pairs.parquet'}: {e}") from None
    model.to_json(args.out, trained_on=str(args.outdir), split=args.split, n_pairs=int(len(dm.y)),
                  excluded=dm.excluded, n_missing_rows=dm.n_missing_rows)
    if dm.excluded:
        log.warning("rubrics left out: %s", dm.excluded)
    log.info("fitted on %d %s pairs (%d ties dropped, %d with a missing rubric, %d unlabeled left out; C=%g; "
             "style covariates: %s) -> %s", len(dm.y), args.split, dm.n_ties_dropped, dm.n_missing_rows,
             dm.n_unlabeled, model.C, ", ".join(model.style_features_) or "none", args.out)
    return 0


def _evaluate(args) -> int:
    from rubric.evaluate import evaluate_model, read_pairs, write_report
    from rubric.preference import PreferenceModel

    model = PreferenceModel.from_json(args.model)
    pairs = read_pairs(args.outdir)
    # _demo builds its own Namespace without the flag, hence the default
    allow = bool(getattr(args, "allow_provenance_mismatch", False))
    try:
        ev = evaluate_model(model, pairs, split=args.split, n_boot=args.n_boot, allow_provenance_mismatch=allow,
                            seed=int(getattr(args, "seed", 0)))
    except ProvenanceError as e:
        raise ProvenanceError(f"model {args.model} vs table {Path(args.outdir) / 'pairs.parquet'}: {e}") from None
    report = Path(args.report) if args.report else Path(args.outdir) / f"report_{args.split}.md"
    text = write_report(ev, model, report)
    if any(c.startswith("aspect_") for c in pairs.column_names):
        # per-aspect human judgements (lfqa_eval): each rubric against its own aspect and the overall one
        from rubric.aspects import agreement_markdown, aspect_agreement_from_table

        rows = aspect_agreement_from_table(pairs, split=args.split, n_boot=args.n_boot,
                                           seed=int(getattr(args, "seed", 0)))
        text += "\n## Each rubric against people, aspect by aspect\n\n" + agreement_markdown(rows, split=args.split) + "\n"
        report.write_text(text)
    sys.stdout.write(text + "\n")
    log.info("report written to %s", report)
    return 0


def _predict(args) -> int:
    from rubric.evaluate import read_pairs
    from rubric.predict import predict_pairs, write_predictions
    from rubric.preference import PreferenceModel

    model = PreferenceModel.from_json(args.model)
    pairs = read_pairs(args.outdir)
    try:
        table = predict_pairs(model, pairs, split=args.split, allow_provenance_mismatch=args.allow_provenance_mismatch)
    except ProvenanceError as e:
        raise ProvenanceError(f"model {args.model} vs table {Path(args.outdir) / 'pairs.parquet'}: {e}") from None
    write_predictions(table, args.out)
    n_labeled = sum(1 for x in table.column("label").to_pylist() if x is not None)
    log.info("%d predictions (%d labeled, %d unlabeled) -> %s", table.num_rows, n_labeled, table.num_rows - n_labeled,
             args.out)
    return 0


def _export(args) -> int:
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    from rubric.evaluate import read_output_table

    table = read_output_table(args.outdir, args.table)
    src = f"{args.outdir} ({args.table})"
    dest = Path(args.to)
    suffix = dest.suffix.lower()
    if suffix == ".parquet":
        pq.write_table(table, dest)
    elif suffix == ".csv":
        pcsv.write_csv(table, dest)
    elif suffix == ".jsonl":
        import json

        with dest.open("w", encoding="utf-8") as f:
            for row in table.to_pylist():
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    else:
        raise RubricError(f"cannot export to {dest.name!r}: use .parquet, .csv or .jsonl")
    log.info("exported %d rows of %s to %s", table.num_rows, src, dest)
    return 0


def _encoder(args) -> int:
    import json

    from workers.encoder_job import run_encoder_job

    summary = run_encoder_job(args.outdir, out=args.out, head_dir=args.head, predictions=args.predictions,
                              encoder=args.encoder, device=args.device, batch_size=args.batch_size, C=args.C,
                              split=args.split, n_boot=args.n_boot, seed=args.seed, progress=not args.quiet)
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


def _perturb(args) -> int:
    from rubric.perturb import word_budget
    from workers.perturb_job import load_victim, run_perturb_job

    word_budget(1, args.budget)  # a bad --budget fails before the victim loads
    victim = load_victim(args.victim, device=args.device, batch_size=args.batch_size, config=scoring_config(args))
    summary = run_perturb_job(args.input, args.format, attack=args.attack, victim=victim, out=args.out,
                              reader_options=reader_options(args), budget=args.budget, seed=args.seed,
                              split=args.split, synonyms=args.synonyms, max_candidates=args.max_candidates,
                              progress=not args.quiet)
    def share(x) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    sys.stdout.write(f"{args.attack} vs {summary['victim']}: attack success rate "
                     f"{share(summary['attack_success_rate'])} ({summary['n_flipped']} of {summary['n_attacked']} "
                     f"attacked pairs flipped; {summary['counts']['skipped']} skipped); victim accuracy on the "
                     f"{args.split} split {share(summary['victim_accuracy_before'])} -> "
                     f"{share(summary['victim_accuracy_after'])} ({summary['n_scored']} pairs)\n")
    return 0


def _demo(args) -> int:
    from rubric.evaluate import evaluate_model, read_output_table, read_pairs, write_report
    from rubric.predict import predict_pairs, write_predictions
    from rubric.preference import PreferenceModel
    from rubric.readable import readable_view

    data = resources.files("rubric") / "data"
    out = Path(args.out)
    with resources.as_file(data / "sample_pairs.jsonl") as path, \
            resources.as_file(data / "sample_corpus.jsonl") as corpus:
        ns = argparse.Namespace(**{**vars(args), "inputs": [str(path)], "format": "lfqa-hp", "out": str(out),
                                   "map": None, "labels": None, "max_pairs_per_question": 50,
                                   "include_references": False,
                                   "factuality_corpus": args.factuality_corpus or str(corpus),
                                   "corpus_id_field": args.corpus_id_field or "id"})
        _score(ns)
    model_path = out / "model.json"
    _fit(argparse.Namespace(outdir=out, out=model_path, split="train", C=1.0, ties="drop", features=None))
    model, pairs = PreferenceModel.from_json(model_path), read_pairs(out)
    # Held-out pairs only: the sample's test split is 2 questions, and the report says its CIs are
    # unreliable. That is the honest result; reporting every pair would present in-sample numbers.
    ev = evaluate_model(model, pairs, split="test", n_boot=1000, seed=int(args.seed))
    write_report(ev, model, out / "report.md")
    first = ev.rows[0]
    log.info("held-out check: %s accuracy %.3f on %d test pairs of %d questions (too few for a meaningful CI; "
             "the baselines and the ablation are in %s)", first.system, first.values.get("accuracy", float("nan")),
             first.n, first.n_questions, out / "report.md")
    predictions = predict_pairs(model, pairs, split=None)
    write_predictions(predictions, out / "predictions.parquet")
    where = (f"Full tables in `{out}/`: every answer's vector with errors and provenance in `answers.parquet`, every "
             "pair with its differences in `pairs.parquet`, every prediction with its contributions in "
             "`predictions.parquet`, the claims behind factuality in `claims.parquet`, the model in `model.json`, "
             "and the metrics (held-out, with baselines, ablation and calibration) in `report.md`.")
    view = readable_view(read_output_table(out, "answers"), pairs, model, predictions, where=where)
    (out / "summary.md").write_text(view, encoding="utf-8")
    sys.stdout.write("\n" + view)
    log.info("this view is in %s", out / "summary.md")
    return 0


def _lfq(args) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from models.backends import check_backends
    from models.llm.lfq import classify_questions
    from models.llm.scorer import build_engine
    from rubric.geval import LFQ_FILTER_VERSION
    from rubric.readers import read_input

    config = scoring_config(args)
    check_backends([], config, backends=["llm"])  # a missing engine package stops here, before reading
    read = read_input(args.input, args.format, **reader_options(args))
    questions: dict[str, str] = {}
    n_pairs: dict[str, int] = {}
    for p in read.pairs:
        questions.setdefault(p.question_id, p.question)
        n_pairs[p.question_id] = n_pairs.get(p.question_id, 0) + 1
    engine = build_engine(config)
    qids = list(questions)
    decisions = classify_questions(engine, [questions[q] for q in qids])
    table = pa.table({
        "question_id": qids, "question": [questions[q] for q in qids], "n_pairs": [n_pairs[q] for q in qids],
        "is_lfq": [d.is_lfq for d in decisions], "p_yes": [d.p_yes for d in decisions],
        "log_score": [d.log_score for d in decisions], "confident": [d.confident for d in decisions],
        "error": [d.error for d in decisions],
        "model": [engine.model_id] * len(qids), "template": [LFQ_FILTER_VERSION] * len(qids),
    })
    pq.write_table(table, args.out)
    kept = sum(1 for d in decisions if d.is_lfq and d.confident)
    log.info("%d questions: %d long-form with confidence (log_score = 0), %d long-form, %d errors -> %s",
             len(qids), kept, sum(1 for d in decisions if d.is_lfq), sum(1 for d in decisions if d.error), args.out)
    return 0


def _transfer(args) -> int:
    from rubric.evaluate import read_pairs
    from rubric.transfer import transfer, transfer_markdown

    # One name per output folder: the same folder given on both sides (however spelled) is one set,
    # and its cell is in-distribution.
    names: dict[Path, str] = {}
    for given in [*args.train, *args.eval]:
        names.setdefault(Path(given).resolve(), given)
    tables = {name: read_pairs(path) for path, name in names.items()}
    train = {names[Path(t).resolve()]: tables[names[Path(t).resolve()]] for t in args.train}
    evals = {names[Path(e).resolve()]: tables[names[Path(e).resolve()]] for e in args.eval}
    result = transfer(train, evals, C=args.C, ties=args.ties, style=args.style, split=args.split, n_boot=args.n_boot,
                      seed=args.seed)
    text = transfer_markdown(result)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    sys.stdout.write(text)
    log.info("transfer table written to %s", out)
    return 0


def _judge(args) -> int:
    if args.protocol is not None:
        if args.ray:
            from workers.ray_pipeline import PoolConfig

            return judge_protocol(args, ray_pool=PoolConfig())
        return judge_protocol(args)
    if args.ray:
        raise RubricError("--ray is for --protocol here; the pairwise judges run on Ray with scripts/run_job.py "
                          "--judges")
    errors = protocol_flag_errors(args)
    if errors:
        raise RubricError("; ".join(errors))
    if args.format is None:
        raise RubricError("judge needs --format (or --protocol linkage|arena|lfqa-e)")
    from workers.judge_job import run_judge_job

    run_judge_job(args.inputs, args.format, judge_settings(args), args.out, config=scoring_config(args),
                  reader_options=reader_options(args), seed=args.seed, progress=not args.quiet)
    return 0


def protocol_flag_errors(args) -> list[str]:
    """Flags that the chosen ``--protocol`` (or the plain judges) does not take, as one message each."""
    only = {"--systems": ("systems", ("arena",)), "--answer-map": ("answer_map", ("arena",)),
            "--max-questions": ("max_questions", ("linkage", "arena", "lfqa-e")),
            "--max-answers-per-question": ("max_answers_per_question", ("linkage",)),
            "--linkage-systems": ("linkage_systems", ("linkage",)), "--no-signals": ("no_signals", ("linkage",)),
            "--references": ("references", ("linkage",)),
            "--reference-max-tokens": ("reference_max_tokens", ("linkage",)),
            "--reasoning-tokens": ("reasoning_tokens", ("arena",)),
            "--reference-template": ("reference_template", ("linkage",)),
            "--rubric-scores": ("rubric_scores", ("linkage", "lfqa-e")), "--rubric-model": ("rubric_model", ("lfqa-e",))}
    errors = []
    for flag, (dest, protocols) in only.items():
        value = getattr(args, dest)
        if value not in (None, False, []) and args.protocol not in protocols:
            errors.append(f"{flag} applies to --protocol {'/'.join(protocols)}, not "
                          f"{args.protocol or 'the pairwise judges (no --protocol)'}")
    if getattr(args, "reference_max_tokens", None) is not None and args.protocol == "linkage" \
            and args.references != "generated":
        errors.append("--reference-max-tokens applies to --references generated")
    elif getattr(args, "reference_max_tokens", None) is not None and not 1 <= args.reference_max_tokens <= 4096:
        errors.append(f"--reference-max-tokens must be in 1..4096, got {args.reference_max_tokens}")
    if getattr(args, "reference_template", None) is not None and args.protocol == "linkage" \
            and args.references != "generated":
        errors.append("--reference-template applies to --references generated")
    if args.protocol is not None and args.judges not in (None, "plain"):
        errors.append(f"--judges is for the pairwise judges; --protocol {args.protocol} runs its own judge")
    if args.protocol is not None and args.tie:
        errors.append(f"--tie is for the pairwise judges; --protocol {args.protocol}'s templates always offer one")
    return errors


def judge_protocol(args, *, ray_pool=None, address: str | None = None, command: str | None = None,
                   config=None) -> int:
    """Run ``--protocol``; with ``ray_pool`` its score/judge step runs on a Ray actor pool (report alike).

    Args:
        args: the judge command's arguments (or ``scripts/run_job.py``'s, which has the same options).
        ray_pool: a ``workers.ray_pipeline.PoolConfig``: LINKAGE actors, or the protocol's judge actors.
        address: the Ray address (None: join RAY_ADDRESS if set, else a local Ray).
        command: the command line quoted in the report (default: this process's, for ``lfqa-rubric``).
        config: the engine settings (default: from ``args``).
    """
    import shlex
    from functools import partial

    from workers import protocol_job

    errors = protocol_flag_errors(args)
    if errors:
        raise RubricError("; ".join(errors))
    if command is None:
        command = shlex.join(["lfqa-rubric", *sys.argv[1:]]) if sys.argv and "lfqa" in Path(sys.argv[0]).name else ""
    config = config or scoring_config(args)
    step, runner, run_linkage = None, "local", protocol_job.run_linkage_job
    if ray_pool is not None:
        from workers.ray_judges import ray_judge_step
        from workers.ray_protocols import run_ray_linkage_job

        step, runner = partial(ray_judge_step, pool=ray_pool, address=address), "ray"
        run_linkage = partial(run_ray_linkage_job, pool=ray_pool, address=address)
    judge_kwargs = {"mode": args.mode, "n_votes": args.n_votes, "temperature": args.temperature, "seed": args.seed,
                    "max_reasoning_tokens": args.max_reasoning_tokens}
    if args.protocol == "linkage":
        if args.format not in (None, "graded"):
            raise RubricError(f"--protocol linkage reads graded answer lists (--format graded), not {args.format!r}")
        opts = {"max_questions": args.max_questions, "max_answers_per_question": args.max_answers_per_question,
                "seed": args.seed, "max_answer_chars": args.max_answer_chars,
                "max_question_chars": args.max_question_chars}
        mode = "parse" if args.mode == "vote" else "logprob"
        run_linkage(args.inputs, args.out, config=config,
                    settings=protocol_job.LinkageSettings(
                        args.linkage_systems, mode=mode, references=args.references or "data",
                        reference_max_tokens=args.reference_max_tokens or 512,
                        reference_template=args.reference_template),
                    reader_options=opts, signals=not args.no_signals, rubric_scores=args.rubric_scores,
                    n_boot=args.n_boot, seed=args.seed, progress=not args.quiet, command=command)
    elif args.protocol == "arena":
        if len(args.inputs) != 1 or args.format is not None:
            raise RubricError("--protocol arena takes one annotation file (annotations_<domain>_with_citation.jsonl) "
                              "and no --format; the systems' answers come with --systems NAME=FILE")
        systems = _systems(args.systems)
        protocol_job.run_arena_job(args.inputs[0], systems, args.out, config=config, judge_kwargs=judge_kwargs,
                                   max_questions=args.max_questions, answer_mapping=args.answer_map,
                                   n_boot=args.n_boot, seed=args.seed, progress=not args.quiet, command=command,
                                   step=step, runner=runner, reasoning_tokens=args.reasoning_tokens or 0)
    else:
        if args.format is None:
            raise RubricError("--protocol lfqa-e needs --format (pairs with a reference answer, e.g. graded WebGLM "
                              "lists or lfqa-eval with a 'reference' field)")
        opts = reader_options(args)  # with --max-questions (graded lists only)
        protocol_job.run_lfqa_e_job(args.inputs, args.format, args.out, config=config, judge_kwargs=judge_kwargs,
                                    reader_options=opts, rubric_scores=args.rubric_scores,
                                    rubric_model=args.rubric_model, n_boot=args.n_boot, seed=args.seed,
                                    progress=not args.quiet, command=command, step=step, runner=runner)
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
    return shlex.join([*parts, "--out", args.out])


def _analyze(args) -> int:
    from rubric.analysis import analyze, parse_perturbed, write_analysis

    analysis = analyze(args.inputs, model=args.model, predictions=args.predictions,
                       perturbed=parse_perturbed(args.perturbed), split=args.split, n_boot=args.n_boot,
                       seed=args.seed, allow_provenance_mismatch=args.allow_provenance_mismatch)
    text = write_analysis(analysis, args.out, command=_analyze_command(args))
    sys.stdout.write(text + "\n")
    log.info("analysis of %d systems on %d %s pairs written to %s", len(analysis.systems),
             len(analysis.comparison.pair_ids), args.split, args.out)
    return 0


def _rubrics(args) -> int:
    from rubric.specs import DEFAULT_VERSIONS, EXTRA_SIGNALS, RUBRICS

    # Extra signals are opt-in (never in a default list): their bare name is shown, and the last
    # column says they are not one of the paper's rubrics.
    lines = ["| version | backend | raw range | default for | kind |", "|---|---|---|---|---|"]
    defaults = {v: k for k, v in {**DEFAULT_VERSIONS, **EXTRA_SIGNALS}.items()}
    for name in RUBRICS.names():
        s = RUBRICS.get(name)
        kind = "extra signal" if s.extra_signal else "rubric"
        lines.append(f"| {name} | {s.backend} | {s.raw_min:g} to {s.raw_max:.4g} | {defaults.get(name, '')} | {kind} |")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def add_protocol_args(p: argparse.ArgumentParser) -> None:
    """``judge --protocol``'s options (docs/protocols.md)."""
    g = p.add_argument_group("neighbouring protocols (docs/protocols.md)")
    g.add_argument("--protocol", choices=("linkage", "arena", "lfqa-e"), default=None,
                   help="LINKAGE listwise ranking on graded lists, RAG-QA Arena (systems vs the LFRQA reference), "
                        "LFQA-E reference-based three-way judging; default: the pairwise judges of --judges")
    g.add_argument("--systems", nargs="+", default=[], metavar="NAME=FILE",
                   help="arena: one answers file per system (JSONL/Parquet/CSV keyed by qid)")
    g.add_argument("--answer-map", default=None, help="arena: the answers files' columns, e.g. qid=id,answer=text,"
                                                      "label=human")
    g.add_argument("--max-questions", type=int, default=None, help="linkage, arena, lfqa-e (graded): only the first N questions")
    g.add_argument("--max-answers-per-question", type=int, default=None,
                   help="linkage: at most N candidates per question (seeded draw)")
    g.add_argument("--linkage-systems", default=None,
                   help="linkage: comma-separated of listwise,point_no_ref,point_with_ref,pairwise (default all)")
    g.add_argument("--references", choices=("data", "generated"), default=None,
                   help="linkage: reference lists from the data (default: WebGLM's groundK, one answer per grade) "
                        "or generated by the judge model from each question's golden answer "
                        "(linkage.create_multi_step_answer.v1, cached in OUT/generated_references.jsonl)")
    g.add_argument("--reference-max-tokens", type=int, default=None,
                   help="linkage --references generated: cap on new tokens per generated list (default 512)")
    g.add_argument("--reference-template", default=None,
                   choices=("linkage.create_multi_step_answer.v1", "linkage.create_multi_step_answer.v2"),
                   help="linkage --references generated: v1 is LINKAGE's prompt (default), v2 the same with the "
                        "assistant turn pre-filled with 'Answer1:'")
    g.add_argument("--reasoning-tokens", type=int, default=None, metavar="N",
                   help="arena: the judge first writes its own reasoning (greedy, at most N tokens, cut at "
                        "</thinking>), then the rating is read (arena.pairwise_reasoning.v1); default: the rating "
                        "after an empty <thinking></thinking>")
    g.add_argument("--no-signals", action="store_true",
                   help="linkage: leave out ROUGE-1/ROUGE-L, MiniLM similarity and length")
    g.add_argument("--rubric-scores", default=None, metavar="SCORE_OUT",
                   help="linkage: add each rubric's score; lfqa-e: add the rubric model (a score output over the "
                        "same input)")
    g.add_argument("--rubric-model", default=None, help="lfqa-e: the model JSON (default SCORE_OUT/model.json)")
    g.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates of the report's CIs")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lfqa-rubric", description=__doc__)
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("score", help="score answers and write feature tables")
    s.add_argument("inputs", nargs="+", help="input files, folders of files, globs or URIs (one job, one set of tables)")
    s.add_argument("--format", required=True, choices=FORMATS)
    s.add_argument("--out", required=True)
    s.add_argument("--map", default=None,
                   help="column mapping for jsonl/parquet/csv: question=q,answer_a=...,answer_b=...[,label=...] "
                        "(no label column, or an empty cell: an unlabeled pair)")
    s.add_argument("--labels", default=None, help="label value mapping, e.g. 1=a,2=b,0=tie")
    s.add_argument("--max-pairs-per-question", type=int, default=50, help="graded lists: cap per question")
    s.add_argument("--include-references", action="store_true", help="graded lists: also pair reference answers")
    s.add_argument("--max-questions", type=int, default=None,
                   help="graded lists: only the first N questions of each file (part of the score key)")
    s.add_argument("--hf-split", default=None,
                   help="--format hf: the split to read (default train); inputs are save_to_disk or Parquet-export "
                        "folders, or Hub dataset ids")
    add_scoring_args(s, "conciseness,grammar")
    s.add_argument("--ray", action="store_true", help="run the Ray Data pipeline (local Ray or $RAY_ADDRESS; docs/ray.md)")
    from workers.ray_pipeline import add_ray_arguments

    add_ray_arguments(s)
    s.set_defaults(func=_score)

    f = sub.add_parser("fit", help="train the preference model on the train split")
    f.add_argument("outdir")
    f.add_argument("--out", required=True, help="model JSON path")
    f.add_argument("--split", default="train")
    f.add_argument("--C", type=_C_value, default=1.0,
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
    f.add_argument("--weight-boot", type=int, default=200,
                   help="replicates of the bootstrap over training questions for the weights' 95%% CIs (0: none)")
    f.add_argument("--seed", type=int, default=0, help="seed of the weight bootstrap")
    f.set_defaults(func=_fit)

    e = sub.add_parser("evaluate", help="metrics with baselines, as Markdown + PNG")
    e.add_argument("outdir")
    e.add_argument("--model", required=True)
    e.add_argument("--split", default="test", choices=("train", "dev", "test", "all"))
    e.add_argument("--report", default=None, help="Markdown path (default OUTDIR/report_<split>.md)")
    e.add_argument("--n-boot", type=int, default=1000, help="question-clustered bootstrap replicates")
    e.add_argument("--allow-provenance-mismatch", action="store_true",
                   help="evaluate even if the table's rubrics were made differently from the model's "
                        "(the report lists every difference)")
    e.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    e.set_defaults(func=_evaluate)

    pr = sub.add_parser("predict", help="P(a preferred), the predicted label and per-feature contributions for "
                                        "every pair, labeled or not (Parquet)")
    pr.add_argument("outdir")
    pr.add_argument("--model", required=True)
    pr.add_argument("--out", required=True, help="predictions Parquet path")
    pr.add_argument("--split", default="all", choices=("train", "dev", "test", "all"))
    pr.add_argument("--allow-provenance-mismatch", action="store_true",
                    help="predict even if the table's rubrics were made differently from the model's "
                         "(the differences are logged and saved in the output's metadata)")
    pr.set_defaults(func=_predict)

    x = sub.add_parser("export", help="export a feature table to Parquet/CSV/JSONL")
    x.add_argument("outdir")
    x.add_argument("--to", required=True)
    x.add_argument("--table", choices=("pairs", "answers"), default="pairs")
    x.set_defaults(func=_export)

    en = sub.add_parser("encoder", help="train the trained-encoder baseline (frozen sentence encoder + logistic "
                                        "regression on embedding differences) on a score output's train split and "
                                        "predict every pair (OUT/encoder_predictions.parquet)")
    en.add_argument("outdir", help="a score output folder (answers.parquet, pairs.parquet)")
    en.add_argument("--out", default=None, help="head folder to write (default OUTDIR/encoder)")
    en.add_argument("--head", default=None, help="apply this trained head folder instead of training one")
    en.add_argument("--predictions", default=None, help="predictions Parquet (default OUTDIR/encoder_predictions.parquet)")
    en.add_argument("--encoder", default=None,
                    help="sentence encoder: a Hub id or a folder (default: the packaged all-MiniLM-L6-v2, offline)")
    en.add_argument("--device", default=None, help="torch device (default: CUDA when visible, else CPU)")
    en.add_argument("--batch-size", type=int, default=32, help="texts per forward pass")
    en.add_argument("--C", type=_C_value, default="cv",
                    help="inverse regularisation of the head, or 'cv' (default) to choose it by GroupKFold "
                         "cross-validation over the training questions")
    en.add_argument("--split", default="train", choices=("train", "dev", "test", "all"), help="split to train on")
    en.add_argument("--n-boot", type=int, default=1000, help="question-clustered bootstrap replicates of the test CI")
    en.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    en.add_argument("--quiet", action="store_true", help="no progress bars")
    en.set_defaults(func=_encoder)

    pt = sub.add_parser("perturb", help="DeepWordBug / TextFooler-style attack on one split against a trained victim; "
                                        "writes a perturbed copy in the input's format and FILE.changes.jsonl")
    pt.add_argument("input")
    pt.add_argument("--format", required=True, choices=FORMATS)
    pt.add_argument("--attack", required=True, choices=("deepwordbug", "textfooler"))
    pt.add_argument("--victim", required=True,
                    help="an encoder head folder (lfqa-rubric encoder) or a preference model (model.json, or a folder "
                         "holding it; its rubrics are re-scored for every probe: cheap CPU rubrics only)")
    pt.add_argument("--out", required=True, help="the perturbed copy (same extension as the input)")
    pt.add_argument("--budget", type=float, default=0.1,
                    help="share of each answer's words that may change: at most ceil(budget * words)")
    pt.add_argument("--split", default="test", choices=("train", "dev", "test", "all"),
                    help="split to attack, as a single-input score job with the same --seed assigns it")
    pt.add_argument("--synonyms", choices=("auto", "wordnet", "embedding"), default="auto",
                    help="textfooler's synonym source: WordNet (primary; Debian's wordnet-base) or MiniLM neighbours "
                         "over the input's words (auto: WordNet when installed)")
    pt.add_argument("--max-candidates", type=int, default=8, help="textfooler: synonyms tried per word")
    pt.add_argument("--device", default=None, help="torch device of an encoder victim")
    pt.add_argument("--map", default=None, help="column mapping for jsonl/parquet/csv (label optional)")
    pt.add_argument("--labels", default=None, help="label value mapping, e.g. 1=a,2=b,0=tie")
    pt.add_argument("--max-pairs-per-question", type=int, default=50, help="graded lists: cap per question")
    pt.add_argument("--include-references", action="store_true", help="graded lists: also pair reference answers")
    add_scoring_args(pt, "")
    pt.set_defaults(func=_perturb)

    d = sub.add_parser("demo", help="score the bundled sample, fit and report")
    d.add_argument("--out", default="demo-out")
    add_scoring_args(d, DEMO_RUBRICS)
    d.set_defaults(func=_demo, batch_size=64)  # the whole sample in one batch: one engine call per stage

    q = sub.add_parser("lfq", help="classify the input's questions as long-form or not (paper appendix A.4)")
    q.add_argument("input")
    q.add_argument("--format", required=True, choices=FORMATS)
    q.add_argument("--out", required=True, help="questions table (Parquet): is_lfq, p_yes, log_score, confident")
    q.add_argument("--map", default=None, help="column mapping for jsonl/parquet/csv (label optional)")
    q.add_argument("--labels", default=None)
    q.add_argument("--max-pairs-per-question", type=int, default=50)
    q.add_argument("--include-references", action="store_true")
    add_scoring_args(q, "")
    q.set_defaults(func=_lfq)

    t = sub.add_parser("transfer", help="fit on each training output's train split, evaluate on every "
                                        "evaluation output's test split (Markdown table)")
    t.add_argument("--train", nargs="+", required=True, metavar="OUT", help="score outputs to fit on")
    t.add_argument("--eval", nargs="+", required=True, metavar="OUT",
                   help="score outputs to evaluate on (a training output here is its in-distribution cell)")
    t.add_argument("--out", required=True, help="Markdown path")
    t.add_argument("--split", default="test", choices=("dev", "test"), help="evaluated split of each --eval output")
    t.add_argument("--C", type=float, default=1.0)
    t.add_argument("--ties", choices=("drop", "three_way"), default="drop")
    t.add_argument("--style", action=argparse.BooleanOptionalAction, default=True,
                   help="fit with the style covariates (length, markdown) and add the style-controlled table")
    t.add_argument("--n-boot", type=int, default=1000, help="question-clustered bootstrap replicates per cell")
    t.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    t.set_defaults(func=_transfer)

    j = sub.add_parser("judge", help="LLM judges over pairs, both orders (judgments.parquet); --protocol runs "
                                      "LINKAGE (linkage.parquet), RAG-QA Arena or LFQA-E")
    j.add_argument("inputs", nargs="+", help="input files, folders, globs or URIs (one job)")
    j.add_argument("--format", default=None, choices=FORMATS,
                   help="input format (required without --protocol; linkage: graded; arena: none)")
    j.add_argument("--out", required=True, help="output folder (its own: not a score output folder)")
    j.add_argument("--map", default=None, help="column mapping for jsonl/parquet/csv: question=q,answer_a=...")
    j.add_argument("--labels", default=None, help="label value mapping, e.g. 1=a,2=b,0=tie")
    j.add_argument("--max-pairs-per-question", type=int, default=50, help="graded lists: cap per question")
    j.add_argument("--include-references", action="store_true", help="graded lists: also pair reference answers")
    j.add_argument("--judges", default="plain", help="comma-separated judges: plain, cot, rubrics (or versions)")
    add_judge_args(j)
    add_scoring_args(j, "")
    add_protocol_args(j)
    j.add_argument("--ray", action="store_true",
                   help="--protocol: run the judge/score step on a Ray pool of one actor (local Ray, or RAY_ADDRESS); "
                        "scripts/run_job.py --protocol sizes the pool")
    j.set_defaults(func=_judge)

    an = sub.add_parser("analyze", help="the rubric model, LLM judges and baselines on the same pairs: accuracy, "
                                         "transitivity, position and verbosity bias, perturbations (Markdown + PNG)")
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
    an.add_argument("--split", default="test", choices=("train", "dev", "test", "all"))
    an.add_argument("--n-boot", type=int, default=1000, help="question-clustered bootstrap replicates")
    an.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    an.add_argument("--allow-provenance-mismatch", action="store_true",
                    help="apply the model even if the table's rubrics were made differently")
    an.set_defaults(func=_analyze)

    r = sub.add_parser("rubrics", help="list the registered rubric versions")
    r.set_defaults(func=_rubrics)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from workers.logs import configure_logging

    configure_logging(args.verbose)  # before any engine is imported: vLLM reads its level at import
    try:
        return args.func(args)
    except (RubricError, OSError) as e:
        # One line, whatever the message holds (a list of problems, a library's multi-line text),
        # so the error is what the user sees last and a log grep finds it whole.
        text = "; ".join(line.strip() for line in str(e).split("\n") if line.strip()) or type(e).__name__
        sys.stderr.write(f"lfqa-rubric: error: {text}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
