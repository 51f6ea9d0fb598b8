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

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

from jinja2 import Environment, StrictUndefined, TemplateError, UndefinedError

from rubric.errors import ConfigError, UnknownNameError

__all__ = [
    "ChatPrompt",
    "PROMPTS_DIR",
    "PromptTemplate",
    "ParsedScore",
    "Layout",
    "LAYOUTS",
    "DEFAULT_MIN_MASS",
    "DEFAULT_LOG_SCORE_TOL",
    "LFQ_FILTER_VERSION",
    "TEMPLATE_VERSIONS",
    "get_template",
    "lfq_filter_template",
    "normalize_token",
    "fold_token_probs",
    "parse_score",
    "LFQDecision",
    "parse_lfq",
]

Layout = Literal["paper", "answer_first"]
LAYOUTS: tuple[str, ...] = ("paper", "answer_first")

#: Below this probability mass on score tokens a row gets an error instead of a score. A score made
#: from under 1% of the next-token distribution is mostly top-K tail noise; the pre-filled prompts
#: put 0.5-0.77 there even on SmolLM2-135M, so 0.01 rejects only prompts the model did not answer
#: with a score at all. The mass is also kept as the ``confidence`` column for stricter filters.
DEFAULT_MIN_MASS = 0.01

#: The paper keeps LFQ-filter judgements whose ``log_score`` (log-probability of the answer token)
#: is 0, i.e. rounded to 100% confidence. An exact 0 is an artefact of an API's rounding, so here it
#: means ``log p >= -DEFAULT_LOG_SCORE_TOL`` (p >= 0.999).
DEFAULT_LOG_SCORE_TOL = 1e-3

LFQ_FILTER_VERSION = "lfq_filter.fewshot.v1"

# the templates of every prompt in rubric/ (rubrics, judges, protocols): package data of `rubric`
PROMPTS_DIR = Path(__file__).resolve().parents[1] / "prompts"
_PROMPTS = PROMPTS_DIR
_DIGITS_1_5 = ("1", "2", "3", "4", "5")
_YES_NO = ("yes", "no")


@dataclass(frozen=True)
class ChatPrompt:
    """One prompt as chat messages: a user turn and the pre-filled start of the assistant turn.

    Engines apply the model's chat template with ``continue_final_message=True`` so that the
    prompt ends inside the assistant turn, right after ``prefill``.
    """

    user: str
    prefill: str = ""
    system: str | None = None

    def messages(self) -> list[dict[str, str]]:
        msgs = [] if self.system is None else [{"role": "system", "content": self.system}]
        msgs.append({"role": "user", "content": self.user})
        if self.prefill:
            msgs.append({"role": "assistant", "content": self.prefill})
        return msgs


@dataclass(frozen=True)
class PromptTemplate:
    """A versioned prompt: template text, assistant pre-fill and the score tokens it is read from.

    Attributes:
        name: the rubric (or task) name, e.g. ``coherence``.
        version: the versioned name, e.g. ``coherence.geval.v1`` (the rubric version it serves).
        layout: ``paper`` or ``answer_first``.
        text: the jinja2 template of the user turn.
        prefill: the start of the assistant turn; the next token is the score.
        score_tokens: canonical score tokens, e.g. ``("1", ..., "5")`` or ``("yes", "no")``.
        score_values: the value of each score token (``yes`` = 1, ``no`` = 0).
        fields: the variables the template needs.
        decision_extra: when set, the raw value is a *decision*: the value of the most probable
            score token (``yes`` only when P(yes) > P(no); a tie goes to the lower value), and the
            expected score (for yes/no, P(yes) / (P(yes) + P(no))) is kept as an extra of this name.
            None: the raw value is the expected score (G-Eval).
    """

    name: str
    version: str
    layout: str
    text: str
    prefill: str
    score_tokens: tuple[str, ...]
    score_values: tuple[float, ...]
    fields: tuple[str, ...] = ("question", "answer")
    decision_extra: str | None = None
    _compiled: object = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.score_tokens) != len(self.score_values) or not self.score_tokens:
            raise ConfigError(f"{self.version}: score_tokens and score_values must be non-empty and "
                              f"equally long, got {self.score_tokens!r} / {self.score_values!r}")
        if len({normalize_token(t) for t in self.score_tokens}) != len(self.score_tokens):
            raise ConfigError(f"{self.version}: score tokens collide after folding: {self.score_tokens!r}")
        env = Environment(undefined=StrictUndefined, autoescape=False)
        object.__setattr__(self, "_compiled", env.from_string(self.text))

    @property
    def template_hash(self) -> str:
        """Short sha256 of everything that decides what the model sees and how it is read."""
        h = hashlib.sha256()
        parts = [self.version, self.layout, self.text, self.prefill, "\x1f".join(self.score_tokens)]
        if self.decision_extra is not None:  # only then, so the hashes of the expected-score templates stay
            parts.append("decision:" + self.decision_extra)
        for part in parts:
            h.update(part.encode("utf-8"))
            h.update(b"\x00")
        return h.hexdigest()[:12]

    def render(self, **values: str) -> ChatPrompt:
        """Fill the template; a missing field is an error, never a blank.

        Raises:
            ConfigError: a field the template needs is missing (or the template is broken).
        """
        try:
            user = self._compiled.render(**values)  # type: ignore[attr-defined]
        except UndefinedError as e:
            raise ConfigError(f"{self.version} ({self.layout}) needs fields {list(self.fields)}: {e}") from e
        except TemplateError as e:  # pragma: no cover - templates are tested
            raise ConfigError(f"{self.version} ({self.layout}) failed to render: {e}") from e
        return ChatPrompt(user=user, prefill=self.prefill)


