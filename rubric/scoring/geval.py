"""G-Eval prompts as versioned templates, and score parsing from score-token probabilities.

Pure: no torch or vLLM here. An engine (``models.llm``) renders a ``ChatPrompt`` with the model's
chat template and returns, per prompt, the probability of each candidate score token as the
tokenizer spells it (``"4"``, ``"Ġ4"``, ``"▁4"``, ``" Yes"``); ``parse_score`` folds those spellings
onto the rubric's score tokens and computes the G-Eval expected score

    score = sum(s * p(s)) / sum(p(s))

with ``sum(p(s))`` (the probability mass on score tokens) recorded as the row's confidence.

Templates live in ``rubric/prompts/<version>.<layout>.j2`` (package data) and are rendered with
jinja2 ``StrictUndefined``. The *prefill* is the start of the assistant turn, written so that the
very next token is the score: on SmolLM2-135M it moves the mass on score tokens from ~5% to
50-77% (ENGINE-NOTES). It is part of the template's identity: ``template_hash`` covers the
template text, the prefill and the score tokens, so changing any of them changes the hash
recorded on every output row.

Two layouts:

* ``paper`` - the paper's prompts (appendix A.6-A.9) verbatim: instructions first, then the
  question and answer. Prompts of one rubric share the instruction prefix across answers.
* ``answer_first`` - the question and answer first, then the rubric's instructions, so the five
  rubric prompts of one answer share the question+answer prefix in an engine's prefix cache.
  The instruction text is the paper's; fluency then also sees the question (it must, for the
  prefix to be shared). ``scripts/bench_llm.py`` measures its agreement with ``paper``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from rubric.errors import ConfigError, UnknownNameError
from rubric.scoring.prompts import DEFAULT_MIN_MASS, PROMPTS, PromptTemplate, declare_prompt, prompt_key, read_tokens
from rubric.scoring.specs import RUBRICS, RubricSpec

__all__ = [
    "ParsedScore",
    "Layout",
    "LAYOUTS",
    "DEFAULT_LOG_SCORE_TOL",
    "LFQ_FILTER_VERSION",
    "TEMPLATE_VERSIONS",
    "get_template",
    "lfq_filter_template",
    "parse_score",
    "expected_value",
    "LFQDecision",
    "parse_lfq",
]

Layout = Literal["paper", "answer_first"]
LAYOUTS: tuple[str, ...] = ("paper", "answer_first")

#: The paper keeps LFQ-filter judgements whose ``log_score`` (log-probability of the answer token)
#: is 0, i.e. rounded to 100% confidence. An exact 0 is an artefact of an API's rounding, so here it
#: means ``log p >= -DEFAULT_LOG_SCORE_TOL`` (p >= 0.999).
DEFAULT_LOG_SCORE_TOL = 1e-3

LFQ_FILTER_VERSION = "lfq_filter.fewshot.v1"

_DIGITS_1_5 = ("1", "2", "3", "4", "5")
_YES_NO = ("yes", "no")
_VALUES_1_5 = (1.0, 2.0, 3.0, 4.0, 5.0)

# Pre-fills end with a space for digits: SmolLM2's digits are single tokens with no leading-space
# variant, and "- Coherence:" without the space leaves ~3% mass on digits (ENGINE-NOTES). For
# yes/no the pre-fill ends at the colon, because BPE vocabularies spell the word after a space as
# one token (" yes", "Ġyes"); a trailing space would force an unnatural split.
_EXPECTED = "probability-weighted score"
# An LLM rubric is one line: version -> (pre-fill, score tokens, their values, the rubric's description, extra
# PromptTemplate attributes); its rubric spec (backend "llm", the raw range of its values) is registered with it.
_DECLS: dict[str, tuple[str, tuple[str, ...], tuple[float, ...], str, dict]] = {
    "coherence.geval.v1": ("- Coherence: ", _DIGITS_1_5, _VALUES_1_5, f"G-Eval coherence (1-5), {_EXPECTED}", {}),
    "relevance.geval.v1": ("- Relevance: ", _DIGITS_1_5, _VALUES_1_5, f"G-Eval relevance (1-5), {_EXPECTED}", {}),
    "fluency.geval.v1": ("- Fluency (1-3): ", ("1", "2", "3"), (1.0, 2.0, 3.0), f"G-Eval fluency (1-3), {_EXPECTED}",
                         {}),
    "completeness.geval.v1": ("- Completeness: ", _DIGITS_1_5, _VALUES_1_5,
                              f"G-Eval-style completeness (1-5), {_EXPECTED}", {}),
    "use_of_examples.yesno.v1": ("Answer:", _YES_NO, (1.0, 0.0),
                                 "P(yes) / (P(yes) + P(no)) that the answer uses a concrete example", {}),
    # The LFQA-HP-1M reference prompt (zero_shot_example_detection.txt) verbatim and its binary outcome:
    # raw = 1 when P(yes) > P(no), else 0; the soft P(yes) / (P(yes) + P(no)) is the p_yes extra.
    "use_of_examples.yesno.v2": ("Answer:", _YES_NO, (1.0, 0.0), "the LFQA-HP-1M reference prompt verbatim; 1 when "
                                 "P(yes) > P(no), else 0 (the paper's binary outcome); the soft P(yes) in the p_yes "
                                 "extra", {"decision_extra": "p_yes"}),
    # Not one of the paper's G-Eval prompts: the offline stand-in for the SubjECTive-QA classifier.
    "specificity.geval.v1": ("- Specificity: ", _DIGITS_1_5, _VALUES_1_5,
                             f"G-Eval-style specificity (1-5), {_EXPECTED}", {}),
    # not a rubric: no rubric spec
    LFQ_FILTER_VERSION: ("Answer:", _YES_NO, (1.0, 0.0), "", {"fields": ("question",)}),
}
#: The layouts each version is offered in (the LFQ filter: the paper's only).
_LAYOUTS_OF = {v: ("paper",) if v == LFQ_FILTER_VERSION else LAYOUTS for v in _DECLS}

for _v, (_prefill, _tokens, _values, _description, _extra) in _DECLS.items():
    _name = _v.split(".", 1)[0]
    for _layout in _LAYOUTS_OF[_v]:
        declare_prompt(_v, file=f"{_v}.{_layout}", layout=_layout, keyed_layout=True, name=_name, prefill=_prefill,
                       score_tokens=_tokens, score_values=_values, **_extra)
    if _description:
        RUBRICS.register(_v, RubricSpec(_name, _v, "llm", min(_values), max(_values), description=_description,
                                        kind="binary" if _tokens == _YES_NO else "continuous"))

#: Every template version, in a stable order (the LFQ filter is not a rubric but is listed here).
TEMPLATE_VERSIONS: tuple[str, ...] = tuple(_DECLS)


def get_template(version: str, layout: str = "paper") -> PromptTemplate:
    """The template of a rubric version in a layout.

    Raises:
        UnknownNameError: no template for that version (lists what exists).
        ConfigError: the layout is unknown or not offered for that version.
    """
    if version not in _DECLS:
        raise UnknownNameError(f"no prompt template for {version!r}; known: {', '.join(TEMPLATE_VERSIONS)}")
    if layout not in _LAYOUTS_OF[version]:
        raise ConfigError(f"'layout' must be one of {list(_LAYOUTS_OF[version])} for {version}, got {layout!r}")
    return PROMPTS.get(prompt_key(version, layout))


def lfq_filter_template() -> PromptTemplate:
    """The paper's LFQ filter prompt (appendix A.4, few-shot, updated definition)."""
    return get_template(LFQ_FILTER_VERSION, "paper")


