"""The neighbouring protocols' pairwise judges on an engine (RAG-QA Arena's, LINKAGE's pairwise
baseline, any protocol's pairwise prompt); LINKAGE's per-answer scorer is ``models.linkage``.

Pairwise protocol judges
    :class:`ProtocolJudgeScorer` is :class:`models.judging.judges.JudgeScorer` (both orders of every pair in
    one engine call, the same context policy, the same ``Score`` extras and order debiasing) with the
    protocol's own reading: the verdict tokens after the protocol's pre-fill (``[[`` then ``A``/``B``/``C``;
    ``<rating>`` then ``1``/``2``/``0``) are mapped onto ``1``/``2``/``tie`` by the prompt's ``verdicts``
    (:func:`rubric.judging.verdict_probs`, as for every judge), generated votes are read in the prompt's
    ``verdict_format`` by :func:`rubric.protocols.templates.parse_pairwise_verdict`, and a prompt that shows a
    reference answer gets the pair's ``reference`` (as every judge does). A protocol's judge spec names it
    (``JudgeSpec.scorer``: ``protocol``, registered in ``models.backends.JUDGE_SCORERS``), so
    ``lfqa-rubric judge``, the Ray judge actors and ``judgments.parquet`` serve these judges unchanged.
    RAG-QA Arena in logprob mode reads the rating after an empty ``<thinking></thinking>`` (``arena.pairwise.v1``), or, with
    ``arena.pairwise_reasoning.v1``, first generates the judge's own reasoning greedily after
    ``<thinking>`` (at most ``max_reasoning_tokens``, one ``generate`` call for both orders of every
    pair; the engine has no stop strings, so the text is cut at its first ``</thinking>``), then reads
    the rating after ``<thinking>REASONING</thinking>\n<rating>`` in the ``score_token_probs`` call.
    The reasoning is kept in the row (``text_ab`` / ``text_ba``). In vote mode that judge's budget is
    ``max_reasoning_tokens + max_vote_tokens``.
"""

from __future__ import annotations

from dataclasses import replace

from models.judging.judges import _TAG_SLACK, JudgeScorer, _Unit
from rubric.scoring import ChatPrompt
from rubric.judging import ORDERS, PAIRWISE_SCORER, JudgeSpec, VerdictProbs, vote_probs
from rubric.protocols import parse_pairwise_verdict

__all__ = ["ProtocolJudgeScorer"]



# --- pairwise protocol judges --------------------------------------------------------------------

