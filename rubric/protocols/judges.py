"""The neighbouring protocols' pairwise judges as judge specs, so the judge job serves them unchanged.

Pure: no model here. :class:`ProtocolJudgeSpec` wraps a pairwise :class:`rubric.protocols.templates.ProtocolTemplate`
(``arena.pairwise.v1``, ``lfqa_e.reference_tie.v1``, ``linkage.pairwise.v1``) in the shape of a
:class:`rubric.judging.judges.JudgeSpec` (``name``, ``version``, ``tie``, ``cot``, ``template_hash``,
``verdict_tokens``, ``render``), so that ``rubric.judging.judges.resolve_judges`` resolves its version, the judge
job keys its store by it, the Ray judge actors rebuild it from its name, and ``judgments.parquet`` holds
its rows like any judge's. What differs is how its verdict is read (the protocol's own tokens, ``A``/``B``/
``C`` or ``1``/``2``/``0``, mapped onto ``1``/``2``/``tie`` by :func:`rubric.protocols.templates.pairwise_verdict_probs`)
and that some need the question's reference answer: ``models.protocols.ProtocolJudgeScorer`` does both.

Protocols (the ``--protocol`` names of ``lfqa-rubric judge``)
    ``arena``: RAG-QA Arena's judge, a system's answer against the LFRQA reference answer.
    ``lfqa-e``: LFQA-E's reference-based three-way judge (the pair's reference answer is shown).
    ``linkage-pairwise``: LINKAGE's pairwise baseline (A / B / C = tie), used inside the LINKAGE job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

from rubric.errors import ConfigError, UnknownNameError
from rubric.judging import register_judge_factory
from rubric.scoring import ChatPrompt, PromptTemplate
from rubric.protocols.templates import ARENA_REASONING_VERSION, PROTOCOL_TEMPLATES, ProtocolTemplate, get_protocol_template

__all__ = [
    "PAIRWISE_PROTOCOLS",
    "PROTOCOLS",
    "ProtocolJudgeSpec",
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


@dataclass(frozen=True)
class ProtocolJudgeSpec:
    """A pairwise protocol template in the shape of a :class:`rubric.judging.judges.JudgeSpec`.

    Attributes:
        protocol_template: the wrapped template.
        needs_reference: the prompt shows the pair's reference answer (``lfqa_e``): a pair without
            one cannot be judged (a row error, never an empty reference).
    """

    protocol_template: ProtocolTemplate = field(repr=False)
    needs_reference: bool = False

    # JudgeSpec's fields, derived
    @property
    def name(self) -> str:
        return self.protocol_template.version.rsplit(".", 1)[0]

    @property
    def version(self) -> str:
        return self.protocol_template.version

    @property
    def source(self) -> str:
        return self.protocol_template.source

    @property
    def template(self) -> PromptTemplate:
        return self.protocol_template.template

    @property
    def tie(self) -> bool:
        return True  # every protocol here offers a tie ("not sure" in RAG-QA Arena)

    @property
    def cot(self) -> bool:
        return False  # logprob mode reads the verdict straight after the pre-fill

    @property
    def verdict_tokens(self) -> tuple[str, ...]:
        """The protocol's own verdict tokens (``A``/``B``/``C``, ``1``/``2``/``0``, ``1``/``2``/``tie``)."""
        return self.protocol_template.score_tokens

    @property
    def prefill(self) -> str:
        return self.protocol_template.prefill

    @property
    def reasons(self) -> bool:
        """The judge writes its own reasoning first (``arena.pairwise_reasoning.v1``): generated after the
        ``<thinking>`` pre-fill, then the verdict is read after :func:`rubric.protocols.templates.arena_verdict_prefill`."""
        return self.protocol_template.version == ARENA_REASONING_VERSION

    @property
    def template_hash(self) -> str:
        return self.protocol_template.template_hash

    def render(self, question: str, answer_1: str, answer_2: str, *, prefill: bool = True,
               reference: str | None = None) -> ChatPrompt:
        """The prompt with ``answer_1`` shown first.

        Raises:
            ConfigError: the template needs a reference and none is given, or it failed to render.
        """
        values: dict[str, object] = {"question": question, "answer_1": answer_1, "answer_2": answer_2}
        if self.needs_reference:
            if not isinstance(reference, str) or not reference.strip():
                raise ConfigError(f"{self.version} shows the question's reference answer and this pair has none "
                                  "(graded WebGLM lists give their best groundK; lfqa_eval/table inputs a "
                                  "'reference' field)")
            values["reference"] = reference
        return self.protocol_template.render(prefill=prefill, **values)


def _pairwise_versions() -> list[str]:
    return [v for v in PROTOCOL_TEMPLATES.names() if PROTOCOL_TEMPLATES.get(v).kind == "pairwise"]


def protocol_judge_versions() -> tuple[str, ...]:
    """The versions of every pairwise protocol template (what :func:`protocol_judge` accepts)."""
    return tuple(_pairwise_versions())


def protocol_judge(name: str) -> ProtocolJudgeSpec:
    """The judge spec of a pairwise protocol, by ``--protocol`` name or template version.

    Raises:
        UnknownNameError: neither a pairwise protocol nor a pairwise protocol template.
    """
    version = PAIRWISE_PROTOCOLS.get(name, name)
    if version not in _pairwise_versions():
        raise UnknownNameError(f"unknown pairwise protocol judge {name!r}; protocols: "
                               f"{', '.join(PAIRWISE_PROTOCOLS)}; versions: {', '.join(_pairwise_versions())}")
    t = get_protocol_template(version)
    return ProtocolJudgeSpec(protocol_template=t, needs_reference="reference" in t.fields)


def is_protocol_judge(spec: object) -> bool:
    """True for a :class:`ProtocolJudgeSpec` (its verdicts must be read by the protocol scorer)."""
    return isinstance(spec, ProtocolJudgeSpec)


# Each pairwise template is a judge the judge job resolves by version (rubric.judging.resolve_judges).
for _version in _pairwise_versions():
    register_judge_factory(_version, partial(protocol_judge, _version))
