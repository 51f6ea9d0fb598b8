"""The protocols ``lfqa-rubric judge --protocol NAME`` runs, each one declaration (:class:`ProtocolSpec`).

A protocol is one module that registers one :class:`ProtocolSpec`: its name, its options (a frozen
dataclass, :class:`ProtocolOptions`: the CLI makes one flag per field, with the field's default,
bounds and help, defined there once), how it runs (a job of ``workers.runner``, usually a judge kind,
``workers.jobs.judge.JudgeKind``, with the protocol's page), and its section of the HTML report
(``rubric.html_report.HtmlSection``, looked up by the manifest's ``protocol``). The CLI and the HTML
report loop over :data:`PROTOCOLS`; nothing else names a protocol.

:func:`load_protocols` imports every module of this package and every module registered under the
``lfqa_rubric.protocols`` entry-point group (another package's protocols), once; a test may call
:func:`register_protocol` itself.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rubric.config import ScoringConfig, check_range
from rubric.errors import ConfigError
from rubric.registry import Registry

__all__ = ["ProtocolSpec", "ProtocolOptions", "ProtocolRun", "option", "PROTOCOLS", "register_protocol",
           "load_protocols", "html_sections", "ENTRY_POINTS"]

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
            value, meta = getattr(self, f.name), f.metadata
            if value is None or isinstance(value, (bool, list)):
                continue
            low, high, choices = meta.get("low"), meta.get("high"), meta.get("choices")
            flag = "--" + f.name.replace("_", "-")
            if choices and value not in choices:
                raise ConfigError(f"{flag} must be one of {', '.join(choices)}, got {value!r}")
            if low is not None or high is not None:
                check_range(flag, value, low=low, high=high)


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


def register_protocol(spec: ProtocolSpec) -> ProtocolSpec:
    """Add ``spec`` to :data:`PROTOCOLS` (a name registered twice is a ConfigError)."""
    if not (isinstance(spec.options, type) and issubclass(spec.options, ProtocolOptions)):
        raise ConfigError(f"protocol {spec.name!r}: its options must subclass ProtocolOptions")
    PROTOCOLS.register(spec.name, spec)
    return spec


_loaded = False


def load_protocols() -> Registry[ProtocolSpec]:
    """Import this package's protocol modules and the installed ones (:data:`ENTRY_POINTS`), once."""
    global _loaded
    if not _loaded:
        _loaded = True
        for m in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{m.name}")
        from importlib.metadata import entry_points

        for ep in entry_points(group=ENTRY_POINTS):
            try:
                ep.load()
            except Exception as e:  # another package's plugin: say so, keep ours working
                log.warning("protocol plugin %s (%s) could not be loaded: %s", ep.name, ep.value, e)
    return PROTOCOLS


def html_sections() -> dict[str, Any]:
    """protocol name -> its HTML section (``rubric.html_report.build_report``'s ``sections``)."""
    protocols = load_protocols()
    return {n: protocols.get(n).section for n in protocols if protocols.get(n).section is not None}
