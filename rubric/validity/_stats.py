"""Minimal pairs scored: one outcome per pair and rubric, and the table per rubric version and family with
question-clustered CIs (``rubric.preference.clustered_mean``, the project's one clustered bootstrap)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rubric.preference import clustered_mean
from rubric.validity._families import FAMILIES, family_names
from rubric.validity._pairs import MinimalPair

__all__ = ["DEFAULT_TOLERANCE", "Outcome", "ValidityRow", "ValidityTable", "outcomes", "summarise", "summary_of",
           "N_EXAMPLES", "BASELINES", "failing_examples"]

#: Two raw scores closer than this are a tie. The measured vLLM batch noise of the LLM rubrics is ~2e-5 on the
#: 1-5 scale (docs/llm.md, "Batch noise"; tests/tolerances.py:LLM_BATCH_NOISE): 1e-4 on raw scores stays above
#: it for every declared range (the widest raw ranges are 1-5 and -1..1), so a layout's noise is never read
#: as a direction, while any change a rubric makes on purpose is far larger. ``validate --tolerance`` changes it.
DEFAULT_TOLERANCE = 1e-4

#: Failing examples kept per rubric and family.
N_EXAMPLES = 3


@dataclass(frozen=True)
class Outcome:
    """One minimal pair on one rubric.

    Attributes:
        outcome: "pass" (moved the expected way), "tie" (within the tolerance), "fail" (moved the other way,
            or moved at all for an invariance) or "missing" (either side has no score).
        passed: whether the pair meets its expectation (a tie passes ``not_higher`` and ``same``).
    """

    family: str
    rubric: str
    version: str
    expectation: str
    question_id: str
    question: str
    original_id: str
    perturbed_id: str
    original: str
    perturbed: str
    original_score: float | None
    perturbed_score: float | None
    difference: float | None
    outcome: str
    passed: bool
    seed: int


def _raw(score) -> float | None:
    """A ``rubric.scoring.Score``'s raw value (None when it failed), a number, or None."""
    if score is None:
        return None
    raw = getattr(score, "raw", score)
    return None if raw is None else float(raw)


def _judge(expectation: str, d: float | None, tolerance: float) -> tuple[str, bool]:
    if d is None:
        return "missing", False
    if abs(d) <= tolerance:
        return "tie", expectation in ("not_higher", "same")
    if expectation == "same":
        return "fail", False
    return ("pass", True) if d < 0 else ("fail", False)


def outcomes(pairs: Sequence[MinimalPair], scores: Mapping[str, Mapping[str, object]], tolerance: float, *,
             versions: Mapping[str, str]) -> list[Outcome]:
    """Each pair's outcome on each rubric of ``versions`` that its family has an expectation for.

    Args:
        pairs: the minimal pairs.
        scores: answer id -> rubric name -> ``Score`` (or a raw number, or None); an id or a name absent is missing.
        tolerance: the largest |perturbed - original| on raw scores that is a tie.
        versions: rubric name -> the version scored (the rubrics of the run).
    """
    out = []
    for p in pairs:
        a, b = scores.get(p.original_id, {}), scores.get(p.perturbed_id, {})
        for rubric, expectation in p.expect:
            if rubric not in versions:
                continue
            x, y = _raw(a.get(rubric)), _raw(b.get(rubric))
            d = None if x is None or y is None else y - x
            outcome, passed = _judge(expectation, d, tolerance)
            out.append(Outcome(p.family, rubric, versions[rubric], expectation, p.question_id, p.question,
                               p.original_id, p.perturbed_id, p.original, p.perturbed, x, y, d, outcome, passed,
                               p.seed))
    return out


@dataclass(frozen=True)
class ValidityRow:
    """One rubric version under one family.

    Attributes:
        n: minimal pairs (missing ones included); passes/ties/fails/missing: their outcomes (a tie that passes
            is counted in ``passes`` and in ``ties``).
        pass_rate: passes / (n - missing); nan when nothing was scored on both sides.
        ci: its question-clustered bootstrap 95% CI; (nan, nan) with fewer than two questions.
        n_questions: questions among the scored pairs.
        examples: a few pairs that did not pass (a fail, or a tie where the copy should be lower), the worst first.
        constant_rate / length_rate: the pass rate on the same pairs of a scorer that gives every answer the same
            value (every pair a tie) and of the answer's length in words (:data:`BASELINES`): what a pass is worth.
    """

    rubric: str
    version: str
    family: str
    expectation: str
    n: int
    passes: int
    ties: int
    fails: int
    missing: int
    pass_rate: float
    ci: tuple[float, float]
    n_questions: int
    examples: tuple[Outcome, ...] = ()
    constant_rate: float = math.nan
    length_rate: float = math.nan

    @property
    def informative(self) -> bool:
        """Whether the rubric passes more of the pairs than a constant scorer and than length do: a pass rate no
        higher than a baseline's says nothing about the rubric (a constant passes every "not higher" row)."""
        best = max((r for r in (self.constant_rate, self.length_rate) if not math.isnan(r)), default=math.nan)
        return not math.isnan(self.pass_rate) and (math.isnan(best) or self.pass_rate > best)


