"""The transformers engine: exact score-token probabilities from the full next-token softmax."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from models.llm.engine import (Completion, TokenizerMixin, check_chat_template, check_sampling, check_stop_rule,
                               record_usage)
from rubric.config import check_range
from rubric.errors import BackendUnavailableError, EngineError
from rubric.scoring import ChatPrompt

__all__ = ["TransformersEngine"]

log = logging.getLogger(__name__)


class TransformersEngine(TokenizerMixin):
    """A causal LM through transformers, on CPU or GPU.

    Prompts are run in micro-batches of similar length (left-padded), and only the last
    position's logits are computed (``logits_to_keep=1``), so memory does not grow with the vocab
    times the prompt length.

    Args:
        model_path: a local HF folder (or a Hub id, when the Hub is reachable).
        model_id: the name recorded in provenance (default: ``model_path``).
        revision: the revision recorded in provenance (default ``"local"``).
        load_revision: the Hub revision to load (None for a local folder).
        max_context: prompt limit in tokens (default: the model config's ``max_position_embeddings``).
        device: ``"cpu"``, ``"cuda"``... (default: cuda when available).
        dtype: torch dtype name (default float32 on CPU, bfloat16 on GPU).
        batch_size: most prompts per forward pass; 1 runs one prompt per call.
        max_batch_tokens: most (padded) tokens per forward pass.
        prompt_lookup_num_tokens: ``complete`` drafts this many tokens per step from n-grams of the
            prompt (transformers' prompt-lookup decoding; greedy, so the same text up to float
            noise). transformers 5.19 runs assisted generation for one sequence at a time ("assisted
            generate is only supported for batch_size = 1"), so ``complete`` then goes prompt by prompt.

    Raises:
        BackendUnavailableError: torch/transformers missing, or the model cannot be found.
    """

    backend = "transformers"
    top_k: int | None = None  # the full distribution

    def __init__(self, model_path: str, *, model_id: str | None = None, revision: str | None = None,
                 load_revision: str | None = None,
                 max_context: int | None = None, device: str | None = None, dtype: str | None = None,
                 batch_size: int = 8, max_batch_tokens: int = 8192,
                 prompt_lookup_num_tokens: int | None = None) -> None:
        check_range("prompt_lookup_num_tokens", prompt_lookup_num_tokens, low=1, optional=True)
        check_range("batch_size", batch_size, low=1), check_range("max_batch_tokens", max_batch_tokens, low=1)
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            raise BackendUnavailableError(
                f"the transformers backend needs torch and transformers ({e}): install the [cpu] extra "
                "(or [gpu] on a CUDA machine)") from e
        self._torch = torch
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype_name = dtype or ("float32" if device == "cpu" else "bfloat16")
        kw: dict[str, Any] = {} if load_revision is None else {"revision": load_revision}
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model_path, **kw)
            check_chat_template(self.tokenizer, str(model_path))
            self.model = AutoModelForCausalLM.from_pretrained(model_path, dtype=getattr(torch, dtype_name), **kw)
        except OSError as e:
            raise BackendUnavailableError(
                f"cannot load model {model_path!r} ({e}); use a local folder, or download it first "
                f"(huggingface-cli download {model_path}) on a machine with Hub access") from e
        self.model.to(device).eval()
        self.device = device
        self.model_id = model_id or str(model_path)
        self.revision = revision or "local"
        ctx = getattr(self.model.config, "max_position_embeddings", None) or 2048
        self.max_context = int(min(max_context, ctx) if max_context else ctx)
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.prompt_lookup_num_tokens = prompt_lookup_num_tokens
        self._pad_id = self.tokenizer.pad_token_id
        if self._pad_id is None:
            self._pad_id = self.tokenizer.eos_token_id or 0
        self._cand_cache: dict[tuple[str, ...], dict[int, str]] = {}
        #: Of the last ``score_token_probs`` call (no prefix cache here, so nothing is ever cached).
        self.last_stats: dict[str, int] = {"prompt_tokens": 0, "cached_tokens": 0}

    def score_token_probs(self, prompts: Sequence[ChatPrompt], candidates: Sequence[str]) -> list[dict[str, float]]:
        cand = self.candidate_ids(candidates)
        ids = self.fitting_prompt_ids(prompts, 1)
        self.last_stats = {"prompt_tokens": sum(len(x) for x in ids), "cached_tokens": 0}
        record_usage([(len(x), None, 1) for x in ids])  # no prefix cache to ask; one token read per prompt
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out: list[dict[str, float] | None] = [None] * len(ids)
        try:
            for chunk in self._chunks(order, ids):
                for i, row in zip(chunk, self._forward([ids[i] for i in chunk], cand)):
                    out[i] = row
        except (RuntimeError, MemoryError) as e:
            raise EngineError(f"transformers forward pass failed: {e}") from e
        return out  # type: ignore[return-value]

    def generate(self, prompts: Sequence[ChatPrompt], max_tokens: int, *, temperature: float = 0.0, n: int = 1,
                 seed: int | None = None) -> list[str] | list[list[str]]:
        """Continue each prompt (after its pre-fill) up to ``max_tokens`` tokens, in input order.

        Greedy by default. With ``temperature > 0`` it samples ``n`` texts per prompt (plain
        temperature sampling: no top-k, no top-p, as vLLM's defaults). ``model.generate`` takes no
        generator, so the sampling runs inside ``torch.random.fork_rng`` seeded with ``seed``: the
        caller's global RNG state is restored afterwards, and the same prompts with the same
        settings give the same samples. Unlike vLLM's per-request seeds, the samples depend on the
        micro-batches (which prompts are sampled together), so they differ from vLLM's and from a
        run with another batch composition.

        Args:
            prompts: the prompts, ending inside the assistant turn.
            max_tokens: most new tokens per text.
            temperature: 0 for greedy decoding; otherwise sampling at that temperature.
            n: texts per prompt. At temperature 0 they are ``n`` copies of the greedy text.
            seed: the sampling seed (None: the global RNG, not reproducible).

        Returns:
            One text per prompt when ``n == 1`` (the shape existing callers use), else one list of
            ``n`` texts per prompt.

        Raises:
            ConfigError: an argument is out of range, or a prompt leaves no room for ``max_tokens``.
            EngineError: the model failed.
        """
        torch = self._torch
        check_sampling(max_tokens, temperature, n, seed)
        ids = self.fitting_prompt_ids(prompts, max_tokens)
        greedy = temperature == 0.0
        k = 1 if greedy else n
        sampling: dict[str, Any] = ({"do_sample": False} if greedy else
                                    {"do_sample": True, "temperature": float(temperature), "top_k": 0, "top_p": 1.0,
                                     "num_return_sequences": k})
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out: list[list[str] | None] = [None] * len(ids)
        made = [0] * len(ids)  # tokens generated per prompt, every sample's, up to its end
        ends = {self._pad_id, self.tokenizer.eos_token_id} - {None}
        try:
            with self._rng_scope(None if greedy else seed):
                for chunk in self._chunks(order, ids):
                    input_ids, mask = self._left_pad([ids[i] for i in chunk])
                    width = input_ids.shape[1]
                    with torch.inference_mode():
                        gen = self.model.generate(input_ids=input_ids.to(self.device),
                                                  attention_mask=mask.to(self.device), max_new_tokens=max_tokens,
                                                  pad_token_id=self._pad_id, **sampling)
                    rows = gen[:, width:].cpu().tolist()
                    if len(rows) != len(chunk) * k:
                        raise EngineError(f"transformers returned {len(rows)} sequences for {len(chunk)} prompts x {k}")
                    for j, i in enumerate(chunk):  # num_return_sequences keeps a prompt's samples together
                        got = [self.tokenizer.decode(r, skip_special_tokens=True) for r in rows[j * k:(j + 1) * k]]
                        out[i] = got * n if greedy else got
                        made[i] = sum(next((t for t, tok in enumerate(r) if tok in ends), len(r))
                                      for r in rows[j * k:(j + 1) * k])
        except EngineError:
            raise
        except (RuntimeError, MemoryError) as e:
            raise EngineError(f"transformers generate failed: {e}") from e
        record_usage([(len(x), None, m) for x, m in zip(ids, made)])
        texts: list[list[str]] = out  # type: ignore[assignment]
        return [t[0] for t in texts] if n == 1 else texts

    def complete(self, prompts: Sequence[ChatPrompt], max_tokens: int, *, stop: Sequence[str] = (),
                 stop_rule: str | None = None) -> list[Completion]:
        """Greedy completions that end at EOS, the budget, a stop string (cut off the text) or ``stop_rule``.

        The rule and the stop strings run as a ``StoppingCriteria`` on each sequence's decoded text
        after every step, so a sequence ends one token after the rule first holds (vLLM ends it right
        there); readers of the text that depend only on it up to that point get the same result.

        Raises:
            ConfigError: an argument is out of range, an unknown rule, or a prompt leaves no room.
            EngineError: the model failed.
        """
        torch = self._torch
        check_sampling(max_tokens, 0.0, 1, None)
        check_stop_rule(stop_rule)
        ids = self.fitting_prompt_ids(prompts, max_tokens)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        chunks = [[i] for i in order] if self.prompt_lookup_num_tokens else self._chunks(order, ids)
        lookup = {"prompt_lookup_num_tokens": self.prompt_lookup_num_tokens} if self.prompt_lookup_num_tokens else {}
        ends = {self._pad_id, self.tokenizer.eos_token_id} - {None}
        out: list[Completion | None] = [None] * len(ids)
        try:
            for chunk in chunks:
                input_ids, mask = self._left_pad([ids[i] for i in chunk])
                width = input_ids.shape[1]
                criterion = _text_stop_criterion(self.tokenizer, width, list(stop), stop_rule)
                with torch.inference_mode():
                    gen = self.model.generate(input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device),
                                              max_new_tokens=max_tokens, pad_token_id=self._pad_id, do_sample=False,
                                              stopping_criteria=[criterion], **lookup)
                rows = gen[:, width:].cpu().tolist()
                if len(rows) != len(chunk):
                    raise EngineError(f"transformers returned {len(rows)} sequences for {len(chunk)} prompts")
                for j, i in enumerate(chunk):
                    row = rows[j]
                    n = next((t for t, tok in enumerate(row) if tok in ends), len(row))
                    text = self.tokenizer.decode(row[:n], skip_special_tokens=True)
                    hits = [text.find(s) for s in stop if s in text]
                    if hits:
                        text = text[:min(hits)]
                    out[i] = Completion(text, not hits and not criterion.fired[j] and n >= max_tokens, n)
        except EngineError:
            raise
        except (RuntimeError, MemoryError) as e:
            raise EngineError(f"transformers generate failed: {e}") from e
        record_usage([(len(x), None, c.tokens) for x, c in zip(ids, out)])  # type: ignore[union-attr]
        return out  # type: ignore[return-value]

    def _rng_scope(self, seed: int | None):
        """A context in which torch's RNG is seeded with ``seed`` and restored on exit (a no-op for None)."""
        import contextlib

        torch = self._torch
        if seed is None:
            return contextlib.nullcontext()
        devices = [torch.device(self.device).index or 0] if str(self.device).startswith("cuda") else []

        @contextlib.contextmanager
        def scope():
            with torch.random.fork_rng(devices=devices):
                torch.manual_seed(seed)
                yield

        return scope()

    def _chunks(self, order: list[int], ids: list[list[int]]) -> list[list[int]]:
        chunks: list[list[int]] = []
        cur: list[int] = []
        for i in order:  # ascending length: the last one added is the longest
            if cur and (len(cur) >= self.batch_size or (len(cur) + 1) * len(ids[i]) > self.max_batch_tokens):
                chunks.append(cur)
                cur = []
            cur.append(i)
        if cur:
            chunks.append(cur)
        return chunks

    def _left_pad(self, batch: list[list[int]]):
        """(input_ids, attention_mask); left padding keeps every prompt's last token in the last column."""
        torch = self._torch
        width = max(len(x) for x in batch)
        input_ids = torch.full((len(batch), width), self._pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for r, x in enumerate(batch):
            input_ids[r, width - len(x):] = torch.tensor(x, dtype=torch.long)
            mask[r, width - len(x):] = 1
        return input_ids, mask

    def _forward(self, batch: list[list[int]], cand: dict[int, str]) -> list[dict[str, float]]:
        torch = self._torch
        input_ids, mask = self._left_pad(batch)
        position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            logits = self.model(input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device),
                                position_ids=position_ids.to(self.device), logits_to_keep=1).logits[:, -1, :]
            probs = torch.softmax(logits.float(), dim=-1)
        cand_ids = list(cand)
        picked = probs[:, cand_ids].cpu().tolist()
        return [{cand[t]: p for t, p in zip(cand_ids, row)} for row in picked]


def _text_stop_criterion(tokenizer: Any, width: int, stop: list[str], stop_rule: str | None) -> Any:
    """A ``StoppingCriteria`` ending each row once its generated text holds a stop string or the rule fires.

    ``fired[row]`` says which rows it ended (against EOS and the budget).
    """
    from transformers import StoppingCriteria

    from rubric.scoring import STOP_RULES

    class TextStop(StoppingCriteria):
        def __init__(self) -> None:
            self.fired: dict[int, bool] = {}
            self.checks: dict[int, Any] = {}

        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            import torch

            done = []
            for row, seq in enumerate(input_ids[:, width:].tolist()):
                if self.fired.get(row):
                    done.append(True)
                    continue
                text = tokenizer.decode(seq, skip_special_tokens=True)
                if stop_rule is not None and row not in self.checks:
                    self.checks[row] = STOP_RULES[stop_rule]()
                hit = any(s in text for s in stop) or (stop_rule is not None and self.checks[row](text))
                self.fired[row] = hit
                done.append(hit)
            return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    return TextStop()