# --- parsing -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ParsedScore:
    """A parsed score: a value, or an error reason; the mass on score tokens either way.

    Attributes:
        value: the expected score ``sum(s*p(s))/sum(p(s))``, or None when ``error`` is set.
        mass: the probability mass on the score tokens (the confidence column), in [0, 1].
        probs: folded probability per canonical score token (absent tokens are 0).
        error: why there is no value.
        expected: the expected score; equal to ``value`` unless the template decides
            (``decision_extra``), where ``value`` is the most probable token's value.
    """

    value: float | None
    mass: float
    probs: Mapping[str, float]
    error: str | None = None
    expected: float | None = None


def parse_score(token_probs: Mapping[str, float], template: PromptTemplate, *, min_mass: float = DEFAULT_MIN_MASS,
                top_k: int | None = None, logprobs: bool = False) -> ParsedScore:
    """The G-Eval expected score of one prompt from its score-token probabilities.

    Args:
        token_probs: token string -> probability (or log-probability) for the candidates an engine saw.
        template: gives the rubric's score tokens and their values.
        min_mass: below this mass on score tokens the result is an error, not a score.
        top_k: how many tokens the engine looked at (None: the full distribution); for the message.
        logprobs: the values are log-probabilities.

    Returns:
        A ``ParsedScore``; never raises for a model that simply did not answer with a score.
    """
    r = read_tokens(token_probs, template.score_tokens, min_mass=min_mass, top_k=top_k, logprobs=logprobs,
                    label=f"{template.name}: ")
    if r.error is not None:
        return ParsedScore(None, r.mass, r.probs, r.error)
    value = expected_value(r.probs, template)
    if template.decision_extra is None:
        return ParsedScore(value, r.mass, r.probs, expected=value)
    # the most probable token; a tie goes to the lower value (yes needs P(yes) > P(no))
    best = max(zip(template.score_tokens, template.score_values), key=lambda tv: (r.probs[tv[0]], -tv[1]))
    return ParsedScore(best[1], r.mass, r.probs, expected=value)


