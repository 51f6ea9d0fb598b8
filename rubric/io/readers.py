"""Dataset readers: every input format becomes a list of :class:`~rubric.io.records.PairRecord`.

This module registers the formats and reads an input by its format (:func:`read_input`); the
readers live beside it: :mod:`rubric.io.pairs` (LFQA-HP-1M, lfqa_eval, tables), :mod:`rubric.io.graded`
(graded answer lists), :mod:`rubric.io.blocks` (large files and Hugging Face datasets in blocks),
on :mod:`rubric.io.files` (file access, encodings, loaders), :mod:`rubric.io.fields` (the field
checks), :mod:`rubric.io.mapping` (``--map``) and :mod:`rubric.io.hub` (Hugging Face datasets).

A reader never dies on a bad row: the row becomes a :class:`~rubric.io.records.Reject` whose reason
names the row and the field ("row 7: field 'answer_2' is empty"). Only a file that cannot be read at
all (missing, a directory, not UTF-8 text, corrupt Parquet, JSON that does not parse, a graded file
of the wrong shape, no records at all) raises :class:`~rubric.errors.InputError`.

Text files must be UTF-8 (a UTF-8 byte-order mark is accepted). A file that is UTF-16 or UTF-32
(byte-order mark, or the NUL bytes such text has) or binary raises one InputError that says how to
convert it, instead of one "not valid JSON" reject per line. Within a UTF-8 file, stray invalid
bytes survive decoding as lone surrogates (``errors="surrogateescape"``, U+DC80..U+DCFF); a row
carrying one in any text field is rejected with the field named, and the rest of the file is read.

Records are split only where the format splits them: JSON Lines at line feeds (a carriage
return before one is dropped), CSV where the csv dialect ends a record. ``str.splitlines`` would
also split at U+2028/U+2029/U+0085 and other characters that JSON writes raw inside strings,
cutting a valid record in two.

A file that holds no records at all raises InputError: an empty input is a mistake upstream,
not a job that succeeded.

Every :class:`ReadResult` satisfies ``rows_in == rows_ok + len(rejects)``. For the pair formats the
unit is an input record and ``rows_ok == len(pairs)``; for graded lists the unit is one graded
answer and an answer that ends up in no pair is a reject too (see :func:`read_graded`).

A pair without a human judgement (the label field absent or null; in the table formats also an
empty cell, the only way CSV can leave one out) is kept as ``PairRecord(label=None)``: it can be
scored and predicted, and ``fit``/``evaluate`` leave it out. A label that is present but not a
valid value is still a reject. Graded lists always have labels.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rubric.io.blocks import read_hf
from rubric.io.fields import ReadResult
from rubric.io.formats import check_options, format_names, input_format, register_format
from rubric.io.graded import read_graded
from rubric.io.hub import HF_OPTIONS
from rubric.io.pairs import TABLE_OPTIONS, read_lfqa_eval, read_lfqa_hp, read_table

__all__ = ["READERS", "FORMATS", "read_input"]

register_format("lfqa-hp", read_lfqa_hp)
register_format("lfqa-eval", read_lfqa_eval)
register_format("graded", read_graded)
for _kind in ("jsonl", "parquet", "csv"):
    register_format(_kind, functools.partial(read_table, fmt=_kind), TABLE_OPTIONS, needs_mapping=True)
register_format("hf", read_hf, HF_OPTIONS)

#: Input format name -> reader, for the CLI's ``--format``.
READERS: Mapping[str, Callable[..., ReadResult]] = {n: input_format(n).read for n in format_names()}
FORMATS: tuple[str, ...] = format_names()


def read_input(path: str | Path, fmt: str, **options: Any) -> ReadResult:
    """Read ``path`` with the reader registered for ``fmt``.

    Args:
        path: the input file.
        fmt: one of :data:`FORMATS`.
        **options: passed to the reader (e.g. ``mapping=`` for the table formats,
            ``max_pairs_per_question=`` for "graded", ``max_answer_chars=`` and
            ``max_question_chars=`` for all).

    Returns:
        The reader's :class:`ReadResult`.

    Raises:
        ConfigError: ``fmt`` is unknown, or an option is unknown to that reader or invalid.
        InputError: the file cannot be read at all.
    """
    return check_options(fmt, options).read(path, **options)
