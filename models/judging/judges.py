"""Pairwise LLM judges on an engine: both orders of every pair in one engine call, order-debiased.

``JudgeScorer`` runs ``rubric.judging.judges`` specs (the LFQA-HP-1M paper's plain, CoT and nine-rubric
judges, section 5) over ``PairRecord``s. Every pair is judged as (a, b) and as (b, a); the prompts of
both orders of all pairs of a batch go to the engine in the same call, grouped by judge and pair so
that an engine with a prefix cache (vLLM) computes each judge's instruction prefix once.

Modes:

* ``logprob`` - one forward pass per order: the assistant turn is pre-filled with ``"answer_"`` and
  the verdict is read from the next token's distribution (``rubric.judging.verdicts.verdict_probs``). The CoT
  judge first generates at most ``max_reasoning_tokens`` of reasoning greedily (one ``generate``
  call for all its prompts), then its verdict is read after ``reasoning + "### Output: answer_"``
  in the same ``score_token_probs`` call as the other judges. Engine calls per batch: one, or
  two with a CoT judge.
* ``vote`` - the paper's protocol: no pre-fill, ``n_votes`` generations per order, each parsed by
  ``rubric.judging.verdicts.parse_verdict``, strict majority. ``temperature=0`` is the paper's setting
  (greedy: the votes are identical); ``temperature=1`` with a seed is the appendix's T=1 variant.
  One ``generate`` call per token budget: the direct judges share one (``max_vote_tokens``), a CoT
  judge gets its own (``max_reasoning_tokens + max_vote_tokens``), so a short verdict is never
  padded out to a reasoning budget. ``prefill_votes=True`` pre-fills the direct judges' votes with
  ``"answer_"`` too (not the paper's protocol): SmolLM2-135M, asked freely, mostly writes prose
  without ``answer_1``/``answer_2`` (on the first 4 sample pairs, 15 of 24 greedy orders gave no
  parseable vote), so the embedded judge's votes are only readable that way.

A row that cannot be judged (no verdict, low mass, a vote tie, a prompt that cannot be fitted) gets
an error reason on its ``Score``; nothing is retried and nothing defaults. A prompt too long for the
context has the middles of its answers shortened by the rubric scorer's own context policy
(``LLMRubricScorer._prepare``, reused through a small adapter) and is flagged ``truncated``.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from models.llm import Engine, LLMRubricScorer, TextSampler, take_usage
from rubric.config import check_range
from rubric.errors import BatchMismatchError, ConfigError, EngineError, RubricError
from rubric.scoring import DEFAULT_MIN_MASS, ChatPrompt
from rubric.judging import (
    ORDERS, OUTPUT_TAG, VERDICT_PREFILL, JudgeSpec, ParsedVerdict, VerdictProbs, cot_verdict_prefill,
    pair_outcome, parse_verdict, verdict_probs, vote_probs,
)
from rubric.io import AnswerItem, PairRecord
from rubric.scoring import Provenance, Score

__all__ = ["JudgeScorer", "MODES", "EXTRAS_KEYS", "DEFAULT_MAX_VOTE_TOKENS", "DEFAULT_MAX_TEXT_CHARS"]

log = logging.getLogger(__name__)

MODES: tuple[str, ...] = ("logprob", "vote")
#: New tokens for a direct (non-CoT) judge's vote: 'answer_1' is 3 tokens; room for a short sentence.
DEFAULT_MAX_VOTE_TOKENS = 32
#: Generated texts kept in ``text_ab``/``text_ba`` are cut to this many characters.
DEFAULT_MAX_TEXT_CHARS = 2000
#: Every Score of a JudgeScorer carries exactly these extras (None where they do not apply).
EXTRAS_KEYS: tuple[str, ...] = (
    "p_a_ab", "p_a_ba", "p_tie_ab", "p_tie_ba", "decision_ab", "decision_ba", "decision", "decision_error",
    "mass_ab", "mass_ba", "error_ab", "error_ba", "text_ab", "text_ba", "votes_ab", "votes_ba", "truncated",
)
# Re-tokenising reasoning + tag may differ from the sum of their counts by a few tokens.
_TAG_SLACK = 4
_VOTE_SEP = "\n---\n"


@dataclass
class _Unit:
    """One judge on one pair: the two orders' first prompts, or why it cannot run."""

    pair: int
    spec: JudgeSpec
    prompts: dict[str, ChatPrompt] = field(default_factory=dict)
    truncated: bool = False
    error: str | None = None
    probs: dict[str, VerdictProbs] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    votes: dict[str, str] = field(default_factory=dict)
    #: tokens its prompts took, both orders and every call (``Score.cost``); None: the engine counted none
    usage: dict[str, int | None] = field(default_factory=dict)