@dataclass
class ValidityTable:
    """The check's result: a row per rubric version and family, in rubric then family order.

    Attributes:
        unchecked: rubric versions no selected family has an expectation for.
        tolerance: the tie tolerance used.
    """

    rows: list[ValidityRow]
    tolerance: float
    unchecked: list[str] = field(default_factory=list)


#: The baselines every row carries: a constant scorer, and the answer's length in whitespace words.
BASELINES: tuple[str, ...] = ("constant", "length")


def _baseline_rate(scored: Sequence[Outcome], baseline: str) -> float:
    """The pass rate of a baseline on the pairs a rubric was scored on (a tie within no tolerance for whole words)."""
    if not scored:
        return math.nan
    passed = 0
    for o in scored:
        d = 0.0 if baseline == "constant" else float(len(o.perturbed.split()) - len(o.original.split()))
        passed += _judge(o.expectation, d, 0.0)[1]
    return passed / len(scored)


def failing_examples(results: Sequence[Outcome]) -> tuple[Outcome, ...]:
    """The pairs of one rubric and family, scored on both sides, that did not pass: the :data:`N_EXAMPLES` worst (the
    largest difference first), the examples a row shows."""
    failing = sorted((o for o in results if o.outcome != "missing" and not o.passed),
                     key=lambda o: (-abs(o.difference or 0.0), o.original_id, o.perturbed_id))
    return tuple(failing[:N_EXAMPLES])


def summary_of(results: Sequence[Outcome], *, versions: Mapping[str, str], families: Sequence[str] | None = None,
               tolerance: float, n_boot: int = 1000, seed: int = 0) -> ValidityTable:
    """The table of ``results`` (a row for every rubric of ``versions`` and every family of ``families`` that has an
    expectation for it, with n = 0 where no pair applied)."""
    families = list(families) if families is not None else family_names()
    by_key: dict[tuple[str, str], list[Outcome]] = {}
    for o in results:
        by_key.setdefault((o.rubric, o.family), []).append(o)
    rows, unchecked = [], []
    for rubric, version in versions.items():
        mine = [f for f in families if rubric in FAMILIES.get(f).expect]
        if not mine:
            unchecked.append(version)
        for fam in mine:
            got = by_key.get((rubric, fam), [])
            scored = [o for o in got if o.outcome != "missing"]
            m = clustered_mean([1.0 if o.passed else 0.0 for o in scored], groups=[o.question_id for o in scored],
                               n_boot=n_boot, seed=seed)
            rows.append(ValidityRow(rubric, version, fam, FAMILIES.get(fam).expect[rubric], len(got),
                                    sum(o.passed for o in got), sum(o.outcome == "tie" for o in got),
                                    sum(o.outcome == "fail" for o in got), len(got) - len(scored), m.value, m.ci,
                                    m.n_questions, failing_examples(got), _baseline_rate(scored, "constant"),
                                    _baseline_rate(scored, "length")))
    return ValidityTable(rows, tolerance, unchecked)


def summarise(pairs: Sequence[MinimalPair], scores: Mapping[str, Mapping[str, object]], tolerance: float, *,
              versions: Mapping[str, str] | None = None, families: Sequence[str] | None = None, n_boot: int = 1000,
              seed: int = 0) -> ValidityTable:
    """Per rubric version and family: n, passes, ties, fails, missing, the pass rate with a 95% CI from a
    bootstrap over questions, and a few failing examples.

    Args:
        pairs: the minimal pairs (:func:`rubric.validity.minimal_pairs`).
        scores: answer id -> rubric name -> ``Score`` or raw number.
        tolerance: the tie tolerance on raw scores (:data:`DEFAULT_TOLERANCE`).
        versions: rubric name -> version (default: every rubric name in ``scores``, named by itself).
        families: the families of the run (default: those of ``pairs``, in the registry's order).
        n_boot / seed: the bootstrap's replicates and seed.
    """
    if versions is None:
        names = sorted({r for s in scores.values() for r in s})
        versions = {r: r for r in names}
    if families is None:
        used = {p.family for p in pairs}
        families = [f for f in family_names() if f in used]
    return summary_of(outcomes(pairs, scores, tolerance, versions=versions), versions=versions, families=families,
                      tolerance=tolerance, n_boot=n_boot, seed=seed)
