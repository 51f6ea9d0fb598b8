"""Data in: the records every room shares, the readers of every input format, and the splits.

This is the package's public face: other packages import from here, not from its modules.
"""

from rubric.io.records import (
    Label, LABELS, PairRecord, AnswerItem, Reject, content_id, question_id, explode,
)
from rubric.io.splits import (
    SPLITS, assign_splits, split_questions,
)
from rubric.io.readers import (
    ReadResult, DEFAULT_MAX_ANSWER_CHARS, DEFAULT_MAX_QUESTION_CHARS, TABLE_FIELDS, DEFAULT_LABEL_VALUES,
    SPLIT_VALUES, WEBGLM_REFERENCE_GRADES, read_lfqa_hp, read_lfqa_eval, read_graded, read_graded_labels,
    read_table, parse_mapping, READERS, FORMATS, read_input, read_hf, open_hf_dataset, hf_files, hf_name,
    DEFAULT_HF_SPLIT, Block, BLOCK_ROWS, BLOCK_BYTES, plan_blocks, read_block,
)

__all__ = [
    "Label", "LABELS", "PairRecord", "AnswerItem", "Reject", "content_id", "question_id", "explode", "SPLITS",
    "assign_splits", "split_questions", "ReadResult", "DEFAULT_MAX_ANSWER_CHARS",
    "DEFAULT_MAX_QUESTION_CHARS", "TABLE_FIELDS", "DEFAULT_LABEL_VALUES", "SPLIT_VALUES",
    "WEBGLM_REFERENCE_GRADES", "read_lfqa_hp", "read_lfqa_eval", "read_graded", "read_graded_labels",
    "read_table", "parse_mapping", "READERS", "FORMATS", "read_input", "read_hf", "open_hf_dataset",
    "hf_files", "hf_name", "DEFAULT_HF_SPLIT", "Block", "BLOCK_ROWS", "BLOCK_BYTES", "plan_blocks",
    "read_block",
]
