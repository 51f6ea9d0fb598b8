"""The versioned-name registry: a duplicate raises, an unknown name lists what exists, and a loader handed to it by a
layer above runs once, on the first lookup that misses (where plugins load)."""

import pytest

from rubric.errors import ConfigError, UnknownNameError
from rubric.registry import Registry


def test_a_miss_runs_the_loader_once_then_looks_again():
    reg: Registry[int] = Registry("thing")
    reg.register("a.v1", 1)
    calls = []

    def load():
        calls.append(1)
        reg.register("plugin.v1", 2)
        assert reg.get("a.v1") == 1  # a lookup inside the loader does not run it again

    reg.on_miss(load)
    assert reg.get("a.v1") == 1 and calls == []  # a hit loads nothing
    assert "plugin.v1" not in reg and calls == []  # membership loads nothing either
    assert reg.get("plugin.v1") == 2 and calls == [1]
    with pytest.raises(UnknownNameError, match="known: a.v1, plugin.v1"):
        reg.get("other.v1")
    assert calls == [1]  # once, not at every miss


def test_a_loader_that_fails_is_not_run_again():
    reg: Registry[int] = Registry("thing")

    def broken():
        raise ConfigError("a plugin's declaration is refused")

    reg.on_miss(broken)
    with pytest.raises(ConfigError, match="refused"):
        reg.get("x.v1")
    with pytest.raises(UnknownNameError, match=r"known: \(none\)"):
        reg.get("x.v1")
