"""The paper's long-form-question filter (appendix A.4) on an engine, batched."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from models.llm.engine import Engine
from rubric.errors import BatchMismatchError, EngineError, RubricError
from rubric.scoring import LFQ_FILTER_VERSION, LFQDecision, lfq_filter_template, parse_lfq

__all__ = ["classify_questions"]

log = logging.getLogger(__name__)


def classify_questions(engine: Engine, questions: Sequence[str]) -> list[LFQDecision]:
    """One LFQ decision per question, in order, from a single engine call.

    ``confident`` is the paper's ``log_score = 0`` rule; the paper kept only confident "yes" rows.

    A question whose prompt does not fit the engine's context gets a decision with ``error`` set
    (naming the question's index and its prompt length against the context) and the others are
    still classified. It is not shortened the way the LLM rubric scorer shortens a long answer:
    the filter judges the question itself, and a question cut in the middle is a different
    question, so a verdict on it would be a verdict on something nobody asked.

    Args:
        engine: a loaded engine; its ``max_context`` bounds each prompt (one token is kept for the answer).
        questions: the questions, in the order the decisions are returned.

    Returns:
        One ``LFQDecision`` per question, in input order.

    Raises:
        EngineError: the engine failed as a whole (a too-long question only gets an error reason).
        BatchMismatchError: the engine returned a different number of results than it was given prompts.
    """
    if not questions:
        return []
    tmpl = lfq_filter_template()
    prompts = [tmpl.render(question=q) for q in questions]
    limit = engine.max_context - 1  # room for the one scored token
    lengths = engine.count_tokens(prompts)
    if len(lengths) != len(prompts):
        raise BatchMismatchError(f"the engine counted {len(lengths)} prompts for {len(prompts)}")
    send = [i for i, n in enumerate(lengths) if n <= limit]
    out: list[LFQDecision | None] = [None] * len(prompts)
    for i, n in enumerate(lengths):
        if n > limit:
            out[i] = LFQDecision(None, None, None, False,
                                 f"question {i} is too long for the {LFQ_FILTER_VERSION} prompt: {n} tokens, "
                                 f"the context holds {engine.max_context} (one kept for the answer token)")
    if len(send) < len(prompts):
        log.warning("%d of %d questions do not fit the context of %d tokens; they get an error instead of a "
                    "verdict", len(prompts) - len(send), len(prompts), engine.max_context)
    if send:
        try:
            probs = engine.score_token_probs([prompts[i] for i in send], tmpl.score_tokens)
        except RubricError:
            raise
        except Exception as e:  # a dead engine is one error for the whole command, never a row error
            raise EngineError(f"{engine.backend} engine failed on {len(send)} LFQ prompts: {e}") from e
        if len(probs) != len(send):
            raise BatchMismatchError(f"the engine returned {len(probs)} results for {len(send)} prompts")
        for i, p in zip(send, probs):
            out[i] = parse_lfq(p, top_k=engine.top_k)
    return out  # type: ignore[return-value]
