"""Writing a perturbed copy of an input in its own format: same records, same ids and labels, only
answer texts changed (:func:`rewrite_input`)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING


from rubric.errors import ConfigError, InputError
from rubric.io import PairRecord

if TYPE_CHECKING:
    pass

__all__ = ["rewrite_input", "answer_fields"]


# --- writing the perturbed copy -------------------------------------------------------------------

def answer_fields(fmt: str, mapping: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The record fields holding answer a and answer b in a pair format.

    Raises:
        ConfigError: "graded" (answers are not pair fields), an unknown format, or a table format
            without a mapping.
    """
    if fmt == "lfqa-hp":
        return "answer_1", "answer_2"
    if fmt == "lfqa-eval":
        return "answer_a", "answer_b"
    if fmt in ("jsonl", "parquet", "csv"):
        if not mapping or "answer_a" not in mapping or "answer_b" not in mapping:
            raise ConfigError(f"format {fmt!r} needs the column mapping it was read with")
        return mapping["answer_a"], mapping["answer_b"]
    raise ConfigError(f"format {fmt!r} has no answer fields per record (graded lists are rewritten per answer)")


def _decode(path: Path) -> str:
    # as the readers decode: a BOM is dropped, stray bytes survive as lone surrogates
    return path.read_bytes().decode("utf-8-sig", errors="surrogateescape")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")


def _rewrite_json_records(src: Path, dest: Path, edits: Mapping[int, Mapping[str, str]],
                          add: Mapping[int, Mapping[str, str]]) -> None:
    """Rewrite a JSON list or a JSON Lines file, changing only the edited records' fields.

    A JSON Lines file keeps every other line byte for byte (blank lines, rejected rows, line ends);
    row numbers count non-blank lines, as the readers do.
    """
    text = _decode(src)
    if src.suffix.lower() != ".jsonl":
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None  # a ".json" file holding JSON Lines, which the readers also accept
        if isinstance(data, list):
            for row, fields in edits.items():
                data[row].update(fields)
                for k, v in add.get(row, {}).items():
                    data[row].setdefault(k, v)
            dest.write_bytes(_encode(json.dumps(data, ensure_ascii=False, indent=1)))
            return
    out: list[str] = []
    row = 0
    for line in text.split("\n"):
        body = line[:-1] if line.endswith("\r") else line
        if not body.strip():
            out.append(line)
            continue
        if row in edits:
            rec = json.loads(body.removeprefix("\ufeff"))
            rec.update(edits[row])
            for k, v in add.get(row, {}).items():
                rec.setdefault(k, v)
            body = json.dumps(rec, ensure_ascii=False)
            line = body + ("\r" if line.endswith("\r") else "")
        out.append(line)
        row += 1
    dest.write_bytes(_encode("\n".join(out)))


