"""A vLLM (v1) logits processor that ends a request when its stop rule fires: the engine runs the rule.

A request opts in with ``SamplingParams(extra_args={STOP_RULE_ARG: name})``, ``name`` one of
``rubric.scoring.STOP_RULES`` (a factory of one sequence's check: text generated so far -> stop
now). Before each decoding step the processor decodes each opted-in request's output tokens and,
where its check fires, leaves only
the end-of-sequence token possible, so the request finishes there ("stop", like an EOS of its
own). Other requests are untouched, and log-probabilities are read before logits processors
(vLLM's default ``raw_logprobs``), so the G-Eval scores of a shared engine do not move.

vLLM 0.32 refuses custom logits processors when speculative decoding is on
(``vllm/v1/sample/logits_processor/__init__.py``: "Custom logits processors are not supported when
speculative decoding is enabled."), so ``VLLMEngine`` registers this one only without a
``speculative_config``. Imported only by ``VLLMEngine`` (it imports vLLM); vLLM loads it by its
qualified name (``PROCESSOR``) in whatever process runs the engine core.
"""

from __future__ import annotations

from typing import Any

import torch
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor
from vllm.v1.sample.logits_processor.builtin import process_dict_updates

from rubric.scoring import STOP_RULES

__all__ = ["STOP_RULE_ARG", "PROCESSOR", "StopRuleProcessor"]

#: The ``SamplingParams.extra_args`` key naming a request's stop rule.
STOP_RULE_ARG = "lfqa_stop_rule"
#: What ``vllm.LLM(logits_processors=[...])`` is given.
PROCESSOR = "models.llm.vllm_stop:StopRuleProcessor"


def _rule_name(params: Any) -> str | None:
    return (getattr(params, "extra_args", None) or {}).get(STOP_RULE_ARG)


class StopRuleProcessor(LogitsProcessor):
    """Forces EOS for a request once its check (``STOP_RULES[name]()``) holds on the text so far."""

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        name = _rule_name(sampling_params)
        if name is not None and name not in STOP_RULES:
            raise ValueError(f"unknown stop rule {name!r}; known: {sorted(STOP_RULES)}")

    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool) -> None:
        from transformers import AutoTokenizer

        mc = vllm_config.model_config
        self.tokenizer = AutoTokenizer.from_pretrained(mc.tokenizer, revision=mc.tokenizer_revision,
                                                       trust_remote_code=mc.trust_remote_code)
        # batch row -> (the request's check, eos id, its live output token list)
        self.rows: dict[int, tuple[Any, int, list[int]]] = {}

    def is_argmax_invariant(self) -> bool:
        return False  # it changes the greedy choice: vLLM must not skip it for greedy requests

    def _state(self, params: Any, _prompt_ids: Any, output_ids: list[int]) -> tuple[Any, int, list[int]] | None:
        name = _rule_name(params)
        if name is None:
            return None
        eos = getattr(params, "eos_token_id", None)
        if eos is None:
            eos = self.tokenizer.eos_token_id
        return STOP_RULES[name](), int(eos), output_ids

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        process_dict_updates(self.rows, batch_update, self._state)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        for row, (rule, eos, output_ids) in self.rows.items():
            # (an asynchronous scheduler may hold a placeholder id < 0 for the token in flight)
            ids = [t for t in output_ids if t >= 0]
            if ids and rule(self.tokenizer.decode(ids, skip_special_tokens=True)):
                logits[row] = float("-inf")
                logits[row, eos] = 0.0
        return logits
