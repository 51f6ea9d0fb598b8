"""Pairwise LLM judges (paper section 5) as versioned templates, and how their verdicts are read.

Pure: no torch or vLLM here. ``models.judges.JudgeScorer`` runs these specs on an engine.

Judges
    ``judge.plain.v1``, ``judge.cot.v1`` and ``judge.rubrics.v1`` are the LFQA-HP-1M reference
    code's three pairwise prompts (plain, chain-of-thought, the nine-rubric variant that is
    Table 4's "GPT-4o(R)"), verbatim in ``rubric/prompts/judge.<name>.v1.j2`` with the source
    named in each header. ``judge.<name>_tie.v1`` adds a tie option: that is a template change,
    so it is a distinct version. The tie is spelled ``answer_tie`` (not a bare ``tie``) so that
    all three verdicts continue the same pre-fill (below).

Pre-fill (logprob mode)
    The assistant turn is pre-filled with ``"answer_"`` so that the very next token is the
    verdict: SmolLM2's tokenizer splits ``answer_1`` into ``answer``, ``_``, ``1``, and ``1``,
    ``2`` and ``tie`` are single tokens. Measured with the transformers engine (full softmax,
    fp32) on real pairs of ``rubric/data/sample_pairs.jsonl`` (the first 8 non-empty pairs, both
    orders: 16 prompts; the tie rows on the first 4: 8 prompts), probability mass of the first
    token on the verdict tokens, median (min):

    - ``""`` (the chat template's generation prompt only): 0.051 (0.027) on '1'/'2'; the top
      tokens are 'The', 'You', '-', '###'.
    - ``"### Output: answer_"``: 0.949 (0.921) on '1'/'2'.
    - ``"answer_"``: 0.970 (0.954) on '1'/'2'. Chosen.
    - tie templates, ``"### Output:"`` or ``"Verdict:"`` (so that 'answer' or 'tie' could come
      next): under 0.04 on either word; newline and end-of-turn take most of the mass.
    - tie templates spelling the tie ``answer_tie``, ``"answer_"``: 0.96 (0.94) on
      '1'/'2'/'tie', of which P(tie) 0.04-0.08. Chosen for the ``_tie`` versions.

    Through vLLM (top-20) on the first 4 sample pairs, both orders, the mass after ``"answer_"``
    was 0.95-0.98 (plain), 0.90-0.96 (nine-rubric and CoT after 96 tokens of reasoning) and
    0.79-0.96 (CoT with a tie). SmolLM2 is a weak judge: it preferred answer_1 in
    16 of 16 prompts above, i.e. it is dominated by position bias, which is what the order
    debiasing below is for.

Chain of thought
    ``judge.cot.*`` in logprob mode first generates bounded reasoning greedily, then reads the
    verdict distribution after ``reasoning + "\\n\\n### Output: answer_"`` (:func:`cot_verdict_prefill`).
    In vote mode it generates freely and :func:`parse_verdict` reads the text after the last
    ``Output:`` tag.

Reading a verdict
    *logprob*: :func:`verdict_probs` folds the spellings of ``1``/``2``/``tie`` in the first-token
    distribution, renormalises over them and reports the covered mass; under ``min_mass`` the
    order is an error. *vote*: :func:`parse_verdict` reads each generated text, :func:`vote_probs`
    takes the vote shares and a strict majority (more than half of all votes cast).

Order debiasing
    Every pair is judged as (a, b) ("ab": answer_1 = a) and as (b, a) ("ba"). In each order
    ``p_a`` is P(a better | not a tie) = P(a) / (P(a) + P(b)); :func:`pair_outcome` averages the two
    (``p_a_debiased``) and decides: ``tie`` when a tie is offered and its order-averaged
    probability beats both answers', else ``a``/``b`` by ``p_a_debiased`` against 0.5; exactly 0.5
    is ``tie`` when offered, else no decision with a reason (a judge that always says answer_1
    lands here).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

from rubric.errors import ConfigError, UnknownNameError
from rubric.scoring import DEFAULT_MIN_MASS, ChatPrompt, PromptTemplate, PROMPTS_DIR, fold_token_probs
from rubric.registry import Registry

__all__ = [
    "JudgeSpec",
    "JUDGES",
    "JUDGE_NAMES",
    "VERDICT_PREFILL",
    "OUTPUT_TAG",
    "ORDERS",
    "Order",
    "Verdict",
    "ParsedVerdict",
    "VerdictProbs",
    "PairOutcome",
    "get_judge",
    "resolve_judges",
    "OTHER_JUDGES",
    "register_judge_factory",
    "cot_verdict_prefill",
    "parse_verdict",
    "verdict_probs",
    "vote_probs",
    "to_original",
    "p_a",
    "debias",
    "debiased_decision",
    "pair_outcome",
]

Order = Literal["ab", "ba"]
ORDERS: tuple[str, ...] = ("ab", "ba")
#: A verdict as the judge gives it: the first answer shown, the second, or a tie.
Verdict = Literal["1", "2", "tie"]

#: The assistant pre-fill after which the next token is the verdict (module docstring).
VERDICT_PREFILL = "answer_"
#: The tag after which the CoT prompt asks for the verdict.
OUTPUT_TAG = "### Output:"

_PROMPTS = PROMPTS_DIR
_REFERENCE = "LFQA-HP-1M reference code, prompt/"


@dataclass(frozen=True)
class JudgeSpec:
    """One pairwise judge version: its template, whether it reasons first and whether it offers a tie.

    Attributes:
        name: the judge's short name, ``plain``, ``cot`` or ``rubrics``.
        version: the versioned registry name, e.g. ``judge.plain.v1`` or ``judge.plain_tie.v1``.
        tie: the template offers a tie (``answer_tie``).
        cot: the judge reasons before its verdict (chain of thought).
        source: where the prompt wording comes from.
        template: the user-turn template with the verdict pre-fill and verdict tokens.
    """

    name: str
    version: str
    tie: bool
    cot: bool
    source: str
    template: PromptTemplate = field(repr=False)

    @property
    def verdict_tokens(self) -> tuple[str, ...]:
        """The tokens read after the pre-fill: ``("1", "2")``, plus ``"tie"`` when a tie is offered."""
        return self.template.score_tokens

    @property
    def prefill(self) -> str:
        return self.template.prefill

    @property
    def template_hash(self) -> str:
        """Short sha256 of the template's own hash, the CoT flag and the output tag (what the model sees)."""
        h = hashlib.sha256()
        for part in (self.template.template_hash, f"cot={self.cot}", OUTPUT_TAG):
            h.update(part.encode("utf-8"))
            h.update(b"\x00")
        return h.hexdigest()[:12]

    def render(self, question: str, answer_1: str, answer_2: str, *, prefill: bool = True) -> ChatPrompt:
        """The prompt with ``answer_1`` shown first; ``prefill=False`` leaves the assistant turn empty.

        Raises:
            ConfigError: the template failed to render.
        """
        p = self.template.render(question=question, answer_1=answer_1, answer_2=answer_2)
        return p if prefill else ChatPrompt(user=p.user, prefill="", system=p.system)


