"""The evaluators side by side, as the public leaderboards show them: each LLM judge (order-debiased) and the
rubric model, with their agreement with the labels on the same pairs (Table 4's accuracy and its
question-clustered bootstrap CI), their failure rate on the analysed split, and what they cost per 1,000
pairs, from the runs that made them (their manifests' ``cost``, ``rubric.tables.cost_summary``).

A judge's cost is per judged pair already (one row per pair). The rubric model's is its score run's: the
seconds and tokens of every rubric of the run over all its answers, per 1,000 of the run's pairs (answers
shared by several pairs are scored once, so this is what a pair cost in that run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["RunCost", "EvaluatorRow", "evaluator_rows", "COST_KINDS"]

#: The systems the table shows: the rubric model and the LLM judges (baselines cost nothing to speak of).
COST_KINDS = ("rubric model", "LLM judge")


@dataclass(frozen=True)
class RunCost:
    """What a score or judge run recorded of its cost.

    Attributes:
        source: the output folder.
        cost: its manifest's ``cost`` (per name, per 1,000 rows).
        n_pairs: the run's pairs (the rubric model's cost is spread over them).
    """

    source: str
    cost: Mapping
    n_pairs: int


@dataclass(frozen=True)
class EvaluatorRow:
    """One evaluator: agreement, failure rate and cost per 1,000 pairs (None: not recorded)."""

    system: str
    kind: str
    n: int
    accuracy: float
    ci: tuple[float, float]
    n_given: int
    n_failed: int
    seconds_per_1000: float | None
    prompt_tokens_per_1000: float | None
    generated_tokens_per_1000: float | None
    cost_from: str
    over_budget: bool = False  # its run had it (a judge, or a rubric of the model's run) over the failure budget

    @property
    def failure_rate(self) -> float:
        return self.n_failed / self.n_given if self.n_given else float("nan")


def _sum(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _run_cost(system, costs: Mapping[str, RunCost],
              model_run: str | None) -> tuple[float | None, float | None, float | None, str, bool]:
    """Seconds, prompt and generated tokens per 1,000 pairs for ``system``, the run they came from, and
    whether that run had the system over its failure budget."""
    if system.kind == "LLM judge":
        for source, rc in costs.items():
            e = rc.cost.get("per_name", {}).get(system.judge)
            if e is not None and system.source.startswith(source):
                p = e["per_1000"]
                over = system.judge in rc.cost.get("over_budget", [])
                return p["seconds"], p["prompt_tokens"], p["generated_tokens"], source, over
        return None, None, None, "", False
    rc = costs.get(model_run) if model_run is not None else None  # the score run of the model's pairs table
    per = rc.cost.get("per_name", {}) if rc is not None else {}
    if not per or not rc.n_pairs:  # type: ignore[union-attr]
        return None, None, None, "", False
    scale = 1000.0 / rc.n_pairs  # type: ignore[union-attr]
    total = [_sum([e[k] for e in per.values()]) for k in ("seconds", "prompt_tokens", "generated_tokens")]
    sec, prompt, gen = (None if t is None else t * scale for t in total)
    return sec, prompt, gen, rc.source, bool(rc.cost.get("over_budget"))  # type: ignore[union-attr]


def evaluator_rows(comparison, costs: Mapping[str, RunCost], split_pair_ids: Sequence[str],
                   model_run: str | None = None) -> list[EvaluatorRow]:
    """The rubric model's rows and each judge's debiased row of Table 4, with failure rates and costs.

    Args:
        comparison: Table 4 (``rubric.analysis.comparison.Comparison``).
        costs: output folder -> its run's cost (score and judge outputs).
        split_pair_ids: the analysed split's pairs (a failure rate's denominator: the pairs given of them).
        model_run: the score output whose pairs table the rubric model was applied to.
    """
    in_split = set(split_pair_ids)
    rows = []
    for s, r in zip(comparison.systems, comparison.rows):
        if s.kind not in COST_KINDS or (s.kind == "LLM judge" and s.order != "debiased"):
            continue
        given = {p for p in (*s.decisions, *s.failures, *s.undecided) if p in in_split}
        failed = sum(1 for p in s.failures if p in in_split)
        sec, prompt, gen, source, over = _run_cost(s, costs, model_run)
        rows.append(EvaluatorRow(system=s.label_on(comparison.question_ids), kind=s.kind, n=r.n,
                                 accuracy=r.values["accuracy"], ci=tuple(r.ci["accuracy"]), n_given=len(given),
                                 n_failed=failed, seconds_per_1000=sec, prompt_tokens_per_1000=prompt,
                                 generated_tokens_per_1000=gen, cost_from=source, over_budget=over))
    return rows
