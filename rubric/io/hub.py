"""Hugging Face datasets (``--format hf``): a ``save_to_disk`` folder, a Parquet export, or a Hub id."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rubric.errors import ConfigError, InputError
from rubric.io.records import PairRecord
from rubric.io.fields import DEFAULT_MAX_ANSWER_CHARS, DEFAULT_MAX_QUESTION_CHARS, SPLIT_VALUES, check_max_chars, label_table
from rubric.io.mapping import check_mapping, parse_mapping
from rubric.io.pairs import _hp_builder, _table_builder

__all__ = ["DEFAULT_HF_SPLIT", "HF_OPTIONS", "hf_name", "open_hf_dataset", "hf_files"]

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# Hugging Face datasets (--format hf)
# ---------------------------------------------------------------------------------------------

#: Split read from a Hugging Face dataset when none is named.
DEFAULT_HF_SPLIT = "train"
HF_OPTIONS = ("split", "mapping", "label_values", "max_answer_chars", "max_question_chars")


def hf_name(source: str | Path) -> str:
    """A Hugging Face input's short name: the folder's name, or the last part of a Hub id ("org/name")."""
    return Path(str(source).rstrip("/")).name


def _hf_parquet_files(root: Path, split: str) -> list[Path]:
    """The Parquet files of one split of a Parquet-export folder, in name order.

    The Hub's exports are laid out as ``<config>/<split>/NNNN.parquet`` or ``data/<split>-NNNNN-of-NNNNN.parquet``;
    files whose path names the split are taken, and a folder whose paths name no split at all is one split.
    """
    files = sorted(f for f in root.rglob("*.parquet") if f.is_file())
    names = {f: f.relative_to(root).as_posix() for f in files}
    of_split = [f for f in files if split in re.split(r"[/_.-]", names[f])
                or any(part == split for part in names[f].split("/"))]
    if of_split:
        return of_split
    known = {s for f in files for s in re.split(r"[/_.-]", names[f]) if s in SPLIT_VALUES}
    if known:
        raise InputError(f"{str(root)!r} has no Parquet files of split {split!r} (its files name: "
                         f"{', '.join(sorted(known))}); choose one with split=...")
    return files


def _is_saved_dataset(root: Path) -> bool:
    return (root / "dataset_dict.json").is_file() or (root / "state.json").is_file()


def open_hf_dataset(source: str | Path, split: str = DEFAULT_HF_SPLIT):
    """A ``datasets.Dataset`` (memory-mapped Arrow, not loaded into memory) for a ``save_to_disk`` folder or a Hub id.

    Raises:
        InputError: the folder is not a saved dataset, the split does not exist, or the id cannot be loaded.
    """
    try:
        import datasets
    except ImportError as e:
        raise InputError(f"--format hf needs the datasets package (pip install 'datasets>=5.2,<6'): {e}") from e
    root = Path(str(source))
    try:
        if root.is_dir():
            ds = datasets.load_from_disk(str(root))
        else:  # a Hub id: downloaded once into the Hugging Face cache, then memory-mapped from there
            ds = datasets.load_dataset(str(source), split=split)
    except (OSError, ValueError, FileNotFoundError) as e:
        raise InputError(f"cannot load Hugging Face dataset {str(source)!r}: {e}") from e
    if isinstance(ds, datasets.DatasetDict):
        if split not in ds:
            raise InputError(f"Hugging Face dataset {str(source)!r} has no split {split!r} (splits: "
                             f"{', '.join(ds)}); choose one with split=...")
        ds = ds[split]
    return ds


def hf_files(source: str | Path, split: str = DEFAULT_HF_SPLIT) -> list[Path]:
    """The files that hold a Hugging Face input's rows (for content hashing), in a fixed order."""
    root = Path(str(source))
    if root.is_dir() and not _is_saved_dataset(root):
        return _hf_parquet_files(root, split)
    return sorted({Path(f["filename"]) for f in open_hf_dataset(source, split).cache_files})


def _hf_builder(name: str, options: Mapping[str, Any]) -> tuple[Callable[[Mapping[str, Any], int], PairRecord],
                                                                 tuple[str, ...]]:
    max_a = options.get("max_answer_chars", DEFAULT_MAX_ANSWER_CHARS)
    max_q = options.get("max_question_chars", DEFAULT_MAX_QUESTION_CHARS)
    check_max_chars(max_a, max_q)
    # default pair ids are f"{name}:row{N}": a pseudo path whose stem is the dataset's name
    p = Path(f"{name}.hf")
    if options.get("mapping") is None:
        if options.get("label_values") is not None:
            raise ConfigError("'label_values' (--labels) needs a column mapping (mapping=...) for format 'hf'")
        return _hp_builder(p, max_a, max_q), ("pair_id", "id")
    mapping = options["mapping"]
    cols = parse_mapping(mapping) if isinstance(mapping, str) else check_mapping(mapping)
    if options.get("label_values") is not None and "label" not in cols:
        raise ConfigError("'label_values' (--labels) needs a label column in the mapping (label=COLUMN)")
    return _table_builder(p, cols, label_table(options.get("label_values")), max_a, max_q)


