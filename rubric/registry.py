"""A small registry with versioned names (after spaCy's ``registry`` and lm-eval's ``Registry``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from rubric.errors import ConfigError, UnknownNameError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to objects; a duplicate name raises, an unknown name lists what exists.

    A layer above may hand the registry a loader for names it does not hold yet (:meth:`on_miss`, as
    catalogue's registries read entry points on a miss): the plugins load on the first lookup that misses,
    not at every import.

    Args:
        kind: what the registry holds, used in error messages ("rubric", "backend").
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._loaders: list[Callable[[], object]] = []

    def on_miss(self, loader: Callable[[], object]) -> None:
        """Run ``loader`` once, the first time :meth:`get` misses, then look again (a plugin loader)."""
        self._loaders.append(loader)

    def register(self, name: str, obj: T) -> T:
        if not name or name != name.strip():
            raise ConfigError(f"{self.kind} name must be a non-empty string without spaces, got {name!r}")
        if name in self._items:
            raise ConfigError(f"{self.kind} {name!r} is already registered")
        self._items[name] = obj
        return obj

    def get(self, name: str) -> T:
        if name not in self._items:
            while self._loaders:  # each loader runs once, taken out first: a lookup inside it cannot recurse
                self._loaders.pop(0)()
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
