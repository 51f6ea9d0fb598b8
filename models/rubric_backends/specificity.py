"""The SubjECTive-QA specificity classifier (``specificity.subjectiveqa.v1``) through transformers."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from models.rubric_backends.single_spec import SingleSpecScorer
from rubric.config import check_range
from rubric.errors import BackendUnavailableError, ConfigError, EngineError
from rubric.io import AnswerItem
from rubric.scoring import Provenance, Score, ScoreSet
from rubric.scoring import (
    GEVAL_VERSION, SUBJECTIVEQA_MODEL, SUBJECTIVEQA_VERSION, combine_windows, format_input, label_order,
    latent_score, window_spans,
)
from rubric.scoring import RubricSpec

__all__ = ["SubjectiveQAScorer"]

log = logging.getLogger(__name__)


class SubjectiveQAScorer(SingleSpecScorer):
    """Specificity as the ordinal reading of the SubjECTive-QA SPECIFIC classifier.

    Each answer becomes ``"Question: {q} Answer: {a}"``; a text longer than ``max_length`` tokens
    is cut into windows of ``max_length`` tokens (special tokens included) that overlap by
    ``stride`` tokens (``rubric.scoring.specificity.window_spans``; the windowing of transformers'
    ``stride``, written out because some transformers releases drop the tail). All windows of
    all items go through the model in one pass, in chunks of ``batch_size`` sorted by length so
    little padding is wasted. Window softmaxes are averaged weighted by each window's token count
    (``rubric.scoring.specificity.combine_windows``); the raw value is ``0.5 * p_neutral + p_high``.

    Args:
        specs: exactly one spec, version ``specificity.subjectiveqa.v1``.
        model: a Hub id or a local folder holding a 3-label sequence classifier and its tokenizer.
        revision: the Hub revision to load (recorded in provenance; default: the resolved commit).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``... (default: cuda when available).
        batch_size: windows per forward pass.
        max_length: window length in tokens; at most the model's ``max_position_embeddings``.
        stride: tokens shared by consecutive windows.

    Raises:
        ConfigError: wrong specs or invalid numbers.
        BackendUnavailableError: torch/transformers are missing, or the model cannot be loaded
            (its weights come from the Hub; the offline default is ``specificity.geval.v1``).
    """

    backend = "subjectiveqa"

    def __init__(self, specs: tuple[RubricSpec, ...], *, model: str = SUBJECTIVEQA_MODEL, revision: str | None = None,
                 device: str | None = None, batch_size: int = 16, max_length: int = 512, stride: int = 128) -> None:
        self._serve(specs, SUBJECTIVEQA_VERSION, by_version=True)
        check_range("batch_size", batch_size, low=1)
        check_range("max_length", max_length, low=8)
        check_range("stride", stride, low=0)
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as e:
            raise BackendUnavailableError(
                f"the subjectiveqa specificity backend needs torch and transformers ({e}): install the [gpu] "
                f"or [cpu] extra, or use the offline default {GEVAL_VERSION!r}") from e
        self._torch = torch
        kw: dict[str, Any] = {} if revision is None else {"revision": revision}
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model, **kw)
            self.model = AutoModelForSequenceClassification.from_pretrained(model, **kw)
        except (OSError, ValueError) as e:
            raise BackendUnavailableError(
                f"cannot load the SubjECTive-QA specificity classifier {model!r} ({e}). Its weights come from the "
                f"Hugging Face Hub ({SUBJECTIVEQA_MODEL}): download them where the Hub is reachable "
                f"(huggingface-cli download {SUBJECTIVEQA_MODEL}) and pass the folder as the model, or use "
                f"{GEVAL_VERSION!r}, the offline default that runs on the embedded LLM") from e
        if not getattr(self.tokenizer, "is_fast", False):
            raise BackendUnavailableError(
                f"{model!r} loaded a slow tokenizer; windowing needs a fast (Rust) tokenizer: pip install tokenizers")
        self._order = label_order(self.model.config.id2label)
        n_special = self.tokenizer.num_special_tokens_to_add(pair=False)
        self._prefix, self._suffix = _special_frame(self.tokenizer, n_special, str(model))
        if not stride < max_length - n_special:
            raise ConfigError(f"'stride' must be < max_length - {n_special} special tokens "
                              f"= {max_length - n_special}, got {stride}")
        max_pos = getattr(self.model.config, "max_position_embeddings", None)
        if max_pos is not None and max_length > max_pos:
            raise ConfigError(f"'max_length' must be <= the model's max_position_embeddings ({max_pos}), got {max_length}")
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device).eval()
        self.specs: tuple[RubricSpec, ...] = specs
        self.batch_size = batch_size
        self.max_length = max_length
        self.stride = stride
        self.model_id = str(model)
        self.revision = revision or getattr(self.model.config, "_commit_hash", None) or "local"

    def provenance(self, rubric: str) -> Provenance:
        return self._provenance(rubric, backend=self.backend, model_id=self.model_id, model_revision=self.revision)

    def windows(self, texts: Sequence[str]) -> tuple[list[list[int]], list[int]]:
        """Token windows of all texts and, per window, the index of the text it came from.

        Each text is tokenized whole, cut with ``rubric.scoring.specificity.window_spans`` into windows of
        ``max_length`` tokens (special tokens included) sharing ``stride`` content tokens, and each
        window gets the tokenizer's special tokens. Not transformers' ``return_overflowing_tokens``:
        transformers 5.17 silently dropped the tail of long texts there (seen on a GPU machine).
        """
        size = self.max_length - len(self._prefix) - len(self._suffix)
        enc = self.tokenizer(list(texts), add_special_tokens=False, truncation=False, padding=False, verbose=False)
        ids: list[list[int]] = []
        owner: list[int] = []
        for t, content in enumerate(enc["input_ids"]):
            for start, end in window_spans(len(content), size, self.stride):
                ids.append([*self._prefix, *content[start:end], *self._suffix])
                owner.append(t)
        return ids, owner

    def score_batch(self, items: Sequence[AnswerItem]) -> list[ScoreSet]:
        """One ``{"specificity": Score}`` per item, in order; raw = ``0.5 * p_neutral + p_high``."""
        name = self.spec.name
        out: list[Score | None] = [None] * len(items)
        texts: list[str] = []
        where: list[int] = []
        for i, it in enumerate(items):
            if not isinstance(it.answer, str) or not isinstance(it.question, str):
                out[i] = Score.failed(f"question/answer must be str, got {type(it.question).__name__}/"
                                      f"{type(it.answer).__name__}")
                continue
            texts.append(format_input(it.question, it.answer))
            where.append(i)
        if texts:
            ids, owner = self.windows(texts)
            probs = self._forward(ids)
            per_text: list[list[int]] = [[] for _ in texts]
            for w, t in enumerate(owner):
                per_text[t].append(w)
            for t, ws in enumerate(per_text):
                if not ws:  # the tokenizer dropped a text: a broken batch, not a bad row
                    raise EngineError(f"tokenizer produced no window for item {where[t]}")
                p_low, p_neu, p_high = combine_windows([probs[w] for w in ws], [len(ids[w]) for w in ws])
                out[where[t]] = Score.ok(latent_score(p_low, p_neu, p_high), n_windows=len(ws),
                                         n_tokens=sum(len(ids[w]) for w in ws),
                                         p_low=p_low, p_neutral=p_neu, p_high=p_high)
        return [{name: s} for s in out]  # type: ignore[misc]

    def _forward(self, ids: list[list[int]]) -> list[tuple[float, float, float]]:
        """(LOW, NEUTRAL, HIGH) softmax of every window, in input order."""
        torch = self._torch
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)] * len(ids)
        lo, neu, hi = self._order
        try:
            for start in range(0, len(order), self.batch_size):
                chunk = order[start:start + self.batch_size]
                batch = self.tokenizer.pad({"input_ids": [ids[i] for i in chunk]}, padding=True, return_tensors="pt")
                batch = {k: v.to(self.device) for k, v in batch.items()}
                with torch.inference_mode():
                    logits = self.model(**batch).logits
                p = torch.softmax(logits.float(), dim=-1).cpu().tolist()
                for i, row in zip(chunk, p):
                    out[i] = (row[lo], row[neu], row[hi])
        except (RuntimeError, MemoryError) as e:
            raise EngineError(f"SubjECTive-QA forward pass failed: {e}") from e
        return out


def _special_frame(tokenizer: Any, n_special: int, model: str) -> tuple[list[int], list[int]]:
    """The special tokens the tokenizer puts before and after one sequence (``[CLS]`` / ``[SEP]`` for BERT).

    Read off a probe text encoded with and without special tokens, since transformers 5's fast
    tokenizers have no ``build_inputs_with_special_tokens``.

    Raises:
        BackendUnavailableError: the probe's content is not found whole inside its encoding, or the
            frame's size disagrees with ``num_special_tokens_to_add``.
    """
    probe = "specific answer"
    bare = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    full = list(tokenizer(probe, add_special_tokens=True)["input_ids"])
    for i in range(len(full) - len(bare) + 1):
        if bare and full[i:i + len(bare)] == bare:
            prefix, suffix = full[:i], full[i + len(bare):]
            if len(prefix) + len(suffix) == n_special:
                return prefix, suffix
            break
    raise BackendUnavailableError(
        f"cannot tell where {model!r}'s tokenizer puts its special tokens (probe {bare} -> {full}, "
        f"{n_special} special tokens expected); windows need a single-sequence [prefix] text [suffix] template")
