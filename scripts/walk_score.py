"""The walk of ``score``'s arguments: from ``workers/cli/score.py:score`` down through the job, measured.

Runs a real, small ``score`` in this process (the CPU rubrics ``conciseness,grammar`` on the bundled
``rubric/data/sample_pairs.jsonl``, ``--format lfqa-hp``) under :func:`sys.setprofile` and records the
calls between project functions (``rubric/``, ``models/``, ``workers/``). What counts:

- **A call** is recorded when a project function is entered whose nearest project caller (the closest
  frame below it that is a project function, after skipping library frames and the transparent
  frames below) is a recorded function, or when the callee is ``score`` itself (the root).
  Transparent (neither recorded nor a caller): dunder methods (``__init__``, ``__post_init__``, ...),
  property getters, comprehensions, generator expressions and lambdas (their calls belong to the
  function they are written in). Nothing under a ``<module>`` frame (an import running a module's
  code, with its registrations) is recorded, and logging is off while the walk runs (a log handler or
  filter is not the job's path).
- **The job's own path, not the science**: a call from ``workers/`` into ``models/`` or ``rubric/``
  (a hand-off: a reader, the registry, a scorer set's ``score``, the assemble step) is a stop, but
  what that function calls inside ``models/`` and ``rubric/`` is not followed (the per-item science).
  A call from inside a hand-off back into ``workers/`` (a callback) is recorded, and the walk goes on
  from there.
- **Stops**: ``score`` and every recorded function (``module:qualname``) entered by a call from
  another module: the places a reader jumps to. A module's calls to its own helpers are read where
  they are made; they are counted in **functions** (every recorded function), not as stops.
- **Modules**: the distinct modules of the stops.
- **Edges**: the distinct (caller, callee) pairs of recorded calls.
- **Climbs**: the edges whose callee sits in a higher layer than its caller. Layers, top to bottom:
  0 ``workers/cli``; 1 ``workers/runner`` and the job kinds (``workers/*_job.py``, ``workers/job.py``);
  2 the other ``workers`` modules (shards, store, outdir, collect, ray_pipeline, ...);
  3 ``models/``; 4 ``rubric/``.
- **Entries** of a module: the edges that cross into it from another module; **returns** to a module
  already left: for every module, its entries beyond the first, summed.

**``--follow args``: the walk of score's arguments** (issue 18's definition, calibrated on the code the
issue was filed at, 64162f8; DEVELOPERS.md "The walk of `score`" has the calibration table). Only the
calls that carry score's arguments are followed, by dynamic taint (:class:`Definition`, :data:`ARGS`):

- **Tracked**: the parsed ``args`` and its values (not ``None``, booleans or numbers: a small ``int``
  is one object shared with the whole process); what a followed function returns (or yields); an
  object whose ``__init__`` was given a tracked argument; what a library function given a tracked
  argument returns (``Path(out)``, ``out / "scores"``: values made from the arguments).
- **Followed**: a project function whose caller is followed and one of whose arguments (``self``
  included, and a closure's free variables) is a tracked object or a list, tuple, set or dict holding
  one (shallowly). ``score`` is followed.
- The wide walk's other rules hold: dunders, properties, lambdas and comprehensions are transparent,
  the science below a hand-off into ``models/`` or ``rubric/`` is not followed, a callback from it into
  ``workers/`` is. **Stops** are ``score`` and the followed functions entered from another module
  (file); each is one entry into its module, so **returns** are the stops beyond each module's first.
- Measure it in a fresh process: in a process that scored before, a cached scorer was not built from
  these arguments and the walk stops short of it.

``--set FIELD=VALUE`` changes one choice of the definition (for calibration); ``--repo`` and ``--entry``
walk another checkout (``--repo /tmp/w64 --entry workers.cli:_score`` for 64162f8).

Run from the repository root (``PYTHONPATH=$PWD python scripts/walk_score.py [--follow args]``); it prints
the counts and a Markdown table of the stops; ``--json`` prints the counts as JSON instead.
``tests/scripts/test_walk_score.py`` runs :func:`walk_score` and checks the bounds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, fields
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("rubric", "models", "workers")
_TRANSPARENT_NAMES = {"<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>", "<lambda>"}
_CONTAINERS = (list, tuple, set, frozenset)


@dataclass(frozen=True)
class Definition:
    """What the walk counts. ``Definition()`` is the wide walk; :data:`ARGS` the walk of score's arguments.

    Attributes:
        follow: "all" (every project call below ``score``) or "args" (the calls carrying its arguments).
        science: follow the calls inside ``models/`` and ``rubric/`` below a hand-off.
        self_carries: (args) a method whose ``self`` is tracked carries the arguments.
        strings: (args) the string values of ``args`` (paths, format, rubric names) are tracked.
        construct: (args) an object built with a tracked argument (its ``__init__``) is tracked.
        contains: (args) "containers": a list/tuple/set/dict holding a tracked object carries;
            "attributes": also an object one of whose attributes is tracked; "none": only the object.
        same_module: a followed call inside one module is a stop too (else it is read where it is made).
        count: "functions" (a stop per distinct function), "edges" (per distinct caller -> callee),
            "calls" (per call made).
        through: (args) what a call that is not followed passes on, when given a tracked argument: "none";
            "project": a transparent project function's result (a property, a dunder, a lambda);
            "library": also a library function's result (``Path(out)``, ``out / "scores"``).
        unpack: (args) the items of a tracked list, tuple or dict that a followed function returns are
            tracked too.
        closures: (args) a nested function's free variables count as its arguments (a closure the job
            hands to the assemble step carries what it reads).
    """

    follow: str = "all"
    science: bool = False
    self_carries: bool = True
    strings: bool = True
    construct: bool = True
    contains: str = "containers"
    same_module: bool = False
    count: str = "functions"
    through: str = "none"
    unpack: bool = False
    closures: bool = False


#: The walk of score's arguments, as calibrated on 64162f8 (DEVELOPERS.md, "The walk of `score`").
ARGS = Definition(follow="args", through="library", closures=True)


def module_of(filename: str) -> str | None:
    """The dotted project module of a source file, or None outside ``rubric/``, ``models/``, ``workers/``."""
    try:
        rel = Path(filename).resolve().relative_to(REPO)
    except ValueError:
        return None
    if rel.parts[0] not in PACKAGES or rel.suffix != ".py":
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(module: str) -> int:
    """0 CLI, 1 runner and job kinds, 2 other workers modules, 3 models, 4 rubric (see the module docstring)."""
    if module.startswith("workers.cli"):
        return 0
    last = module.rsplit(".", 1)[-1]
    if module.startswith("workers.") and (last == "runner" or last == "job" or last.endswith("_job")):
        return 1
    if module.startswith("workers"):
        return 2
    return 3 if module.startswith("models") else 4


def _is_property(module: str, qualname: str) -> bool:
    owner, _, name = qualname.rpartition(".")
    if not owner or "<locals>" in owner:
        return False
    obj = sys.modules.get(module)
    for part in owner.split("."):
        obj = getattr(obj, part, None)
    return isinstance(getattr(obj, "__dict__", {}).get(name), property)


def _arguments(frame, free: bool = False) -> list:
    """The values of a frame's arguments (and free variables), at its call event."""
    code = frame.f_code
    n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    local = frame.f_locals
    names = code.co_varnames[:n] + (code.co_freevars if free else ())
    return [local[name] for name in names if name in local]