@dataclass(frozen=True)
class _Decl:
    name: str
    prefill: str
    score_tokens: tuple[str, ...]
    score_values: tuple[float, ...]
    layouts: tuple[str, ...] = LAYOUTS
    fields: tuple[str, ...] = ("question", "answer")
    decision_extra: str | None = None


def _digits(tokens: tuple[str, ...]) -> tuple[float, ...]:
    return tuple(float(t) for t in tokens)


# Pre-fills end with a space for digits: SmolLM2's digits are single tokens with no leading-space
# variant, and "- Coherence:" without the space leaves ~3% mass on digits (ENGINE-NOTES). For
# yes/no the pre-fill ends at the colon, because BPE vocabularies spell the word after a space as
# one token (" yes", "Ġyes"); a trailing space would force an unnatural split.
_DECLS: dict[str, _Decl] = {
    "coherence.geval.v1": _Decl("coherence", "- Coherence: ", _DIGITS_1_5, _digits(_DIGITS_1_5)),
    "relevance.geval.v1": _Decl("relevance", "- Relevance: ", _DIGITS_1_5, _digits(_DIGITS_1_5)),
    "fluency.geval.v1": _Decl("fluency", "- Fluency (1-3): ", ("1", "2", "3"), (1.0, 2.0, 3.0)),
    "completeness.geval.v1": _Decl("completeness", "- Completeness: ", _DIGITS_1_5, _digits(_DIGITS_1_5)),
    "use_of_examples.yesno.v1": _Decl("use_of_examples", "Answer:", _YES_NO, (1.0, 0.0)),
    # The LFQA-HP-1M reference prompt (zero_shot_example_detection.txt) verbatim and its binary outcome:
    # raw = 1 when P(yes) > P(no), else 0; the soft P(yes) / (P(yes) + P(no)) is the p_yes extra.
    "use_of_examples.yesno.v2": _Decl("use_of_examples", "Answer:", _YES_NO, (1.0, 0.0), decision_extra="p_yes"),
    # Not one of the paper's G-Eval prompts: the offline stand-in for the SubjECTive-QA classifier.
    "specificity.geval.v1": _Decl("specificity", "- Specificity: ", _DIGITS_1_5, _digits(_DIGITS_1_5)),
    LFQ_FILTER_VERSION: _Decl("lfq_filter", "Answer:", _YES_NO, (1.0, 0.0), layouts=("paper",),
                              fields=("question",)),
}

#: Every template version, in a stable order (the LFQ filter is not a rubric but is listed here).
TEMPLATE_VERSIONS: tuple[str, ...] = tuple(_DECLS)


