"""The neighbouring seeds' judge prompts (LINKAGE, RAG-QA Arena, LFQA-E) as versioned templates, and how
their verdicts are read.

Pure: no torch or vLLM here. Like the pairwise judges (:mod:`rubric.judging.judges`), each template is a jinja2
file ``rubric/prompts/<version>.j2`` rendered with ``StrictUndefined`` (a missing field is an error),
whose header names where the wording comes from; a wording change is a new version. A template may have
a system turn in ``<version>.system.j2`` (RAG-QA Arena's instruction and rubric).

Templates
    ``linkage.listwise.v1`` (four references; ``linkage.listwise_n.v1`` for other lengths),
    ``linkage.point_no_ref.v1``, ``linkage.point_with_ref.v1`` (0-10), ``linkage.pairwise.v1`` (A / B /
    C = tie), ``arena.pairwise.v1`` (1 / 2 / 0 = not sure, with the paper's in-context examples; and
    ``arena.pairwise_reasoning.v1``, the same prompt pre-filled with ``<thinking>`` only, for a judge that
    writes its own reasoning before the rating is read) and ``lfqa_e.reference_tie.v1`` (answer_1 /
    answer_2 / answer_tie, given a reference answer).

Pre-fill (logprob mode)
    The assistant turn is pre-filled so that the next token is the verdict: ``"[["`` for LINKAGE (its
    prompts ask for ``[[k]]``), ``"<thinking></thinking>\\n<rating>"`` for RAG-QA Arena (or the judge's
    own bounded reasoning inside the thinking tags: :func:`arena_verdict_prefill`), ``"answer_"`` for
    LFQA-E. How much probability mass each pre-fill leaves on the verdict tokens has not been measured
    on the embedded judge yet (the judges' pre-fills were: see :mod:`rubric.judging.judges`); the mass is
    recorded on every row and a row under ``min_mass`` is an error, never a guess.

Reading a pairwise verdict
    :func:`pairwise_verdict_probs` turns one order's first-token distribution into
    :class:`rubric.judging.verdicts.VerdictProbs` over the verdicts ``1`` (first answer shown), ``2`` and ``tie``,
    whatever each protocol calls them, so that :func:`rubric.judging.verdicts.pair_outcome` debiases the two orders
    and :func:`rubric.judging.verdicts.vote_probs` counts votes exactly as for the pairwise judges.
    :func:`parse_pairwise_verdict` reads generated text (vote mode, generation-only judges).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache

from jinja2 import Environment, StrictUndefined

from rubric.errors import ConfigError
from rubric.scoring import DEFAULT_MIN_MASS, ChatPrompt, PromptTemplate, PROMPTS_DIR, fold_token_probs
from rubric.judging import ParsedVerdict, VerdictProbs, parse_verdict
from rubric.registry import Registry

__all__ = [
    "ProtocolTemplate",
    "PROTOCOL_TEMPLATES",
    "PROTOCOL_VERSIONS",
    "LINKAGE_PREFILL",
    "ARENA_THINKING_PREFILL",
    "get_protocol_template",
    "arena_verdict_prefill",
    "ARENA_REASONING_VERSION",
    "pairwise_verdict_probs",
    "parse_pairwise_verdict",
]

_PROMPTS = PROMPTS_DIR

#: LINKAGE's prompts ask for ``[[k]]`` (``[[A]]`` in the pairwise one): the next token is the verdict.
LINKAGE_PREFILL = "[["
#: Where RAG-QA Arena's judge starts its reasoning (generation of the thinking, CoT mode).
ARENA_THINKING_PREFILL = "<thinking>"
_ARENA_THINKING_END = "</thinking>"
_ARENA_RATING = "<rating>"
#: RAG-QA Arena's judge that writes its own reasoning (pre-fill ``<thinking>``) before the rating is read.
ARENA_REASONING_VERSION = "arena.pairwise_reasoning.v1"

_DIGITS_0_10 = tuple(str(i) for i in range(11))


@dataclass(frozen=True)
class ProtocolTemplate:
    """One versioned prompt of a neighbouring protocol: its template, pre-fill and verdict tokens.

    Attributes:
        protocol: ``linkage``, ``arena`` or ``lfqa_e``.
        kind: ``listwise``, ``pointwise``, ``pairwise`` or ``generate`` (a prompt whose output is text: LINKAGE's
            reference list written from one golden answer; its score tokens are the labels the text is read by).
        version: the versioned registry name, e.g. ``linkage.listwise.v1``.
        source: where the wording comes from.
        template: the user-turn template with the pre-fill and the verdict (score) tokens.
        system: the system turn, or None.
        verdicts: pairwise templates only: the verdict each score token stands for, ``"1"`` (the
            first answer shown is better), ``"2"`` or ``"tie"``, in the order of the score tokens.
    """

    protocol: str
    kind: str
    version: str
    source: str
    template: PromptTemplate = field(repr=False)
    system: str | None = field(default=None, repr=False)
    verdicts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind == "pairwise":
            if len(self.verdicts) != len(self.template.score_tokens) or set(self.verdicts) != {"1", "2", "tie"}:
                raise ConfigError(f"{self.version}: a pairwise template needs one verdict ('1', '2', 'tie') per "
                                  f"score token, got {self.verdicts!r} for {self.template.score_tokens!r}")
        elif self.verdicts:
            raise ConfigError(f"{self.version}: only pairwise templates map tokens to verdicts")

    @property
    def prefill(self) -> str:
        return self.template.prefill

    @property
    def score_tokens(self) -> tuple[str, ...]:
        """The tokens read after the pre-fill (ranks, scores or verdicts, as the prompt spells them)."""
        return self.template.score_tokens

    @property
    def fields(self) -> tuple[str, ...]:
        return self.template.fields

    @property
    def template_hash(self) -> str:
        """Short sha256 of the user template's own hash and the system turn (everything the model sees)."""
        h = hashlib.sha256()
        for part in (self.template.template_hash, self.system or ""):
            h.update(part.encode("utf-8"))
            h.update(b"\x00")
        return h.hexdigest()[:12]

    def render(self, *, prefill: bool = True, **values: object) -> ChatPrompt:
        """The prompt; ``prefill=False`` leaves the assistant turn empty (generation-only judges).

        Args:
            prefill: start the assistant turn with :attr:`prefill`.
            **values: the template's fields (:attr:`fields`).

        Raises:
            ConfigError: a field is missing, or one is given that the template does not use.
        """
        unknown = sorted(set(values) - set(self.fields))
        if unknown:
            raise ConfigError(f"{self.version} takes fields {list(self.fields)}, got unknown {unknown}")
        p = self.template.render(**values)  # type: ignore[arg-type]
        return ChatPrompt(user=p.user, prefill=self.prefill if prefill else "", system=self.system)


