"""Rubric scoring: the rubric registry and its pure pieces (no model here).

Versioned rubric specs and their raw ranges (``specs``), rescaling (``rescale``), the
``Scorer`` protocol and ``Score``/``Provenance`` (``scorer``), every LLM prompt as one versioned
spec in one registry and the one reader of score tokens (``prompts``; templates in ``rubric/prompts/``),
G-Eval prompts and score parsing (``geval``), and the formulas the CPU backends apply
(``conciseness``, ``grammar``, ``specificity``, ``claims``, ``signals``; ``language``: whether an answer is English, for
the English-only versions). The ``--preset cpu`` versions are ``rubric.cpu_profile``'s room, the presets
``rubric.presets``'.

This is the package's public face: other packages import from here, not from its modules.
"""

from rubric.scoring.rescale import (
    minmax_1_5, FittedMinMax,
)
from rubric.scoring.signals import (
    LENGTH_WORD_CAP, LENGTH_RAW_MAX, whitespace_words, length_raw, row_cosine,
)
from rubric.scoring.specs import (
    RubricSpec, RUBRICS, DEFAULT_VERSIONS, EXTRA_SIGNALS, PAPER_RUBRICS, resolve_rubrics,
)
from rubric.scoring.agreement import (
    AGREEMENT_DATA, MeasuredAgreement, measured_agreement, agreement_line, agreement_record,
)
from rubric.scoring.scorer import (
    Score, Provenance, Scorer, ScoreSet, check_batch, ABSTAIN_PREFIX, is_abstention, EVIDENCE_CUT,
)
# geval registers the LLM rubrics (rubric.presets checks its versions against them)
from rubric.scoring.prompts import (
    ChatPrompt, PROMPTS_DIR, PROMPTS, PromptTemplate, declare_prompt, prompt_key, system_turn, DEFAULT_MIN_MASS,
    normalize_token, fold_token_probs, TokenReading, read_tokens, mass_reading,
)
from rubric.scoring.geval import (
    ParsedScore, Layout, LAYOUTS, DEFAULT_LOG_SCORE_TOL, LFQ_FILTER_VERSION, TEMPLATE_VERSIONS, get_template,
    lfq_filter_template, parse_score, expected_value, LFQDecision, parse_lfq,
)
from rubric.scoring.conciseness import (
    CONTENT_POS, WORD_LIKE_POS, lexical_density_counts, density_from_counts, lexical_density,
)
from rubric.scoring.grammar import (
    grammar_score, LANGUAGETOOL_COUNTED_ISSUE_TYPES, languagetool_issue_type, count_languagetool_matches,
    HARPER_KIND_TO_LT_ISSUE_TYPE, HARPER_COUNTED_KINDS, count_harper_lints,
)
from rubric.scoring.specificity import (
    SUBJECTIVEQA_VERSION, GEVAL_VERSION, SUBJECTIVEQA_MODEL, LABELS, format_input, latent_score,
    ordinal_score_1_5, combine_windows, label_order, window_spans,
)
from rubric.scoring.claims import (
    FACTUALITY_VERSION, EXTRACT_VERSION, VERIFY_VERSION, VERIFY_TERNARY_VERSION, NO_CLAIM_SENTINEL,
    NO_CLAIMS_REASON, Verdict, extraction_template, verification_template,
    factuality_template_hash, sentence_context, extraction_prompts, parse_claims, EXTRACTION_STOP, claim_key,
    dedupe_claims, format_evidence, verification_prompt, VerdictReading, read_verdict, parse_verdict_text,
    ClaimScores, factuality_scores, CheckedClaim, claims_to_json, claims_from_json, claims_table,
)

