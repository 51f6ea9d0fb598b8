"""The command line's option groups, each defined once, and what they turn into.

Every command that reads pairs takes :func:`add_input_args`; every command that scores or judges
takes :func:`add_scoring_args` (-> :func:`scoring_config`); the judges' options are
:func:`add_judge_args` (-> :func:`judge_settings`), ``--protocol``'s :func:`add_protocol_args`,
and Ray's :func:`add_ray_args` (-> :func:`pools_from_args`, :func:`config_for_pools`). Defaults are
read from the objects the options build (``ScoringConfig``, ``JudgeSettings``, ``PoolConfig``,
the graded reader), so each default has one home.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
from dataclasses import replace
from typing import Any

from rubric.config import MINILM_ENCODERS, ScoringConfig, check_range, check_split_fractions
from rubric.errors import ConfigError, RubricError
from rubric.io import FORMATS, parse_label_values, parse_mapping, read_graded

__all__ = ["FORMATS", "add_input_args", "add_out_args", "add_scoring_args", "add_judge_args", "add_protocol_args",
           "protocol_options", "PROTOCOL_DEST", "add_ray_args",
           "reader_options", "scoring_config", "judge_settings", "pools_from_args", "config_for_pools", "score_kind", "ray_step",
           "C_value"]

_CONFIG = ScoringConfig()


def _default(fn, name: str) -> Any:
    """The default of ``fn``'s parameter ``name`` (the function or class that owns it)."""
    return inspect.signature(fn).parameters[name].default


def C_value(text: str) -> float | str:
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


def split_fractions(text: str) -> tuple[float, float, float]:
    """``--split-fractions``: three comma-separated non-negative shares summing to 1 (train, dev, test)."""
    try:
        return check_split_fractions(text.split(","))
    except ConfigError:
        raise argparse.ArgumentTypeError(f"must be three non-negative shares summing to 1 (TRAIN,DEV,TEST), "
                                         f"got {text!r}") from None


def add_input_args(p: argparse.ArgumentParser, *, many: bool = True, format_required: bool = True,
                   slices: bool = False) -> None:
    """Which pairs a command reads: inputs, ``--format``, ``--map``/``--labels`` and the graded lists' options.

    Args:
        many: ``inputs`` (files, folders, globs, URIs: one job) instead of one ``input`` file.
        format_required: without it ``--format`` may be left out (``judge --protocol``).
        slices: also ``--max-questions`` and ``--hf-split`` (the score job's slices of an input).
    """
    if many:
        p.add_argument("inputs", nargs="+", help="input files, folders of files, globs or URIs (one job)")
    else:
        p.add_argument("input")
    p.add_argument("--format", required=format_required, default=None, choices=FORMATS,
                   help="input format" + ("" if format_required else
                                          " (required without --protocol; linkage: graded; arena: none)"))
    p.add_argument("--map", default=None,
                   help="column mapping for jsonl/parquet/csv: question=q,answer_a=...,answer_b=...[,label=...] "
                        "(no label column, or an empty cell: an unlabeled pair)")
    p.add_argument("--labels", default=None, help="label value mapping, e.g. 1=a,2=b,0=tie")
    p.add_argument("--max-pairs-per-question", type=int, default=_default(read_graded, "max_pairs_per_question"),
                   help="graded lists: cap per question")
    p.add_argument("--include-references", action="store_true", help="graded lists: also pair reference answers")
    if slices:
        p.add_argument("--max-questions", type=int, default=None,
                       help="graded lists: only the first N questions of each file (part of the score key)")
        p.add_argument("--hf-split", default=None,
                       help="--format hf: the split to read (default train); inputs are save_to_disk or Parquet-export "
                            "folders, or Hub dataset ids")


def add_out_args(p: argparse.ArgumentParser, help: str) -> None:
    """``--out`` (an output folder) and ``--force`` (write into a folder that is not an lfqa-rubric output)."""
    p.add_argument("--out", required=True, help=help)
    p.add_argument("--force", action="store_true",
                   help="write into an existing folder that is not an lfqa-rubric output folder (refused "
                        "otherwise), replacing its files named like this command's outputs, and no other; the "
                        "log says which it replaces")