#: Every protocol template, under its versioned name.
PROTOCOL_TEMPLATES: Registry[ProtocolTemplate] = Registry("protocol template")

_LINKAGE = "LINKAGE repo, prompt/"
_ARENA = "RAG-QA Arena (Han et al.), appendix Tables 13-15 and pairwise_lfrqa_examples.json"
_LFQA_E = "lfqa-rubric, after LFQA-E's annotation recipe (seed 002, Table 26)"


@dataclass(frozen=True)
class _Decl:
    protocol: str
    kind: str
    source: str
    prefill: str
    tokens: tuple[str, ...]
    values: tuple[float, ...]
    fields: tuple[str, ...]
    verdicts: tuple[str, ...] = ()
    system: bool = False
    file: str = ""  # the prompt files' stem when another version's wording is reused (default: the version)


_PAIR_FIELDS = ("question", "answer_1", "answer_2")

# score values of pairwise tokens: P(the first answer shown is better), a tie counting half
_DECLS: dict[str, _Decl] = {
    "linkage.listwise.v1": _Decl("linkage", "listwise", _LINKAGE + "LINKAGE.txt", LINKAGE_PREFILL,
                                 tuple("12345"), (1.0, 2.0, 3.0, 4.0, 5.0), ("question", "references", "candidate")),
    "linkage.listwise_n.v1": _Decl("linkage", "listwise", _LINKAGE + "LINKAGE.txt (any list length, by lfqa-rubric)",
                                   LINKAGE_PREFILL, tuple("123456789"), tuple(float(i) for i in range(1, 10)),
                                   ("question", "references", "candidate", "n_references")),
    "linkage.point_no_ref.v1": _Decl("linkage", "pointwise", _LINKAGE + "no_ref_point_score.txt", LINKAGE_PREFILL,
                                     _DIGITS_0_10, tuple(float(i) for i in range(11)), ("question", "candidate")),
    "linkage.point_with_ref.v1": _Decl("linkage", "pointwise", _LINKAGE + "with_ref_point_score.txt",
                                       LINKAGE_PREFILL, _DIGITS_0_10, tuple(float(i) for i in range(11)),
                                       ("question", "references", "candidate")),
    # a generation prompt, no pre-fill: its "tokens" are the labels the generated list is read by
    # (rubric.protocols.linkage_references.parse_generated_references)
    "linkage.create_multi_step_answer.v1": _Decl("linkage", "generate", _LINKAGE + "create_multi_step_answer.txt",
                                                 "", ("Answer1", "Answer2", "Answer3"), (1.0, 2.0, 3.0),
                                                 ("question", "golden")),
    # the same prompt with the assistant turn pre-filled with "Answer1:": a small model that never starts
    # the format by itself continues it (the generation is read after the pre-fill)
    "linkage.create_multi_step_answer.v2": _Decl("linkage", "generate", _LINKAGE + "create_multi_step_answer.txt; "
                                                 "the assistant turn pre-filled with 'Answer1:' (lfqa-rubric)",
                                                 "Answer1:", ("Answer1", "Answer2", "Answer3"), (1.0, 2.0, 3.0),
                                                 ("question", "golden"), file="linkage.create_multi_step_answer.v1"),
    "linkage.pairwise.v1": _Decl("linkage", "pairwise", _LINKAGE + "pairwise_comparison.txt", LINKAGE_PREFILL,
                                 ("A", "B", "C"), (1.0, 0.0, 0.5), _PAIR_FIELDS, ("1", "2", "tie")),
    # LINKAGE's eq. 3 baseline: the same prompt, a candidate shown against one reference answer
    # (rubric.protocols); its own version, so its rows and store keys never mix with eq. 2's
    "linkage.pairwise_reference.v1": _Decl("linkage", "pairwise", _LINKAGE + "pairwise_comparison.txt; eq. 3: a "
                                           "candidate against each reference answer", LINKAGE_PREFILL,
                                           ("A", "B", "C"), (1.0, 0.0, 0.5), _PAIR_FIELDS, ("1", "2", "tie"),
                                           file="linkage.pairwise.v1"),
    "arena.pairwise.v1": _Decl("arena", "pairwise", _ARENA, ARENA_THINKING_PREFILL + _ARENA_THINKING_END + "\n"
                               + _ARENA_RATING, ("1", "2", "0"), (1.0, 0.0, 0.5), _PAIR_FIELDS, ("1", "2", "tie"),
                               system=True),
    # the same prompt; the judge writes its own thinking after "<thinking>" before the rating is read
    # (arena_verdict_prefill closes it): models.protocols.ProtocolJudgeScorer generates it first
    ARENA_REASONING_VERSION: _Decl("arena", "pairwise", _ARENA + "; the judge's own reasoning first (lfqa-rubric)",
                                   ARENA_THINKING_PREFILL, ("1", "2", "0"), (1.0, 0.0, 0.5), _PAIR_FIELDS,
                                   ("1", "2", "tie"), system=True, file="arena.pairwise.v1"),
    "lfqa_e.reference_tie.v1": _Decl("lfqa_e", "pairwise", _LFQA_E, "answer_", ("1", "2", "tie"), (1.0, 0.0, 0.5),
                                     ("question", "reference", "answer_1", "answer_2"), ("1", "2", "tie")),
}

