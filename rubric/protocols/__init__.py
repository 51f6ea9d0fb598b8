"""The neighbouring evaluation protocols: LINKAGE, RAG-QA Arena and LFQA-E.

``templates`` (how a protocol declares its prompts, ``rubric/prompts/<version>.j2``, and how their
verdicts are read; each protocol's module declares its own, and importing this package registers them,
the pairwise ones as judges in ``rubric.judging``), ``judges`` (the pairwise protocols' judges), ``linkage`` (prompts, reading the judge, reference lists),
``linkage_metric``, ``linkage_table`` (``linkage.parquet``'s rows and columns, the rubric-score join, the
manifest's metrics), ``linkage_data``, ``linkage_references``, ``linkage_pairwise`` (LINKAGE's judge
systems and its two pairwise baselines), ``arena``/``arena_data``, ``lfqa_e`` (statistics and
readers), ``report`` (their report tables), ``pages`` (the prose of their ``report.md`` pages).

This is the package's public face: other packages import from here, not from its modules.
"""

from rubric.protocols.templates import (
    PROTOCOL_SCORER, declare_protocol_prompt, protocol_versions, get_protocol_template, pairwise_verdict_probs, parse_pairwise_verdict,
)
from rubric.protocols.judges import (
    protocol_judge, is_protocol_judge,
    protocol_judge_versions,
)
from rubric.protocols.linkage import (
    LINKAGE_PREFILL, MAX_RANK_POSITIONS, WEBGLM_REFERENCE_KEYS, RankScore, expected_rank, parse_rank, rank_score,
    expected_point_score, parse_point_score, format_reference_list, listwise_prompt, pointwise_prompt,
    pairwise_prompt, webglm_references, GradedAnswer, ReferenceSplit, graded_reference_split, references_above,
)
from rubric.protocols.linkage_metric import (
    QuestionCorrelation, LinkageCorrelations, question_correlation, linkage_correlations,
)
from rubric.protocols.linkage_table import (
    LINKAGE_TABLE_COLUMNS, RUBRIC_SCORE_PREFIX, linkage_rows, linkage_rows_table, join_rubric_scores, linkage_metrics,
)
from rubric.protocols.linkage_references import (
    CREATE_REFERENCES_VERSION, CREATE_REFERENCES_VERSIONS, N_GENERATED, REFERENCE_MAX_TOKENS, REFERENCE_MAX_TOKENS_LIMIT,
    generated_text, GeneratedReferences,
    create_references_prompt, parse_generated_references, golden_sha256, generation_key,
)
from rubric.protocols.linkage_data import (
    REFERENCE_SOURCES, LinkageCandidate, LinkageQuestion, LinkageRead, read_linkage,
)
from rubric.protocols.arena_data import (
    REFERENCE_SYSTEM, ANSWER_FIELDS, DEFAULT_OUTCOME_VALUES, ArenaQuestion, ArenaQuestions, SystemAnswer,
    ArenaAnswers, ArenaPair, ArenaJoin, read_arena_annotations, read_arena_answers, join_arena,
    to_pair_records,
)
from rubric.protocols.arena import (
    ARENA_THINKING_PREFILL, ARENA_REASONING_VERSION, arena_verdict_prefill, OUTCOMES, WINNERS, ELO_K, ELO_SCALE, ELO_BASE, ELO_INIT, WinRate, win_rates, Battle, battles_against,
    online_elo, bradley_terry, RatingInterval, rating_intervals, HumanAgreement, human_agreement,
)
from rubric.protocols.lfqa_e import (
    CLASSES, PAIR_TYPES, UNDECIDED_POLICIES, pair_type, ThreeWayMetrics, three_way_metrics, PairTypeBreakdown,
    breakdown_by_pair_type, lfqa_e_tables, lfqa_e_page,
)
from rubric.protocols.report import (
    linkage_results, linkage_table, arena_ratings, arena_tables, fmt_mean, fmt_value,
)