#: Every judge version, under its versioned name.
JUDGES: Registry[JudgeSpec] = Registry("judge")
#: Pairwise judges other rooms declare, version -> a factory of their spec: the neighbouring protocols'
#: templates (``arena.pairwise.v1`` ...) register here when ``rubric.protocols`` is imported
#: (:func:`register_judge_factory`), so this module needs nothing from them. Their spec has a
#: JudgeSpec's fields and reads its verdicts with the protocol's own tokens.
OTHER_JUDGES: Registry[Callable[[], object]] = Registry("judge")


def register_judge_factory(version: str, factory: Callable[[], object]) -> None:
    """Make ``version`` resolvable by :func:`resolve_judges`; ``factory()`` builds its spec.

    Raises:
        ConfigError: ``version`` is already a judge.
    """
    if version in JUDGES:
        raise ConfigError(f"judge {version!r} is already registered")
    OTHER_JUDGES.register(version, factory)


_BASE: dict[str, tuple[str, bool]] = {
    "plain": ("LLMPairwiseJudgement.txt", False),
    "cot": ("LLMPairwiseJudgementCoT.txt", True),
    "rubrics": ("LLMPairwiseJudgement_rubrics.txt", False),
}
#: The judges' short names, in the paper's order.
JUDGE_NAMES: tuple[str, ...] = tuple(_BASE)


