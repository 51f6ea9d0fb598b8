"""Reading one unit of a job's work: a whole input (a local file or a pyarrow filesystem URI such as
``s3://``, ``gs://`` or ``file://``) or one block of a local file (``rubric.io.blocks``).

The score and judge jobs read their units here: the score job's work items (:func:`answer_work`, the
unique answers of a unit with their store ids) and its assemble step's second reading of the same
units (both :func:`read_scored`: a pair whose reference is one of its answers is a reject there), and the
judge job's pairs (LINKAGE reads its lists with ``rubric.protocols.read_linkage``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from rubric.errors import InputError
from rubric.io.blocks import Block, read_block
from rubric.io.fields import ReadResult
from rubric.io.readers import read_input
from rubric.io.records import SELF_REFERENCE, AnswerItem, Reject, explode, self_reference

__all__ = ["is_uri", "read_whole", "read_unit", "read_scored", "without_self_references", "answer_work", "COPY_CHUNK"]

#: Bytes per read when a URI is copied or hashed.
COPY_CHUNK = 1 << 20


def is_uri(s: str) -> bool:
    return "://" in s


def read_whole(uri: str, fmt: str, options: Mapping[str, Any]) -> ReadResult:
    """Read one whole input with ``rubric.io.readers``; a URI is copied to a local temp file first.

    The returned ``source_file`` (and each reject's) is the input as given, not the temp copy.
    """
    if not is_uri(uri):
        return read_input(uri, fmt, **options)
    import pyarrow.fs as pafs

    fs, path = pafs.FileSystem.from_uri(uri)
    with tempfile.TemporaryDirectory(prefix="lfqa-shard-") as tmp:
        # keep the file name: readers derive the extension and (graded) the source from it
        local = Path(tmp) / Path(path).name
        try:
            with fs.open_input_stream(path) as src, local.open("wb") as dst:
                shutil.copyfileobj(src, dst, length=COPY_CHUNK)
        except OSError as e:
            raise InputError(f"cannot read {uri!r}: {e}") from e
        read = read_input(local, fmt, **options)
    rejects = [replace(r, source_file=uri) for r in read.rejects]
    return replace(read, rejects=rejects, source_file=uri)


def read_unit(uri: str, fmt: str, options: Mapping[str, Any], block: Block | None = None) -> ReadResult:
    """Read one unit of work: a block of an input, or the whole input when ``block`` is None."""
    if block is None:
        return read_whole(uri, fmt, options)
    return read_block(uri, fmt, block, **options)


def without_self_references(read: ReadResult) -> ReadResult:
    """``read`` with each pair whose reference is one of its answers (``rubric.io.self_reference``: up to case,
    spaces and punctuation) moved to its rejects, naming the row, the field and the side: every reference-reading
    rubric would read that answer against itself. The scoring path's rule, not the readers' (a judge protocol may
    pair an answer with the reference on purpose); ``read`` itself when no pair is such.

    A pair format's row is one pair, so each such pair is one row less in ``rows_ok``. (A graded list's reference is
    its best ``groundK``, and ``rubric.io.read_graded`` rejects an answer equal to it as an answer, before pairing.)
    """
    bad = {id(p): side for p in read.pairs if (side := self_reference(p)) is not None}
    if not bad:
        return read
    kept = [p for p in read.pairs if id(p) not in bad]
    rejects = [Reject(row=p.row, field="reference", pair_id=p.pair_id, source_file=read.source_file,
                      reason=f"row {p.row}: its reference is its {bad[id(p)]} {SELF_REFERENCE} (map another column to "
                             "reference, or none)")
               for p in read.pairs if id(p) in bad]
    lost_rows = len({p.row for p in read.pairs if id(p) in bad} - {p.row for p in kept})
    return replace(read, pairs=kept, rejects=[*read.rejects, *rejects], rows_ok=read.rows_ok - lost_rows)


def read_scored(uri: str, fmt: str, options: Mapping[str, Any], block: Block | None = None) -> ReadResult:
    """One unit as the score path reads it (its work items and its tables alike): :func:`read_unit`, then
    :func:`without_self_references`."""
    return without_self_references(read_unit(uri, fmt, options, block))


def answer_work(uri: str, block: Block | None, *, fmt: str,
                options: Mapping[str, Any]) -> tuple[list[AnswerItem], list[list[str]]]:
    """The score job's work in one unit: its unique answers (``explode``) and each one's store ids
    (its answer id).

    Raises:
        InputError: the unit cannot be read.
    """
    items = explode(read_scored(uri, fmt, options, block).pairs)
    return items, [[it.answer_id] for it in items]