class _ContextView:
    """The engine as the context policy sees it, with a smaller ``max_context``."""

    def __init__(self, engine: Engine, max_context: int) -> None:
        self._engine = engine
        self.max_context = max_context

    def encode(self, text: str) -> list[int]:
        return self._engine.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return self._engine.decode(ids)

    def count_tokens(self, prompts: Sequence[ChatPrompt]) -> list[int]:
        return self._engine.count_tokens(prompts)


class _OneAnswerCut:
    """Presents one answer of a pair to ``LLMRubricScorer._prepare``, the rubric scorer's context policy.

    ``_prepare`` shortens the middle of ``item.answer`` until every prompt ``_render`` makes fits in
    ``engine.max_context - 1`` tokens; here the prompts are the pair's two orders with the other
    answer fixed, and the engine is a view whose context is the token budget this answer may use.
    The last answer ``_prepare`` rendered is the cut one (``answer``).
    """

    _templates = ORDERS

    def __init__(self, engine: Engine, limit: int, render: Callable[[str], list[ChatPrompt]]) -> None:
        self.engine = _ContextView(engine, limit + 1)
        self._render_answer = render
        self.answer = ""

    def _render(self, item: AnswerItem, answer: str) -> list[ChatPrompt]:
        self.answer = answer
        return self._render_answer(answer)

    def cut(self, item: AnswerItem) -> tuple[bool, str | None]:
        _jobs, truncated, reason = LLMRubricScorer._prepare(self, 0, item)  # type: ignore[arg-type]
        return truncated, reason


def _shares(n_a: int, n_b: int, avail: int) -> tuple[int, int]:
    """Token budgets of two answers that must fit in ``avail``: a short answer keeps its length, the
    long one gets the rest; two long answers get half each."""
    half = avail // 2
    if n_a <= half:
        return n_a, avail - n_a
    if n_b <= half:
        return avail - n_b, n_b
    return half, avail - half


