"""Protocol plugins installed beside ours, each wrong in one way: each is left out with one line naming its package,
its entry point and why, while ``rubrics``, ``protocols``, ``judge --help`` and a judge run of a built-in protocol
work. The plugins are real distributions: a ``*.dist-info`` folder with an ``entry_points.txt`` and their modules,
in a temporary folder put on ``sys.path`` (what ``pip install`` of a tiny package leaves)."""

from __future__ import annotations

import functools
import importlib
import json
import logging
import sys
import textwrap
from dataclasses import dataclass

import pytest

from workers import protocols as protocols_pkg
from workers.cli import main
from workers.protocols import (LEFT_OUT, PROTOCOLS, SOURCES, ProtocolOptions, ProtocolSpec, load_protocols, option,
                               register_protocol)

HEAD = """\
from dataclasses import dataclass
from workers.protocols import ProtocolOptions, ProtocolSpec, option, register_protocol


def run(r, o):
    return {}
"""

#: module name -> (its source after HEAD, the reason its line must hold; None: it loads)
PLUGINS = {
    "plug_good": ("""
@dataclass(frozen=True)
class Opts(ProtocolOptions):
    good_level: int = option(2, low=0, high=9, help="how good")

register_protocol(ProtocolSpec("good-plugin", "a plugin that works", Opts, run))
""", None),
    "plug_dict": ("""
@dataclass(frozen=True)
class Opts(ProtocolOptions):
    table: dict | None = option(None, help="a dict option")

register_protocol(ProtocolSpec("dict-plugin", "an unsupported type", Opts, run))
""", "option 'table': a protocol option must be a bool, int, float, str or list[str]"),
    "plug_retype": ("""
@dataclass(frozen=True)
class Opts(ProtocolOptions):
    max_questions: str = option("all", help="another type for a shared flag")

register_protocol(ProtocolSpec("retype-plugin", "a shared flag of another type", Opts, run))
""", "option --max-questions is a str, but protocol 'arena' declares it as a int"),
    "plug_out": ("""
@dataclass(frozen=True)
class Opts(ProtocolOptions):
    out: str = option("x", help="the CLI's own --out")

register_protocol(ProtocolSpec("out-plugin", "a flag the command has", Opts, run))
""", "protocol 'out-plugin' declares --out, a flag the judge command has already"),
    "plug_nboot": ("""
@dataclass(frozen=True)
class Opts(ProtocolOptions):
    n_boot: int = option(5, help="the CLI's own --n-boot")

register_protocol(ProtocolSpec("nboot-plugin", "a flag the command has", Opts, run))
""", "protocol 'nboot-plugin' declares --n-boot, a flag the judge command has already"),
    "plug_plain": ("""
@dataclass(frozen=True)
class Opts:
    level: int = 1

register_protocol(ProtocolSpec("plain-plugin", "options that are not ProtocolOptions", Opts, run))
""", "its options must be a dataclass subclassing ProtocolOptions"),
    "plug_name": ("""
@dataclass(frozen=True)
class Opts(ProtocolOptions):
    pass

register_protocol(ProtocolSpec("a b/../c", "a name that is a path", Opts, run))
""", "protocol name 'a b/../c' is refused"),
    "plug_default": ("""
@dataclass(frozen=True)
class Opts(ProtocolOptions):
    depth: int = option(-1, low=0, help="a default outside its own bounds")

register_protocol(ProtocolSpec("default-plugin", "a bad default", Opts, run))
""", "protocol 'default-plugin': option 'depth' has a default outside its own bounds: 'depth' must be >= 0, got -1"),
    "plug_exit": ("""
import sys
sys.exit(3)
""", "it exits at import (SystemExit(3))"),
    "plug_base": ("""
class Doom(BaseException):
    pass

@dataclass(frozen=True)
class Opts(ProtocolOptions):
    pass

register_protocol(ProtocolSpec("base-plugin", "registers, then raises a BaseException", Opts, run))
raise Doom("at import")
""", "Doom: at import"),
    "plug_import": ("""
import no_such_module_of_anyone  # noqa: F401
""", "ModuleNotFoundError: No module named 'no_such_module_of_anyone'"),
}


def _install(site, dist: str, entry_points: dict[str, str]) -> None:
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[lfqa_rubric.protocols]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """Two distributions on sys.path (``lfqa-good-plugin``: one plugin; ``lfqa-broken-plugins``: the rest) and a
    fresh load of the protocols; afterwards the registry as it was."""
    site = tmp_path / "site"
    site.mkdir()
    for mod, (src, _) in PLUGINS.items():
        (site / f"{mod}.py").write_text(HEAD + textwrap.dedent(src))
    _install(site, "lfqa-good-plugin", {"good": "plug_good"})
    _install(site, "lfqa-broken-plugins", {m.removeprefix("plug_"): m for m in PLUGINS if m != "plug_good"})
    load_protocols()  # ours first, as they are
    before = set(PROTOCOLS.names())
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    monkeypatch.setattr(protocols_pkg, "_loaded", False)
    LEFT_OUT.clear()
    yield site
    for name in set(PROTOCOLS.names()) - before:
        PROTOCOLS.remove(name)
        SOURCES.pop(name, None)
    LEFT_OUT.clear()
    for mod in PLUGINS:
        sys.modules.pop(mod, None)


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "workers.protocols" and r.levelno == logging.WARNING]


