"""The engine interface: prompts in, probabilities of the allowed score tokens out, same order.

An engine applies the model's chat template to a ``rubric.scoring.geval.ChatPrompt`` (ending inside the
pre-filled assistant turn), runs one forward step and reports, per prompt, the probability of
each candidate score token. Candidates are canonical strings (``"4"``, ``"yes"``); the engine
resolves once per tokenizer every spelling of them that is a single token (``"4"``, ``" 4"``,
``"Yes"``, ``" yes"``) and reports them under the tokenizer's own token strings; folding the
spellings together is ``rubric.scoring.geval``'s job, so it is tested without a model.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from rubric.config import check_range
from rubric.errors import ConfigError
from rubric.scoring import ChatPrompt

__all__ = ["Engine", "TextSampler", "Completion", "Completer", "candidate_token_ids", "check_chat_template",
           "check_sampling", "check_stop_rule", "render_prompt_ids", "PromptUsage", "record_usage", "take_usage"]

#: One prompt's tokens in one engine call: (prompt tokens, of them served from the prefix cache
#: (None: the engine has no such cache to ask), tokens generated, every sample counted).
PromptUsage = tuple[int, int | None, int]

_USAGE = threading.local()


def record_usage(rows: Sequence[PromptUsage]) -> None:
    """What an engine call just consumed, one row per prompt in input order (the engines call this).

    Kept per thread: a caller reads it with :func:`take_usage` right after its own call returns, so
    engines shared by threads (``models.llm.engine_loop``) never mix two callers' counts.
    """
    _USAGE.rows = list(rows)


def take_usage(n: int) -> list[PromptUsage] | None:
    """The usage of the last engine call on this thread, if it recorded one for ``n`` prompts (then forgotten).

    None when the engine records none (a test's fake engine) or the count does not match: the
    tokens are then unknown, never guessed.
    """
    rows = getattr(_USAGE, "rows", None)
    _USAGE.rows = None
    return rows if rows is not None and len(rows) == n else None


@runtime_checkable
class Engine(Protocol):
    """One loaded model behind one backend.

    Attributes:
        backend: ``"vllm"`` or ``"transformers"`` (recorded in provenance).
        model_id: the model's name (a Hub id, or the upstream id of an embedded model).
        revision: the exact revision (a commit, or the package version an embedded model came from).
        max_context: the most tokens a prompt may have, the one scored token included.
        top_k: how many next-token log-probabilities the engine sees (None: the full distribution).
    """

    backend: str
    model_id: str
    revision: str
    max_context: int
    top_k: int | None

    def encode(self, text: str) -> list[int]:
        """Token ids of plain text (no special tokens), for the context policy."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        ...

    def count_tokens(self, prompts: Sequence[ChatPrompt]) -> list[int]:
        """Tokens of each prompt after the chat template."""
        ...

    def score_token_probs(self, prompts: Sequence[ChatPrompt], candidates: Sequence[str]) -> list[dict[str, float]]:
        """Per prompt, token string -> probability of the next token, for the candidates' spellings.

        The list has one dict per prompt, in input order. A spelling the engine did not see (outside
        its top-K) is absent, which reads as probability 0.
        """
        ...


@runtime_checkable
class TextSampler(Protocol):
    """Text generation with sampling: what the pairwise judges' vote mode and CoT reasoning need.

    ``generate(prompts, max_tokens)`` alone is greedy and returns one text per prompt (the shape
    claim extraction relies on). With ``n > 1`` it returns ``n`` texts per prompt; with
    ``temperature > 0`` they are samples, reproducible for a given ``seed``. At ``temperature == 0``
    the ``n`` texts are copies of the one greedy continuation: greedy decoding is deterministic,
    so decoding it ``n`` times could only repeat it (vLLM refuses ``n > 1`` with greedy sampling).
    """

    def generate(self, prompts: Sequence[ChatPrompt], max_tokens: int, *, temperature: float = 0.0, n: int = 1,
                 seed: int | None = None) -> list[str] | list[list[str]]: ...


@dataclass(frozen=True)
class Completion:
    """One greedy completion and how it ended.

    Attributes:
        text: the generated text (a stop string, if one ended it, is not included).
        cut: generation stopped at the token budget, so the text may end in the middle of a line.
        tokens: tokens generated.
    """

    text: str
    cut: bool
    tokens: int


@runtime_checkable
class Completer(Protocol):
    """Greedy completions that stop at stop strings and at a stop rule the engine runs while decoding.

    ``complete(prompts, max_tokens, stop=..., stop_rule=name)``: one ``Completion`` per prompt, in
    input order. ``stop_rule`` names a rule of ``rubric.scoring.STOP_RULES`` (a factory of one
    sequence's check: text so far -> stop); the engine makes one check per sequence, asks it after
    each new token and ends the sequence where it fires, so the text ends
    at (or, on some engines, one token after) the first point where the rule holds.
    """

    def complete(self, prompts: Sequence[ChatPrompt], max_tokens: int, *, stop: Sequence[str] = (),
                 stop_rule: str | None = None) -> list[Completion]: ...


def check_stop_rule(stop_rule: str | None) -> None:
    """Raise ConfigError for a stop rule name that ``rubric.scoring.STOP_RULES`` does not know."""
    from rubric.scoring import STOP_RULES

    if stop_rule is not None and stop_rule not in STOP_RULES:
        raise ConfigError(f"unknown stop rule {stop_rule!r}; known: {sorted(STOP_RULES)}")


def check_sampling(max_tokens: int, temperature: float, n: int, seed: int | None) -> None:
    """Validate ``generate``'s arguments the way ``vllm.SamplingParams`` does, before any work.

    Raises:
        ConfigError: an argument is out of range, e.g. "'n' must be >= 1, got 0".
    """
    check_range("max_tokens", max_tokens, low=1)
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature >= 0.0):
        raise ConfigError(f"'temperature' must be a finite number >= 0, got {temperature!r}")
    check_range("n", n, low=1, integer=True)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ConfigError(f"'seed' must be None or an integer >= 0, got {seed!r}")


