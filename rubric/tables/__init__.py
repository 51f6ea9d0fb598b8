"""Feature tables: from raw scores to the answers and pairs tables a model is fitted on.

``assemble`` (the jobs' one assemble step: pairs of all inputs, dedupe, splits, fitted rescaling;
``assemble_stream``: the same step for a job too large to hold),
``files`` (those tables written into a folder as they stream out), ``answer_tables`` (the score job's
assemble step whole: its units read again, the tables written, what the manifest records), ``costs`` (what
each row cost, the totals per rubric or judge, the failure budget), ``features`` (the tables and the
design matrix), ``provenance`` (per-rubric provenance records
and their checks), ``style`` (markdown counts, normalised differences, length decorrelation).

This is the package's public face: other packages import from here, not from its modules.
"""

from rubric.tables.style import (
    MARKDOWN_RULE, STYLE_COVARIATES, STYLE_META_KEY, markdown_count, normalised_difference, style_record,
    check_style_record, spearman, length_decorrelation_beta,
)
from rubric.tables.provenance import (
    PROVENANCE_META_KEY, PROVENANCE_INDEX_META_KEY, RECORD_FIELDS, rubric_provenance, check_record,
    provenance_key, provenance_column, provenance_metadata, table_provenance, table_provenance_index,
    provenance_differences, table_provenance_problems, require_uniform_provenance,
)
from rubric.tables.missing import (
    MISSING_MODES, DEFAULT_MISSING, MissingRule, indicator_column, is_indicator_column, fit_missing_rule,
    missing_sides,
)
from rubric.tables.features import (
    answers_table, pairs_table, table_rubrics, table_style, concat_feature_tables, DesignMatrix,
    design_matrix, fit_length_betas, word_count, ASPECT_COLUMN_PREFIX,
)
from rubric.tables.assemble import (
    JobInput, Assembled, combine_inputs, job_splits, fit_rescale, assemble,
)
from rubric.tables.assemble_stream import (
    StreamAssembled, ScoreLookup, MappingScores, assemble_stream,
)
from rubric.tables.files import FileSink, TableFiles
from rubric.tables.answer_tables import InputUnit, AnswerTables, write_answer_tables, ANSWER_TABLE_FILES
from rubric.tables.costs import (
    COST_FILE, COST_COLUMNS, TOKEN_KEYS, DEFAULT_MAX_FAILED, CostRow, cost_table, cost_summary, over_budget,
    budget_lines, GPUS, MODEL_PARAMETERS, roofline_estimate, cost_markdown, check_max_failed, budget_refusal,
    cost_line,
)

__all__ = [
    "MARKDOWN_RULE", "STYLE_COVARIATES", "STYLE_META_KEY", "markdown_count", "normalised_difference",
    "style_record", "check_style_record", "spearman", "length_decorrelation_beta", "PROVENANCE_META_KEY",
    "PROVENANCE_INDEX_META_KEY", "RECORD_FIELDS", "rubric_provenance", "check_record", "provenance_key",
    "provenance_column", "provenance_metadata", "table_provenance", "table_provenance_index",
    "provenance_differences", "table_provenance_problems", "require_uniform_provenance", "answers_table",
    "pairs_table", "table_rubrics", "table_style", "concat_feature_tables", "DesignMatrix", "design_matrix",
    "fit_length_betas", "word_count", "ASPECT_COLUMN_PREFIX", "JobInput", "Assembled", "combine_inputs",
    "job_splits", "fit_rescale", "assemble", "StreamAssembled", "ScoreLookup", "MappingScores",
    "assemble_stream", "TableFiles", "FileSink", "InputUnit", "AnswerTables", "write_answer_tables", "ANSWER_TABLE_FILES",
    "COST_FILE", "COST_COLUMNS", "TOKEN_KEYS", "DEFAULT_MAX_FAILED", "CostRow", "cost_table", "cost_summary",
    "over_budget", "budget_lines", "GPUS", "MODEL_PARAMETERS", "roofline_estimate", "cost_markdown", "check_max_failed",
    "budget_refusal", "cost_line", "MISSING_MODES", "DEFAULT_MISSING", "MissingRule", "indicator_column", "is_indicator_column",
    "fit_missing_rule", "missing_sides",
]
