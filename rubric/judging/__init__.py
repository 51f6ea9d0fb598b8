"""Pairwise LLM judges and what is done with them.

``judges`` (judge specs and their registry; their prompts ``rubric/prompts/judge.*.j2``), ``verdicts``
(verdict parsing, verdict probabilities, position debiasing), ``judgments`` (the
judgments.parquet schema), ``perturb``
(character and synonym attacks on answers; ``perturb_victim``: the rubric model as victim;
``perturb_rewrite``: the perturbed copy of an input). The Table 4-8 analyses are ``rubric.analysis``.

This is the package's public face: other packages import from here, not from its modules.
"""

from rubric.judging.judges import (
    JudgeSpec, JUDGES, JUDGE_NAMES, VERDICT_PREFILL, OUTPUT_TAG, ORDERS, Order, Verdict, get_judge,
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
from rubric.judging.perturb import (
    ATTACKS, STOPWORDS, Word, words, word_budget, match_case, char_edits, same_stem, SynonymSource,
    synonym_candidates, replace_words, remove_word, Victim, decide, p_label, word_importance, WordChange,
    AttackResult, attack_pair,
)
from rubric.judging.perturb_victim import (
    RubricVictim, rubric_victim_specs,
)
from rubric.judging.perturb_rewrite import (
    rewrite_input, answer_fields,
)

__all__ = [
    "JudgeSpec", "JUDGES", "JUDGE_NAMES", "VERDICT_PREFILL", "OUTPUT_TAG", "ORDERS", "Order", "Verdict",
    "get_judge", "resolve_judges", "ParsedVerdict", "VerdictProbs",
    "PairOutcome", "cot_verdict_prefill", "parse_verdict", "verdict_probs", "vote_probs", "to_original",
    "p_a", "debias", "debiased_decision", "pair_outcome", "JUDGMENTS_FILE", "JUDGMENT_COLUMNS",
    "NULLABLE_COLUMNS", "PAIR_COLUMNS", "DECISIONS", "MODES", "judgments_table", "validate_judgments",
    "read_judgments", "write_judgments", "check_both_orders", "pair_decisions", "ATTACKS", "STOPWORDS", "Word",
    "words", "word_budget", "match_case", "char_edits", "same_stem", "SynonymSource", "synonym_candidates",
    "replace_words", "remove_word", "Victim", "decide", "p_label", "word_importance", "WordChange",
    "AttackResult", "attack_pair", "RubricVictim", "rubric_victim_specs", "rewrite_input", "answer_fields",
]