def _version(name: str, tie: bool) -> str:
    return f"judge.{name}{'_tie' if tie else ''}.v1"


def _load(name: str, tie: bool) -> JudgeSpec:
    version = _version(name, tie)
    file, cot = _BASE[name]
    text = (_PROMPTS / f"{version}.j2").read_text(encoding="utf-8")
    tokens = ("1", "2", "tie") if tie else ("1", "2")
    # score_values: the verdict's value as P(first answer shown is better), a tie counting half.
    values = (1.0, 0.0, 0.5) if tie else (1.0, 0.0)
    template = PromptTemplate(name=f"judge.{name}", version=version, layout="pairwise", text=text,
                              prefill=VERDICT_PREFILL, score_tokens=tokens, score_values=values,
                              fields=("question", "answer_1", "answer_2"))
    source = _REFERENCE + file + (" (tie option added by lfqa-rubric)" if tie else "")
    return JudgeSpec(name=name, version=version, tie=tie, cot=cot, source=source, template=template)


for _n in JUDGE_NAMES:
    for _t in (False, True):
        JUDGES.register(_version(_n, _t), _load(_n, _t))


@cache
def get_judge(version: str) -> JudgeSpec:
    """The judge registered as ``version``.

    Raises:
        UnknownNameError: no such judge (lists what exists).
    """
    return JUDGES.get(version)


def resolve_judges(names: str | Sequence[str], tie: bool = False) -> list[JudgeSpec]:
    """Turn ``"plain,cot,rubrics"`` into judge specs, in the order given.

    A short name takes the version with or without a tie option as ``tie`` says; a versioned name
    (``judge.cot_tie.v1``) is taken as it is, and so is a neighbouring protocol's pairwise template
    (``arena.pairwise.v1``, ``lfqa_e.reference_tie.v1``, ``linkage.pairwise.v1``: a
    :class:`rubric.protocols.judges.ProtocolJudgeSpec`, registered by ``rubric.protocols`` in
    :data:`OTHER_JUDGES`; import ``rubric.protocols`` before resolving one).

    Args:
        names: short names or versions, as a list or one comma-separated string.
        tie: short names resolve to their tie versions.

    Returns:
        The specs, in the order given.

    Raises:
        UnknownNameError: a name is neither a judge nor a version (lists what exists).
        ConfigError: the list is empty or names one version twice.
    """
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names:
        raise ConfigError("no judges given; known: " + ", ".join(JUDGE_NAMES))
    specs: list[JudgeSpec] = []
    for n in names:
        if n in _BASE:
            spec = JUDGES.get(_version(n, tie))
        elif n in JUDGES:
            spec = JUDGES.get(n)
        elif n in OTHER_JUDGES:
            spec = OTHER_JUDGES.get(n)()
        else:
            raise UnknownNameError(f"unknown judge {n!r}; known: {', '.join(JUDGE_NAMES)}; "
                                   f"versions: {', '.join(JUDGES.names())}")
        if any(s.version == spec.version for s in specs):
            raise ConfigError(f"judge {spec.version!r} is named twice")
        specs.append(spec)
    return specs


def cot_verdict_prefill(reasoning: str) -> str:
    """The assistant pre-fill that reads a CoT judge's verdict after its own reasoning.

    The reasoning is cut at its first output tag (a verdict the model already wrote is replaced by
    the verdict distribution read here), then ``"\\n\\n### Output: answer_"`` follows it.
    """
    m = _TAG_RE.search(reasoning)
    kept = (reasoning[:m.start()] if m else reasoning).rstrip()
    lead = kept + "\n\n" if kept else ""
    return f"{lead}{OUTPUT_TAG} {VERDICT_PREFILL}"