#: Every protocol template version, in a stable order.
PROTOCOL_VERSIONS: tuple[str, ...] = tuple(_DECLS)


def _load(version: str) -> ProtocolTemplate:
    d = _DECLS[version]
    stem = d.file or version
    text = (_PROMPTS / f"{stem}.j2").read_text(encoding="utf-8")
    system = None
    if d.system:
        # rendered once: the system turn has no fields, only its header comment to drop
        env = Environment(undefined=StrictUndefined, autoescape=False)
        system = env.from_string((_PROMPTS / f"{stem}.system.j2").read_text(encoding="utf-8")).render()
    template = PromptTemplate(name=version.rsplit(".", 1)[0], version=version, layout=d.kind, text=text,
                              prefill=d.prefill, score_tokens=d.tokens, score_values=d.values, fields=d.fields)
    return ProtocolTemplate(protocol=d.protocol, kind=d.kind, version=version, source=d.source, template=template,
                            system=system, verdicts=d.verdicts)


for _v in PROTOCOL_VERSIONS:
    PROTOCOL_TEMPLATES.register(_v, _load(_v))


@cache
def get_protocol_template(version: str) -> ProtocolTemplate:
    """The protocol template registered as ``version``.

    Raises:
        UnknownNameError: no such template (lists what exists).
    """
    return PROTOCOL_TEMPLATES.get(version)


