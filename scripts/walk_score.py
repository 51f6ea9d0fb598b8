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
  (a hand-off: a reader, the registry, a scorer's ``score_batch``, the assemble step) is a stop, but
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
  2 the other ``workers`` modules (shards, store, outdir, collect, local, ray_pipeline, ...);
  3 ``models/``; 4 ``rubric/``.
- **Entries** of a module: the edges that cross into it from another module; **returns** to a module
  already left: for every module, its entries beyond the first, summed.

Run from the repository root (``PYTHONPATH=$PWD python scripts/walk_score.py``); it prints the counts
and a Markdown table of the stops; ``--json`` prints the counts as JSON instead.
``tests/scripts/test_walk_score.py`` runs :func:`walk_score` and checks the bounds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from importlib import resources
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("rubric", "models", "workers")
_TRANSPARENT_NAMES = {"<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>", "<lambda>"}


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


class Walk:
    """Records the calls (see the module docstring) while installed with :func:`sys.setprofile`."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.edges: Counter[tuple[str, str]] = Counter()
        self.nodes: dict[str, str] = {}  # "module:qualname" -> module, in order of first entry
        self._kind: dict[object, str | None] = {}  # code -> "module:qualname" (project), "" transparent, None library

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
        if event != "call":
            return
        callee = self._classify(frame)
        if not callee or callee == "<module>":
            return
        caller = None
        f = frame.f_back
        while f is not None:
            k = self._classify(f)
            if k == "<module>":
                return  # an import running module code: not the walk
            if k in self.nodes:
                if layer(k.split(":")[0]) >= 3 and layer(callee.split(":")[0]) >= 3:
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
            return
        self.nodes.setdefault(callee, callee.split(":")[0])
        self.edges[(caller, callee)] += 1

    def stops(self) -> list[str]:
        """``score`` and every function entered from another module, in order of first entry."""
        crossed = {b for a, b in self.edges if _mod(a) != _mod(b)}
        return [f for f in self.nodes if f == self.root or f in crossed]

    def counts(self) -> dict:
        stops = self.stops()
        climbs = [(a, b) for a, b in self.edges if layer(_mod(b)) < layer(_mod(a))]
        entries = Counter(_mod(b) for a, b in self.edges if _mod(a) != _mod(b))
        return {"stops": len(stops), "modules": len({_mod(s) for s in stops}), "functions": len(self.nodes),
                "edges": len(self.edges), "climbs": len(climbs),
                "returns": sum(n - 1 for n in entries.values() if n > 1),
                "climb_edges": [f"{a} -> {b}" for a, b in climbs], "entries": dict(entries.most_common())}

    def table(self) -> str:
        """The stops as a Markdown table: layer, and the functions that enter each from another module."""
        callers: dict[str, list[str]] = {}
        for a, b in self.edges:
            if _mod(a) != _mod(b):
                callers.setdefault(b, []).append(a)
        rows = ["| # | stop | layer | entered from |", "|---|---|---|---|"]
        for i, stop in enumerate(self.stops(), 1):
            rows.append(f"| {i} | `{stop}` | {layer(_mod(stop))} | "
                        f"{', '.join(f'`{c}`' for c in callers.get(stop, [])) or '(the CLI)'} |")
        return "\n".join(rows)


def _mod(function: str) -> str:
    return function.split(":", 1)[0]


def walk_score() -> Walk:
    """Run ``score`` on the bundled sample (conciseness, grammar) into a temporary folder, traced."""
    import logging

    from workers.cli.score import add_score, score

    # no log record is made: a handler or filter installed earlier in the process (``workers.logs``)
    # would otherwise show up as a call from wherever the job logs
    logging.disable(logging.CRITICAL)
    data = resources.files("rubric") / "data"
    with resources.as_file(data / "sample_pairs.jsonl") as sample, tempfile.TemporaryDirectory() as tmp:
        p = argparse.ArgumentParser()
        add_score(p)
        args = p.parse_args([str(sample), "--format", "lfqa-hp", "--rubrics", "conciseness,grammar",
                             "--out", str(Path(tmp) / "out"), "--quiet"])
        walk = Walk(f"{score.__module__}:{score.__qualname__}")
        sys.setprofile(walk)
        try:
            score(args)
        finally:
            sys.setprofile(None)
            logging.disable(logging.NOTSET)
    return walk


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = p.parse_args(argv)
    walk = walk_score()
    c = walk.counts()
    if args.json:
        print(json.dumps(c, indent=1))
        return 0
    print(f"stops {c['stops']} in {c['modules']} modules, climbs {c['climbs']}, returns to a module already left "
          f"{c['returns']} (functions entered in all {c['functions']}, call edges {c['edges']})\n")
    print(walk.table())
    print("\nclimbs:\n" + "\n".join(f"- `{e}`" for e in c["climb_edges"]))
    print("\nentries per module: " + ", ".join(f"{m} {n}" for m, n in c["entries"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