# --- parsing generated text ----------------------------------------------------------------------

@dataclass(frozen=True)
class ParsedVerdict:
    """A verdict read from generated text, or the reason there is none.

    Attributes:
        verdict: ``"1"``, ``"2"`` or ``"tie"``; None when ``error`` is set.
        error: why the text gives no verdict.
    """

    verdict: Verdict | None
    error: str | None = None


# "### Output:", "Output:", "**Output:**" - the tag after which the CoT prompt asks for the verdict.
_TAG_RE = re.compile(r"(?:#+\s*)?\**\boutput\**\s*:", re.IGNORECASE)
# "answer_1", "Answer 2", "answer-1", "answer: 2", "answer_tie", "answer_3" (reported), or a bare "tie".
_MENTION_RE = re.compile(r"\banswer[\s_\-:]*(\d+|tie)\b|\b(tie)\b", re.IGNORECASE)
_SENTENCE_RE = re.compile(r"\n+|(?<=[.!?;])\s+")
_DECOR = " \t\r\n*`'\".:!_#[]()"
_SNIP = 60


def _snip(text: str) -> str:
    t = " ".join(text.split())
    return t if len(t) <= _SNIP else t[:_SNIP - 3] + "..."


def _read_sentence(sentence: str, tie: bool) -> ParsedVerdict | None:
    """The verdict one sentence states; None when it mentions none."""
    found: list[str] = []
    for m in _MENTION_RE.finditer(sentence):
        v = (m.group(1) or m.group(2)).lower()
        if v not in found:
            found.append(v)
    if not found:
        return None
    if len(found) > 1:
        names = " and ".join("answer_" + v if v.isdigit() else v for v in found)
        return ParsedVerdict(None, f"ambiguous verdict: mentions {names} ({_snip(sentence)!r})")
    v = found[0]
    if v == "tie":
        if not tie:
            return ParsedVerdict(None, f"says tie, but this judge offers no tie ({_snip(sentence)!r})")
        return ParsedVerdict("tie")
    if v not in ("1", "2"):
        return ParsedVerdict(None, f"answer_{v} is not one of the two answers ({_snip(sentence)!r})")
    return ParsedVerdict(v)  # type: ignore[arg-type]


def _read_segment(segment: str, tie: bool, last: bool) -> ParsedVerdict | None:
    core = segment.strip(_DECOR)
    if core in ("1", "2"):
        return ParsedVerdict(core)  # type: ignore[arg-type]
    if tie and core.lower() == "tie":
        return ParsedVerdict("tie")
    sentences = [s for s in _SENTENCE_RE.split(segment) if s.strip()]
    for s in (reversed(sentences) if last else sentences):
        got = _read_sentence(s, tie)
        if got is not None:
            return got
    return None


def parse_verdict(text: str, *, tie: bool, cot: bool = False) -> ParsedVerdict:
    """Read a judge's verdict from its generated text, robustly and never by guessing.

    Rules, in order:

    1. Only the text after the last ``Output:`` tag counts when there is one with a verdict in it
       (a CoT judge reasons first, then writes ``### Output: answer_2``).
    2. A bare ``1``/``2`` (markdown and quotes stripped) is that verdict.
    3. Otherwise the deciding sentence is the first one that mentions a verdict (the last one for a
       CoT judge, whose reasoning comes first). It must mention exactly one of ``answer_1``,
       ``answer_2`` (any case, space/underscore/hyphen/colon) or, when offered, ``tie``/``answer_tie``.
       ``"answer_1 or answer_2"`` is ambiguous: no verdict. The reference code's substring test
       read that as answer_1.
    4. Ordinals and prose (``"The first answer"``, ``"the second one is better"``) are not read:
       the prompts demand ``answer_1``/``answer_2``, the reference parser returned ``error`` for
       them too, and reading prose is a guess (``"the first answer is wrong, the second is right"``).

    Args:
        text: the generated continuation (without the prompt: a parser that can see the prompt
            would find the instructions' own ``'answer_1' or 'answer_2'``).
        tie: the judge offers a tie; otherwise a tie is an error.
        cot: the judge reasons before its verdict (rule 3 takes the last sentence).

    Returns:
        A ``ParsedVerdict``: a verdict, or an error reason.
    """
    if not text or not text.strip():
        return ParsedVerdict(None, "empty output")
    tags = list(_TAG_RE.finditer(text))
    if tags:
        got = _read_segment(text[tags[-1].end():], tie, last=False)
        if got is not None:
            return got
    got = _read_segment(text, tie, last=cot)
    if got is not None:
        return got
    return ParsedVerdict(None, f"no verdict (answer_1/answer_2{'/tie' if tie else ''}) in {_snip(text)!r}")