class Walk:
    """Records the calls (see the module docstring) while installed with :func:`sys.setprofile`."""

    def __init__(self, root: str, definition: Definition = Definition()) -> None:
        self.root = root
        self.d = definition
        self.edges: Counter[tuple[str, str]] = Counter()
        self.nodes: dict[str, str] = {}  # "module:qualname" -> module, in order of first entry
        self._kind: dict[object, str | None] = {}  # code -> "module:qualname" (project), "" transparent, None library
        self._tracked: dict[int, object] = {}  # id -> object (kept alive, so an id is not reused)
        self._followed: set[int] = set()  # ids of the live frames of followed functions (--follow args)
        self._passing: set[int] = set()  # ids of the live frames that pass the taint on (Definition.through)

    # -- taint (--follow args) --------------------------------------------------------------------------
    def track(self, value, unpack: bool = False) -> None:
        if unpack and type(value) in (list, tuple, dict):
            for v in (*value.keys(), *value.values()) if isinstance(value, dict) else value:
                self.track(v)
        if value is None or isinstance(value, (bool, int, float)):
            return
        if isinstance(value, str) and not self.d.strings:
            return
        self._tracked[id(value)] = value

    def _is_tracked(self, value) -> bool:
        return id(value) in self._tracked and self._tracked[id(value)] is value

    def carries(self, value) -> bool:
        if self._is_tracked(value):
            return True
        if self.d.contains == "none":
            return False
        kind = type(value)  # exactly the built-in containers: a subclass may warn or compute when iterated
        if kind is dict:
            return any(self._is_tracked(v) for v in (*value.keys(), *value.values()))
        if kind in _CONTAINERS:
            return any(self._is_tracked(v) for v in value)
        if self.d.contains == "attributes" and not isinstance(value, type):
            try:  # an object may compute or refuse ``__dict__`` (pydantic's mocks raise)
                attrs = object.__getattribute__(value, "__dict__")
            except Exception:
                return False
            return type(attrs) is dict and any(self._is_tracked(v) for v in attrs.values())
        return False

    def _carrying(self, frame) -> bool:
        values = _arguments(frame, self.d.closures)
        if values and frame.f_code.co_varnames[:1] in (("self",), ("cls",)) and not self.d.self_carries:
            values = values[1:]
        return any(self.carries(v) for v in values)

    # -- the profile hook --------------------------------------------------------------------------------
    def _classify(self, frame) -> str | None:
        code = frame.f_code
        got = self._kind.get(code, False)
        if got is not False:
            return got
        module = module_of(code.co_filename)
        name = code.co_qualname
        last = name.rsplit(".", 1)[-1]
        if module is None:
            kind = None
        elif last == "<module>":
            kind = "<module>"
        elif last in _TRANSPARENT_NAMES or (last.startswith("__") and last.endswith("__")) \
                or _is_property(module, name):
            kind = ""
        else:
            kind = f"{module}:{name}"
        self._kind[code] = kind
        return kind

    def __call__(self, frame, event, arg) -> None:
        if event == "return":
            if id(frame) in self._followed:
                self._followed.discard(id(frame))
                self.track(arg, self.d.unpack)
            elif id(frame) in self._passing:
                self._passing.discard(id(frame))
                self.track(arg)
            elif self.d.construct and self.d.follow == "args" and frame.f_code.co_name == "__init__" \
                    and (self._kind.get(frame.f_code) == "" or self.d.through == "library"
                         and self._kind.get(frame.f_code) is None) and frame.f_code.co_argcount:
                if self._carrying(frame):
                    self.track(frame.f_locals.get(frame.f_code.co_varnames[0]))
            return
        if event != "call":
            return
        callee = self._classify(frame)
        args_mode = self.d.follow == "args"
        if args_mode and (callee is None and self.d.through == "library"
                          or callee == "" and self.d.through in ("project", "library")):
            if frame.f_code.co_name != "__init__" and self._carrying(frame):
                self._passing.add(id(frame))
        if not callee or callee == "<module>":
            return
        caller = None
        f = frame.f_back
        while f is not None:
            k = self._classify(f)
            if k == "<module>":
                return  # an import running module code: not the walk
            on_walk = id(f) in self._followed if args_mode else k in self.nodes
            if on_walk:
                if not self.d.science and layer(k.split(":")[0]) >= 3 and layer(callee.split(":")[0]) >= 3:
                    return  # a hand-off calling into models/ or rubric/: the science, not followed
                caller = k
                break
            if k and not (callee.startswith("workers") and layer(k.split(":")[0]) >= 3):
                return  # the science calling the science, or not under the root
            # else: the science inside a hand-off calls back into workers/: the call belongs to the hand-off
            f = f.f_back
        if caller is None:
            if callee == self.root:
                self.nodes.setdefault(callee, callee.split(":")[0])
                if args_mode:
                    self._followed.add(id(frame))
                    for value in _arguments(frame):
                        self.track(value)
                        for v in vars(value).values() if isinstance(value, argparse.Namespace) else ():
                            self.track(v)
            return
        if args_mode:
            if not self._carrying(frame):
                return
            self._followed.add(id(frame))
        self.nodes.setdefault(callee, callee.split(":")[0])
        self.edges[(caller, callee)] += 1

    # -- the counts --------------------------------------------------------------------------------------
    def _stop_edges(self) -> list[tuple[str, str]]:
        return [(a, b) for a, b in self.edges if self.d.same_module or _mod(a) != _mod(b)]

    def stops(self) -> list[str]:
        """``score`` and every function entered from another module, in order of first entry."""
        crossed = {b for a, b in self._stop_edges()}
        return [f for f in self.nodes if f == self.root or f in crossed]

    def counts(self) -> dict:
        stops = self.stops()
        if self.d.count == "functions":
            n_stops = len(stops)
            entries = Counter(_mod(s) for s in stops)
        else:
            per = (lambda e: 1) if self.d.count == "edges" else (lambda e: self.edges[e])
            entries = Counter({_mod(self.root): 1})
            for e in self._stop_edges():
                entries[_mod(e[1])] += per(e)
            n_stops = sum(entries.values())
        climbs = [(a, b) for a, b in self.edges if layer(_mod(b)) < layer(_mod(a))]
        if self.d.follow == "all":  # the wide walk's entries: distinct edges crossing into a module
            entries = Counter(_mod(b) for a, b in self.edges if _mod(a) != _mod(b))
        return {"stops": n_stops, "modules": len({_mod(s) for s in stops}), "functions": len(self.nodes),
                "edges": len(self.edges), "climbs": len(climbs),
                "returns": sum(n - 1 for n in entries.values() if n > 1),
                "climb_edges": [f"{a} -> {b}" for a, b in climbs], "entries": dict(entries.most_common())}

    def table(self) -> str:
        """The stops as a Markdown table: layer, and the functions that enter each from another module."""
        callers: dict[str, list[str]] = {}
        for a, b in self._stop_edges():
            callers.setdefault(b, []).append(a)
        rows = ["| # | stop | layer | entered from |", "|---|---|---|---|"]
        for i, stop in enumerate(self.stops(), 1):
            rows.append(f"| {i} | `{stop}` | {layer(_mod(stop))} | "
                        f"{', '.join(f'`{c}`' for c in callers.get(stop, [])) or '(the CLI)'} |")
        return "\n".join(rows)