def test_each_broken_plugin_is_left_out_alone_with_its_line(plugins, caplog, capsys):
    caplog.set_level(logging.WARNING, logger="workers.protocols")
    assert main(["protocols"]) == 0
    listing = capsys.readouterr().out
    lines = _lines(caplog)
    broken = {m: why for m, (_, why) in PLUGINS.items() if why is not None}
    assert len(lines) == len(broken), lines
    for mod, why in broken.items():
        (line,) = [x for x in lines if f"entry point {mod.removeprefix('plug_')} = {mod}," in x]
        assert line.startswith("protocol plugin of package 'lfqa-broken-plugins', entry point ") and why in line, line
        assert "\n" not in line and why in listing
    # what loaded: ours and the good plugin, with where each comes from; nothing a broken one registered stays
    assert set(PROTOCOLS.names()) == {"arena", "linkage", "lfqa-e", "good-plugin"}
    assert "| good-plugin | lfqa-good-plugin (entry point good = plug_good) | --good-level | a plugin that works |" \
        in listing
    assert "| arena | built-in |" in listing and f"left out ({len(broken)}):" in listing

    assert main(["rubrics"]) == 0
    assert "| coherence.geval.v1 |" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["judge", "--help"])
    assert e.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "plugin: a plugin that works" in help_text and "--good-level" in help_text and "good-plugin" in help_text
    assert "out-plugin" not in help_text and "--table" not in help_text
    assert len(_lines(caplog)) == len(broken)  # each line once, however many times the parser is built


def test_a_built_in_protocol_runs_beside_broken_plugins(plugins, tmp_path, monkeypatch, caplog):
    from models.judging import ProtocolJudgeScorer
    from rubric.protocols import protocol_judge
    from tests.models.test_protocols import FakeEngine
    from tests.workers.test_protocol_job import _webglm
    from workers.protocols import lfqa_e

    scorer = ProtocolJudgeScorer(FakeEngine(), [protocol_judge(lfqa_e.JUDGE_VERSION)])
    monkeypatch.setattr(lfqa_e, "run_lfqa_e_job", functools.partial(lfqa_e.run_lfqa_e_job, scorer=scorer))
    out = tmp_path / "le"
    assert main(["judge", str(_webglm(tmp_path)), "--format", "graded", "--protocol", "lfqa-e", "--n-boot", "20",
                 "--quiet", "--out", str(out)]) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["protocol"] == "lfqa-e" and m["counts"]["pairs"] == 9
    assert len(_lines(caplog)) == sum(1 for _, why in PLUGINS.values() if why)


@dataclass(frozen=True)
class _NoOptions(ProtocolOptions):
    pass


@pytest.mark.parametrize("name", ["a b", "a/b", "..", "../x", "a/../c", "Arena", "", "-x", "x" * 65, "é"])
def test_a_protocol_name_that_is_no_plain_key_is_refused_at_registration(name):
    with pytest.raises(Exception, match="is refused: a name is lowercase letters, digits"):
        register_protocol(ProtocolSpec(name, "h", _NoOptions, lambda r, o: {}))
    assert name not in PROTOCOLS


@pytest.mark.parametrize("name", ["x", "lfqa-e2", "my_protocol", "0day"])
def test_a_plain_protocol_name_registers(name):
    spec = register_protocol(ProtocolSpec(name, "h", _NoOptions, lambda r, o: {}))
    try:
        assert PROTOCOLS.get(name) is spec
    finally:
        PROTOCOLS.remove(name)
        SOURCES.pop(name, None)


@dataclass(frozen=True)
class _Undeclared(ProtocolOptions):
    level: int = 3  # no option(help=...): the judge's help could not say what it is


def test_an_option_without_its_help_is_refused_at_registration():
    with pytest.raises(Exception, match="option 'level' is not declared with option"):
        register_protocol(ProtocolSpec("undeclared", "h", _Undeclared, lambda r, o: {}))
    assert "undeclared" not in PROTOCOLS


def test_the_option_rule_is_the_one_the_cli_uses():
    @dataclass(frozen=True)
    class Ok(ProtocolOptions):
        names: list[str] = option([], help="names")
        maybe: int | None = option(None, help="n")
        on: bool = option(False, help="switch")

    spec = register_protocol(ProtocolSpec("rule-ok", "h", Ok, lambda r, o: {}))
    try:
        with pytest.raises(SystemExit):
            main(["judge", "--help"])
    finally:
        PROTOCOLS.remove("rule-ok")
        SOURCES.pop("rule-ok", None)
    assert spec.options().names == []