# --- verdict probabilities -----------------------------------------------------------------------

@dataclass(frozen=True)
class VerdictProbs:
    """One order's verdict distribution, renormalised over the verdicts, or why there is none.

    Attributes:
        p1: P(the first answer shown is better), over the verdicts only.
        p2: P(the second answer shown is better).
        ptie: P(tie); None when the judge offers no tie.
        mass: the probability mass the verdicts covered (logprob mode: of the first-token
            distribution; vote mode: the share of parseable votes).
        verdict: the verdict of this order (logprob: the most probable; vote: the majority).
        error: why this order has no verdict (then the probabilities may still be informative).
    """

    p1: float | None
    p2: float | None
    ptie: float | None
    mass: float
    verdict: Verdict | None = None
    error: str | None = None

    @property
    def p_first(self) -> float | None:
        """P(first answer better | not a tie); 0.5 when all the verdict mass is on a tie."""
        if self.p1 is None or self.p2 is None:
            return None
        s = self.p1 + self.p2
        return self.p1 / s if s > 0 else 0.5


def _argmax(probs: Mapping[str, float]) -> str | None:
    ranked = sorted(probs.items(), key=lambda kv: kv[1], reverse=True)
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def verdict_probs(token_probs: Mapping[str, float], spec: JudgeSpec, *, min_mass: float = DEFAULT_MIN_MASS,
                  top_k: int | None = None, logprobs: bool = False) -> VerdictProbs:
    """One order's verdict probabilities from the first-token distribution after the pre-fill.

    Args:
        token_probs: token string (as the tokenizer spells it) -> probability (or log-probability).
        spec: the judge; gives the verdict tokens (``1``, ``2`` and maybe ``tie``).
        min_mass: below this mass on the verdict tokens the order is an error.
        top_k: how many tokens the engine looked at (None: the full distribution); for the message.
        logprobs: the values are log-probabilities.

    Returns:
        A ``VerdictProbs``; never raises for a model that simply did not answer with a verdict.

    Raises:
        ConfigError: ``min_mass`` is not in [0, 1).
    """
    if not 0.0 <= min_mass < 1.0:
        raise ConfigError(f"'min_mass' must be in [0, 1), got {min_mass}")
    where = "in the full distribution" if top_k is None else f"among top-{top_k}"
    try:
        folded = fold_token_probs(token_probs, spec.verdict_tokens, logprobs=logprobs)
    except ValueError as e:
        return VerdictProbs(None, None, None, 0.0, error=f"{spec.version}: {e}")
    total = sum(folded.values())
    mass = min(total, 1.0)  # two spellings of one token, rounding: a hair over 1 is possible
    if total <= 0.0:
        return VerdictProbs(None, None, None, 0.0, error=f"{spec.version}: no verdict token {where}")
    probs = {t: p / total for t, p in folded.items()}
    p1, p2, ptie = probs["1"], probs["2"], probs.get("tie")
    if mass < min_mass:
        return VerdictProbs(p1, p2, ptie, mass, error=f"{spec.version}: no verdict token {where} "
                            f"(mass {mass:.3g} < min_mass {min_mass:g})")
    verdict = _argmax(probs)
    if verdict is None:
        return VerdictProbs(p1, p2, ptie, mass, error=f"{spec.version}: the top verdicts are equally likely")
    return VerdictProbs(p1, p2, ptie, mass, verdict=verdict)  # type: ignore[arg-type]


