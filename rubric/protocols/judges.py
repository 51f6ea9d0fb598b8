"""The neighbouring protocols' pairwise judges, so the judge job serves them unchanged.

Pure: no model here. Every pairwise protocol prompt is a :class:`rubric.judging.JudgeSpec` registered in
``rubric.judging.JUDGES`` under its version (:func:`rubric.protocols.templates.declare_protocol_prompt`),
so ``rubric.judging.resolve_judges`` resolves it, the judge job keys its store by it, the Ray judge actors
rebuild it from its name, and ``judgments.parquet`` holds its rows like any judge's. What differs is how
its verdict is read (the protocol's own tokens, ``A``/``B``/``C`` or ``1``/``2``/``0``, mapped onto
``1``/``2``/``tie`` by the prompt's ``verdicts``), a judge that writes its own reasoning first, and that
some show the pair's reference answer: ``models.judging.ProtocolJudgeScorer`` does all three.
"""

from __future__ import annotations

from rubric.errors import UnknownNameError
from rubric.judging import JUDGES, JudgeSpec

__all__ = ["protocol_judge", "is_protocol_judge", "protocol_judge_versions"]


def is_protocol_judge(spec: object) -> bool:
    """True for a protocol's pairwise judge (its verdicts are read by the protocol scorer)."""
    return isinstance(spec, JudgeSpec) and spec.template.protocol is not None


def protocol_judge_versions() -> tuple[str, ...]:
    """The versions of every pairwise protocol judge (what :func:`protocol_judge` accepts)."""
    return tuple(v for v in JUDGES.names() if is_protocol_judge(JUDGES.get(v)))


def protocol_judge(version: str) -> JudgeSpec:
    """The judge of a pairwise protocol template, by its version.

    Raises:
        UnknownNameError: not a pairwise protocol template.
    """
    if version not in protocol_judge_versions():
        raise UnknownNameError(f"unknown pairwise protocol judge {version!r}; known: "
                               f"{', '.join(protocol_judge_versions())}")
    return JUDGES.get(version)
