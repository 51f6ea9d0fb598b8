"""Records as JSON text and back, read from the record's dataclass: what carries a job's work items to Ray.

:func:`record_json` writes a dataclass instance's fields; :func:`record_from_json` rebuilds it from
the class's own type hints (tuples, nested records, optional fields), so a new kind of item needs no
codec of its own, and a field the class does not declare is refused rather than dropped.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from functools import cache
from typing import Any, TypeVar

from rubric.errors import ConfigError

__all__ = ["record_json", "record_from_json"]

T = TypeVar("T")


def record_json(record: Any) -> str:
    """A dataclass record as JSON text (exact round trip with :func:`record_from_json`)."""
    return json.dumps(dataclasses.asdict(record), ensure_ascii=False)


def record_from_json(cls: type[T], text: str) -> T:
    """The ``cls`` record of :func:`record_json`'s text.

    Raises:
        ConfigError: the text is not an object of ``cls``'s fields.
    """
    data = json.loads(text)
    return _build(cls, data)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _build(cls: type, data: Any) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{cls.__name__} record JSON must be an object, got {type(data).__name__}")
    hints = _hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"{cls.__name__} record JSON has unknown fields {sorted(unknown)}")
    return cls(**{k: _value(hints[k], v) for k, v in data.items()})


def _value(hint: Any, value: Any) -> Any:
    """``value`` (as JSON gave it) in the shape ``hint`` declares: lists back to tuples, objects to records."""
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _value(options[0], value) if len(options) == 1 else value
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], v) for v in value)
        return tuple(_value(a, v) for a, v in zip(args, value)) if args else tuple(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _build(hint, value)
    return value
