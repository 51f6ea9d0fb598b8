"""The neighbouring protocols' prompts: how a protocol declares one, and how their verdicts are read.

Pure: no torch or vLLM here. A protocol's prompt is a :class:`rubric.scoring.PromptTemplate` like every
other prompt (one registry, one hash, one renderer), declared by the protocol's own module with
:func:`declare_protocol_prompt`: LINKAGE's in :mod:`rubric.protocols.linkage`, ``linkage_references`` and
``linkage_pairwise``, RAG-QA Arena's in :mod:`rubric.protocols.arena`, the others in their modules. Its
jinja2 file ``rubric/prompts/<version>.j2`` names where the wording comes from in its header; a system
turn sits in ``<version>.system.j2``. A wording change is a new version.

Pre-fill (logprob mode)
    The assistant turn is pre-filled so that the next token is the verdict (``"[["`` for LINKAGE, whose
    prompts ask for ``[[k]]``). How much probability mass each pre-fill leaves on the verdict tokens has
    not been measured on the embedded judge yet (the paper's judges' pre-fills were: see
    :mod:`rubric.judging.judges`); the mass is recorded on every row and a row under ``min_mass`` is an
    error, never a guess.

Reading a pairwise verdict
    A pairwise prompt maps its own verdict tokens onto ``1`` (first answer shown), ``2`` and ``tie``
    (``verdicts``), so :func:`pairwise_verdict_probs` (:func:`rubric.judging.verdict_probs`) reads it, and
    :func:`rubric.judging.verdicts.pair_outcome` and ``vote_probs`` debias and count it exactly as for the
    paper's judges. :func:`parse_pairwise_verdict` reads generated text (vote mode) in the prompt's
    ``verdict_format``. Every pairwise prompt is also a judge (``rubric.judging.JUDGES``) under its version.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rubric.errors import ConfigError, UnknownNameError
from rubric.scoring import PROMPTS, PromptTemplate, declare_prompt, system_turn
from rubric.judging import JUDGES, JudgeSpec, ParsedVerdict, parse_verdict, verdict_probs

__all__ = [
    "PROTOCOL_SCORER",
    "declare_protocol_prompt",
    "protocol_versions",
    "get_protocol_template",
    "pairwise_verdict_probs",
    "parse_pairwise_verdict",
]

#: The judge scorer a protocol's pairwise judge is run by unless it names another (``JudgeSpec.scorer``).
PROTOCOL_SCORER = "protocol"

# the value of a pairwise verdict token: P(the first answer shown is better), a tie counting half
_VERDICT_VALUES = {"1": 1.0, "2": 0.0, "tie": 0.5}


def declare_protocol_prompt(version: str, *, protocol: str, layout: str, source: str, prefill: str,
                            tokens: tuple[str, ...], fields: tuple[str, ...], values: tuple[float, ...] = (),
                            verdicts: tuple[str, ...] = (), verdict_format: str | None = None,
                            system: bool = False, file: str | None = None, text: str | None = None,
                            close_reasoning: Callable[[str], str] | None = None,
                            scorer: str = PROTOCOL_SCORER) -> PromptTemplate:
    """Declare one of a protocol's prompts (and, for a pairwise one, its judge).

    Args:
        version: the versioned name, e.g. ``linkage.listwise.v1``.
        protocol: the protocol's name.
        layout: ``listwise``, ``pointwise``, ``pairwise`` or ``generate`` (a prompt whose output is text; its
            tokens are the labels the text is read by).
        source: where the wording comes from.
        prefill: the start of the assistant turn.
        tokens: the tokens read after the pre-fill (ranks, scores or verdicts, as the prompt spells them).
        fields: the template's fields.
        values: each token's value (pairwise: from ``verdicts``).
        verdicts: pairwise only: the verdict ``1``/``2``/``tie`` each token stands for.
        verdict_format: pairwise only: how a generated text states a verdict (``[[{}]]``).
        system: the prompt has a system turn in ``<file>.system.j2``.
        file: the prompt files' stem when another version's wording is reused (default: the version).
        text: the template itself, for a prompt declared outside ``rubric/prompts/`` (another package's
            protocol, a test's); then no file is read (and ``system`` must be False).
        close_reasoning: pairwise only: the judge writes its own reasoning in the pre-fill first; this turns
            that reasoning into the pre-fill its verdict is read after (``JudgeSpec.close_reasoning``).
        scorer: pairwise only: the judge scorer that runs the judge, by name (``JudgeSpec.scorer``; the
            factory is registered in ``models.backends.JUDGE_SCORERS``, or beside this call by another
            package).

    Raises:
        ConfigError: the version is declared already, a pairwise prompt lacks verdicts, or ``text`` comes
            with ``system``.
    """
    stem = file or version
    if text is not None and system:
        raise ConfigError(f"{version}: a prompt given as text has no system turn file")
    sys_text = system_turn(f"{stem}.system") if system else None
    if (layout == "pairwise") != bool(verdicts):
        raise ConfigError(f"{version}: verdicts are for pairwise prompts, and every pairwise prompt needs them")
    spec = dict(layout=layout, source=source, prefill=prefill, score_tokens=tokens,
                score_values=values or tuple(_VERDICT_VALUES[v] for v in verdicts), fields=fields,
                verdicts=verdicts, verdict_format=verdict_format, system=sys_text, protocol=protocol,
                hash_extra=(sys_text or "",))
    prompt = declare_prompt(version, file=stem, text=text, **spec)
    if verdicts:
        JUDGES.register(version, JudgeSpec(name=prompt.name, template=prompt, close_reasoning=close_reasoning,
                                           scorer=scorer))
    return prompt


def protocol_versions() -> list[str]:
    """The versions of every protocol prompt, sorted."""
    return [v for v in PROMPTS.names() if PROMPTS.get(v).protocol is not None]


def get_protocol_template(version: str) -> PromptTemplate:
    """The protocol prompt registered as ``version``.

    Raises:
        UnknownNameError: no such prompt (lists what exists).
    """
    if version not in PROMPTS or PROMPTS.get(version).protocol is None:
        raise UnknownNameError(f"unknown protocol template {version!r}; known: {', '.join(protocol_versions())}")
    return PROMPTS.get(version)


#: One order's verdict probabilities after a pairwise prompt's pre-fill (:func:`rubric.judging.verdict_probs`).
pairwise_verdict_probs = verdict_probs

# [[A]], [[ b ]]; RAG-QA Arena's <rating>1</rating> (a missing closing tag is accepted: generation may stop there)
_TEXT_FORMATS = {"[[{}]]": re.compile(r"\[\[\s*([A-Za-z0-9]+)\s*\]\]"),
                 "<rating>{}</rating>": re.compile(r"<rating>\s*([^<\s]+)\s*(?:</rating>|$)", re.IGNORECASE)}
_SNIP = 60


def _snip(text: str) -> str:
    t = " ".join(text.split())
    return t if len(t) <= _SNIP else t[:_SNIP - 3] + "..."


def parse_pairwise_verdict(text: str, spec: PromptTemplate) -> ParsedVerdict:
    """Read a pairwise protocol judge's verdict from its generated text, never by guessing.

    - ``[[A]]``/``[[B]]``/``[[C]]`` (LINKAGE) and ``<rating>1</rating>`` (RAG-QA Arena, 0 = not sure): every
      bracketed verdict (every rating tag) in the text is read; they must all say the same thing, and
      a value outside the prompt's verdicts is an error (``[[D]]``, ``<rating>3</rating>``). The
      reference code took the first match of its regex; a text that states two verdicts is ambiguous
      here instead.
    - ``answer_1``/``answer_2``/``answer_tie``: :func:`rubric.judging.verdicts.parse_verdict`.

    Args:
        text: the generated continuation only (the prompt itself shows every verdict as an example).
        spec: a pairwise protocol prompt.

    Returns:
        A :class:`~rubric.judging.verdicts.ParsedVerdict` with ``1``/``2``/``tie``, or an error reason.

    Raises:
        ConfigError: ``spec`` is not pairwise.
    """
    if not spec.verdicts:
        raise ConfigError(f"{spec.version} is a {spec.layout} template, not a pairwise one")
    shown = spec.verdict_format or "answer_{}"
    if shown == "answer_{}":
        return parse_verdict(text, tie="tie" in spec.verdicts)
    if not text or not text.strip():
        return ParsedVerdict(None, "empty output")
    found = list(dict.fromkeys(m.group(1) for m in _TEXT_FORMATS[shown].finditer(text)))
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
