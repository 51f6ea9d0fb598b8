"""A job's inputs: discovering shard files and planning each once (name, sha256, blocks:
:func:`plan_inputs`). Reading a unit is ``rubric.io.read_unit``'s.

One input file is one shard, in both job paths. A shard is named by its file stem (its folder in
the score store); two shards with one name are refused rather than silently sharing a folder. A
stem that is not a safe folder name (``.`` or ``..`` from ``..json`` or ``...jsonl``, a leading dot,
a separator, a control character, ``@``, which marks blocks) is replaced by :func:`safe_name`.
Inputs may be local files, directories, globs, or pyarrow filesystem URIs (``s3://``, ``gs://``,
``file://``).
"""

from __future__ import annotations

import glob
import hashlib
import logging
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rubric.errors import InputError
from rubric.io import COPY_CHUNK, Block, file_sha256, hf_files, hf_name, is_uri, plan_blocks

__all__ = ["SHARD_EXTENSIONS", "list_shards", "shard_name", "safe_name", "shard_sha256", "shard_blocks", "unit_name",
           "ShardPlan", "plan_shard", "plan_inputs"]

#: File extensions taken as shards when an input is a directory.
SHARD_EXTENSIONS: tuple[str, ...] = (".jsonl", ".json", ".parquet", ".csv")

log = logging.getLogger(__name__)

#: Longest folder name kept as it is (bytes of UTF-8); a longer one is shortened and hashed.
_MAX_NAME_BYTES = 120
_UNSAFE_CHARS = re.compile(r"[/\\@\x00]")


def list_shards(inputs: Sequence[str | Path], fmt: str | None = None) -> list[str]:
    """Expand inputs into shard paths: files, directories (their shard files), globs, or URIs.

    A URI is anything pyarrow's ``FileSystem.from_uri`` understands; a URI naming a directory
    lists its shard files (not recursively). With ``fmt="hf"`` every input is one shard as given:
    a ``save_to_disk`` or Parquet-export folder, or a Hub dataset id.

    Raises:
        InputError: an input matches nothing, or two shards would share a name.
    """
    shards: list[str] = []
    for raw in inputs:
        s = str(raw)
        if fmt == "hf":
            found = [s]
        elif is_uri(s):
            found = _list_uri(s)
        elif Path(s).is_dir():
            found = sorted(str(p) for p in Path(s).iterdir() if p.is_file() and p.suffix.lower() in SHARD_EXTENSIONS)
        elif any(c in s for c in "*?["):
            found = sorted(p for p in glob.glob(s) if Path(p).is_file())
        elif Path(s).is_file():
            found = [s]
        else:
            raise InputError(f"input {s!r} does not exist")
        if not found:
            raise InputError(f"input {s!r} holds no shard files ({', '.join(SHARD_EXTENSIONS)})")
        shards.extend(found)
    names: dict[str, str] = {}
    for sh in shards:
        name = shard_name(sh, fmt)
        if name != _raw_name(sh, fmt):
            log.info("input %r: its name %r is not a safe folder name; its store folder is %r", sh,
                     _raw_name(sh, fmt), name)
        if name in names:
            raise InputError(f"shards {names[name]!r} and {sh!r} would both write to output folder {name!r}; "
                             "rename one")
        names[name] = sh
    return shards


def _list_uri(uri: str) -> list[str]:
    import pyarrow.fs as pafs

    fs, path = pafs.FileSystem.from_uri(uri)
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        raise InputError(f"input {uri!r} does not exist")
    if info.type == pafs.FileType.File:
        return [uri]
    scheme = uri.split("://", 1)[0]
    entries = fs.get_file_info(pafs.FileSelector(path, recursive=False))
    return sorted(f"{scheme}://{e.path}" for e in entries
                  if e.type == pafs.FileType.File and Path(e.path).suffix.lower() in SHARD_EXTENSIONS)


def _unsafe(name: str) -> bool:
    return (not name or name.startswith(".") or _UNSAFE_CHARS.search(name) is not None
            or len(name.encode("utf-8", "surrogateescape")) > _MAX_NAME_BYTES
            or any(unicodedata.category(c).startswith("C") for c in name))