def arena_verdict_prefill(reasoning: str) -> str:
    """The assistant pre-fill that reads RAG-QA Arena's rating after the judge's own reasoning.

    The reasoning (generated after :data:`ARENA_THINKING_PREFILL`) is cut at its first ``</thinking>``
    (a rating the model already wrote is replaced by the distribution read here) and closed:
    ``"<thinking>REASONING</thinking>\\n<rating>"``. With no reasoning this is the template's own pre-fill.
    """
    kept = reasoning.split(_ARENA_THINKING_END, 1)[0]
    kept = kept.removeprefix(ARENA_THINKING_PREFILL).strip()
    return f"{ARENA_THINKING_PREFILL}{kept}{_ARENA_THINKING_END}\n{_ARENA_RATING}"


def _pairwise(spec: ProtocolTemplate) -> None:
    if spec.kind != "pairwise":
        raise ConfigError(f"{spec.version} is a {spec.kind} template, not a pairwise one")


def pairwise_verdict_probs(token_probs: Mapping[str, float], spec: ProtocolTemplate, *,
                           min_mass: float = DEFAULT_MIN_MASS, top_k: int | None = None,
                           logprobs: bool = False) -> VerdictProbs:
    """One order's verdict probabilities from the first-token distribution after a pairwise pre-fill.

    The protocol's own verdict tokens (``A``/``B``/``C``, ``1``/``2``/``0``, ``1``/``2``/``tie``) are folded
    over their spellings, mapped onto ``1``/``2``/``tie`` and renormalised, as
    :func:`rubric.judging.verdicts.verdict_probs` does for the pairwise judges.

    Args:
        token_probs: token string (as the tokenizer spells it) -> probability (or log-probability).
        spec: a pairwise protocol template.
        min_mass: below this mass on the verdict tokens the order is an error.
        top_k: how many tokens the engine looked at (None: the full distribution); for the message.
        logprobs: the values are log-probabilities.

    Returns:
        A :class:`~rubric.judging.verdicts.VerdictProbs` (``ptie`` always set: every protocol here offers a tie);
        never raises for a model that did not answer with a verdict.

    Raises:
        ConfigError: ``spec`` is not pairwise, or ``min_mass`` is not in [0, 1).
    """
    _pairwise(spec)
    if not 0.0 <= min_mass < 1.0:
        raise ConfigError(f"'min_mass' must be in [0, 1), got {min_mass}")
    where = "in the full distribution" if top_k is None else f"among top-{top_k}"
    try:
        folded = fold_token_probs(token_probs, spec.score_tokens, logprobs=logprobs)
    except ValueError as e:
        return VerdictProbs(None, None, None, 0.0, error=f"{spec.version}: {e}")
    total = sum(folded.values())
    mass = min(total, 1.0)
    if total <= 0.0:
        return VerdictProbs(None, None, None, 0.0, error=f"{spec.version}: no verdict token {where}")
    probs = {v: folded[t] / total for t, v in zip(spec.score_tokens, spec.verdicts)}
    p1, p2, ptie = probs["1"], probs["2"], probs["tie"]
    if mass < min_mass:
        return VerdictProbs(p1, p2, ptie, mass, error=f"{spec.version}: no verdict token {where} "
                            f"(mass {mass:.3g} < min_mass {min_mass:g})")
    ranked = sorted(probs.values(), reverse=True)
    if ranked[0] == ranked[1]:
        return VerdictProbs(p1, p2, ptie, mass, error=f"{spec.version}: the top verdicts are equally likely")
    verdict = max(probs, key=probs.__getitem__)
    return VerdictProbs(p1, p2, ptie, mass, verdict=verdict)  # type: ignore[arg-type]


