"""The input-format registry: each ``--format`` name with its reader and the options it takes.

:mod:`rubric.io.readers` registers the formats (``lfqa-hp``, ``lfqa-eval``, ``graded``, ``jsonl``,
``parquet``, ``csv``, ``hf``); :func:`check_options` is the one check of a format name and its options,
used by ``read_input`` and by the block reader alike.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rubric.errors import ConfigError, UnknownNameError
from rubric.registry import Registry

__all__ = ["InputFormat", "INPUT_FORMATS", "register_format", "format_names", "input_format", "check_options"]


@dataclass(frozen=True)
class InputFormat:
    """One input format.

    Attributes:
        name: the ``--format`` name.
        read: ``read(path, **options) -> ReadResult``.
        options: the options ``read`` accepts.
        needs_mapping: the format reads a table whose columns a ``mapping`` names (``--map``).
    """

    name: str
    read: Callable[..., Any]
    options: tuple[str, ...]
    needs_mapping: bool = False


#: ``--format`` name -> :class:`InputFormat`.
INPUT_FORMATS: Registry[InputFormat] = Registry("input format")
_ORDER: list[str] = []  # registration order: the order of --format's choices


def register_format(name: str, read: Callable[..., Any], options: tuple[str, ...] | None = None,
                    needs_mapping: bool = False) -> InputFormat:
    """Register ``read`` as the reader of ``name``; ``options`` default to its keyword parameters.

    Raises:
        ConfigError: ``name`` is already registered.
    """
    if options is None:
        options = tuple(n for n in inspect.signature(read).parameters if n != "path")
    f = INPUT_FORMATS.register(name, InputFormat(name, read, tuple(options), needs_mapping))
    _ORDER.append(name)
    return f


def format_names() -> tuple[str, ...]:
    """Every registered format name, in registration order."""
    return tuple(_ORDER)


def input_format(name: str) -> InputFormat:
    """The format registered as ``name``.

    Raises:
        ConfigError: no such format (lists what exists).
    """
    try:
        return INPUT_FORMATS.get(name)
    except UnknownNameError:
        raise ConfigError(f"unknown input format {name!r}; known: {', '.join(_ORDER)}") from None


def check_options(fmt: str, options: Mapping[str, Any]) -> InputFormat:
    """The format ``fmt``, after checking that its reader takes every option given.

    Raises:
        ConfigError: an unknown format, an option its reader does not take, or a table format
            without a column mapping.
    """
    f = input_format(fmt)
    if f.needs_mapping and "mapping" not in options:
        raise ConfigError(f"format {fmt!r} needs a column mapping (mapping='question=...,answer_a=...,"
                          "answer_b=...[,label=...]')")
    unknown = sorted(set(options) - set(f.options))
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(map(repr, unknown))} for format {fmt!r}; "
                          f"accepted: {', '.join(f.options)}")
    return f