def _mod(function: str) -> str:
    return function.split(":", 1)[0]


def walk_score(definition: Definition = Definition(), *, entry: str | None = None) -> Walk:
    """Run ``score`` on the bundled sample (conciseness, grammar) into a temporary folder, traced.

    Args:
        definition: what the walk counts (default: the wide walk).
        entry: ``module:function`` taking the parsed ``score`` arguments; default the current CLI's.
            The arguments are parsed by ``workers.cli.build_parser()`` of the checkout walked.
    """
    import importlib
    import logging

    from workers.cli import build_parser

    if entry is None:
        from workers.cli.score import score as fn
    else:
        module, _, name = entry.partition(":")
        fn = getattr(importlib.import_module(module), name)
    # no log record is made: a handler or filter installed earlier in the process (``workers.logs``)
    # would otherwise show up as a call from wherever the job logs
    logging.disable(logging.CRITICAL)
    sample = REPO / "rubric" / "data" / "sample_pairs.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        args = build_parser().parse_args(["score", str(sample), "--format", "lfqa-hp", "--rubrics",
                                          "conciseness,grammar", "--out", str(Path(tmp) / "out"), "--quiet"])
        walk = Walk(f"{fn.__module__}:{fn.__qualname__}", definition)
        sys.setprofile(walk)
        try:
            fn(args)
        finally:
            sys.setprofile(None)
            logging.disable(logging.NOTSET)
    return walk