from rubric.protocols.linkage_pairwise import (
    PAIRWISE_CANDIDATES, PAIRWISE_REFERENCES, EQ2_TEMPLATE, EQ3_TEMPLATE, LINKAGE_SYSTEM_TEMPLATES, LINKAGE_SYSTEMS, OLD_SYSTEM_NAMES, reference_outcome, reference_weights, eq3_score,
)

from rubric.protocols.pages import (
    LINKAGE_NOTES, GENERATED_REFERENCES_FILE, ARENA_PAIRS_FILE, references_lines, linkage_page, linkage_empty_page, arena_page,
    command_lines,
)

__all__ = [
    "LINKAGE_NOTES", "GENERATED_REFERENCES_FILE", "ARENA_PAIRS_FILE", "references_lines", "linkage_page", "linkage_empty_page", "arena_page", "command_lines",
    "PROTOCOL_SCORER", "declare_protocol_prompt", "protocol_versions", "LINKAGE_PREFILL",
    "ARENA_THINKING_PREFILL", "get_protocol_template", "arena_verdict_prefill", "ARENA_REASONING_VERSION",
    "pairwise_verdict_probs", "parse_pairwise_verdict",
    "protocol_judge", "is_protocol_judge", "protocol_judge_versions",
    "MAX_RANK_POSITIONS", "WEBGLM_REFERENCE_KEYS", "RankScore", "expected_rank", "parse_rank", "rank_score",
    "expected_point_score", "parse_point_score", "format_reference_list", "listwise_prompt",
    "pointwise_prompt", "pairwise_prompt", "webglm_references", "GradedAnswer", "ReferenceSplit",
    "graded_reference_split", "references_above", "QuestionCorrelation", "LinkageCorrelations",
    "question_correlation", "linkage_correlations", "LINKAGE_TABLE_COLUMNS", "RUBRIC_SCORE_PREFIX", "linkage_rows",
    "linkage_rows_table", "join_rubric_scores", "linkage_metrics", "CREATE_REFERENCES_VERSION", "CREATE_REFERENCES_VERSIONS",
    "N_GENERATED", "REFERENCE_MAX_TOKENS", "REFERENCE_MAX_TOKENS_LIMIT", "generated_text", "GeneratedReferences", "create_references_prompt",
    "parse_generated_references", "golden_sha256", "generation_key", "REFERENCE_SOURCES", "LinkageCandidate",
    "LinkageQuestion", "LinkageRead", "read_linkage", "REFERENCE_SYSTEM", "ANSWER_FIELDS",
    "DEFAULT_OUTCOME_VALUES", "ArenaQuestion", "ArenaQuestions", "SystemAnswer", "ArenaAnswers", "ArenaPair",
    "ArenaJoin", "read_arena_annotations", "read_arena_answers", "join_arena", "to_pair_records", "OUTCOMES",
    "WINNERS", "ELO_K", "ELO_SCALE", "ELO_BASE", "ELO_INIT", "WinRate", "win_rates", "Battle",
    "battles_against", "online_elo", "bradley_terry", "RatingInterval", "rating_intervals", "HumanAgreement",
    "human_agreement", "CLASSES", "PAIR_TYPES", "UNDECIDED_POLICIES", "pair_type", "ThreeWayMetrics",
    "three_way_metrics", "PairTypeBreakdown", "breakdown_by_pair_type", "linkage_results", "linkage_table",
    "arena_ratings", "arena_tables", "fmt_mean", "fmt_value", "lfqa_e_tables", "lfqa_e_page", 'PAIRWISE_CANDIDATES', 'PAIRWISE_REFERENCES', 'EQ2_TEMPLATE', 'EQ3_TEMPLATE', 'LINKAGE_SYSTEM_TEMPLATES', 'LINKAGE_SYSTEMS', 'OLD_SYSTEM_NAMES', 'reference_outcome', 'reference_weights', 'eq3_score'
]
