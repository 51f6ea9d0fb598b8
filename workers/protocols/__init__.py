"""The protocols ``lfqa-rubric judge --protocol NAME`` runs, each one declaration (:class:`ProtocolSpec`).

A protocol is one module that registers one :class:`ProtocolSpec`: its name, its options (a frozen
dataclass, :class:`ProtocolOptions`: the CLI makes one flag per field, with the field's default,
bounds and help, defined there once), how it runs (a job of ``workers.runner``, usually a judge kind,
``workers.jobs.judge.JudgeKind``, with the protocol's page), and its section of the HTML report
(``rubric.html_report.HtmlSection``, looked up by the manifest's ``protocol``). The CLI and the HTML
report loop over :data:`PROTOCOLS`; nothing else names a protocol.

:func:`load_protocols` imports every module of this package and every module registered under the
``lfqa_rubric.protocols`` entry-point group (another package's protocols), once; a test may call
:func:`register_protocol` itself. A protocol's name is a registry key and a CLI value, never a path
(:data:`NAME_RULE`), and its options are checked when it registers (:func:`register_protocol`). Another
package's protocol that is wrong in any way (its import fails or exits, its declaration is refused, a
flag of it clashes with the command line's, :func:`leave_out_clashing`) is left out with one line naming
the package, the entry point and why (:data:`LEFT_OUT`); ours and every command keep working.
``lfqa-rubric protocols`` lists what was loaded and what was left out.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import pkgutil
import re
import types
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rubric.config import ScoringConfig, check_range
from rubric.errors import ConfigError
from rubric.judging import JUDGES
from rubric.registry import Registry

__all__ = ["ProtocolSpec", "ProtocolOptions", "ProtocolRun", "option", "PROTOCOLS", "register_protocol",
           "load_protocols", "html_sections", "ENTRY_POINTS", "NAME_RULE", "option_kind", "option_flag", "LeftOut",
           "LEFT_OUT", "SOURCES", "leave_out_clashing"]

log = logging.getLogger(__name__)

#: The entry-point group another installed package declares its protocol modules under.
ENTRY_POINTS = "lfqa_rubric.protocols"


def option(default: Any = None, *, help: str, low: float | None = None, high: float | None = None,
           choices: Sequence[str] | None = None, metavar: str | None = None) -> Any:
    """A field of a protocol's options: its default, its help line and its bounds (checked by
    :class:`ProtocolOptions`, for the CLI and the Python API alike). A ``list[str]`` field is a
    ``nargs="+"`` flag, a ``bool`` one a switch."""
    meta = {"help": help, "low": low, "high": high, "choices": tuple(choices) if choices else None,
            "metavar": metavar}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class ProtocolOptions:
    """Base of a protocol's options: a frozen dataclass of :func:`option` fields, whose bounds and
    choices are checked here when it is made (a subclass adds checks across fields in
    ``__post_init__``, calling this one first).

    Raises:
        ConfigError: a value outside its bounds or choices.
    """

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            _check_option(f, getattr(self, f.name), option_flag(f.name))


def _check_option(f: dataclasses.Field, value: Any, label: str) -> None:
    """``value`` within field ``f``'s bounds and choices (:func:`option`), named ``label`` in the message.

    Raises:
        ConfigError: "'LABEL' must be ..." (``rubric.config.check_range``) or "LABEL must be one of ...".
    """
    meta = f.metadata
    if value is None or isinstance(value, (bool, list)):
        return
    low, high, choices = meta.get("low"), meta.get("high"), meta.get("choices")
    if choices and value not in choices:
        raise ConfigError(f"{label} must be one of {', '.join(choices)}, got {value!r}")
    if low is not None or high is not None:
        check_range(label, value, low=low, high=high)


@dataclass
class ProtocolRun:
    """What every protocol run is given besides its own options (the judge command's common options).

    Attributes:
        inputs: the command's inputs, as given.
        fmt: ``--format`` (None when not given).
        out: the output folder.
        config: the engine settings.
        judge: how the judge runs (``workers.jobs.judge.JudgeSettings`` keywords: mode, n_votes,
            temperature, seed, max_reasoning_tokens).
        reader_options: the reader options of ``--format`` and the length limits.
        seed: the split, sampling and bootstrap seed.
        n_boot: bootstrap replicates of the report.
        progress: progress bars.
        command: the command line, quoted in the report.
        ray: a ``workers.cluster.pipeline.RayStep`` (its "llm" pool), or None for this process.
        force: write into a folder that is not an lfqa-rubric output.
    """

    inputs: list[str | Path]
    out: str | Path
    config: ScoringConfig
    fmt: str | None = None
    judge: Mapping[str, Any] = field(default_factory=dict)
    reader_options: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    n_boot: int = 1000
    progress: bool = True
    command: str = ""
    ray: Any = None
    force: bool = False


@dataclass(frozen=True)
class ProtocolSpec:
    """One protocol.

    Attributes:
        name: ``--protocol NAME``, and the ``protocol`` its manifest records.
        help: one line for ``--protocol``'s help.
        options: its options (a :class:`ProtocolOptions` subclass).
        run: ``run(protocol_run, options) -> manifest``: the job, into ``protocol_run.out``.
        section: its section of the HTML report (``rubric.html_report.HtmlSection``), or None.
    """

    name: str
    help: str
    options: type[ProtocolOptions]
    run: Callable[[ProtocolRun, ProtocolOptions], dict]
    section: Any = None


#: Every protocol, by name (:func:`load_protocols` fills it).
PROTOCOLS: Registry[ProtocolSpec] = Registry("protocol")

#: What a protocol's name may be: lowercase letters, digits, ``-`` and ``_``, starting with a letter or
#: digit, at most 64 characters (a registry key and a CLI value, never a path).
NAME_RULE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")

#: Protocol name -> where it came from: ``built-in``, or ``PACKAGE (entry point NAME)``.
SOURCES: dict[str, str] = {}


@dataclass(frozen=True)
class LeftOut:
    """Another package's protocol plugin that was left out, and why (one line)."""

    package: str
    entry_point: str
    reason: str

    def line(self) -> str:
        return f"protocol plugin of package {self.package!r}, entry point {self.entry_point}, left out: {self.reason}"


#: The plugins left out, in the order met.
LEFT_OUT: list[LeftOut] = []


def option_kind(hint: Any) -> type:
    """bool, list (of str), int, float or str: how a protocol option field is given on the command line
    (``Optional[X]`` as ``X``).

    Raises:
        ConfigError: any other type.
    """
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            hint = args[0]
    if typing.get_origin(hint) is list and typing.get_args(hint) in ((), (str,)):
        return list
    if hint in (bool, int, float, str):
        return hint
    raise ConfigError(f"a protocol option must be a bool, int, float, str or list[str], not {hint}")


def option_flag(field_name: str) -> str:
    """A protocol option field's command-line flag (``max_questions`` -> ``--max-questions``)."""
    return "--" + field_name.replace("_", "-")


def _option_kinds(spec: ProtocolSpec) -> dict[str, type]:
    """Field name -> :func:`option_kind` of each of ``spec``'s options, every one checked."""
    try:
        hints = typing.get_type_hints(spec.options)
    except Exception as e:  # an annotation naming nothing importable
        raise ConfigError(f"protocol {spec.name!r}: its options' types cannot be read ({type(e).__name__}: {e})") \
            from None
    kinds = {}
    for f in dataclasses.fields(spec.options):
        if not isinstance(f.metadata.get("help"), str):
            raise ConfigError(f"protocol {spec.name!r}: option {f.name!r} is not declared with option(help=...)")
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        try:  # checked here, naming the protocol and its field: the user never gave that flag
            _check_option(f, None if default is dataclasses.MISSING else default, f.name)
        except ConfigError as e:
            raise ConfigError(f"protocol {spec.name!r}: option {f.name!r} has a default outside its own bounds: {e}") \
                from None
        try:
            kinds[f.name] = option_kind(hints.get(f.name))
        except ConfigError as e:
            raise ConfigError(f"protocol {spec.name!r}: option {f.name!r}: {e}") from None
    return kinds


def register_protocol(spec: ProtocolSpec) -> ProtocolSpec:
    """Add ``spec`` to :data:`PROTOCOLS`, checked first: its name (:data:`NAME_RULE`), its options (a
    :class:`ProtocolOptions` dataclass of :func:`option` fields of the types :func:`option_kind` takes;
    an option another protocol declares too must have the same type: they share one flag) and its run.

    Raises:
        ConfigError: any of those, or a name registered twice.
    """
    if not isinstance(spec, ProtocolSpec):
        raise ConfigError(f"a protocol is declared as a ProtocolSpec, not {type(spec).__name__}")
    if not isinstance(spec.name, str) or not NAME_RULE.fullmatch(spec.name):
        raise ConfigError(f"protocol name {spec.name!r} is refused: a name is lowercase letters, digits, '-' and "
                          "'_' (at most 64, starting with a letter or digit); it is a registry key and a command-line "
                          "value, never a path")
    if not (isinstance(spec.options, type) and issubclass(spec.options, ProtocolOptions)
            and dataclasses.is_dataclass(spec.options)):
        raise ConfigError(f"protocol {spec.name!r}: its options must be a dataclass subclassing ProtocolOptions")
    if not isinstance(spec.help, str) or not callable(spec.run):
        raise ConfigError(f"protocol {spec.name!r}: its help must be a str and its run a function")
    kinds = _option_kinds(spec)
    for other in PROTOCOLS:
        theirs = _option_kinds(PROTOCOLS.get(other))
        for name, kind in kinds.items():
            if name in theirs and theirs[name] is not kind:
                raise ConfigError(f"protocol {spec.name!r}: option {option_flag(name)} is a {kind.__name__}, but "
                                  f"protocol {other!r} declares it as a {theirs[name].__name__} (one flag serves both)")
    PROTOCOLS.register(spec.name, spec)
    SOURCES.setdefault(spec.name, "built-in")
    return spec


_loaded = False


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    if isinstance(e, SystemExit):
        return f"it exits at import (SystemExit({e.code!r}))"
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _leave_out(package: str, entry_point: str, reason: str) -> None:
    left = LeftOut(package, entry_point, reason)
    LEFT_OUT.append(left)
    log.warning("%s", left.line())


def _load_plugin(ep) -> None:
    """Import one entry point of :data:`ENTRY_POINTS`; whatever goes wrong leaves its protocols out."""
    dist = getattr(ep, "dist", None)
    package = getattr(dist, "name", None) or "an unknown package"
    where = f"{ep.name} = {ep.value}"
    before = set(PROTOCOLS.names())
    try:
        got = ep.load()
        if isinstance(got, ProtocolSpec) and got.name not in PROTOCOLS:  # an entry point naming a spec
            register_protocol(got)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - another package's import: SystemExit included, ours keeps working
        for name in set(PROTOCOLS.names()) - before:  # what it registered before it failed goes too
            PROTOCOLS.remove(name)
            SOURCES.pop(name, None)
        _leave_out(package, where, _one_line(e))
        return
    for name in set(PROTOCOLS.names()) - before:
        SOURCES[name] = f"{package} (entry point {where})"


def load_protocols() -> Registry[ProtocolSpec]:
    """Import this package's protocol modules and the installed ones (:data:`ENTRY_POINTS`), once; a plugin
    that fails in any way is left out with one line (:data:`LEFT_OUT`)."""
    global _loaded
    if not _loaded:
        _loaded = True
        for m in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{m.name}")
        from importlib.metadata import entry_points

        for ep in entry_points(group=ENTRY_POINTS):
            _load_plugin(ep)
    return PROTOCOLS


# A judge name the registry does not hold may be a protocol's (ours or another package's): the first miss loads
# them. The entry points (the CLI's parser, the Ray stage actor) import this package; the judge job never does.
JUDGES.on_miss(load_protocols)


def leave_out_clashing(taken: Collection[str]) -> Registry[ProtocolSpec]:
    """:func:`load_protocols`, less every plugin protocol whose option flag is one of ``taken`` (the
    command's own flags: ``--out``, ``--n-boot``), each left out with its line.

    Raises:
        ConfigError: a built-in protocol's flag clashes (a bug of ours, never hidden).
    """
    protocols = load_protocols()
    for name in list(protocols):
        clash = sorted(option_flag(f.name) for f in dataclasses.fields(protocols.get(name).options)
                       if option_flag(f.name) in taken)
        if not clash:
            continue
        if SOURCES.get(name, "built-in") == "built-in":
            raise ConfigError(f"protocol {name!r} declares {', '.join(clash)}, a flag the command has already")
        source = SOURCES.pop(name)
        package, _, where = source.partition(" (entry point ")
        protocols.remove(name)
        _leave_out(package, where.rstrip(")"), f"protocol {name!r} declares {', '.join(clash)}, a flag the "
                                               "judge command has already")
    return protocols

def html_sections() -> dict[str, Any]:
    """protocol name -> its HTML section (``rubric.html_report.build_report``'s ``sections``)."""
    protocols = load_protocols()
    return {n: protocols.get(n).section for n in protocols if protocols.get(n).section is not None}