def vote_probs(votes: Sequence[ParsedVerdict], *, tie: bool) -> VerdictProbs:
    """One order's verdict from ``n`` parsed votes: vote shares and a strict majority.

    The verdict needs more than half of *all* votes cast (an unparseable vote counts against every
    verdict): ``1,1,2`` -> 1; ``1,?,1`` -> 1; ``1,?,2`` and ``1,1,2,2`` -> no verdict. Never a coin.
    Shares are over the parseable votes; ``mass`` is the parseable share.

    Args:
        votes: the parsed votes of one order.
        tie: the judge offers a tie (then ``ptie`` is the tie share, else None).

    Raises:
        ConfigError: no votes.
    """
    n = len(votes)
    if n == 0:
        raise ConfigError("'votes' must not be empty")
    counts = Counter(v.verdict for v in votes if v.verdict is not None)
    valid = sum(counts.values())
    if valid == 0:
        reasons = "; ".join(dict.fromkeys(v.error or "" for v in votes))
        return VerdictProbs(None, None, None, 0.0, error=f"no parseable vote in {n}: {reasons}")
    p1, p2 = counts["1"] / valid, counts["2"] / valid
    ptie = counts["tie"] / valid if tie else None
    mass = valid / n
    top, k = counts.most_common(1)[0]
    if 2 * k > n:
        return VerdictProbs(p1, p2, ptie, mass, verdict=top)  # type: ignore[arg-type]
    shown = ",".join(v.verdict or "?" for v in votes)
    if len(counts) > 1 and sorted(counts.values())[-2] == k:
        why = f"vote tie ({shown})"
    else:
        why = f"no majority ({shown})"
        first_error = next((v.error for v in votes if v.error), None)
        if first_error is not None:
            why += f"; {n - valid} unparseable, e.g. {first_error}"
    return VerdictProbs(p1, p2, ptie, mass, error=why)


# --- order mapping and debiasing -----------------------------------------------------------------

def to_original(verdict: str, order: str) -> str:
    """Map a verdict given in ``order`` back to the pair's own labels ``a``/``b``/``tie``.

    In order ``ab`` answer_1 is a; in order ``ba`` answer_1 is b.

    Raises:
        ConfigError: an unknown verdict or order.
    """
    if order not in ORDERS:
        raise ConfigError(f"'order' must be one of {list(ORDERS)}, got {order!r}")
    if verdict == "tie":
        return "tie"
    if verdict not in ("1", "2"):
        raise ConfigError(f"'verdict' must be '1', '2' or 'tie', got {verdict!r}")
    first = verdict == "1"
    return "a" if first == (order == "ab") else "b"


def p_a(probs: VerdictProbs, order: str) -> float | None:
    """P(a better | not a tie) from one order's verdict probabilities (None when it has none)."""
    if order not in ORDERS:
        raise ConfigError(f"'order' must be one of {list(ORDERS)}, got {order!r}")
    pf = probs.p_first
    if pf is None:
        return None
    return pf if order == "ab" else 1.0 - pf


def debias(p_a_ab: float, p_a_ba: float) -> float:
    """The order-debiased P(a better): the mean of the two orders' ``p_a``."""
    for name, v in (("p_a_ab", p_a_ab), ("p_a_ba", p_a_ba)):
        if not 0.0 <= v <= 1.0:
            raise ConfigError(f"'{name}' must be in [0, 1], got {v}")
    return (p_a_ab + p_a_ba) / 2.0


