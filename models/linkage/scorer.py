"""LINKAGE per answer, on an engine.

    :class:`LinkageScorer` scores every candidate answer of a question against the question's
    reference list (best first): ``listwise`` (the expected rank after ``[[``, turned into ``-rank``
    so that higher is better), ``point_no_ref`` and ``point_with_ref`` (the expected 0-10 score; ``10``
    is two digit tokens in SmolLM2's tokenizer, so the share of ``1`` that is really ``10`` is read
    from a second prompt pre-filled with ``[[1``), and ``pairwise`` (LINKAGE's win/lose/tie baseline:
    the candidate's mean order-debiased P(win) against every other candidate of its question). All the
    prompts of a batch of questions go to the engine in one ``score_token_probs`` call. With
    ``mode="parse"`` (a generation-only engine) each prompt is generated greedily without a pre-fill
    and ``[[k]]`` / ``[[s]]`` / ``[[A]]`` are parsed from the text. A prompt longer than the context is
    a row error (the listwise prompt cannot shorten one reference without changing the list).
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from models.judging import engine_call
from models.llm import Engine, TextSampler
from rubric.config import check_range
from rubric.errors import BatchMismatchError, ConfigError
from rubric.scoring import DEFAULT_MIN_MASS, ChatPrompt
from rubric.judging import ORDERS, pair_outcome, verdict_probs, vote_probs
from rubric.protocols import (
    MAX_RANK_POSITIONS,
    RankScore,
    expected_point_score,
    expected_rank,
    listwise_prompt,
    pairwise_prompt,
    parse_point_score,
    parse_rank,
    pointwise_prompt,
    rank_score,
)
from rubric.protocols import LinkageCandidate, LinkageQuestion
from rubric.protocols import (EQ2_TEMPLATE, EQ3_TEMPLATE, LINKAGE_SYSTEM_TEMPLATES, LINKAGE_SYSTEMS,
                              PAIRWISE_CANDIDATES, PAIRWISE_REFERENCES, eq3_score, reference_outcome,
                              reference_weights)
from rubric.protocols import get_protocol_template, parse_pairwise_verdict
from rubric.scoring import Provenance, Score

__all__ = ["LINKAGE_SYSTEMS", "LINKAGE_MODES", "LinkageCandidate", "LinkageQuestion", "LinkageScorer"]

log = logging.getLogger(__name__)


# --- LINKAGE -------------------------------------------------------------------------------------

#: LINKAGE's judge-based systems, in table order.

LINKAGE_MODES: tuple[str, ...] = ("logprob", "parse")
_TEMPLATE_OF = LINKAGE_SYSTEM_TEMPLATES
_DIGITS = tuple(str(i) for i in range(10))
# every token any LINKAGE prompt's score is read from (one engine call per batch: one candidate set)
_CANDIDATES = (*_DIGITS, "A", "B", "C", "]", "]]")
_PARSE_TOKENS = 16


@dataclass
class _Read:
    """One prompt whose next-token distribution (or generated text) gives part of a score."""

    q: int
    cand: int
    system: str
    what: str  # "rank", "point", "after_one", "pair"
    prompt: ChatPrompt
    order: str = ""
    other: int = -1
    result: Any = None


class LinkageScorer:
    """LINKAGE's listwise judge and its pointwise and pairwise baselines, per candidate answer.

    Args:
        engine: a loaded engine (``mode="parse"`` needs ``generate``).
        systems: which of :data:`LINKAGE_SYSTEMS` to score.
        mode: ``logprob`` (expected rank / score from the digit distribution after ``[[``) or ``parse``
            (greedy generation, first ``[[k]]``; for generation-only judges).
        min_mass: below this mass on the valid digits a row is an error.
        max_pairwise_candidates: a question with more candidates gets no eq. 2 (``pairwise_candidates``)
            score (the pairs grow quadratically); a row error names the cap. Eq. 3
            (``pairwise_references``, each candidate against each reference) has no cap.
        reference_weights: eq. 3's weight of each reference, best first (default 1 each;
            :mod:`rubric.protocols`).

    Raises:
        ConfigError: unknown systems or mode, a setting out of range, or ``parse`` without ``generate``.
    """

    def __init__(self, engine: Engine, systems: Sequence[str] = LINKAGE_SYSTEMS, *, mode: str = "logprob",
                 min_mass: float = DEFAULT_MIN_MASS, max_pairwise_candidates: int = 12,
                 reference_weights: Sequence[float] | None = None) -> None:
        systems = tuple(systems)
        unknown = sorted(set(systems) - set(LINKAGE_SYSTEMS))
        if not systems or unknown or len(set(systems)) != len(systems):
            raise ConfigError(f"'systems' must be distinct names of {list(LINKAGE_SYSTEMS)}, got {list(systems)}")
        if mode not in LINKAGE_MODES:
            raise ConfigError(f"'mode' must be one of {list(LINKAGE_MODES)}, got {mode!r}")
        if mode == "parse" and not isinstance(engine, TextSampler):
            raise ConfigError(f"{type(engine).__name__} cannot generate text, which mode='parse' needs")
        check_range("min_mass", min_mass, low=0, below=1)
        check_range("max_pairwise_candidates", max_pairwise_candidates, low=2, integer=True)
        self.engine = engine
        self.systems = systems
        self.mode = mode
        self.min_mass = min_mass
        self.max_pairwise_candidates = max_pairwise_candidates
        self.reference_weights = None if reference_weights is None else tuple(float(w) for w in reference_weights)
        self.last_calls: list[tuple[str, int]] = []

    # --- provenance ------------------------------------------------------------------------------

    def method(self, system: str) -> str:
        self._check_system(system)
        if self.mode == "parse":
            return f"mode=parse;max_tokens={_PARSE_TOKENS}"
        extra = ";ten=after '[[1'" if system.startswith("point") else ""
        extra += ";pairs=both orders, mean debiased P(win)" if system == PAIRWISE_CANDIDATES else ""
        if system == PAIRWISE_REFERENCES:
            extra += (";eq3=both orders, sum w*(P(win)-P(lose))/sum w;weights="
                      + ("1" if self.reference_weights is None else ",".join(f"{w:g}" for w in self.reference_weights)))
        return f"mode=logprob;prefill='[['{extra}"

    def provenance(self, system: str) -> Provenance:
        """The system's template version, the engine, and a hash of the template and of how it is read."""
        self._check_system(system)
        t = get_protocol_template(_TEMPLATE_OF[system])
        h = hashlib.sha256(f"{t.template_hash}\x00{self.method(system)}".encode()).hexdigest()[:12]
        return Provenance(rubric_version=t.version, backend=self.engine.backend, model_id=self.engine.model_id,
                          model_revision=self.engine.revision, template_hash=h)

    def _check_system(self, system: str) -> None:
        if system not in self.systems:
            raise ConfigError(f"this scorer does not run {system!r}; it runs {list(self.systems)}")

    # --- scoring ---------------------------------------------------------------------------------

    def score_questions(self, questions: Sequence[LinkageQuestion]) -> list[list[dict[str, Score]]]:
        """Per question, per candidate (input order), system -> Score (higher is better).

        Raises:
            EngineError: the engine failed as a whole (a bad row only gets an error reason).
            BatchMismatchError: a result went missing.
        """
        self.last_calls = []
        errors: dict[tuple[int, int, str], str] = {}
        reads: list[_Read] = []
        for qi, q in enumerate(questions):
            reads += self._reads(qi, q, errors)
        limit = self.engine.max_context - (1 if self.mode == "logprob" else _PARSE_TOKENS)
        live: list[_Read] = []
        if reads:
            for r, n in zip(reads, self.engine.count_tokens([r.prompt for r in reads])):
                if n > limit:
                    errors.setdefault((r.q, r.cand, r.system), f"{_TEMPLATE_OF[r.system]}: the prompt has {n} "
                                      f"tokens, over the {limit} the context leaves")
                else:
                    live.append(r)
        if live:
            if self.mode == "logprob":
                got = self._call("score_token_probs",
                                 lambda: self.engine.score_token_probs([r.prompt for r in live], _CANDIDATES), len(live))
            else:
                got = self._call("generate", lambda: self.engine.generate(  # type: ignore[attr-defined]
                    [r.prompt for r in live], _PARSE_TOKENS), len(live))
            for r, g in zip(live, got):
                r.result = g
        out = [[self._assemble(qi, ci, q, reads, errors) for ci in range(len(q.candidates))]
               for qi, q in enumerate(questions)]
        for qi, (q, rows) in enumerate(zip(questions, out)):
            if len(rows) != len(q.candidates) or any(set(r) != set(self.systems) for r in rows):
                raise BatchMismatchError(f"LinkageScorer: question {qi} lost a candidate or a system")
        return out

    def _reads(self, qi: int, q: LinkageQuestion, errors: dict[tuple[int, int, str], str]) -> list[_Read]:
        pre = self.mode == "logprob"
        reads: list[_Read] = []
        n_refs = len(q.references)
        for ci, c in enumerate(q.candidates):
            for system in self.systems:
                try:
                    if system == "listwise":
                        if not 1 <= n_refs <= MAX_RANK_POSITIONS - 1:
                            raise ConfigError(f"{n_refs} references; a rank is one digit (1 to "
                                              f"{MAX_RANK_POSITIONS - 1} references)")
                        p = listwise_prompt(q.question, q.references, c.text, version=_TEMPLATE_OF[system],
                                            prefill=pre)
                        reads.append(_Read(qi, ci, system, "rank", p))
                    elif system in ("point_no_ref", "point_with_ref"):
                        refs = list(q.references) if system == "point_with_ref" else None
                        p = pointwise_prompt(q.question, c.text, refs, prefill=pre)
                        reads.append(_Read(qi, ci, system, "point", p))
                        if pre:
                            reads.append(_Read(qi, ci, system, "after_one",
                                               ChatPrompt(p.user, p.prefill + "1", p.system)))
                except ConfigError as e:
                    errors[(qi, ci, system)] = f"{_TEMPLATE_OF[system]}: {e}"
        if PAIRWISE_CANDIDATES in self.systems:
            eq2 = PAIRWISE_CANDIDATES
            if len(q.candidates) > self.max_pairwise_candidates:
                for ci in range(len(q.candidates)):
                    errors[(qi, ci, eq2)] = (f"{EQ2_TEMPLATE}: {len(q.candidates)} candidates, over "
                                             f"max_pairwise_candidates={self.max_pairwise_candidates}")
            elif len(q.candidates) < 2:
                for ci in range(len(q.candidates)):
                    errors[(qi, ci, eq2)] = f"{EQ2_TEMPLATE}: the question has one candidate"
            else:
                for i, j in combinations(range(len(q.candidates)), 2):
                    a, b = q.candidates[i].text, q.candidates[j].text
                    reads.append(_Read(qi, i, eq2, "pair", pairwise_prompt(q.question, a, b, prefill=pre),
                                       order="ab", other=j))
                    reads.append(_Read(qi, i, eq2, "pair", pairwise_prompt(q.question, b, a, prefill=pre),
                                       order="ba", other=j))
        if PAIRWISE_REFERENCES in self.systems:
            try:
                reference_weights(n_refs, self.reference_weights)
                if not n_refs:
                    raise ConfigError("the question has no reference answer")
            except ConfigError as e:
                for ci in range(len(q.candidates)):
                    errors[(qi, ci, PAIRWISE_REFERENCES)] = f"{EQ3_TEMPLATE}: {e}"
                return reads
            for ci, c in enumerate(q.candidates):
                for k, ref in enumerate(q.references):  # the candidate shown first (ab), then second (ba)
                    reads.append(_Read(qi, ci, PAIRWISE_REFERENCES, "ref", pairwise_prompt(
                        q.question, c.text, ref, prefill=pre, version=EQ3_TEMPLATE), order="ab", other=k))
                    reads.append(_Read(qi, ci, PAIRWISE_REFERENCES, "ref", pairwise_prompt(
                        q.question, ref, c.text, prefill=pre, version=EQ3_TEMPLATE), order="ba", other=k))
        return reads

    def _assemble(self, qi: int, ci: int, q: LinkageQuestion, reads: list[_Read],
                  errors: dict[tuple[int, int, str], str]) -> dict[str, Score]:
        mine = [r for r in reads if r.q == qi and (r.cand == ci or (r.system == PAIRWISE_CANDIDATES
                                                                     and r.other == ci))]
        out: dict[str, Score] = {}
        for system in self.systems:
            if (qi, ci, system) in errors:
                out[system] = Score.failed(errors[(qi, ci, system)], mass=None)
                continue
            rs = [r for r in mine if r.system == system]
            if system == PAIRWISE_CANDIDATES:
                out[system] = self._pairwise(ci, rs, q)
                continue
            if system == PAIRWISE_REFERENCES:
                out[system] = self._against_references(rs, q)
                continue
            if any(r.result is None for r in rs):
                out[system] = Score.failed(f"{_TEMPLATE_OF[system]}: no engine result", mass=None)
                continue
            if system == "listwise":
                n_pos = len(q.references) + 1
                got = rs[0].result
                rank = (expected_rank(got, n_pos, min_mass=self.min_mass, top_k=self.engine.top_k)
                        if self.mode == "logprob" else parse_rank(got, n_pos))
                out[system] = _score(rank, _TEMPLATE_OF[system], lambda v: rank_score(v), rank=True)
            else:
                point = next(r for r in rs if r.what == "point").result
                if self.mode == "logprob":
                    after = next((r.result for r in rs if r.what == "after_one"), None)
                    got = expected_point_score(point, after, min_mass=self.min_mass, top_k=self.engine.top_k)
                else:
                    got = parse_point_score(point)
                out[system] = _score(got, _TEMPLATE_OF[system], float)
        return out

    def _pairwise(self, ci: int, rs: list[_Read], q: LinkageQuestion) -> Score:
        """Mean order-debiased P(candidate ci wins) over its opponents (a tie counts half)."""
        spec = get_protocol_template(EQ2_TEMPLATE)
        by_pair: dict[tuple[int, int], dict[str, Any]] = {}
        for r in rs:
            by_pair.setdefault((r.cand, r.other), {})[r.order] = r.result
        wins: list[float] = []
        for (i, j), res in sorted(by_pair.items()):
            if set(res) != set(ORDERS) or any(v is None for v in res.values()):
                return Score.failed(f"{EQ2_TEMPLATE}: a pair's prompt has no engine result", mass=None)
            o = pair_outcome(*self._verdicts(res, spec), tie=True)
            if o.p_a_debiased is None:
                return Score.failed(f"{EQ2_TEMPLATE} against candidate {j if i == ci else i}: {o.error}",
                                    mass=None)
            # unconditional win share with the tie as half a win, averaged over the two orders
            pt = ((o.p_tie_ab or 0.0) + (o.p_tie_ba or 0.0)) / 2.0
            p_first = (1.0 - pt) * o.p_a_debiased + 0.5 * pt
            wins.append(p_first if i == ci else 1.0 - p_first)
        if not wins:
            return Score.failed(f"{EQ2_TEMPLATE}: no opponent", mass=None)
        return Score.ok(sum(wins) / len(wins), mass=None, n_opponents=len(wins))

    def _verdicts(self, res: dict[str, Any], spec) -> tuple[Any, Any]:
        if self.mode == "logprob":
            return (verdict_probs(res["ab"], spec, min_mass=self.min_mass, top_k=self.engine.top_k),
                    verdict_probs(res["ba"], spec, min_mass=self.min_mass, top_k=self.engine.top_k))
        return (vote_probs([parse_pairwise_verdict(res["ab"], spec)], tie=True),
                vote_probs([parse_pairwise_verdict(res["ba"], spec)], tie=True))

    def _against_references(self, rs: list[_Read], q: LinkageQuestion) -> Score:
        """Eq. 3: the weighted mean over the references of P(candidate better) - P(reference better)."""
        spec = get_protocol_template(EQ3_TEMPLATE)
        by_ref: dict[int, dict[str, Any]] = {}
        for r in rs:
            by_ref.setdefault(r.other, {})[r.order] = r.result
        outcomes = []
        for k in range(len(q.references)):
            res = by_ref.get(k, {})
            if set(res) != set(ORDERS) or any(v is None for v in res.values()):
                return Score.failed(f"{EQ3_TEMPLATE} against reference {k + 1}: no engine result", mass=None)
            o = pair_outcome(*self._verdicts(res, spec), tie=True)
            if o.p_a_debiased is None:
                return Score.failed(f"{EQ3_TEMPLATE} against reference {k + 1}: {o.error}", mass=None)
            outcomes.append(reference_outcome(o.p_a_debiased, o.p_tie_ab, o.p_tie_ba))
        weights = reference_weights(len(outcomes), self.reference_weights)
        return Score.ok(eq3_score(outcomes, weights), mass=None, n_references=len(outcomes),
                        n_won=sum(1 for f in outcomes if f > 0), n_lost=sum(1 for f in outcomes if f < 0))

    def _call(self, method: str, fn, n: int) -> list:
        return engine_call(self.engine, self.last_calls, method, fn, n)


def _score(got: RankScore, version: str, to_score, rank: bool = False) -> Score:
    if got.error is not None or got.value is None or not math.isfinite(got.value):
        return Score.failed(f"{version}: {got.error or 'no value'}", mass=got.mass)
    extras: dict[str, Any] = {"mass": got.mass}
    if rank:
        extras["rank"] = got.value
    return Score.ok(to_score(got.value), **extras)
