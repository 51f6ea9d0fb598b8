"""Reading a judge's verdict: parsing generated text, verdict probabilities from the verdict tokens
or from votes, mapping the swapped order back, and position debiasing (the math of the judge job)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rubric.errors import ConfigError
from rubric.scoring import DEFAULT_MIN_MASS, PromptTemplate, read_tokens
from rubric.judging.judges import JudgeSpec, ORDERS, OUTPUT_TAG, VERDICT_PREFILL, Verdict

__all__ = ["ParsedVerdict", "VerdictProbs", "PairOutcome", "cot_verdict_prefill", "parse_verdict", "verdict_probs", "vote_probs", "to_original", "p_a", "debias", "debiased_decision", "pair_outcome"]


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


def verdict_probs(token_probs: Mapping[str, float], spec: JudgeSpec | PromptTemplate, *,
                  min_mass: float = DEFAULT_MIN_MASS, top_k: int | None = None, logprobs: bool = False) -> VerdictProbs:
    """One order's verdict probabilities from the first-token distribution after the pre-fill.

    The prompt's own verdict tokens (``1``/``2``/``tie``; a protocol's ``A``/``B``/``C`` or ``1``/``2``/``0``)
    are read by :func:`rubric.scoring.read_tokens`, mapped onto the verdicts ``1``/``2``/``tie`` and
    renormalised over them.

    Args:
        token_probs: token string (as the tokenizer spells it) -> probability (or log-probability).
        spec: the judge, or a pairwise prompt (one with ``verdicts``).
        min_mass: below this mass on the verdict tokens the order is an error.
        top_k: how many tokens the engine looked at (None: the full distribution); for the message.
        logprobs: the values are log-probabilities.

    Returns:
        A ``VerdictProbs`` (``ptie`` None when no tie is offered); never raises for a model that simply
        did not answer with a verdict.

    Raises:
        ConfigError: ``min_mass`` is not in [0, 1), or the prompt has no verdicts.
    """
    prompt = spec.template if isinstance(spec, JudgeSpec) else spec
    if not prompt.verdicts:
        raise ConfigError(f"{prompt.version} is a {prompt.layout} template, not a pairwise one")
    r = read_tokens(token_probs, prompt.score_tokens, min_mass=min_mass, top_k=top_k, logprobs=logprobs,
                    what="verdict token", label=f"{prompt.version}: ")
    if r.mass <= 0.0:
        return VerdictProbs(None, None, None, 0.0, error=r.error)
    norm = r.normalised()
    probs = {v: norm[t] for t, v in zip(prompt.score_tokens, prompt.verdicts)}
    p1, p2, ptie = probs["1"], probs["2"], probs.get("tie")
    if r.error is not None:
        return VerdictProbs(p1, p2, ptie, r.mass, error=r.error)
    verdict = _argmax(probs)
    if verdict is None:
        return VerdictProbs(p1, p2, ptie, r.mass, error=f"{prompt.version}: the top verdicts are equally likely")
    return VerdictProbs(p1, p2, ptie, r.mass, verdict=verdict)  # type: ignore[arg-type]


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