class ProtocolJudgeScorer(JudgeScorer):
    """:class:`models.judging.judges.JudgeScorer` that also reads the neighbouring protocols' pairwise judges.

    Takes the paper's judges and the protocols' alike (the paper's, ``JudgeSpec.scorer == "pairwise"``, are
    read exactly as ``JudgeScorer`` reads them; every other judge by its own verdict tokens and format, and
    a judge that reasons first closes its reasoning with its own ``JudgeSpec.close_reasoning``); arguments
    as ``JudgeScorer``'s.
    """

    @staticmethod
    def _own(spec: JudgeSpec) -> bool:
        """A judge this class reads itself (the paper's are ``JudgeScorer``'s)."""
        return spec.scorer != PAIRWISE_SCORER

    def method(self, version: str) -> str:
        spec = self._spec(version)
        if not self._own(spec):
            return super().method(version)
        parts = [f"mode={self.mode}", "protocol"]
        if self.mode == "logprob":
            parts.append(f"prefill={spec.prefill!r}")
        else:
            parts += [f"n_votes={self.n_votes}", f"temperature={self.temperature:g}", f"seed={self.seed}",
                      f"max_vote_tokens={self.max_vote_tokens}"]
            if self.prefill_votes:
                parts.append(f"prefill={spec.prefill!r}")
        if spec.reasons:
            parts.append(f"max_reasoning_tokens={self.max_reasoning_tokens}")
        return ";".join(parts)

    def _reserve(self, spec: JudgeSpec) -> int:
        if not (self._own(spec) and spec.close_reasoning is not None):
            return super()._reserve(spec)
        if self.mode == "vote":
            return self.max_vote_tokens + self.max_reasoning_tokens
        close = spec.close_reasoning("").removeprefix(spec.prefill)  # Arena's: "</thinking>\n<rating>"
        return self.max_reasoning_tokens + len(self.engine.encode(close)) + _TAG_SLACK + 1

    def _verdict_prompt(self, u: _Unit, order: str, reasoning: str) -> ChatPrompt | None:
        """The order's prompt with the reasoning closed by the judge's ``close_reasoning`` (Arena's: then
        ``<rating>`` pre-filled); None (and the order's error set) when even a shortened reasoning leaves
        no room for the verdict."""
        limit = self.engine.max_context - 1
        close = u.spec.close_reasoning
        assert close is not None  # only a judge that reasons gets here
        prompt = replace(u.prompts[order], prefill=close(reasoning))
        over = self.engine.count_tokens([prompt])[0] - limit
        if over > 0:  # re-tokenised reasoning came out longer than generated: drop its end
            ids = self.engine.encode(reasoning)
            prompt = replace(prompt, prefill=close(
                self.engine.decode(ids[:max(0, len(ids) - over - _TAG_SLACK)])))
            if self.engine.count_tokens([prompt])[0] > limit:
                u.probs[order] = VerdictProbs(None, None, None, 0.0, error=(
                    f"{u.spec.version}: the reasoning leaves no room for the verdict in "
                    f"{self.engine.max_context} tokens"))
                return None
        return prompt

    def _run_logprob(self, units: list[_Unit]) -> None:
        super()._run_logprob([u for u in units if not self._own(u.spec)])
        ours = [(u, o) for u in units if self._own(u.spec) for o in ORDERS]
        if not ours:
            return
        reasoning = [(u, o) for u, o in ours if u.spec.reasons]
        texts = (self._generate([u.prompts[o] for u, o in reasoning], self.max_reasoning_tokens, 0.0, 1,
                                owners=[u for u, _ in reasoning]) if reasoning else [])
        reads = [(u, o, u.prompts[o]) for u, o in ours if not u.spec.reasons]
        for (u, o), text in zip(reasoning, texts):
            u.texts[o] = text  # type: ignore[assignment]
            prompt = self._verdict_prompt(u, o, text)  # type: ignore[arg-type]
            if prompt is not None:
                reads.append((u, o, prompt))
        self._read_verdicts(reads)

    def _run_vote(self, units: list[_Unit]) -> None:
        super()._run_vote([u for u in units if not self._own(u.spec)])
        ours = [(u, o) for u in units if self._own(u.spec) for o in ORDERS]
        # a reasoning judge gets its own budget, so a short verdict is never padded out to a reasoning one
        groups = [([(u, o) for u, o in ours if u.spec.reasons is r], budget)
                  for r, budget in ((False, self.max_vote_tokens),
                                    (True, self.max_vote_tokens + self.max_reasoning_tokens))]
        for group, budget in groups:
            if group:
                self._vote_group(group, budget)

    def _vote_group(self, ours: list[tuple[_Unit, str]], budget: int) -> None:
        outs = self._generate([u.prompts[o] for u, o in ours], budget, self.temperature, self.n_votes,
                              owners=[u for u, _ in ours])
        for (u, o), texts in zip(ours, outs):
            samples = [texts] if isinstance(texts, str) else list(texts)
            samples = [u.prompts[o].prefill + t for t in samples]
            parsed = [parse_pairwise_verdict(t, u.spec.template) for t in samples]
            u.probs[o] = vote_probs(parsed, tie=True)
            u.votes[o] = ",".join(p.verdict or "?" for p in parsed)
            u.texts[o] = "\n---\n".join(samples)