from rubric.scoring.claims import (
    FACTUALITY_V2, FACTUALITY_VERSIONS, count_no_claims,
)
from rubric.scoring.claims import (
    FACTUALITY_V3, EXTRACT_V2, VERIFY_V2, VERIFY_TERNARY_V2, FactualityRecipe, factuality_recipe, sentence_evidence,
)
from rubric.scoring.claim_stop import (
    LOOP_RULE, STOP_RULES, claim_units, unit_key, loop_position, loops, claims_until_loop, LOSS_REASONS, claims_v3_loses,
)
# the English-only versions' language check (issue 59)
from rubric.scoring.language import (
    ENGLISH_ONLY, LANGUAGE_CHECK, OTHER_LANGUAGES, WORD_ZIPF, MIN_ENGLISH_SHARE, MIN_LATIN_SHARE, MIN_WORDS,
    WordFrequency, letter_scripts, latin_words, english_share, not_english, language_checks,
)

__all__ = [
    "AGREEMENT_DATA", "MeasuredAgreement", "measured_agreement", "agreement_line", "agreement_record", "ENGLISH_ONLY",
    "LANGUAGE_CHECK", "OTHER_LANGUAGES", "WORD_ZIPF", "MIN_ENGLISH_SHARE", "MIN_LATIN_SHARE", "MIN_WORDS",
    "WordFrequency", "letter_scripts", "latin_words", "english_share", "not_english", "language_checks", "minmax_1_5",
    "FittedMinMax", "LENGTH_WORD_CAP", "LENGTH_RAW_MAX", "whitespace_words", "length_raw", "row_cosine",
    "ABSTAIN_PREFIX", "is_abstention", "EVIDENCE_CUT", "RubricSpec", "RUBRICS", "DEFAULT_VERSIONS", "EXTRA_SIGNALS",
    "PAPER_RUBRICS", "resolve_rubrics", "Score", "Provenance", "Scorer", "ScoreSet", "check_batch", "ChatPrompt",
    "PROMPTS_DIR", "PromptTemplate", "ParsedScore", "Layout", "LAYOUTS", "DEFAULT_MIN_MASS", "DEFAULT_LOG_SCORE_TOL",
    "LFQ_FILTER_VERSION", "TEMPLATE_VERSIONS", "get_template", "lfq_filter_template", "normalize_token",
    "fold_token_probs", "parse_score", "PROMPTS", "declare_prompt", "prompt_key", "system_turn", "TokenReading",
    "read_tokens", "mass_reading", "expected_value", "LFQDecision", "parse_lfq", "CONTENT_POS", "WORD_LIKE_POS",
    "lexical_density_counts", "density_from_counts", "lexical_density", "grammar_score",
    "LANGUAGETOOL_COUNTED_ISSUE_TYPES", "languagetool_issue_type", "count_languagetool_matches",
    "HARPER_KIND_TO_LT_ISSUE_TYPE", "HARPER_COUNTED_KINDS", "count_harper_lints", "SUBJECTIVEQA_VERSION",
    "GEVAL_VERSION", "SUBJECTIVEQA_MODEL", "LABELS", "format_input", "latent_score", "ordinal_score_1_5",
    "combine_windows", "label_order", "window_spans", "FACTUALITY_VERSION", "EXTRACT_VERSION", "VERIFY_VERSION",
    "VERIFY_TERNARY_VERSION", "NO_CLAIM_SENTINEL", "NO_CLAIMS_REASON", "Verdict", "extraction_template",
    "verification_template", "factuality_template_hash", "sentence_context", "extraction_prompts", "parse_claims",
    "EXTRACTION_STOP", "claim_key", "dedupe_claims", "format_evidence", "verification_prompt", "VerdictReading",
    "read_verdict", "parse_verdict_text", "ClaimScores", "factuality_scores", "CheckedClaim", "claims_to_json",
    "claims_from_json", "claims_table", "FACTUALITY_V2", "FACTUALITY_VERSIONS", "count_no_claims", "FACTUALITY_V3",
    "EXTRACT_V2", "VERIFY_V2", "VERIFY_TERNARY_V2", "FactualityRecipe", "factuality_recipe", "sentence_evidence",
    "LOOP_RULE", "STOP_RULES", "claim_units", "unit_key", "loop_position", "loops", "claims_until_loop",
    "LOSS_REASONS", "claims_v3_loses",
]
