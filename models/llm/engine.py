"""The engine interface: prompts in, probabilities of the allowed score tokens out, same order.

An engine applies the model's chat template to a ``rubric.geval.ChatPrompt`` (ending inside the
pre-filled assistant turn), runs one forward step and reports, per prompt, the probability of
each candidate score token. Candidates are canonical strings (``"4"``, ``"yes"``); the engine
resolves once per tokenizer every spelling of them that is a single token (``"4"``, ``" 4"``,
``"Yes"``, ``" yes"``) and reports them under the tokenizer's own token strings; folding the
spellings together is ``rubric.geval``'s job, so it is tested without a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from rubric.errors import ConfigError
from rubric.geval import ChatPrompt

__all__ = ["Engine", "candidate_token_ids", "check_chat_template", "render_prompt_ids"]


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
