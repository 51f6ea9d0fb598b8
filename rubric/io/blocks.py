"""Blocks: one large file read in parallel pieces, validated exactly as if it were read whole;
:func:`read_hf` reads a Hugging Face dataset as all its blocks."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rubric.config import check_range
from rubric.errors import ConfigError, InputError
from rubric.io.records import PairRecord, Reject
from rubric.io.fields import DEFAULT_MAX_ANSWER_CHARS, DEFAULT_MAX_QUESTION_CHARS, ReadResult, check_max_chars, label_table
from rubric.io.files import _HEAD_BYTES, _check_encoding, _iter_jsonl, check_path, open_parquet
from rubric.io.formats import check_options
from rubric.io.hub import DEFAULT_HF_SPLIT, _hf_builder, _hf_parquet_files, _is_saved_dataset, hf_name, open_hf_dataset
from rubric.io.mapping import check_mapped_columns, check_mapping, parse_mapping
from rubric.io.pairs import _eval_builder, _hp_builder, _read_pairs, _table_builder

__all__ = ["Block", "BLOCK_ROWS", "BLOCK_BYTES", "plan_blocks", "read_block", "read_hf"]

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# Blocks: one large file read in parallel pieces, validated exactly as if it were read whole
# ---------------------------------------------------------------------------------------------

#: Rows per block of a Parquet file or a Hugging Face dataset (whole row groups are kept together).
BLOCK_ROWS: int = 50_000
#: Bytes per block of a JSON Lines file (a block ends at the first line feed after this many bytes).
BLOCK_BYTES: int = 32 * 2**20


@dataclass(frozen=True)
class Block:
    """A contiguous piece of one input, read and validated on its own.

    Attributes:
        index: the block's position in its input (0-based).
        kind: "parquet" (row groups ``[start, stop)`` of ``part``, or of the file itself), "jsonl"
            (bytes ``[start, stop)``, starting at a line start) or "rows" (rows ``[start, stop)`` of a
            Hugging Face dataset).
        start, stop: the bounds, in the unit of ``kind``.
        first_row: the input row of the block's first record: rows, default pair ids and reject
            messages are those of the input read whole.
        n_rows: records in the block (for JSONL: non-blank lines).
        first_line: the 1-based file line of the block's first line (JSONL messages name lines).
        part: for a Parquet-export folder, the file (relative to the folder) the row groups belong to.
    """

    index: int
    kind: str
    start: int
    stop: int
    first_row: int
    n_rows: int
    first_line: int = 1
    part: str = ""

    def bounds(self) -> dict:
        """What identifies the block inside its input (part of its score key)."""
        out = {"kind": self.kind, "start": self.start, "stop": self.stop, "first_row": self.first_row}
        if self.part:
            out["part"] = self.part
        return out

    def to_json(self) -> str:
        return json.dumps(self.__dict__, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Block":
        return cls(**json.loads(text))


def _blockable(p: Path, fmt: str, options: Mapping[str, Any]) -> str | None:
    """The block kind ``fmt`` reads ``p`` with, or None when only a whole-file read gives today's records."""
    suffix = p.suffix.lower()
    if fmt == "lfqa-hp":
        return "parquet" if suffix == ".parquet" else ("jsonl" if suffix == ".jsonl" else None)
    if fmt == "lfqa-eval":
        return "jsonl" if suffix == ".jsonl" else None
    if fmt == "parquet":
        return "parquet"
    if fmt == "jsonl":
        return "jsonl" if suffix == ".jsonl" else None
    return None  # graded lists pair answers across a question; CSV records may span lines; .json is one list


def _group_row_groups(md, block_rows: int, first_row: int, index: int, part: str = "") -> list[Block]:
    blocks: list[Block] = []
    start, rows = 0, 0
    row = first_row
    for g in range(md.num_row_groups):
        rows += md.row_group(g).num_rows
        if rows >= block_rows or g == md.num_row_groups - 1:
            blocks.append(Block(index=index + len(blocks), kind="parquet", start=start, stop=g + 1, first_row=row,
                                n_rows=rows, part=part))
            row += rows
            start, rows = g + 1, 0
    return blocks


def _parquet_metadata(p: Path):
    return open_parquet(p, lambda pf: pf.metadata, message=f"cannot read Parquet file {str(p)!r} (truncated or corrupt?)")


def _is_blank(line: bytes) -> bool:
    """A JSONL line that :func:`_iter_jsonl` skips (whitespace only, Unicode whitespace included)."""
    stripped = line.strip()
    if not stripped:
        return True
    if stripped.isascii():
        return False
    return not line.decode("utf-8", errors="surrogateescape").strip()


