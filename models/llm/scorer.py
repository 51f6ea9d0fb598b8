"""The LLM rubric scorer: G-Eval rubrics for a batch of answers in one engine call.

For every item it renders one prompt per rubric (``rubric.scoring.geval`` templates), applies the context
policy (shorten the middle of an answer that does not fit and flag the row ``truncated``), sends
all prompts of the batch to the engine in one call, and parses each prompt's score-token
probabilities into ``Score.ok(raw, confidence=mass, truncated=...)`` or ``Score.failed(reason, ...)``.
``raw`` is on the rubric's declared scale (1-5; fluency 1-3; use_of_examples 0-1).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from models.llm.engine import Engine, take_usage
from models.llm.engines_cache import build_engine
from rubric.config import ScoringConfig, check_range
from rubric.errors import ConfigError, EngineError, RubricError
from rubric.scoring import DEFAULT_MIN_MASS, LAYOUTS, ChatPrompt, PromptTemplate, get_template, parse_score
from rubric.io import AnswerItem
from rubric.scoring import Provenance, Score
from rubric.scoring import RubricSpec

__all__ = ["LLMRubricScorer", "TRUNCATION_MARKER"]

log = logging.getLogger(__name__)

#: Put where the middle of an over-long answer was cut out.
TRUNCATION_MARKER = "\n[...]\n"
# Tokenisation at the cut can differ by a few tokens from the count of the pieces; cut this many extra.
_CUT_SLACK = 8
# An answer cut below this many tokens is not worth scoring: the row fails instead.
_MIN_ANSWER_TOKENS = 16
_MAX_CUTS = 3


@dataclass(frozen=True)
class _Job:
    item: int
    rubric: str
    prompt: ChatPrompt
    tokens: int


class LLMRubricScorer:
    """Scores the LLM rubrics (``backend="llm"`` specs) through one engine.

    Args:
        specs: the rubric specs to compute; each needs a template in ``rubric.scoring.geval``.
        engine: a loaded engine (``models.llm.engine.Engine``).
        layout: ``"paper"`` (the paper's prompts) or ``"answer_first"`` (question+answer first, so the
            prompts of one answer share a cached prefix).
        min_mass: rows with less probability mass on score tokens get an error reason.

    Raises:
        ConfigError: a spec is not an LLM rubric, has no template, or an argument is out of range.
    """

    def __init__(self, specs: Sequence[RubricSpec], engine: Engine, *, layout: str = "paper",
                 min_mass: float = DEFAULT_MIN_MASS) -> None:
        if not specs:
            raise ConfigError("LLMRubricScorer needs at least one rubric spec")
        if layout not in LAYOUTS:
            raise ConfigError(f"'layout' must be one of {list(LAYOUTS)}, got {layout!r}")
        check_range("min_mass", min_mass, low=0, below=1)
        for s in specs:
            if s.backend != "llm":
                raise ConfigError(f"{s.version} has backend {s.backend!r}; LLMRubricScorer serves 'llm' rubrics")
        self.specs: tuple[RubricSpec, ...] = tuple(specs)
        self.engine = engine
        self.layout = layout
        self.min_mass = min_mass
        self._templates: dict[str, PromptTemplate] = {s.name: get_template(s.version, layout) for s in self.specs}
        self._order = {s.name: i for i, s in enumerate(self.specs)}
        self._candidates = tuple(dict.fromkeys(t for tm in self._templates.values() for t in tm.score_tokens))

    @classmethod
    def from_config(cls, specs: Sequence[RubricSpec], config: ScoringConfig, *, layout: str | None = None,
                    logprobs_k: int | None = None, min_mass: float | None = None) -> "LLMRubricScorer":
        """Build the engine named by ``config`` (profile, backend, model override) and a scorer on it.

        ``layout``, ``logprobs_k`` and ``min_mass`` fall back to the config's ``llm_layout``,
        ``llm_logprobs_k`` and ``llm_min_mass`` where it has them, else to the defaults
        (``"paper"``, 20, ``DEFAULT_MIN_MASS``).

        Raises:
            BackendUnavailableError: the backend's package or the model is missing (says what to install).
            ConfigError: the profile does not offer the backend, or a setting is out of range.
        """
        layout = layout or config.llm_layout or "paper"
        k = logprobs_k if logprobs_k is not None else config.llm_logprobs_k
        mm = min_mass if min_mass is not None else config.llm_min_mass
        engine = build_engine(config, logprobs_k=k)
        return cls(specs, engine, layout=layout, min_mass=DEFAULT_MIN_MASS if mm is None else mm)

    def provenance(self, rubric: str) -> Provenance:
        """How ``rubric``'s values are made: its version, the backend, the model and the template hash."""
        try:
            tmpl = self._templates[rubric]
        except KeyError:
            known = sorted(self._templates)
            raise ConfigError(f"this scorer does not compute {rubric!r}; it computes {known}") from None
        return Provenance(rubric_version=tmpl.version, backend=self.engine.backend, model_id=self.engine.model_id,
                          model_revision=self.engine.revision, template_hash=tmpl.template_hash)

    def score_batch(self, items: Sequence[AnswerItem]) -> list[dict[str, Score]]:
        """One dict rubric -> Score per item, in input order; all prompts go to the engine in one call.

        Raises:
            EngineError: the engine failed as a whole (a bad row only gets an error reason).
        """
        results: list[dict[str, Score]] = [{} for _ in items]
        jobs: list[_Job] = []
        truncated_items: set[int] = set()
        for i, item in enumerate(items):
            item_jobs, truncated, reason = self._prepare(i, item)
            if truncated:
                truncated_items.add(i)
            if reason is not None:
                for name in self._templates:
                    results[i][name] = Score.failed(reason, confidence=0.0, truncated=truncated)
                continue
            jobs.extend(item_jobs)
        jobs.sort(key=self._sort_key(jobs))
        if jobs:
            probs = self._run([j.prompt for j in jobs])
            usage = take_usage(len(jobs)) or [(j.tokens, None, None) for j in jobs]  # an engine that counts none
            for job, p, (n_prompt, n_cached, n_made) in zip(jobs, probs, usage):
                tmpl = self._templates[job.rubric]
                parsed = parse_score(p, tmpl, min_mass=self.min_mass, top_k=self.engine.top_k)
                trunc = job.item in truncated_items
                cost = {"prompt_tokens": n_prompt, "cached_prompt_tokens": n_cached, "generated_tokens": n_made}
                if parsed.error is None:
                    soft = {} if tmpl.decision_extra is None else {tmpl.decision_extra: parsed.expected}
                    score = Score.ok(parsed.value, confidence=parsed.mass, truncated=trunc, **soft)
                else:
                    score = Score.failed(parsed.error, confidence=parsed.mass, truncated=trunc)
                results[job.item][job.rubric] = replace(score, cost=cost)
        return [{name: r[name] for name in self._templates} for r in results]

    # --- internals ---------------------------------------------------------------------------------

    def _run(self, prompts: list[ChatPrompt]) -> list[dict[str, float]]:
        try:
            out = self.engine.score_token_probs(prompts, self._candidates)
        except RubricError:
            raise
        except Exception as e:  # a dead engine re-raises as one error type; rows never swallow it
            raise EngineError(f"{self.engine.backend} engine failed on a batch of {len(prompts)} prompts: {e}") from e
        if len(out) != len(prompts):
            raise EngineError(f"{self.engine.backend} engine returned {len(out)} results for {len(prompts)} prompts")
        return out

    def _render(self, item: AnswerItem, answer: str) -> list[ChatPrompt]:
        return [t.render(question=item.question, answer=answer) for t in self._templates.values()]

    def _sort_key(self, jobs: list[_Job]):
        """Order that lets the engine reuse prefixes and batch similar lengths.

        paper: by rubric, then length - prompts of one rubric share the instruction prefix.
        answer_first: by the answer's longest prompt, then answer, then rubric - the prompts of one
        answer are adjacent, so its question+answer prefix is computed once and then reused.
        """
        if self.layout == "paper":
            return lambda j: (self._order[j.rubric], j.tokens, j.item)
        longest: dict[int, int] = {}
        for j in jobs:
            longest[j.item] = max(longest.get(j.item, 0), j.tokens)
        return lambda j: (longest[j.item], j.item, self._order[j.rubric])

    def _prepare(self, index: int, item: AnswerItem) -> tuple[list[_Job], bool, str | None]:
        """Prompts for one item under the context policy: (jobs, truncated, error reason)."""
        limit = self.engine.max_context - 1  # room for the one scored token
        answer = item.answer
        prompts = self._render(item, answer)
        counts = self.engine.count_tokens(prompts)
        truncated = False
        answer_ids: list[int] | None = None
        keep: int | None = None
        for _ in range(_MAX_CUTS):
            over = max(counts) - limit
            if over <= 0:
                break
            # One cut serves all rubrics (the longest prompt decides), so the answer text - and in the
            # answer-first layout the cached prefix - is the same in all of them.
            if answer_ids is None:
                answer_ids = self.engine.encode(item.answer)
                keep = len(answer_ids) - len(self.engine.encode(TRUNCATION_MARKER))
            keep = keep - over - _CUT_SLACK  # type: ignore[operator]
            if keep < _MIN_ANSWER_TOKENS:
                return [], True, (f"question and prompt leave too little room for the answer "
                                  f"(context {self.engine.max_context} tokens, prompt {max(counts)})")
            head = (keep + 1) // 2
            answer = (self.engine.decode(answer_ids[:head]) + TRUNCATION_MARKER
                      + self.engine.decode(answer_ids[len(answer_ids) - (keep - head):]))
            truncated = True
            prompts = self._render(item, answer)
            counts = self.engine.count_tokens(prompts)
        else:
            if max(counts) > limit:
                return [], truncated, f"could not fit the answer into {self.engine.max_context} tokens"
        if truncated:
            log.debug("answer %s shortened to fit %d tokens", item.answer_id, self.engine.max_context)
        return [_Job(index, name, p, n) for name, p, n in zip(self._templates, prompts, counts)], truncated, None