def _flag(text: str):
    return {"true": True, "false": False}.get(text, text)


def main(argv: list[str] | None = None) -> int:
    global REPO
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    p.add_argument("--follow", choices=("all", "args"), default="all",
                   help="all: the wide walk (every project call below score); args: the walk of score's "
                        "arguments, issue 18's definition (calibrated)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="change one field of the definition (scripts.walk_score.Definition), for calibration")
    p.add_argument("--repo", type=Path, default=None, help="walk another checkout (default: this one)")
    p.add_argument("--entry", default=None, help="module:function given the parsed score arguments "
                                                 "(default workers.cli.score:score; 64162f8: workers.cli:_score)")
    args = p.parse_args(argv)
    if args.repo is not None:
        REPO = args.repo.resolve()
        sys.path.insert(0, str(REPO))
    d = ARGS if args.follow == "args" else Definition()
    known = {f.name for f in fields(Definition)}
    for item in args.set:
        name, _, value = item.partition("=")
        if name not in known:
            p.error(f"--set: no field {name!r}; the fields: {', '.join(sorted(known))}")
        d = Definition(**{**d.__dict__, name: _flag(value)})
    walk = walk_score(d, entry=args.entry)
    c = walk.counts()
    if args.json:
        print(json.dumps({"definition": d.__dict__, **c, "stop_list": walk.stops()}, indent=1))
        return 0
    print(f"{d}\nstops {c['stops']} in {c['modules']} modules, climbs {c['climbs']}, returns to a module already "
          f"left {c['returns']} (functions entered in all {c['functions']}, call edges {c['edges']})\n")
    print(walk.table())
    print("\nclimbs:\n" + "\n".join(f"- `{e}`" for e in c["climb_edges"]))
    print("\nentries per module: " + ", ".join(f"{m} {n}" for m, n in c["entries"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