# [[A]], [[ b ]]; RAG-QA Arena's <rating>1</rating> (a missing closing tag is accepted: generation may stop there)
_BRACKET_RE = re.compile(r"\[\[\s*([A-Za-z0-9]+)\s*\]\]")
_RATING_RE = re.compile(r"<rating>\s*([^<\s]+)\s*(?:</rating>|$)", re.IGNORECASE)
_SNIP = 60


def _snip(text: str) -> str:
    t = " ".join(text.split())
    return t if len(t) <= _SNIP else t[:_SNIP - 3] + "..."


def parse_pairwise_verdict(text: str, spec: ProtocolTemplate) -> ParsedVerdict:
    """Read a pairwise protocol judge's verdict from its generated text, never by guessing.

    - LINKAGE (``[[A]]``/``[[B]]``/``[[C]]``) and RAG-QA Arena (``<rating>1</rating>``, 0 = not sure): every
      bracketed verdict (every rating tag) in the text is read; they must all say the same thing, and
      a value outside the protocol's verdicts is an error (``[[D]]``, ``<rating>3</rating>``). The
      reference code took the first match of its regex; a text that states two verdicts is ambiguous
      here instead.
    - LFQA-E (``answer_1``/``answer_2``/``answer_tie``): :func:`rubric.judging.verdicts.parse_verdict` with a tie.

    Args:
        text: the generated continuation only (the prompt itself shows every verdict as an example).
        spec: a pairwise protocol template.

    Returns:
        A :class:`~rubric.judging.verdicts.ParsedVerdict` with ``1``/``2``/``tie``, or an error reason.

    Raises:
        ConfigError: ``spec`` is not pairwise.
    """
    _pairwise(spec)
    if spec.protocol == "lfqa_e":
        return parse_verdict(text, tie=True)
    if not text or not text.strip():
        return ParsedVerdict(None, "empty output")
    regex, shown = (_BRACKET_RE, "[[{}]]") if spec.protocol == "linkage" else (_RATING_RE, "<rating>{}</rating>")
    found = list(dict.fromkeys(m.group(1) for m in regex.finditer(text)))
    canon = {t.casefold(): v for t, v in zip(spec.score_tokens, spec.verdicts)}
    expected = "/".join(shown.format(t) for t in spec.score_tokens)
    if not found:
        return ParsedVerdict(None, f"no verdict ({expected}) in {_snip(text)!r}")
    bad = [f for f in found if f.casefold() not in canon]
    if bad:
        return ParsedVerdict(None, f"{shown.format(bad[0])} is not a verdict ({expected}) in {_snip(text)!r}")
    verdicts = list(dict.fromkeys(canon[f.casefold()] for f in found))
    if len(verdicts) > 1:
        return ParsedVerdict(None, "ambiguous verdict: states " + " and ".join(shown.format(f) for f in found)
                             + f" ({_snip(text)!r})")
    return ParsedVerdict(verdicts[0])  # type: ignore[arg-type]
