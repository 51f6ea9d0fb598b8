"""Every LLM prompt as one versioned spec: one class, one registry, one hash, one renderer, one reader.

Pure: no torch or vLLM here. A rubric's G-Eval prompt, a pairwise judge, a neighbouring protocol's
prompt, the factuality prompts and the LFQ filter are each one :class:`PromptTemplate`, declared by
the module that owns it with :func:`declare_prompt` into :data:`PROMPTS`. Its text is a jinja2
file ``rubric/prompts/<file>.j2`` (package data) rendered with ``StrictUndefined`` (a missing field
is an error, never a blank). A wording change is a new version.

What the engine returns for a prompt with score tokens (the probability of each candidate token as
the tokenizer spells it) is read by one function, :func:`read_tokens`: the spellings are folded onto
the prompt's tokens (:func:`fold_token_probs`), the mass on them is the confidence, and under
``min_mass`` the reading is an error with the reason. What the tokens mean is folded on top by their
owners: the expected score and the yes/no decision (``rubric.scoring.geval.parse_score``), a judge's
verdict 1/2/tie (``rubric.judging.verdict_probs``), LINKAGE's expected rank (``rubric.protocols``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from jinja2 import Environment, StrictUndefined, TemplateError, UndefinedError

from rubric.config import check_range
from rubric.errors import ConfigError
from rubric.registry import Registry

__all__ = [
    "ChatPrompt", "PROMPTS_DIR", "PROMPTS", "PromptTemplate", "declare_prompt", "prompt_key", "system_turn", "DEFAULT_MIN_MASS",
    "normalize_token", "fold_token_probs", "TokenReading", "read_tokens", "mass_reading",
]

#: Below this probability mass on score tokens a row gets an error instead of a score. A score made
#: from under 1% of the next-token distribution is mostly top-K tail noise; the pre-filled prompts
#: put 0.5-0.77 there even on SmolLM2-135M, so 0.01 rejects only prompts the model did not answer
#: with a score at all. The mass is also kept as the ``confidence`` column for stricter filters.
DEFAULT_MIN_MASS = 0.01

# the templates of every prompt in rubric/ (rubrics, judges, protocols): package data of `rubric`
PROMPTS_DIR = Path(__file__).resolve().parents[1] / "prompts"


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


@cache
def _environment(keep_trailing_newline: bool) -> Environment:
    """The one jinja2 environment of prompts (``rubric.html_report`` has its own, for HTML pages)."""
    return Environment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=keep_trailing_newline)


def _digest(parts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:12]


@dataclass(frozen=True)
class PromptTemplate:
    """One versioned prompt: its template, pre-fill, the tokens it is read from, and what they mean.

    Attributes:
        name: the rubric or task the prompt serves (``coherence``, ``judge.plain``, ``arena.pairwise``).
        version: the versioned name, e.g. ``coherence.geval.v1`` or ``judge.plain_tie.v1``.
        layout: how the prompt is laid out (``paper``, ``answer_first``; ``pairwise``, ``listwise``,
            ``pointwise``, ``generate`` for the protocols' prompts); None for a prompt answered with text.
        text: the jinja2 template of the user turn.
        prefill: the start of the assistant turn; the next token is the score or verdict.
        score_tokens: the canonical tokens read after the pre-fill (``("1", ..., "5")``, ``("yes", "no")``);
            empty for a prompt answered with free text.
        score_values: the value of each score token (``yes`` = 1; a verdict: P(first answer better)).
        fields: the variables the template takes, no more and no fewer.
        decision_extra: when set, the raw value is a *decision* (the most probable token's value, a tie
            going to the lower value) and the expected score is kept as an extra of this name.
        system: the system turn, or None.
        verdicts: pairwise prompts: the verdict (``"1"``, ``"2"``, ``"tie"``) each score token stands for.
        verdict_format: how a generated text states a verdict (``answer_{}``, ``[[{}]]``, ``<rating>{}</rating>``).
        source: where the wording comes from.
        protocol: the neighbouring protocol that declares the prompt (``linkage``, ``arena``, ...), or None.
        hash_extra: what the model sees or how it is read beyond the template (a judge's chain of thought,
            a system turn): when set, ``template_hash`` hashes it over the template's own hash.
        keep_trailing_newline: the rendered text keeps the file's final newline.
    """

    name: str
    version: str
    layout: str | None
    text: str = field(repr=False)
    prefill: str = ""
    score_tokens: tuple[str, ...] = ()
    score_values: tuple[float, ...] = ()
    fields: tuple[str, ...] = ("question", "answer")
    decision_extra: str | None = None
    system: str | None = field(default=None, repr=False)
    verdicts: tuple[str, ...] = ()
    verdict_format: str | None = None
    source: str = ""
    protocol: str | None = None
    hash_extra: tuple[str, ...] = ()
    keep_trailing_newline: bool = False

    def __post_init__(self) -> None:
        if len(self.score_tokens) != len(self.score_values):
            raise ConfigError(f"{self.version}: score_tokens and score_values must be equally long, got "
                              f"{self.score_tokens!r} / {self.score_values!r}")
        if len({normalize_token(t) for t in self.score_tokens}) != len(self.score_tokens):
            raise ConfigError(f"{self.version}: score tokens collide after folding: {self.score_tokens!r}")
        if self.verdicts and (len(self.verdicts) != len(self.score_tokens) or not {"1", "2"} <= set(self.verdicts)
                              or not set(self.verdicts) <= {"1", "2", "tie"}):
            raise ConfigError(f"{self.version}: a pairwise prompt needs one verdict ('1', '2', 'tie') per score "
                              f"token, got {self.verdicts!r} for {self.score_tokens!r}")

    @property
    def template_hash(self) -> str:
        """Short sha256 of everything that decides what the model sees and how it is read.

        The version, layout, text, pre-fill and score tokens (and the decision rule where there is one);
        then, where the prompt has ``hash_extra``, that hash with the extra parts. The order of the parts
        is fixed: the hashes are in users' stores and provenance columns.
        """
        parts = [self.version] + ([self.layout] if self.layout is not None else []) + [self.text, self.prefill]
        if self.score_tokens:
            parts.append("\x1f".join(self.score_tokens))
        if self.decision_extra is not None:
            parts.append("decision:" + self.decision_extra)
        own = _digest(parts)
        return _digest([own, *self.hash_extra]) if self.hash_extra else own

    def render(self, *, prefill: bool = True, **values: object) -> ChatPrompt:
        """Fill the template; ``prefill=False`` leaves the assistant turn empty (generation-only judges).

        Raises:
            ConfigError: a field is missing, or one is given that the template does not take.
        """
        unknown = sorted(set(values) - set(self.fields))
        if unknown:
            raise ConfigError(f"{self.version} takes fields {list(self.fields)}, got unknown {unknown}")
        where = self.version if self.layout is None else f"{self.version} ({self.layout})"
        try:
            user = _compiled(self.text, self.keep_trailing_newline).render(**values)
        except UndefinedError as e:
            raise ConfigError(f"{where} needs fields {list(self.fields)}: {e}") from e
        except TemplateError as e:  # pragma: no cover - templates are tested
            raise ConfigError(f"{where} failed to render: {e}") from e
        return ChatPrompt(user=user, prefill=self.prefill if prefill else "", system=self.system)


@cache
def _compiled(text: str, keep_trailing_newline: bool):
    return _environment(keep_trailing_newline).from_string(text)


#: Every prompt version, under :func:`prompt_key`.
PROMPTS: Registry[PromptTemplate] = Registry("prompt template")


def prompt_key(version: str, layout: str | None = None) -> str:
    """The registry key of a prompt: its version, and ``@layout`` for a rubric prompt offered in layouts."""
    return version if layout is None else f"{version}@{layout}"


def system_turn(file: str) -> str:
    """The system turn in ``rubric/prompts/<file>.j2``, rendered once (it has no fields, only its header to drop)."""
    return _environment(False).from_string((PROMPTS_DIR / f"{file}.j2").read_text(encoding="utf-8")).render()


def declare_prompt(version: str, *, file: str | None = None, layout: str | None = None, keyed_layout: bool = False,
                   text: str | None = None, **spec: object) -> PromptTemplate:
    """Read ``rubric/prompts/<file>.j2`` (default: the version) and register the prompt in :data:`PROMPTS`.

    Args:
        version: the prompt's version.
        file: the stem of the template file, when another version's wording is reused.
        text: the template itself, for a prompt declared outside ``rubric/prompts/`` (another package's,
            a test's): no file is read.
        layout: the prompt's layout.
        keyed_layout: the version is offered in several layouts: registered as ``version@layout``.
        **spec: the other :class:`PromptTemplate` attributes.

    Raises:
        ConfigError: the version (in that layout) is declared already.
    """
    if text is None:
        text = (PROMPTS_DIR / f"{file or version}.j2").read_text(encoding="utf-8")
    spec.setdefault("name", version.rsplit(".", 1)[0])
    prompt = PromptTemplate(version=version, layout=layout, text=text, **spec)  # type: ignore[arg-type]
    return PROMPTS.register(prompt_key(version, layout if keyed_layout else None), prompt)


# --- reading score tokens ------------------------------------------------------------------------

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


@dataclass(frozen=True)
class TokenReading:
    """The distribution over a prompt's tokens, or why it gives none.

    Attributes:
        probs: folded probability per canonical token (empty when the values were not probabilities).
        mass: the probability mass on the tokens (the confidence), in [0, 1].
        error: why the reading gives no value (no token seen, or a mass under ``min_mass``).
    """

    probs: dict[str, float]
    mass: float
    error: str | None = None

    def normalised(self) -> dict[str, float]:
        """The probabilities renormalised over the tokens (call only when the mass is above 0)."""
        total = sum(self.probs.values())
        return {t: p / total for t, p in self.probs.items()}


def _where(top_k: int | None) -> str:
    return "in the full distribution" if top_k is None else f"among top-{top_k}"


def mass_reading(probs: dict[str, float], *, min_mass: float, top_k: int | None, what: str,
                 label: str = "") -> TokenReading:
    """A :class:`TokenReading` of already folded probabilities: the mass, and an error under ``min_mass``."""
    # Both spellings of one token can be present; rounding may push the sum a hair over 1.
    mass = min(sum(probs.values()), 1.0)
    if mass <= 0.0:
        return TokenReading(probs, 0.0, f"{label}no {what} {_where(top_k)}")
    if mass < min_mass:
        return TokenReading(probs, mass, f"{label}no {what} {_where(top_k)} (mass {mass:.3g} < min_mass {min_mass:g})")
    return TokenReading(probs, mass)


def read_tokens(token_probs: Mapping[str, float], tokens: Sequence[str], *, min_mass: float = DEFAULT_MIN_MASS,
                top_k: int | None = None, logprobs: bool = False, what: str = "score token",
                label: str = "") -> TokenReading:
    """The one reader from an engine's token probabilities to a distribution over a prompt's tokens.

    Args:
        token_probs: token string (as the tokenizer spells it) -> probability (or log-probability).
        tokens: the canonical tokens to read.
        min_mass: below this mass on the tokens the reading is an error.
        top_k: how many tokens the engine looked at (None: the full distribution); for the message.
        logprobs: the values are log-probabilities.
        what: what a token is, for the message (``score token``, ``verdict token``, ``rank digit``).
        label: the start of every message (``"coherence: "``).

    Returns:
        A :class:`TokenReading`; never raises for a model that did not answer with one of the tokens.

    Raises:
        ConfigError: ``min_mass`` is not in [0, 1).
    """
    check_range("min_mass", min_mass, low=0, below=1)
    try:
        probs = fold_token_probs(token_probs, tokens, logprobs=logprobs)
    except ValueError as e:
        return TokenReading({}, 0.0, f"{label}{e}")
    return mass_reading(probs, min_mass=min_mass, top_k=top_k, what=what, label=label)