def _rewrite_parquet(src: Path, dest: Path, edits: Mapping[int, Mapping[str, str]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(src)
    for name in sorted({k for fields in edits.values() for k in fields}):
        values = table.column(name).to_pylist()
        for row, fields in edits.items():
            if name in fields:
                values[row] = fields[name]
        i = table.schema.get_field_index(name)
        table = table.set_column(i, table.schema.field(i), pa.array(values, type=table.schema.field(i).type))
    pq.write_table(table, dest)


def _rewrite_csv(src: Path, dest: Path, edits: Mapping[int, Mapping[str, str]]) -> None:
    text = _decode(src)
    old = csv.field_size_limit()
    csv.field_size_limit(max(old, 2**31 - 1))
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    finally:
        csv.field_size_limit(old)
    header, body = rows[0], rows[1:]
    buf = io.StringIO(newline="")
    writer = csv.writer(buf)
    writer.writerow(header)
    row = 0
    for fields in body:
        if not fields:  # a blank line is not a record
            continue
        if row in edits:
            fields = list(fields)
            for name, value in edits[row].items():
                fields[header.index(name)] = value
        writer.writerow(fields)
        row += 1
    dest.write_bytes(_encode(buf.getvalue()))


_ANSWER_TEXT_FIELDS = ("passage", "answer", "text")  # the graded reader's order


def _rewrite_graded(src: Path, dest: Path, pairs: Sequence[PairRecord], new: Mapping[str, tuple[str, str]]) -> None:
    """Rewrite a graded file: each changed answer is found by its question and its key in the pair id."""
    def hook(items):
        d = dict(items)
        if len(d) != len(items):
            dup = next(k for k, _ in items if sum(1 for x, _ in items if x == k) > 1)
            raise InputError(f"{str(src)!r} repeats the key {dup!r} in one object: a perturbed copy could not "
                             "keep what the reader reads; remove the repeat first")
        return d

    data = json.loads(_decode(src), object_pairs_hook=hook)
    questions = list(data)
    texts: dict[tuple[int, str], str] = {}
    for p in pairs:
        if p.pair_id not in new:
            continue
        _qid, key_x, key_y = p.pair_id.rsplit(":", 2)
        value = data[questions[p.row]]
        for text_now, old in zip(new[p.pair_id], (p.answer_a, p.answer_b)):
            key = next((k for k in (key_x, key_y) if _graded_text(value, k) == old), None)
            if key is None:
                raise InputError(f"pair {p.pair_id}: cannot find its answer in question {p.row} of {str(src)!r}")
            prior = texts.setdefault((p.row, key), text_now)
            if prior != text_now:
                raise ConfigError(f"answer {key} of question {p.row} was given two different perturbed texts")
    for (row, key), text in texts.items():
        value = data[questions[row]]
        if key.startswith("ground"):
            value[key] = text
        else:
            item = (value["doc_list"] if isinstance(value, dict) else value)[int(key)]
            name = next(n for n in _ANSWER_TEXT_FIELDS if item.get(n) is not None)
            item[name] = text
    dest.write_bytes(_encode(json.dumps(data, ensure_ascii=False, indent=1)))


def _graded_text(value, key: str) -> str | None:
    if key.startswith("ground"):
        return value.get(key) if isinstance(value, dict) else None
    items = value["doc_list"] if isinstance(value, dict) else value
    item = items[int(key)]
    return next((item[n] for n in _ANSWER_TEXT_FIELDS if item.get(n) is not None), None)


def rewrite_input(src: str | Path, dest: str | Path, fmt: str, pairs: Sequence[PairRecord],
                  new: Mapping[str, tuple[str, str]], *, mapping: Mapping[str, str] | None = None) -> None:
    """Write a copy of an input file with some pairs' answers replaced, in the same format.

    Everything else is kept: the same records in the same order, every other field, the ids and
    labels. A JSON Lines file keeps its untouched lines byte for byte; a JSON list, graded file,
    Parquet or CSV file is re-serialised with the same content. Pair ids that the reader derived from
    the file name (``<stem>:row<i>``, for records without an id) would change with the name: for the
    lfqa-hp and lfqa-eval formats the copy's edited records then carry the original id in a
    ``pair_id`` field; for the table formats the copy must keep the input's file name (stem).

    Args:
        src: the input file, as read.
        dest: where to write; its extension must be the input's (the readers choose the parser by it).
        fmt: the input format (``rubric.io.readers.FORMATS``).
        pairs: the pairs the reader returned for ``src``.
        new: pair id -> (answer a, answer b) after perturbation, for the pairs that changed.
        mapping: the table formats' column mapping.

    Raises:
        ConfigError: the extension differs, ``dest`` is ``src``, or derived ids cannot be kept.
        InputError: a changed answer cannot be found in the file.
    """
    src, dest = Path(src), Path(dest)
    if src.suffix.lower() != dest.suffix.lower():
        raise ConfigError(f"the perturbed copy must keep the input's extension {src.suffix!r} (the readers choose "
                          f"the parser by it), got {dest.name!r}")
    if dest.resolve() == src.resolve():
        raise ConfigError(f"the perturbed copy would overwrite its input {str(src)!r}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "graded":
        _rewrite_graded(src, dest, pairs, new)
        return
    field_a, field_b = answer_fields(fmt, mapping)
    suffix = src.suffix.lower()
    # the parser each reader uses: lfqa-hp reads Parquet by extension; the table formats by name
    kind = ("parquet" if fmt == "parquet" or (fmt == "lfqa-hp" and suffix == ".parquet")
            else "csv" if fmt == "csv" else "json")
    by_id = {p.pair_id: p for p in pairs}
    edits: dict[int, dict[str, str]] = {}
    for pid, (a, b) in new.items():
        edits[by_id[pid].row] = {field_a: a, field_b: b}
    add: dict[int, dict[str, str]] = {}
    derived = [p for p in pairs if p.pair_id == f"{src.stem}:row{p.row}"]
    if derived and src.stem != dest.stem:
        if kind != "json" or fmt not in ("lfqa-hp", "lfqa-eval"):
            raise ConfigError(f"pair ids of {str(src)!r} come from its file name (its records carry no id): name the "
                              f"copy {src.stem}{src.suffix} (in another folder) to keep them")
        for p in derived:  # the reader takes 'pair_id' before deriving one
            edits.setdefault(p.row, {})
            add[p.row] = {"pair_id": p.pair_id}
    if kind == "parquet":
        _rewrite_parquet(src, dest, edits)
    elif kind == "csv":
        _rewrite_csv(src, dest, edits)
    else:
        _rewrite_json_records(src, dest, edits, add)