def _spellings(candidate: str) -> set[str]:
    forms = {candidate}
    if candidate.isalpha():
        forms |= {candidate.lower(), candidate.capitalize(), candidate.upper()}
    return forms | {" " + f for f in forms}


def candidate_token_ids(tokenizer: Any, candidates: Sequence[str]) -> dict[int, str]:
    """Token id -> token string for every spelling of the candidates that is a single token.

    A spelling that the tokenizer splits into several tokens cannot be the next token as a whole,
    so it is skipped (its first piece would be a different word's start, too).
    """
    out: dict[int, str] = {}
    for cand in candidates:
        for form in sorted(_spellings(cand)):
            ids = tokenizer.encode(form, add_special_tokens=False)
            if len(ids) == 1:
                out[ids[0]] = tokenizer.convert_ids_to_tokens(ids[0])
    return out


def check_chat_template(tokenizer: Any, model: str) -> None:
    """Raise unless the tokenizer has a chat template (the pre-filled prompts need one).

    Raises:
        ConfigError: a base model without a chat template.
    """
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError(f"model {model!r} has no chat template; the LLM rubrics need an instruct (chat) model")


def render_prompt_ids(tokenizer: Any, prompt: ChatPrompt) -> list[int]:
    """Apply the chat template so that the prompt ends right after the assistant pre-fill.

    Both engines feed these exact ids to their model, so their probabilities are comparable.
    """
    msgs = prompt.messages()
    if prompt.prefill:
        text = tokenizer.apply_chat_template(msgs, tokenize=False, continue_final_message=True)
    else:
        text = tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    # The chat template already holds any BOS the model wants.
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


class TokenizerMixin:
    """Tokenizer-side methods shared by the engines (they feed the model the same prompt ids).

    Needs ``self.tokenizer``, ``self.max_context`` and ``self._cand_cache`` (a dict).
    """

    tokenizer: Any
    max_context: int
    _cand_cache: dict

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids))

    def prompt_ids(self, prompt: ChatPrompt) -> list[int]:
        return render_prompt_ids(self.tokenizer, prompt)

    def count_tokens(self, prompts: Sequence[ChatPrompt]) -> list[int]:
        return [len(self.prompt_ids(p)) for p in prompts]

    def candidate_ids(self, candidates: Sequence[str]) -> dict[int, str]:
        key = tuple(candidates)
        if key not in self._cand_cache:
            self._cand_cache[key] = candidate_token_ids(self.tokenizer, candidates)
        return self._cand_cache[key]

    def fitting_prompt_ids(self, prompts: Sequence[ChatPrompt], new_tokens: int) -> list[list[int]]:
        """Prompt ids, refusing (ConfigError) any prompt that leaves no room for ``new_tokens``."""
        from rubric.errors import ConfigError

        check_range("max_tokens", new_tokens, low=1)
        ids = [self.prompt_ids(p) for p in prompts]
        for i, x in enumerate(ids):
            if len(x) + new_tokens > self.max_context:
                raise ConfigError(f"prompt {i} has {len(x)} tokens + {new_tokens} new; max_context is {self.max_context}")
        return ids