def expected_value(probs: Mapping[str, float], template: PromptTemplate) -> float:
    """The expected score ``sum(v * p(v)) / sum(p(v))`` over the template's score tokens (folded probabilities)."""
    return sum(v * probs[t] for t, v in zip(template.score_tokens, template.score_values)) / sum(probs.values())


@dataclass(frozen=True)
class LFQDecision:
    """The LFQ filter's verdict on one question.

    Attributes:
        is_lfq: the more probable of yes/no is yes (None when neither token was seen).
        p_yes: P(yes) / (P(yes) + P(no)).
        log_score: log-probability of the chosen token in the full distribution (the paper's log_score).
        confident: ``log_score`` is 0 within the tolerance (the paper keeps only these).
        error: why there is no verdict.
    """

    is_lfq: bool | None
    p_yes: float | None
    log_score: float | None
    confident: bool
    error: str | None = None


def parse_lfq(token_probs: Mapping[str, float], *, log_score_tol: float = DEFAULT_LOG_SCORE_TOL,
              top_k: int | None = None, logprobs: bool = False) -> LFQDecision:
    """Read the LFQ filter prompt's answer with the paper's ``log_score = 0`` rule.

    Args:
        token_probs: as for ``parse_score``, for a prompt from ``lfq_filter_template()``.
        log_score_tol: ``confident`` means ``log_score >= -log_score_tol``.
        top_k: how many tokens the engine looked at, for the message.
        logprobs: the values are log-probabilities.
    """
    tmpl = lfq_filter_template()
    parsed = parse_score(token_probs, tmpl, min_mass=0.0, top_k=top_k, logprobs=logprobs)
    if parsed.error is not None:
        return LFQDecision(None, None, None, False, parsed.error)
    p_yes, p_no = parsed.probs["yes"], parsed.probs["no"]
    chosen = max(p_yes, p_no)
    log_score = math.log(chosen)
    return LFQDecision(p_yes >= p_no, parsed.value, log_score, log_score >= -log_score_tol)