def _plan_jsonl(p: Path, block_bytes: int) -> list[Block]:
    blocks: list[Block] = []
    pos, row, line = 0, 0, 1
    try:
        with p.open("rb") as f:
            _check_encoding(p, f.read(_HEAD_BYTES))
            f.seek(0)
            # every pass but the last reads at least block_bytes: the file's size bounds the passes
            for _ in range(p.stat().st_size // max(1, block_bytes) + 2):
                data = f.read(block_bytes)
                if not data:
                    break
                if not data.endswith(b"\n"):
                    data += f.readline()  # extend to the end of the line: blocks start at line starts
                body = data[3:] if pos == 0 and data.startswith(b"\xef\xbb\xbf") else data
                lines = body.split(b"\n")
                if lines and lines[-1] == b"":
                    lines.pop()
                n = sum(1 for ln in lines if not _is_blank(ln))
                blocks.append(Block(index=len(blocks), kind="jsonl", start=pos, stop=pos + len(data), first_row=row,
                                    n_rows=n, first_line=line))
                pos += len(data)
                row += n
                line += data.count(b"\n")
            else:
                raise InputError(f"{str(p)!r} grew while it was being cut into blocks; score it once it is complete")
    except OSError as e:
        raise InputError(f"cannot read {str(p)!r}: {e}") from e
    return blocks


def plan_blocks(path: str | Path, fmt: str, *, block_rows: int = BLOCK_ROWS, block_bytes: int = BLOCK_BYTES,
                **options: Any) -> list[Block] | None:
    """Cut one input into blocks that read and validate exactly like the whole input.

    Parquet (``lfqa-hp``, ``parquet``): whole row groups, at least ``block_rows`` rows per block.
    JSON Lines (``.jsonl`` files of ``lfqa-hp``, ``lfqa-eval``, ``jsonl``): byte ranges of about
    ``block_bytes`` that end at a line feed. Hugging Face (``hf``): row ranges of a saved dataset, or
    each Parquet file's row groups of a Parquet-export folder. Other inputs (graded lists, CSV, a
    ``.json`` list) are read whole: their records cannot be cut without reading everything before them.

    Returns:
        The blocks in input order, or None when the input is read whole (one block, or not cuttable).
        An ``hf`` input always gets blocks (it has no whole-file reader of its own).

    Raises:
        InputError: the file's metadata cannot be read (the whole-file read would fail the same way),
            except that a Parquet or JSONL file that cannot be planned returns None, so that the
            whole-file read reports it exactly as before.
    """
    check_range("block_rows", block_rows, low=1)
    check_range("block_bytes", block_bytes, low=1)
    if fmt == "hf":
        split = options.get("split") or DEFAULT_HF_SPLIT
        root = Path(str(path))
        if root.is_dir() and not _is_saved_dataset(root):
            files = _hf_parquet_files(root, split)
            if not files:
                raise InputError(f"{str(path)!r} holds no Parquet files and is not a save_to_disk folder")
            blocks: list[Block] = []
            row = 0
            for f in files:
                md = _parquet_metadata(f)
                if md.num_rows == 0:
                    continue
                got = _group_row_groups(md, block_rows, row, len(blocks), part=f.relative_to(root).as_posix())
                blocks.extend(got)
                row += md.num_rows
            if not blocks:
                raise InputError(f"{str(path)!r} holds no records")
            return blocks
        n = len(open_hf_dataset(path, split))
        if n == 0:
            raise InputError(f"{str(path)!r} holds no records")
        return [Block(index=i, kind="rows", start=s, stop=min(s + block_rows, n), first_row=s,
                      n_rows=min(s + block_rows, n) - s) for i, s in enumerate(range(0, n, block_rows))]
    p = Path(path)
    if not p.is_file():
        return None
    kind = _blockable(p, fmt, options)
    try:
        if kind == "parquet":
            blocks = _group_row_groups(_parquet_metadata(p), block_rows, 0, 0)
        elif kind == "jsonl":
            blocks = _plan_jsonl(p, block_bytes)
        else:
            return None
    except InputError:
        return None  # the whole-file read reports the same file the usual way
    if sum(b.n_rows for b in blocks) == 0 or len(blocks) < 2:
        return None
    return blocks


def _block_records(p: Path, kind: str, block: Block) -> list[Any]:
    if block.kind == "parquet":
        return open_parquet(p, lambda pf: pf.read_row_groups(range(block.start, block.stop)),
                        message=f"cannot read Parquet file {str(p)!r} (truncated or corrupt?)").to_pylist()
    if block.kind == "jsonl":
        try:
            with p.open("rb") as f:
                _check_encoding(p, f.read(_HEAD_BYTES))
                f.seek(block.start)
                data = f.read(block.stop - block.start)
        except OSError as e:
            raise InputError(f"cannot read {str(p)!r}: {e}") from e
        if block.start == 0 and data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        text = data.decode("utf-8", errors="surrogateescape")
        if text.endswith("\n"):
            text = text[:-1]  # the whole-file split sees this line feed as the start of the next line
        return [rec for _, _, rec in _iter_jsonl(text, block.first_line)]
    raise ConfigError(f"block kind {block.kind!r} does not apply to {str(p)!r}")


def read_block(path: str | Path, fmt: str, block: Block, **options: Any) -> ReadResult:
    """Read and validate one block of an input (see :func:`plan_blocks`).

    Rows, default pair ids (``f"{stem}:row{N}"``, ``N`` the input row) and reject messages are
    those of the input read whole. A pair id repeated inside the block is rejected here; one repeated
    across blocks is the job's to reject (:mod:`rubric.tables.assemble`), with the same message.

    Raises:
        ConfigError: ``fmt`` or an option is invalid.
        InputError: the block cannot be read.
    """
    if fmt == "hf":
        check_options("hf", options)
        name = hf_name(path)
        build, id_fields = _hf_builder(name, options)
        if block.kind == "rows":
            ds = open_hf_dataset(path, options.get("split") or DEFAULT_HF_SPLIT)
            records = ds.with_format("arrow")[block.start:block.stop].to_pylist()
        else:
            records = _block_records(Path(str(path)) / block.part, "parquet", block)
        if options.get("mapping"):
            mapping = options["mapping"]
            check_mapped_columns(Path(str(path)), records,
                                 parse_mapping(mapping) if isinstance(mapping, str) else check_mapping(mapping))
        return _read_pairs(Path(f"{name}.hf"), records, build, id_fields, row_offset=block.first_row)
    check_options(fmt, options)
    p = check_path(path)
    kind = _blockable(p, fmt, options)
    if kind is None or kind != block.kind:
        raise ConfigError(f"format {fmt!r} does not read {str(p)!r} in {block.kind} blocks")
    records = _block_records(p, kind, block)
    max_a = options.get("max_answer_chars", DEFAULT_MAX_ANSWER_CHARS)
    max_q = options.get("max_question_chars", DEFAULT_MAX_QUESTION_CHARS)
    check_max_chars(max_a, max_q)
    if fmt == "lfqa-hp":
        build, id_fields = _hp_builder(p, max_a, max_q), ("pair_id", "id")
    elif fmt == "lfqa-eval":
        build, id_fields = _eval_builder(p, max_a, max_q), ("pair_id", "id")
    else:
        mapping = options["mapping"]
        cols = parse_mapping(mapping) if isinstance(mapping, str) else check_mapping(mapping)
        if options.get("label_values") is not None and "label" not in cols:
            raise ConfigError("'label_values' (--labels) needs a label column in the mapping (label=COLUMN)")
        build, id_fields = _table_builder(p, cols, label_table(options.get("label_values")), max_a, max_q)
        check_mapped_columns(p, records, cols)
    result = _read_pairs(p, records, build, id_fields, row_offset=block.first_row)
    return result



def read_hf(
    path: str | Path,
    *,
    split: str = DEFAULT_HF_SPLIT,
    mapping: Mapping[str, str] | str | None = None,
    label_values: Mapping[str, str] | None = None,
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS,
) -> ReadResult:
    """Read a Hugging Face dataset whole: a ``save_to_disk`` folder, a Parquet-export folder, or a Hub id.

    Records are validated exactly as :func:`read_lfqa_hp` does (LFQA-HP-1M's field names) unless a
    ``mapping`` names other columns (then as :func:`read_table`). Default pair ids are
    ``f"{name}:row{N}"`` with ``name`` the folder's name or the id's last part. Large datasets are
    read in blocks by the job (:func:`plan_blocks`, :func:`read_block`); this reads every row.

    Raises:
        InputError: the dataset cannot be loaded, has no such split, or holds no records.
        ConfigError: an option is invalid.
    """
    options = {"split": split, "mapping": mapping, "label_values": label_values,
               "max_answer_chars": max_answer_chars, "max_question_chars": max_question_chars}
    blocks = plan_blocks(path, "hf", block_rows=2**62, **options)
    if blocks is None:  # pragma: no cover - plan_blocks always plans an hf input
        raise InputError(f"cannot plan {str(path)!r}")
    results = [read_block(path, "hf", b, **options) for b in blocks]
    if not any(r.rows_in for r in results):
        raise InputError(f"{str(path)!r} holds no records")
    pairs = [p for r in results for p in r.pairs]
    rejects = [j for r in results for j in r.rejects]
    # a pair id repeated across files of a Parquet export: rejected as inside one file
    first: dict[str, int] = {}
    kept: list[PairRecord] = []
    for pr in pairs:
        if pr.pair_id in first:
            rejects.append(Reject(row=pr.row, field="pair_id", pair_id=pr.pair_id, source_file=str(path),
                                  reason=f"row {pr.row}: duplicate pair_id {pr.pair_id!r} (first seen at row "
                                         f"{first[pr.pair_id]})"))
            continue
        first[pr.pair_id] = pr.row
        kept.append(pr)
    rejects.sort(key=lambda j: (j.row if j.row is not None else -1))
    return ReadResult(pairs=kept, rejects=rejects, rows_in=sum(r.rows_in for r in results),
                      source_file=str(path), rows_ok=len(kept))


