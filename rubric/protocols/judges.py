"""The neighbouring protocols' pairwise judges, so the judge job serves them unchanged.

Pure: no model here. Every pairwise protocol prompt is a :class:`rubric.judging.JudgeSpec` registered in
``rubric.judging.JUDGES`` under its version (:func:`rubric.protocols.templates.declare_protocol_prompt`),
so ``rubric.judging.resolve_judges`` resolves it, the judge job keys its store by it, the Ray judge actors
rebuild it from its name, and ``judgments.parquet`` holds its rows like any judge's. What differs is how
its verdict is read (the protocol's own tokens, ``A``/``B``/``C`` or ``1``/``2``/``0``, mapped onto
``1``/``2``/``tie`` by the prompt's ``verdicts``), a judge that writes its own reasoning first, and that
some show the pair's reference answer: ``models.protocols.ProtocolJudgeScorer`` does all three.
"""

from __future__ import annotations

from collections.abc import Mapping

from rubric.errors import UnknownNameError
from rubric.judging import JUDGES, JudgeSpec

__all__ = [
    "PAIRWISE_PROTOCOLS",
    "PROTOCOLS",
    "protocol_judge",
    "is_protocol_judge",
    "protocol_judge_versions",
]

#: ``--protocol`` name -> the pairwise template its judge reads.
PAIRWISE_PROTOCOLS: Mapping[str, str] = {
    "arena": "arena.pairwise.v1",
    "lfqa-e": "lfqa_e.reference_tie.v1",
    "linkage-pairwise": "linkage.pairwise.v1",
}
#: Every ``--protocol`` of ``lfqa-rubric judge`` (``linkage`` is per answer, not a pairwise judge).
PROTOCOLS: tuple[str, ...] = ("linkage", "arena", "lfqa-e")


def is_protocol_judge(spec: object) -> bool:
    """True for a protocol's pairwise judge (its verdicts are read by the protocol scorer)."""
    return isinstance(spec, JudgeSpec) and spec.template.protocol is not None


def protocol_judge_versions() -> tuple[str, ...]:
    """The versions of every pairwise protocol judge (what :func:`protocol_judge` accepts)."""
    return tuple(v for v in JUDGES.names() if is_protocol_judge(JUDGES.get(v)))


def protocol_judge(name: str) -> JudgeSpec:
    """The judge of a pairwise protocol, by ``--protocol`` name or template version.

    Raises:
        UnknownNameError: neither a pairwise protocol nor a pairwise protocol template.
    """
    version = PAIRWISE_PROTOCOLS.get(name, name)
    if version not in protocol_judge_versions():
        raise UnknownNameError(f"unknown pairwise protocol judge {name!r}; protocols: "
                               f"{', '.join(PAIRWISE_PROTOCOLS)}; versions: {', '.join(protocol_judge_versions())}")
    return JUDGES.get(version)