@cache
def get_template(version: str, layout: str = "paper") -> PromptTemplate:
    """The template of a rubric version in a layout.

    Raises:
        UnknownNameError: no template for that version (lists what exists).
        ConfigError: the layout is unknown or not offered for that version.
    """
    if version not in _DECLS:
        raise UnknownNameError(f"no prompt template for {version!r}; known: {', '.join(TEMPLATE_VERSIONS)}")
    d = _DECLS[version]
    if layout not in d.layouts:
        raise ConfigError(f"'layout' must be one of {list(d.layouts)} for {version}, got {layout!r}")
    text = (_PROMPTS / f"{version}.{layout}.j2").read_text(encoding="utf-8")
    return PromptTemplate(name=d.name, version=version, layout=layout, text=text, prefill=d.prefill,
                          score_tokens=d.score_tokens, score_values=d.score_values, fields=d.fields,
                          decision_extra=d.decision_extra)


def lfq_filter_template() -> PromptTemplate:
    """The paper's LFQ filter prompt (appendix A.4, few-shot, updated definition)."""
    return get_template(LFQ_FILTER_VERSION, "paper")


# --- parsing -------------------------------------------------------------------------------------

# Markers tokenizers use for a leading space: GPT-2 byte-level BPE ("Ġ") and SentencePiece ("▁").
_SPACE_MARKS = ("Ġ", "▁", " ")


def normalize_token(token: str) -> str:
    """Fold a tokenizer's spelling of a token onto its canonical form: no leading space marks, lower case.

    ``"4"``, ``" 4"``, ``"Ġ4"``, ``"▁4"`` -> ``"4"``; ``"Yes"``, ``" yes"``, ``"ĠYES"`` -> ``"yes"``.
    Only *leading* space marks go: ``"4 "`` or ``"4."`` stay distinct and never count as a score.
    """
    t = token
    while t and t.startswith(_SPACE_MARKS):
        t = t[1:]
    return t.casefold()


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


def fold_token_probs(token_probs: Mapping[str, float], score_tokens: Sequence[str], *,
                     logprobs: bool = False) -> dict[str, float]:
    """Sum the probabilities of every spelling of each score token.

    Args:
        token_probs: token string (as the tokenizer spells it) -> probability, or log-probability
            when ``logprobs`` is true. Tokens that are not score tokens are ignored.
        score_tokens: the canonical score tokens.
        logprobs: the values are natural-log probabilities.

    Returns:
        canonical score token -> summed probability (0.0 where no spelling was present).

    Raises:
        ValueError: a value is not a finite probability in [0, 1] (or a log-probability <= 0).
    """
    canon = {normalize_token(t): t for t in score_tokens}
    out = dict.fromkeys(score_tokens, 0.0)
    for tok, v in token_probs.items():
        key = canon.get(normalize_token(tok))
        if key is None:
            continue
        p = math.exp(v) if logprobs else float(v)
        if not (math.isfinite(p) and 0.0 <= p <= 1.0 + 1e-6):
            raise ValueError(f"token {tok!r} has an invalid {'log-' if logprobs else ''}probability {v!r}")
        out[key] += p
    return out


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
    if not 0.0 <= min_mass < 1.0:
        raise ConfigError(f"'min_mass' must be in [0, 1), got {min_mass}")
    try:
        probs = fold_token_probs(token_probs, template.score_tokens, logprobs=logprobs)
    except ValueError as e:
        return ParsedScore(None, 0.0, {}, f"{template.name}: {e}")
    mass = sum(probs.values())
    # Both spellings of one token can be present; rounding may push the sum a hair over 1.
    mass = min(mass, 1.0)
    where = "in the full distribution" if top_k is None else f"among top-{top_k}"
    if mass <= 0.0:
        return ParsedScore(None, 0.0, probs, f"{template.name}: no score token {where}")
    if mass < min_mass:
        return ParsedScore(None, mass, probs, f"{template.name}: no score token {where} "
                           f"(mass {mass:.3g} < min_mass {min_mass:g})")
    total = sum(probs.values())
    value = sum(v * probs[t] for t, v in zip(template.score_tokens, template.score_values)) / total
    if template.decision_extra is None:
        return ParsedScore(value, mass, probs, expected=value)
    # the most probable token; a tie goes to the lower value (yes needs P(yes) > P(no))
    best = max(zip(template.score_tokens, template.score_values), key=lambda tv: (probs[tv[0]], -tv[1]))
    return ParsedScore(best[1], mass, probs, expected=value)


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