def add_scoring_args(p: argparse.ArgumentParser, default_rubrics: str) -> None:
    """The rubrics and the engine settings (``ScoringConfig``), the split seed and ``--quiet``."""
    c = _CONFIG
    p.add_argument("--rubrics", default=default_rubrics,
                   help="comma-separated rubric names or versions (see 'lfqa-rubric rubrics')")
    p.add_argument("--batch-size", type=int, default=c.batch_size)
    p.add_argument("--max-answer-chars", type=int, default=c.max_answer_chars,
                   help="answers longer than this are rejected with a reason")
    p.add_argument("--max-question-chars", type=int, default=c.max_question_chars,
                   help="questions longer than this are rejected with a reason")
    p.add_argument("--seed", type=int, default=0, help="seed for the splits and graded-pair sampling")
    p.add_argument("--split-fractions", type=split_fractions, default=c.split_fractions, metavar="TRAIN,DEV,TEST",
                   help="shares of the question-level train/dev/test split assigned when the input has none "
                        f"(default {','.join(f'{f:g}' for f in c.split_fractions)}; a judge or perturb run over the "
                        "same pairs needs the same shares and --seed to get the same splits)")
    p.add_argument("--llm-backend", choices=("vllm", "transformers"), default=c.llm_backend)
    p.add_argument("--llm-profile", default=c.llm_profile, help="model profile for the LLM rubrics (cpu, gpu)")
    p.add_argument("--llm-model", default=c.llm_model, help="override the profile's model (Hub id or folder)")
    p.add_argument("--llm-layout", choices=("paper", "answer_first"), default=c.llm_layout,
                   help="prompt layout: the paper's, or answer-first (shares the cached prefix across rubrics)")
    p.add_argument("--languagetool-url", default=None, help="LanguageTool server for grammar.languagetool.v1")
    p.add_argument("--factuality-corpus", default=None,
                   help="JSONL/Parquet corpus for BM25 evidence (default: documents attached to each answer)")
    p.add_argument("--corpus-text-field", default=c.factuality_text_field, help="the corpus's text field")
    p.add_argument("--corpus-id-field", default=c.factuality_id_field, help="the corpus's id field")
    p.add_argument("--factuality-max-claim-tokens", type=int, default=c.factuality_max_claim_tokens,
                   help="claim-extraction budget: tokens generated per sentence (recorded in provenance)")
    p.add_argument("--specificity-model", default=c.specificity_model,
                   help="Hub id or folder of the SubjECTive-QA classifier (specificity.subjectiveqa.v1)")
    p.add_argument("--rescale", choices=("declared", "fitted"), default=c.rescale,
                   help="1-5 by each rubric's declared range (paper) or by min-max fitted on the train split")
    p.add_argument("--minilm-encoder", choices=MINILM_ENCODERS, default=c.minilm_encoder,
                   help="how the MiniLM rubrics and signals encode: fp32 on torch, or int8 on ONNX Runtime (faster on "
                        "a CPU, scores within docs/cpu-profile.md's measured bounds of fp32's; recorded in provenance)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def add_budget_args(p: argparse.ArgumentParser, *, retry: bool) -> None:
    """``--max-failed`` (score, judge) and ``--retry-failed`` (score): the failure budget and the retry."""
    from rubric.tables import DEFAULT_MAX_FAILED

    p.add_argument("--max-failed", type=_fraction, default=DEFAULT_MAX_FAILED, metavar="FRACTION",
                   help="failure budget: when more than this fraction of one "
                        f"{'rubric' if retry else 'judge'}'s rows failed, the run still publishes everything it "
                        "made, then exits with status 3 and one line per "
                        f"{'rubric' if retry else 'judge'} over budget (default {DEFAULT_MAX_FAILED:g}: 5%%; "
                        "1 turns the check off)")
    if retry:
        p.add_argument("--retry-failed", action="store_true",
                       help="score again only the (answer, rubric) cells that failed in the earlier run into OUT "
                            "(same inputs, same settings and versions); nothing else is computed again, and the "
                            "manifest records what the retry changed")


def _fraction(text: str) -> float:
    from rubric.tables import check_max_failed

    try:
        return check_max_failed(float(text))
    except (ValueError, TypeError):
        raise argparse.ArgumentTypeError(f"a fraction between 0 and 1, got {text!r}") from None


def add_judge_args(p) -> None:
    """How the judges run (``judge`` and ``scripts/run_job.py --judges``); ``--judges`` itself is the caller's."""
    from workers.jobs import JudgeSettings

    p.add_argument("--mode", choices=("logprob", "vote"), default=_default(JudgeSettings, "mode"),
                   help="logprob: verdict probabilities from one forward pass per order; vote: the paper's "
                        "generate-parse-majority")
    p.add_argument("--tie", action="store_true", help="offer the judges a tie option")
    p.add_argument("--n-votes", type=int, default=_default(JudgeSettings, "n_votes"),
                   help="vote mode: generations per order")
    p.add_argument("--temperature", type=float, default=_default(JudgeSettings, "temperature"),
                   help="vote mode: 0 greedy (the paper), 1 sampled")
    p.add_argument("--max-reasoning-tokens", type=int, default=_default(JudgeSettings, "max_reasoning_tokens"),
                   help="CoT judge: reasoning budget")


def add_protocol_args(p: argparse.ArgumentParser) -> None:
    """``judge --protocol``'s options, made from the protocols' declarations (``workers.protocols``): one
    flag per option field (several protocols may share one), with its help, bounds and choices."""
    import typing
    from dataclasses import fields

    from workers.protocols import leave_out_clashing, option_kind

    # a plugin protocol whose flag is one of this command's is left out, with its line (workers.protocols)
    protocols = leave_out_clashing({*p._option_string_actions, "--protocol", "--n-boot"})
    g = p.add_argument_group("protocols (docs/protocols.md)")
    g.add_argument("--protocol", choices=protocols.names(), default=None,
                   help="; ".join(f"{n}: {protocols.get(n).help}" for n in protocols)
                   + "; default: the pairwise judges of --judges")
    uses: dict[str, list] = {}
    for name in protocols:
        hints = typing.get_type_hints(protocols.get(name).options)
        for f in fields(protocols.get(name).options):
            uses.setdefault(f.name, []).append((name, f, hints[f.name]))
    for option, used in uses.items():
        kind = option_kind(used[0][2])  # one type per flag: checked when each protocol registered
        meta = used[0][1].metadata
        kw: dict[str, Any] = {"action": "store_true"} if kind is bool else (
            {"nargs": "+", "type": str} if kind is list else {"type": kind})
        if meta.get("choices") and kind is not bool:
            kw["choices"] = meta["choices"]
        if meta.get("metavar"):
            kw["metavar"] = meta["metavar"]
        g.add_argument("--" + option.replace("_", "-"), dest=PROTOCOL_DEST + option, default=None,
                       help="; ".join(f"{n}: {f.metadata['help']}" for n, f, _ in used), **kw)
    g.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates of the report's CIs")


#: Where a protocol option's value lands in the parsed arguments (``args.protocol_<field>``).
PROTOCOL_DEST = "protocol_"


def protocol_options(args, protocol: str | None) -> tuple[Any, list[str]]:
    """The chosen protocol's options from the parsed arguments (its spec's defaults where not given), and
    one message per given protocol flag the chosen protocol (or the pairwise judges) does not take.

    Raises:
        ConfigError: a value outside its bounds (``workers.protocols.ProtocolOptions``).
    """
    from dataclasses import fields

    from workers.protocols import load_protocols

    protocols = load_protocols()
    given = {k[len(PROTOCOL_DEST):]: v for k, v in vars(args).items() if k.startswith(PROTOCOL_DEST) and v is not None}
    own = {f.name for f in fields(protocols.get(protocol).options)} if protocol else set()
    errors = []
    for option in given:
        if option not in own:
            takers = [n for n in protocols if option in {f.name for f in fields(protocols.get(n).options)}]
            errors.append(f"--{option.replace('_', '-')} applies to --protocol {'/'.join(takers)}, not "
                          f"{protocol or 'the pairwise judges (no --protocol)'}")
    if protocol is None or errors:
        return None, errors
    return protocols.get(protocol).options(**{k: v for k, v in given.items() if k in own}), errors


#: The options of :func:`add_ray_args` that size the rubric pools (text, classifier, factuality): a job of
#: judges or LINKAGE runs on the engine pool alone and is not given them.
RUBRIC_POOL_OPTIONS = ("--text-actors", "--classifier-actors", "--factuality-actors", "--cpus-per-actor")


def add_ray_args(p, *, rubric_pools: bool = True) -> None:
    """Add the Ray options (address, pool sizes, per-actor resources, the engine actors' settings) to an
    argparse parser; one definition for ``score``, ``judge`` and ``scripts/run_job.py``.

    Args:
        rubric_pools: also the rubric pools' options (:data:`RUBRIC_POOL_OPTIONS`); ``judge`` runs its judges
            and protocols on the engine ("llm") pool only.
    """
    from workers.cluster import PoolConfig

    d = PoolConfig()
    g = p.add_argument_group("Ray")
    g.add_argument("--address", default=None,
                   help="Ray address: 'auto' joins a running cluster (what `ray job submit` gives), 'local' "
                        "starts a 2-CPU local Ray; default: join RAY_ADDRESS if set, else start a local Ray")
    if rubric_pools:
        g.add_argument("--text-actors", type=int, default=d.size,
                       help="actors in the text pool (spaCy, Harper, LanguageTool, length, ROUGE-L)")
        g.add_argument("--classifier-actors", type=int, default=d.size,
                       help="actors in the classifier pool (specificity, MiniLM similarity)")
    g.add_argument("--llm-actors", type=int, default=d.size,
                   help="actors in the LLM pool (one engine each; the judge and protocol actors too)")
    if rubric_pools:
        g.add_argument("--factuality-actors", type=int, default=d.size,
                       help="actors in the factuality pool (own engine)")
        g.add_argument("--cpus-per-actor", type=float, default=d.num_cpus,
                       help="CPUs reserved per text/classifier actor")
    g.add_argument("--cpus-per-llm-actor", type=float, default=1.0,
                   help="CPUs reserved per engine actor (llm and factuality)")
    g.add_argument("--gpus-per-llm-actor", type=float, default=d.num_gpus,
                   help="GPUs per engine actor, llm and factuality (default: 1 if the cluster has GPUs, else 0)")
    g.add_argument("--tensor-parallel", type=int, default=1,
                   help="shard each LLM engine over this many GPUs of one node (sets --gpus-per-llm-actor)")
    g.add_argument("--ray-batch-size", type=int, default=d.batch_size,
                   help="answers (judges: pairs; LINKAGE: candidates) per Ray batch (default: --batch-size)")
    g.add_argument("--max-restarts", type=int, default=d.max_restarts, help="restarts of a dead actor (bounded)")
    g.add_argument("--max-task-retries", type=int, default=d.max_task_retries,
                   help="retries of a batch whose actor died or is unreachable (-1: while the actor can be "
                        "restarted, bounded by --max-restarts)")
    g.add_argument("--llm-batches-in-flight", type=int, default=d.batches_in_flight,
                   help="Ray batches each engine actor (llm, factuality, judge, LINKAGE) scores at once on one "
                        "kept-busy vLLM engine; 1 (default): one synchronous engine call per batch")
    g.add_argument("--read-concurrency", type=int, default=None,
                   help="most input blocks read at once (each read task holds one block of up to ~50k rows); "
                        "default: as many as the CPUs allow")
    g.add_argument("--global-dedupe", action=argparse.BooleanOptionalAction, default=True,
                   help="score an answer (judges: a pair; LINKAGE: a question) shared by several shards or blocks "
                        "once (a hash shuffle by its id, so shards finish together); --no-global-dedupe streams "
                        "shards through independently and scores a shared one in each")


def reader_options(args) -> dict:
    """The reader options named by :func:`add_input_args` and the length limits of :func:`add_scoring_args`."""
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
            opts["label_values"] = parse_label_values(args.labels)
    if args.format == "hf":  # LFQA-HP-1M's field names unless --map names other columns
        if args.map:
            opts["mapping"] = parse_mapping(args.map)
            if args.labels:
                opts["label_values"] = parse_label_values(args.labels)
        if getattr(args, "hf_split", None):
            opts["split"] = args.hf_split
    return opts


def scoring_config(args) -> ScoringConfig:
    """The ``ScoringConfig`` named by :func:`add_scoring_args`'s options."""
    return ScoringConfig(batch_size=args.batch_size, max_answer_chars=args.max_answer_chars,
                         max_question_chars=args.max_question_chars,
                         languagetool_url=args.languagetool_url or os.environ.get("LANGUAGETOOL_URL"),
                         llm_profile=args.llm_profile, llm_backend=args.llm_backend, llm_model=args.llm_model,
                         llm_layout=args.llm_layout, rescale=args.rescale, specificity_model=args.specificity_model,
                         factuality_corpus=args.factuality_corpus, factuality_text_field=args.corpus_text_field,
                         factuality_id_field=args.corpus_id_field,
                         factuality_max_claim_tokens=args.factuality_max_claim_tokens,
                         split_fractions=args.split_fractions, minilm_encoder=args.minilm_encoder)


def judge_settings(args):
    """The ``JudgeSettings`` named by ``--judges`` and :func:`add_judge_args`'s options."""
    from workers.jobs import JudgeSettings

    return JudgeSettings(args.judges, mode=args.mode, tie=args.tie, n_votes=args.n_votes,
                         temperature=args.temperature, seed=args.seed, max_reasoning_tokens=args.max_reasoning_tokens)


def pools_from_args(args) -> dict:
    """The pool settings (``workers.cluster.pipeline.PoolConfig`` by pool) named by :func:`add_ray_args`'s options."""
    from workers.cluster import PoolConfig

    check_range("--tensor-parallel", args.tensor_parallel, low=1)
    common = {"batch_size": args.ray_batch_size, "max_restarts": args.max_restarts,
              "max_task_retries": args.max_task_retries}
    llm_gpus = args.gpus_per_llm_actor
    if args.tensor_parallel > 1:
        llm_gpus = float(args.tensor_parallel)
    engine = {"num_cpus": args.cpus_per_llm_actor, "num_gpus": llm_gpus,
              "batches_in_flight": args.llm_batches_in_flight, **common}
    pools = {"llm": PoolConfig(size=args.llm_actors, **engine)}
    if hasattr(args, "text_actors"):  # the rubric pools (not a judge command's: add_ray_args(rubric_pools=False))
        pools.update({
            "text": PoolConfig(size=args.text_actors, num_cpus=args.cpus_per_actor, **common),
            "classifier": PoolConfig(size=args.classifier_actors, num_cpus=args.cpus_per_actor, **common),
            "factuality": PoolConfig(size=args.factuality_actors, **engine),
        })
    return pools


def config_for_pools(config: ScoringConfig, args) -> ScoringConfig:
    """``config`` with the engine settings tensor parallelism needs (one multi-GPU engine per actor)."""
    if args.tensor_parallel <= 1:
        return config
    # vLLM's own multiprocessing executor keeps the shards inside the actor's node and GPU reservation.
    kwargs = {"tensor_parallel_size": args.tensor_parallel, "distributed_executor_backend": "mp",
              **config.engine_kwargs}
    return replace(config, engine_kwargs=kwargs)


def score_kind(args, *, ray: bool):
    """The score job of ``score`` and ``scripts/run_job.py``: ``args``' rubrics, scoring settings (on Ray,
    with the pools' engine settings: :func:`config_for_pools`) and reader options."""
    from rubric.scoring import resolve_rubrics
    from workers.jobs import ScoreKind

    config = config_for_pools(scoring_config(args), args) if ray else scoring_config(args)
    kind = ScoreKind(args.format, reader_options(args), resolve_rubrics(args.rubrics), config, seed=args.seed)
    kind.max_failed = getattr(args, "max_failed", kind.max_failed)
    return kind


def ray_step(args):
    """The ``workers.cluster.pipeline.RayStep`` named by :func:`add_ray_args`'s options."""
    from workers.cluster import RayStep

    return RayStep(pools=pools_from_args(args), address=args.address, global_dedupe=args.global_dedupe,
                   read_concurrency=args.read_concurrency)
