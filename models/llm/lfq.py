"""The paper's long-form-question filter (appendix A.4) on an engine, batched."""

from __future__ import annotations

from collections.abc import Sequence

from models.llm.engine import Engine
from rubric.geval import LFQDecision, lfq_filter_template, parse_lfq

__all__ = ["classify_questions"]


def classify_questions(engine: Engine, questions: Sequence[str]) -> list[LFQDecision]:
    """One LFQ decision per question, in order, from a single engine call.

    ``confident`` is the paper's ``log_score = 0`` rule; the paper kept only confident "yes" rows.
    """
    tmpl = lfq_filter_template()
    prompts = [tmpl.render(question=q) for q in questions]
    probs = engine.score_token_probs(prompts, tmpl.score_tokens) if prompts else []
    return [parse_lfq(p, top_k=engine.top_k) for p in probs]