def safe_name(name: str) -> str:
    """``name`` as a folder name that stays inside its parent: unchanged when safe, else made safe.

    Unsafe: empty, a leading dot (``.``, ``..``, hidden files, the job's own temp files), a path
    separator, ``@`` (block folders are ``<name>@<index>``), a control or unassigned character, or
    over 120 bytes. Such a name keeps its safe characters and gets a hash of the whole name, so two
    different names never share a folder (``..`` -> ``shard-<hash>``, ``a\\b`` -> ``a_b-<hash>``).
    """
    if not _unsafe(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()
    kept = "".join("_" if _UNSAFE_CHARS.match(c) or unicodedata.category(c).startswith("C") else c
                   for c in name).lstrip(".")
    kept = kept.encode("utf-8", "surrogateescape")[:_MAX_NAME_BYTES - 20].decode("utf-8", "ignore")
    return f"{kept}-{digest[:12]}" if kept.strip("_") else f"shard-{digest[:16]}"


def shard_name(shard: str, fmt: str | None = None) -> str:
    """A shard's name: its file name without the extension (a Hugging Face input: its folder or id's last part),
    made safe as a folder name (:func:`safe_name`)."""
    return safe_name(_raw_name(shard, fmt))


def _raw_name(shard: str, fmt: str | None) -> str:
    return hf_name(shard) if fmt == "hf" else Path(shard.split("://", 1)[-1]).stem


def unit_name(shard: str, block: Block | None, fmt: str | None = None) -> str:
    """The score-store folder of one unit of work: the shard's name, or ``<name>@<block index>`` for a block."""
    name = shard_name(shard, fmt)
    return name if block is None else f"{name}@{block.index:05d}"


def shard_sha256(shard: str, fmt: str | None = None, options: Mapping[str, Any] | None = None) -> str:
    """SHA-256 of a shard's bytes (streamed), so a file changed at the same path is noticed.

    A Hugging Face input hashes every file that holds its rows (relative name and bytes, in order).

    Raises:
        InputError: the file cannot be read.
    """
    h = hashlib.sha256()

    def feed(f) -> None:
        while chunk := f.read(COPY_CHUNK):
            h.update(chunk)

    try:
        if fmt == "hf":
            root = Path(shard)
            for name in hf_files(shard, (options or {}).get("split") or "train"):
                h.update(str(name.relative_to(root) if root.is_dir() else name.name).encode() + b"\x00")
                with open(name, "rb") as f:
                    feed(f)
        elif is_uri(shard):
            import pyarrow.fs as pafs

            fs, path = pafs.FileSystem.from_uri(shard)
            with fs.open_input_stream(path) as f:
                feed(f)
        else:
            return file_sha256(shard)
    except OSError as e:
        raise InputError(f"cannot read {shard!r}: {e}") from e
    return h.hexdigest()


def shard_blocks(shard: str, fmt: str, options: Mapping[str, Any]) -> list[Block] | None:
    """The blocks one shard is read in (``rubric.io.blocks.plan_blocks``), or None to read it whole.

    A URI shard is read whole (it is copied to a local file first); a Hugging Face input always in blocks.
    """
    if is_uri(shard):
        return None
    return plan_blocks(shard, fmt, **options)


@dataclass(frozen=True)
class ShardPlan:
    """One shard's facts, computed once at planning: its name, sha256, and its units (store folder, block).

    Attributes:
        name: the shard's name (:func:`shard_name`).
        sha: its sha256 (:func:`shard_sha256`).
        units: (store folder, block or None for the whole shard), in order (:func:`unit_name`).
    """

    name: str
    sha: str
    units: tuple[tuple[str, Block | None], ...]


def plan_shard(shard: str, fmt: str | None, options: Mapping[str, Any], *, blocks: bool) -> ShardPlan:
    """A shard's :class:`ShardPlan`; with ``blocks``, a large shard is planned as blocks (:func:`shard_blocks`).

    Raises:
        InputError: the shard cannot be read (a Hugging Face input that cannot be opened included).
    """
    sha = shard_sha256(shard, fmt, options)
    planned = None
    if blocks:
        try:
            planned = shard_blocks(shard, fmt, options)
        except InputError as e:  # a Hugging Face input that cannot be opened: reported like an unreadable file
            raise InputError(f"input {shard!r} cannot be read: {e}") from e
    return ShardPlan(shard_name(shard, fmt), sha,
                     tuple((unit_name(shard, b, fmt), b) for b in (planned or [None])))


def plan_inputs(inputs: str | Path | Sequence[str | Path], fmt: str | None, options: Mapping[str, Any], *,
                blocks: bool) -> dict[str, ShardPlan]:
    """Every shard of ``inputs`` (:func:`list_shards`) with its :class:`ShardPlan`, in job order.

    Raises:
        InputError: an input does not exist or a shard cannot be read.
    """
    shards = list_shards([inputs] if isinstance(inputs, (str, Path)) else list(inputs), fmt)
    return {uri: plan_shard(uri, fmt, options, blocks=blocks) for uri in shards}
