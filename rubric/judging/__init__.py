"""Pairwise LLM judges and what is done with them.

``judges`` (judge specs and their registry; their prompts ``rubric/prompts/judge.*.j2``), ``verdicts``
(verdict parsing, verdict probabilities, position debiasing), ``judgments`` (the
judgments.parquet schema). The attacks are ``rubric.perturbation``; the Table 4-8 analyses are
``rubric.analysis``.

This is the package's public face: other packages import from here, not from its modules.
"""

from rubric.judging.judges import (
    JudgeSpec, JUDGES, JUDGE_NAMES, PAIRWISE_SCORER, VERDICT_PREFILL, OUTPUT_TAG, ORDERS, Order, Verdict, get_judge,
    resolve_judges,
)
from rubric.judging.verdicts import (
    ParsedVerdict, VerdictProbs, PairOutcome, cot_verdict_prefill, parse_verdict, verdict_probs, vote_probs,
    to_original, p_a, debias, debiased_decision, pair_outcome,
)
from rubric.judging.judgments import (
    JUDGMENTS_FILE, JUDGMENT_COLUMNS, NULLABLE_COLUMNS, PAIR_COLUMNS, DECISIONS, MODES, judgments_table,
    validate_judgments, read_judgments, write_judgments, check_both_orders, pair_decisions,
)
__all__ = [
    "JudgeSpec", "JUDGES", "JUDGE_NAMES", "PAIRWISE_SCORER", "VERDICT_PREFILL", "OUTPUT_TAG", "ORDERS", "Order",
    "Verdict", "get_judge", "resolve_judges", "ParsedVerdict", "VerdictProbs",
    "PairOutcome", "cot_verdict_prefill", "parse_verdict", "verdict_probs", "vote_probs", "to_original",
    "p_a", "debias", "debiased_decision", "pair_outcome", "JUDGMENTS_FILE", "JUDGMENT_COLUMNS",
    "NULLABLE_COLUMNS", "PAIR_COLUMNS", "DECISIONS", "MODES", "judgments_table", "validate_judgments",
    "read_judgments", "write_judgments", "check_both_orders", "pair_decisions",
]