def _bound(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _charge(owners: Sequence[_Unit], n: int) -> None:
    """Add the last engine call's per-prompt tokens (``models.llm.engine.take_usage``) to the units that own the
    prompts, in order; an engine that counted none leaves the units' counts unknown (None)."""
    usage = take_usage(n)
    if not owners:
        return
    for u, row in zip(owners, usage or [(None, None, None)] * len(owners)):
        for key, v in zip(("prompt_tokens", "cached_prompt_tokens", "generated_tokens"), row):
            known = usage is not None and v is not None and u.usage.get(key, 0) is not None
            u.usage[key] = (u.usage.get(key) or 0) + v if known else None  # type: ignore[operator]


def engine_call(engine: Engine, calls: list, method: str, fn: Callable[[], list], n: int) -> list:
    """Run one engine call of ``n`` prompts, logging ``(method, n)`` in ``calls``.

    Raises:
        EngineError: the engine failed as a whole (one error type; rows never swallow it) or
            returned another number of results than prompts.
    """
    calls.append((method, n))
    try:
        out = fn()
    except RubricError:
        raise
    except Exception as e:
        raise EngineError(f"{engine.backend} engine failed in {method} on {n} prompts: {e}") from e
    if len(out) != n:
        raise EngineError(f"{engine.backend} engine returned {len(out)} results for {n} prompts")
    return out


class JudgeScorer:
    """Pairwise LLM judges over pairs, both orders in one engine call, with order debiasing.

    Args:
        engine: a loaded engine; vote mode and CoT judges also need ``generate`` with sampling
            (``models.llm.engine.TextSampler``).
        specs: the judges (``rubric.judging.judges.resolve_judges``).
        mode: ``"logprob"`` (verdict distribution after the pre-fill) or ``"vote"`` (the paper's
            generated votes).
        n_votes: generations per order in vote mode.
        temperature: vote mode's sampling temperature (0: greedy, identical votes). Logprob mode
            reads distributions and takes only 0.
        seed: vote mode's sampling seed.
        max_reasoning_tokens: most tokens of a CoT judge's reasoning.
        max_vote_tokens: most tokens of a direct judge's generated vote (vote mode).
        prefill_votes: in vote mode, pre-fill the direct judges' votes with ``"answer_"`` (the texts
            kept in the extras then start with it); CoT judges always reason freely first.
        min_mass: in logprob mode, an order with less probability on the verdict tokens is an error.
        max_text_chars: generated texts kept in the extras are cut to this length.

    Raises:
        ConfigError: no or repeated judges, an unknown mode, a setting out of range, or an engine
            that cannot generate text when the mode or a judge needs it.
    """

    def __init__(self, engine: Engine, specs: Sequence[JudgeSpec], *, mode: str = "logprob", n_votes: int = 3,
                 temperature: float = 0.0, seed: int = 0, max_reasoning_tokens: int = 256,
                 max_vote_tokens: int = DEFAULT_MAX_VOTE_TOKENS, prefill_votes: bool = False,
                 min_mass: float = DEFAULT_MIN_MASS, max_text_chars: int = DEFAULT_MAX_TEXT_CHARS) -> None:
        specs = tuple(specs)
        if not specs:
            raise ConfigError("JudgeScorer needs at least one judge spec")
        versions = [s.version for s in specs]
        if len(set(versions)) != len(versions):
            raise ConfigError(f"a judge is named twice: {versions}")
        if mode not in MODES:
            raise ConfigError(f"'mode' must be one of {list(MODES)}, got {mode!r}")
        for name, val in (("n_votes", n_votes), ("max_reasoning_tokens", max_reasoning_tokens),
                          ("max_vote_tokens", max_vote_tokens), ("max_text_chars", max_text_chars)):
            check_range(name, val, low=1, integer=True)
        if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature >= 0):
            raise ConfigError(f"'temperature' must be a finite number >= 0, got {temperature!r}")
        if mode == "logprob" and temperature != 0:
            raise ConfigError(f"'temperature' applies to mode='vote'; mode='logprob' reads the verdict "
                              f"distribution and takes temperature=0, got {temperature}")
        check_range("seed", seed, low=0, integer=True), check_range("min_mass", min_mass, low=0, below=1)
        needs_text = mode == "vote" or any(s.cot for s in specs)
        if needs_text and not isinstance(engine, TextSampler):
            raise ConfigError(f"{type(engine).__name__} cannot generate text, which mode={mode!r} with judges "
                              f"{versions} needs (generate(prompts, max_tokens, *, temperature, n, seed))")
        self.engine = engine
        self.specs: tuple[JudgeSpec, ...] = specs
        self.mode = mode
        self.n_votes = n_votes
        self.temperature = float(temperature)
        self.seed = seed
        self.max_reasoning_tokens = max_reasoning_tokens
        self.max_vote_tokens = max_vote_tokens
        self.prefill_votes = bool(prefill_votes)
        self.min_mass = min_mass
        self.max_text_chars = max_text_chars
        self._by_version = {s.version: s for s in specs}
        self._candidates = tuple(dict.fromkeys(t for s in specs for t in s.verdict_tokens))
        #: Engine calls of the last ``judge_pairs``: (method, number of prompts), in call order.
        self.last_calls: list[tuple[str, int]] = []

    # --- provenance --------------------------------------------------------------------------------

    def method(self, version: str) -> str:
        """How the verdicts of ``version`` are obtained, as a string (part of the provenance hash).

        Raises:
            ConfigError: this scorer does not run ``version``.
        """
        spec = self._spec(version)
        parts = [f"mode={self.mode}"]
        if self.mode == "logprob":
            parts.append(f"prefill={VERDICT_PREFILL!r}")
        else:
            parts += [f"n_votes={self.n_votes}", f"temperature={self.temperature:g}", f"seed={self.seed}",
                      f"max_vote_tokens={self.max_vote_tokens}"]
            if self.prefill_votes and not spec.cot:
                parts.append(f"prefill={VERDICT_PREFILL!r}")
        if spec.cot:
            parts.append(f"max_reasoning_tokens={self.max_reasoning_tokens}")
        return ";".join(parts)

    def provenance(self, version: str) -> Provenance:
        """The judge's version, backend, model, and a hash of its template and of how it is read.

        The hash covers the template (``JudgeSpec.template_hash``) and :meth:`method`: the same judge
        read by logprob and by vote is a different provenance, and tables of the two do not mix.

        Raises:
            ConfigError: this scorer does not run ``version``.
        """
        spec = self._spec(version)
        h = hashlib.sha256(f"{spec.template_hash}\x00{self.method(version)}".encode()).hexdigest()[:12]
        return Provenance(rubric_version=spec.version, backend=self.engine.backend, model_id=self.engine.model_id,
                          model_revision=self.engine.revision, template_hash=h)

    def _spec(self, version: str) -> JudgeSpec:
        try:
            return self._by_version[version]
        except KeyError:
            raise ConfigError(f"this scorer does not run {version!r}; it runs {sorted(self._by_version)}") from None

    # --- judging -----------------------------------------------------------------------------------

    def judge_pairs(self, pairs: Sequence[PairRecord]) -> list[dict[str, Score]]:
        """One dict judge version -> Score per pair, in input order.

        Each Score's ``raw`` is the order-debiased P(a better) (``p_a_debiased``), or an error reason
        when either order gave no verdict; its extras are :data:`EXTRAS_KEYS`.

        Raises:
            EngineError: the engine failed as a whole (a bad row only gets an error reason).
            BatchMismatchError: a result went missing (a bug, never a silent gap).
        """
        self.last_calls = []
        # judge-major: a judge's prompts are adjacent in each call, both orders of a pair side by side
        units = [self._fit(i, p, s) for s in self.specs for i, p in enumerate(pairs)]
        live = [u for u in units if u.error is None]
        if self.mode == "logprob":
            self._run_logprob(live)
        else:
            self._run_vote(live)
        results: list[dict[str, Score]] = [{} for _ in pairs]
        for u in units:
            results[u.pair][u.spec.version] = self._score(u)
        log.debug("judged %d pairs x %d judges (%s): %d rows with an error, %d truncated; engine calls %s",
                  len(pairs), len(self.specs), self.mode, sum(s.raw is None for r in results for s in r.values()),
                  sum(u.truncated for u in units), self.last_calls)
        for i, r in enumerate(results):
            if set(r) != set(self._by_version):
                raise BatchMismatchError(f"JudgeScorer result {i} of {len(pairs)} pairs has judges {sorted(r)}, "
                                         f"expected {sorted(self._by_version)}")
        return results

    def _run_logprob(self, units: list[_Unit]) -> None:
        direct = [u for u in units if not u.spec.cot]
        cot = [u for u in units if u.spec.cot]
        reads: list[tuple[_Unit, str, ChatPrompt]] = []
        for u in direct:
            reads += [(u, o, u.prompts[o]) for o in ORDERS]
        if cot:
            gen = [(u, o) for u in cot for o in ORDERS]
            texts = self._generate([u.prompts[o] for u, o in gen], self.max_reasoning_tokens, 0.0, 1,
                                   owners=[u for u, _ in gen])
            limit = self.engine.max_context - 1
            for (u, o), text in zip(gen, texts):
                u.texts[o] = text  # type: ignore[assignment]
                prompt = ChatPrompt(u.prompts[o].user, cot_verdict_prefill(text))  # type: ignore[arg-type]
                over = self.engine.count_tokens([prompt])[0] - limit
                if over > 0:  # re-tokenised reasoning came out longer than generated: drop its end
                    ids = self.engine.encode(text)  # type: ignore[arg-type]
                    prompt = ChatPrompt(prompt.user, cot_verdict_prefill(
                        self.engine.decode(ids[:max(0, len(ids) - over - _TAG_SLACK)])))
                    if self.engine.count_tokens([prompt])[0] > limit:
                        u.probs[o] = VerdictProbs(None, None, None, 0.0, error=(
                            f"{u.spec.version}: the reasoning leaves no room for the verdict in "
                            f"{self.engine.max_context} tokens"))
                        continue
                reads.append((u, o, prompt))
        self._read_verdicts(reads)

    def _read_verdicts(self, reads: list) -> None:
        """Each ``(unit, order, verdict prompt)``'s verdict tokens scored in one engine call, read into its unit."""
        if not reads:
            return
        probs = self._score_tokens([p for _, _, p in reads], owners=[u for u, _, _ in reads])
        for (u, o, _), tp in zip(reads, probs):
            u.probs[o] = verdict_probs(tp, u.spec, min_mass=self.min_mass, top_k=self.engine.top_k)

    def _run_vote(self, units: list[_Unit]) -> None:
        groups = (([u for u in units if not u.spec.cot], self.max_vote_tokens),
                  ([u for u in units if u.spec.cot], self.max_reasoning_tokens + self.max_vote_tokens))
        for group, max_tokens in groups:
            if not group:
                continue
            jobs = [(u, o) for u in group for o in ORDERS]
            outs = self._generate([u.prompts[o] for u, o in jobs], max_tokens, self.temperature, self.n_votes,
                                  owners=[u for u, _ in jobs])
            for (u, o), texts in zip(jobs, outs):
                samples = [texts] if isinstance(texts, str) else list(texts)
                samples = [u.prompts[o].prefill + t for t in samples]
                parsed: list[ParsedVerdict] = [parse_verdict(t, tie=u.spec.tie, cot=u.spec.cot) for t in samples]
                u.probs[o] = vote_probs(parsed, tie=u.spec.tie)
                u.votes[o] = ",".join(p.verdict or "?" for p in parsed)
                u.texts[o] = _VOTE_SEP.join(samples)

    def _score(self, u: _Unit) -> Score:
        extras: dict[str, Any] = dict.fromkeys(EXTRAS_KEYS)
        extras["truncated"] = u.truncated
        if u.error is not None:
            extras["error_ab"] = extras["error_ba"] = u.error
            return Score.failed(u.error, **extras)
        ab, ba = u.probs["ab"], u.probs["ba"]
        out = pair_outcome(ab, ba, tie=u.spec.tie)
        extras.update(p_a_ab=out.p_a_ab, p_a_ba=out.p_a_ba, p_tie_ab=out.p_tie_ab, p_tie_ba=out.p_tie_ba,
                      decision_ab=out.decision_ab, decision_ba=out.decision_ba, decision=out.decision,
                      decision_error=out.decision_error, mass_ab=ab.mass, mass_ba=ba.mass,
                      error_ab=ab.error, error_ba=ba.error)
        for o in ORDERS:
            if o in u.texts:
                extras[f"text_{o}"] = _bound(u.texts[o], self.max_text_chars)
            if o in u.votes:
                extras[f"votes_{o}"] = u.votes[o]
        if out.p_a_debiased is None:
            return Score(raw=None, error=f"{u.spec.version}: {out.error}", extras=extras, cost=dict(u.usage))
        return Score(raw=float(out.p_a_debiased), extras=extras, cost=dict(u.usage))

    # --- engine calls ------------------------------------------------------------------------------

    def _score_tokens(self, prompts: list[ChatPrompt], owners: Sequence[_Unit] = ()) -> list[dict[str, float]]:
        out = self._call("score_token_probs", lambda: self.engine.score_token_probs(prompts, self._candidates),
                         len(prompts))
        _charge(owners, len(prompts))
        return out

    def _generate(self, prompts: list[ChatPrompt], max_tokens: int, temperature: float,
                  n: int, owners: Sequence[_Unit] = ()) -> list[str] | list[list[str]]:
        out = self._call("generate", lambda: self.engine.generate(  # type: ignore[attr-defined]
            prompts, max_tokens, temperature=temperature, n=n, seed=self.seed), len(prompts))
        _charge(owners, len(prompts))
        if n > 1 and any(len(t) != n for t in out):
            raise EngineError(f"{self.engine.backend} engine returned a wrong number of texts per prompt (asked {n})")
        return out

    def _call(self, method: str, fn: Callable[[], list], n: int) -> list:
        return engine_call(self.engine, self.last_calls, method, fn, n)

    # --- context policy ----------------------------------------------------------------------------

    def _reserve(self, spec: JudgeSpec) -> int:
        """New tokens a prompt of ``spec`` needs after its user turn (and pre-fill, in logprob mode)."""
        if self.mode == "vote":
            return self.max_vote_tokens + (self.max_reasoning_tokens if spec.cot else 0)
        if spec.cot:
            tag = len(self.engine.encode(f"\n\n{OUTPUT_TAG} {VERDICT_PREFILL}"))
            return self.max_reasoning_tokens + tag + _TAG_SLACK + 1
        return 1

    def _fit(self, index: int, pair: PairRecord, spec: JudgeSpec) -> _Unit:
        """The two orders' prompts of one judge on one pair, shortening answer middles to fit the context."""
        unit = _Unit(index, spec)
        with_prefill = not spec.cot and (self.mode == "logprob" or self.prefill_votes)
        q = pair.question

        def render(a: str, b: str) -> list[ChatPrompt]:
            return [spec.render(q, a, b, prefill=with_prefill, reference=pair.reference),
                    spec.render(q, b, a, prefill=with_prefill, reference=pair.reference)]

        limit = self.engine.max_context - self._reserve(spec)
        a, b, reason = pair.answer_a, pair.answer_b, None
        try:
            longest = max(self.engine.count_tokens(render(a, b)))
            if longest > limit:
                a, b, unit.truncated, reason = self._cut(pair, render, limit, longest)
        except ConfigError as e:  # a template that cannot render this pair
            reason = str(e)
        if reason is not None:
            unit.error = f"{spec.version}: {reason}"
        else:
            unit.prompts = dict(zip(ORDERS, render(a, b)))
        return unit

    def _cut(self, pair: PairRecord, render: Callable[[str, str], list[ChatPrompt]], limit: int,
             longest: int) -> tuple[str, str, bool, str | None]:
        """Shorten the answers' middles so both orders fit ``limit``: (a, b, truncated, error).

        The overflow is shared out (:func:`_shares`): a short answer stays whole and the long one is
        cut; two long answers are cut to about the same length. Each cut is the rubric scorer's.
        """
        if limit < 1:
            return pair.answer_a, pair.answer_b, False, (
                f"the judge needs {self.engine.max_context - limit} new tokens; context is {self.engine.max_context}")
        n_a, n_b = len(self.engine.encode(pair.answer_a)), len(self.engine.encode(pair.answer_b))
        t_a, t_b = _shares(n_a, n_b, n_a + n_b - (longest - limit))
        texts = {"a": pair.answer_a, "b": pair.answer_b}
        ids = {"a": pair.answer_id_a, "b": pair.answer_id_b}
        todo = [(side, n - t) for side, n, t in (("a", n_a, t_a), ("b", n_b, t_b)) if t < n]
        truncated = False
        for k, (side, excess) in enumerate(todo):
            now = max(self.engine.count_tokens(render(texts["a"], texts["b"])))
            # The last answer to cut takes the prompts down to the real limit; an earlier one by its excess.
            side_limit = limit if k == len(todo) - 1 else now - excess
            cutter = _OneAnswerCut(self.engine, side_limit, _render_side(render, texts, side))
            was_cut, reason = cutter.cut(AnswerItem(ids[side], pair.question, texts[side]))
            truncated = truncated or was_cut
            if reason is not None:  # _prepare's message names the share's budget; say the pair's instead
                return texts["a"], texts["b"], truncated, (
                    f"too little room for the answers: the prompts need {longest} tokens with them whole, "
                    f"{limit} are free (context {self.engine.max_context} minus "
                    f"{self.engine.max_context - limit} new tokens); cutting would leave an answer almost nothing")
            texts[side] = cutter.answer
        if max(self.engine.count_tokens(render(texts["a"], texts["b"]))) > limit:
            return texts["a"], texts["b"], truncated, f"could not fit the pair into {self.engine.max_context} tokens"
        return texts["a"], texts["b"], truncated, None


def _render_side(render: Callable[[str, str], list[ChatPrompt]], texts: dict[str, str],
                 side: str) -> Callable[[str], list[ChatPrompt]]:
    """``render`` with one answer varying and the other fixed at its current text."""
    other = dict(texts)
    if side == "a":
        return lambda x: render(x, other["b"])
    return lambda x: render(other["a"], x)
