"""LINKAGE's judge systems and their templates (one table, read by the scorer and the job), and its two
pairwise baselines (Yang et al., section 3): their names and their pure arithmetic.

- **eq. 2, candidates against each other** (``pairwise_candidates``, template ``linkage.pairwise.v1``):
  Score(c_i) = sum over the other candidates c_j of f(q, c_i, c_j). The pairs grow quadratically with
  the candidates, so the scorer caps the candidates per question; here a candidate's score is its mean
  order-debiased win share (a tie half a win), which orders a question's candidates as the sum does.
- **eq. 3, each candidate against each reference answer** (``pairwise_references``, template
  ``linkage.pairwise_reference.v1``, the same LINKAGE prompt): Score(c_i) = sum over the references
  r_j of w_{l_j} * f(q, c_i, r_j), with f = 1 when the candidate is better, -1 when the reference is,
  0 otherwise (eq. 4). This is what LINKAGE's experiments report as "Pairwise"; its cost is linear in
  the candidates, so no cap.

LINKAGE permutes each pair's positions at random; here both orders are read and averaged, which
removes the position bias instead of randomising it. With probabilities (logprob mode) f is its
expectation over the two orders: P(candidate better) - P(reference better), a tie counting 0. The
paper names per-grade weights w_l but gives no values; its Figure 3 arithmetic (four references,
lost to three, won against one: 2.5 on 0-10) is that of equal weights, the default here. The score
is divided by the weights' sum, so it lies in [-1, 1] whatever the number of references (the same
divisor for every candidate of a question: per-question correlations are those of eq. 3's sum).
"""

from __future__ import annotations

from collections.abc import Sequence

from rubric.errors import ConfigError
from rubric.protocols.linkage import LINKAGE_PREFILL, SOURCE
from rubric.protocols.templates import declare_protocol_prompt

__all__ = ["PAIRWISE_CANDIDATES", "PAIRWISE_REFERENCES", "EQ2_TEMPLATE", "EQ3_TEMPLATE", "LINKAGE_SYSTEM_TEMPLATES",
           "LINKAGE_SYSTEMS", "OLD_SYSTEM_NAMES", "reference_outcome", "reference_weights", "eq3_score"]

#: The eq. 2 system (candidates against each other) and its template.
PAIRWISE_CANDIDATES = "pairwise_candidates"
EQ2_TEMPLATE = "linkage.pairwise.v1"
#: The eq. 3 system (each candidate against each reference answer) and its template.
PAIRWISE_REFERENCES = "pairwise_references"
EQ3_TEMPLATE = "linkage.pairwise_reference.v1"

_PAIRWISE = dict(protocol="linkage", layout="pairwise", prefill=LINKAGE_PREFILL, tokens=("A", "B", "C"),
                 fields=("question", "answer_1", "answer_2"), verdicts=("1", "2", "tie"), verdict_format="[[{}]]",
                 file=EQ2_TEMPLATE)
declare_protocol_prompt(EQ2_TEMPLATE, source=SOURCE + "pairwise_comparison.txt", **_PAIRWISE)  # type: ignore[arg-type]
# eq. 3: the same prompt, a candidate shown against one reference answer; its own version, so its rows and
# store keys never mix with eq. 2's
declare_protocol_prompt(EQ3_TEMPLATE, source=SOURCE + "pairwise_comparison.txt; eq. 3: a candidate against each "
                        "reference answer", **_PAIRWISE)  # type: ignore[arg-type]

#: LINKAGE's judge-based systems, in table order, and the template each reads.
LINKAGE_SYSTEM_TEMPLATES: dict[str, str] = {
    "listwise": "linkage.listwise_n.v1", "point_no_ref": "linkage.point_no_ref.v1",
    "point_with_ref": "linkage.point_with_ref.v1", PAIRWISE_CANDIDATES: EQ2_TEMPLATE, PAIRWISE_REFERENCES: EQ3_TEMPLATE}
LINKAGE_SYSTEMS: tuple[str, ...] = tuple(LINKAGE_SYSTEM_TEMPLATES)
#: Names an older release used: ``pairwise`` was eq. 2 (candidates against each other).
OLD_SYSTEM_NAMES: dict[str, str] = {"pairwise": PAIRWISE_CANDIDATES}


def reference_outcome(p_candidate_debiased: float, p_tie_ab: float | None, p_tie_ba: float | None) -> float:
    """Eq. 4's f in expectation over both orders: P(candidate better) - P(reference better).

    Args:
        p_candidate_debiased: order-debiased P(the candidate is better | not a tie), in [0, 1].
        p_tie_ab / p_tie_ba: P(tie) in each order (None: no tie mass read).

    Raises:
        ConfigError: a probability outside [0, 1].
    """
    pt = ((p_tie_ab or 0.0) + (p_tie_ba or 0.0)) / 2.0
    for name, v in (("p_candidate_debiased", p_candidate_debiased), ("p_tie", pt)):
        if not 0.0 <= v <= 1.0:
            raise ConfigError(f"'{name}' must be in [0, 1], got {v}")
    return (1.0 - pt) * (2.0 * p_candidate_debiased - 1.0)


def reference_weights(n_references: int, weights: Sequence[float] | None = None) -> list[float]:
    """The weight of each reference (best first): ``weights`` cut to the list, or 1 each.

    Raises:
        ConfigError: fewer weights than references, or a weight that is not a finite number >= 0, or all 0.
    """
    if weights is None:
        return [1.0] * n_references
    if len(weights) < n_references:
        raise ConfigError(f"{n_references} references need {n_references} weights (best first), got {len(weights)}")
    out = [float(w) for w in weights[:n_references]]
    if any(not (w >= 0.0 and w < float("inf")) for w in out) or (out and not sum(out)):
        raise ConfigError(f"reference weights must be finite, >= 0 and not all 0, got {out}")
    return out


def eq3_score(outcomes: Sequence[float], weights: Sequence[float]) -> float:
    """sum_j w_j * f_j / sum_j w_j: eq. 3, scaled to [-1, 1].

    Raises:
        ConfigError: no reference, or lengths differ.
    """
    if not outcomes or len(outcomes) != len(weights):
        raise ConfigError(f"need one weight per reference outcome (at least one), got {len(outcomes)} and "
                          f"{len(weights)}")
    return sum(w * f for w, f in zip(weights, outcomes)) / sum(weights)
