"""Data in: the records every room shares, the readers of every input format, and the splits.

``records`` (PairRecord, AnswerItem, Reject), ``splits``, ``readers`` (read an input by its
``--format``; the formats register in ``formats``), the readers themselves (``pairs``, ``graded``,
``blocks`` with Hugging Face datasets, ``hub``) and their toolkit: ``files`` (paths, encodings,
loaders), ``fields`` (the field checks that the protocols' readers use too), ``mapping`` (``--map``),
``units`` (one unit of a job's work read: a whole input, a URI, or a block; the score job's work items),
and ``outputs`` (reading a job's output folder safely: one run's set of files, or a one-line refusal).

This is the package's public face: other packages import from here, not from its modules.
"""

from rubric.io.records import (
    Label, LABELS, PairRecord, AnswerItem, Reject, content_id, question_id, explode, normalised_text, self_reference,
    SELF_REFERENCE,
)
from rubric.io.splits import (
    SPLITS, assign_splits, split_questions,
)
from rubric.io.fields import (
    ReadResult, RowError, DEFAULT_MAX_ANSWER_CHARS, DEFAULT_MAX_QUESTION_CHARS, DEFAULT_LABEL_VALUES,
    SPLIT_VALUES, text_field, check_text, check_max_chars, label_table, label_key, read_item,
)
from rubric.io.files import (
    check_path, load_records, kind_of, RepeatedKeys, read_parquet, open_parquet,
)
from rubric.io.mapping import (
    TABLE_FIELDS, parse_mapping, parse_label_values, mapping_entries, check_mapping, check_mapped_columns,
)
from rubric.io.formats import (
    InputFormat, INPUT_FORMATS, register_format, format_names, input_format, check_options,
)
from rubric.io.pairs import (
    TABLE_OPTIONS, read_lfqa_hp, read_lfqa_eval, read_table,
)
from rubric.io.graded import (
    WEBGLM_REFERENCE_GRADES, GradedQuestion, read_graded, read_graded_labels, graded_item, load_graded,
)
from rubric.io.hub import (
    DEFAULT_HF_SPLIT, HF_OPTIONS, hf_name, open_hf_dataset, hf_files,
)
from rubric.io.blocks import (
    Block, BLOCK_ROWS, BLOCK_BYTES, plan_blocks, read_block, read_hf,
)
from rubric.io.readers import (
    READERS, FORMATS, read_input,
)

from rubric.io.ratings import (
    RATING_FIELDS, RatedAnswer, RatingsRead, parse_aspects, read_ratings, read_graded_ratings,
)
from rubric.io.codec import record_json, record_from_json
from rubric.io.units import COPY_CHUNK, is_uri, read_whole, read_unit, read_scored, without_self_references, answer_work

from rubric.io.outputs import (
    MANIFEST, PUBLISHING, DIGESTS, check_published, folder_state, published_files, published_digests, file_sha256,
    read_manifest,
)

__all__ = [
    "record_json", "record_from_json",
    "MANIFEST", "PUBLISHING", "DIGESTS", "check_published", "folder_state", "published_files", "published_digests",
    "file_sha256", "read_manifest",
    "Label", "LABELS", "PairRecord", "AnswerItem", "Reject", "content_id", "question_id", "explode", "normalised_text",
    "self_reference", "SELF_REFERENCE", "read_scored", "without_self_references", "SPLITS",
    "assign_splits", "split_questions", "ReadResult", "RowError", "DEFAULT_MAX_ANSWER_CHARS",
    "DEFAULT_MAX_QUESTION_CHARS", "DEFAULT_LABEL_VALUES", "SPLIT_VALUES", "text_field", "check_text", "check_max_chars",
    "label_table", "label_key", "read_item", "check_path", "load_records", "kind_of", "RepeatedKeys", "read_parquet",
    "open_parquet", "TABLE_FIELDS",
    "parse_mapping", "parse_label_values", "mapping_entries", "check_mapping", "check_mapped_columns",
    "InputFormat", "INPUT_FORMATS", "register_format", "format_names", "input_format", "check_options",
    "TABLE_OPTIONS", "read_lfqa_hp", "read_lfqa_eval", "read_table", "WEBGLM_REFERENCE_GRADES",
    "GradedQuestion", "read_graded", "read_graded_labels", "graded_item", "load_graded", "DEFAULT_HF_SPLIT",
    "HF_OPTIONS", "hf_name", "open_hf_dataset", "hf_files", "Block", "BLOCK_ROWS", "BLOCK_BYTES",
    "plan_blocks", "read_block", "read_hf", "READERS", "FORMATS", "read_input", "is_uri", "read_whole", "read_unit",
    "answer_work", "COPY_CHUNK", "RATING_FIELDS", "RatedAnswer", "RatingsRead", "parse_aspects", "read_ratings",
    "read_graded_ratings",
]
