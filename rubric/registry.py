"""A small registry with versioned names (after spaCy's ``registry`` and lm-eval's ``Registry``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from rubric.errors import ConfigError, UnknownNameError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to objects; a duplicate name raises, an unknown name lists what exists.

    Args:
        kind: what the registry holds, used in error messages ("rubric", "backend").
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str, obj: T) -> T:
        if not name or name != name.strip():
            raise ConfigError(f"{self.kind} name must be a non-empty string without spaces, got {name!r}")
        if name in self._items:
            raise ConfigError(f"{self.kind} {name!r} is already registered")
        self._items[name] = obj
        return obj

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "(none)"
            raise UnknownNameError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def remove(self, name: str) -> T:
        """Take ``name`` out (a plugin a test registered); UnknownNameError when it is not there."""
        obj = self.get(name)
        del self._items[name]
        return obj

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)