def debiased_decision(p_a_debiased: float, *, tie: bool, p_tie: float | None = None,
                      p_a_any: float | None = None, p_b_any: float | None = None) -> tuple[str | None, str | None]:
    """The pair's decision from the debiased probabilities: ``(decision, None)`` or ``(None, reason)``.

    Args:
        p_a_debiased: order-debiased P(a better | not a tie).
        tie: the judge offers a tie.
        p_tie: order-averaged P(tie) (with ``tie``).
        p_a_any: order-averaged unconditional P(a) (with ``tie``), to compare with ``p_tie``.
        p_b_any: order-averaged unconditional P(b) (with ``tie``).

    Returns:
        ``tie`` when offered and ``p_tie`` is above both ``p_a_any`` and ``p_b_any``; else ``a``
        when ``p_a_debiased > 0.5``, ``b`` when below; at exactly 0.5 ``tie`` when offered, else
        no decision and the reason.
    """
    if tie and p_tie is not None and p_a_any is not None and p_b_any is not None:
        if p_tie > max(p_a_any, p_b_any):
            return "tie", None
    if p_a_debiased > 0.5:
        return "a", None
    if p_a_debiased < 0.5:
        return "b", None
    if tie:
        return "tie", None
    return None, "no preference after order debiasing (p_a = 0.5): the judge's verdict follows the position"


@dataclass(frozen=True)
class PairOutcome:
    """Both orders of one pair put together.

    Attributes:
        p_a_ab: P(a better | not a tie) read in order ab (None when that order has no probabilities).
        p_a_ba: the same, read in order ba.
        p_tie_ab: P(tie) in order ab (None without a tie option).
        p_tie_ba: P(tie) in order ba.
        decision_ab: order ab's verdict mapped to ``a``/``b``/``tie`` (None on an error).
        decision_ba: order ba's verdict mapped to ``a``/``b``/``tie``.
        p_a_debiased: the mean of ``p_a_ab`` and ``p_a_ba``; None when either order failed.
        decision: the debiased decision, or None.
        error: why there is no ``p_a_debiased`` (either order's error).
        decision_error: why there is no ``decision`` although there is a ``p_a_debiased``.
    """

    p_a_ab: float | None
    p_a_ba: float | None
    p_tie_ab: float | None
    p_tie_ba: float | None
    decision_ab: str | None
    decision_ba: str | None
    p_a_debiased: float | None
    decision: str | None
    error: str | None = None
    decision_error: str | None = None


def pair_outcome(ab: VerdictProbs, ba: VerdictProbs, *, tie: bool) -> PairOutcome:
    """Combine the two orders' verdicts of one pair into the debiased probability and decision.

    An order with an error contributes no decision; the pair then has no ``p_a_debiased``, and the
    error names the failing order(s).
    """
    pa_ab, pa_ba = p_a(ab, "ab"), p_a(ba, "ba")
    dec_ab = to_original(ab.verdict, "ab") if ab.verdict is not None and ab.error is None else None
    dec_ba = to_original(ba.verdict, "ba") if ba.verdict is not None and ba.error is None else None
    errors = [f"order {o}: {r.error}" for o, r in (("ab", ab), ("ba", ba)) if r.error is not None]
    base = dict(p_a_ab=pa_ab, p_a_ba=pa_ba, p_tie_ab=ab.ptie, p_tie_ba=ba.ptie, decision_ab=dec_ab, decision_ba=dec_ba)
    if errors or pa_ab is None or pa_ba is None:
        return PairOutcome(**base, p_a_debiased=None, decision=None, error="; ".join(errors) or "no verdict")
    pa = debias(pa_ab, pa_ba)
    p_tie = p_a_any = p_b_any = None
    if tie and ab.ptie is not None and ba.ptie is not None:
        p_tie = (ab.ptie + ba.ptie) / 2.0
        p_a_any = ((ab.p1 or 0.0) + (ba.p2 or 0.0)) / 2.0
        p_b_any = ((ab.p2 or 0.0) + (ba.p1 or 0.0)) / 2.0
    decision, why = debiased_decision(pa, tie=tie, p_tie=p_tie, p_a_any=p_a_any, p_b_any=p_b_any)
    return PairOutcome(**base, p_a_debiased=pa, decision=decision, decision_error=why)
