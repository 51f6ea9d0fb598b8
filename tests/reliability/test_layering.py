"""Import contracts between the layers, and no machine-specific absolute paths in tracked files.

``rubric/`` is the science and must import without torch, vLLM, Ray or spaCy, so it may import
neither ``models`` nor ``workers``; ``models/`` hosts the backends and may not import ``workers``
(the job runners sit on top of both). No module of the three packages imports, through any chain,
one that imports it back. The checks read the source with ``ast``, so an import inside a function
counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: package -> top-level packages it must not import.
FORBIDDEN: dict[str, frozenset[str]] = {
    "rubric": frozenset({"models", "workers"}),
    "models": frozenset({"workers"}),
}

# Built from pieces so that this file does not contain what it looks for.
MACHINE_DIRS = ("work", "root", "home", "Users")
# An absolute path starts the path: "a/work/b" (relative) and "~/work" (home-relative) are fine.
_MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:" + "|".join(MACHINE_DIRS) + r")/")

#: (tracked file, path) pairs that name a path on another machine on purpose, with the reason.
ALLOWED_PATHS: dict[tuple[str, str], str] = {
    # The GPU cluster's head node, whose login user ray_cluster.yaml sets (ssh_user: ubuntu):
    # the job writes there and `ray rsync-down` fetches it. Not a path on any developer's machine.
    ("docs/ray.md", "/" + "home/ubuntu/out/"): "the Ray cluster head's home directory",
}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, module: str = "", is_package: bool = False) -> list[tuple[int, str]]:
    """Every module a source file imports, as ``(line, absolute dotted name)``.

    Covers ``import x``, ``import x.y as z``, ``from x import y``, ``from x.y import z``, relative
    imports (resolved against ``module``), imports nested in functions or ``if`` blocks, and
    ``importlib.import_module("x")`` / ``__import__("x")`` with a literal name.

    Args:
        source: the file's text.
        module: the file's dotted module name, to resolve relative imports.
        is_package: the file is a package's ``__init__.py``.
    """
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if module else []
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                name = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:  # from . import x: x may be a module
                    out.extend((node.lineno, f"{name}.{a.name}" if name else a.name) for a in node.names)
                    continue
            else:
                name = node.module or ""
            out.append((node.lineno, name))
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            f = node.func
            called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if called in ("import_module", "__import__"):
                out.append((node.lineno, node.args[0].value))
    return out


def violations(source: str, package: str, module: str = "", is_package: bool = False) -> list[str]:
    """``line: name`` of each import in ``source`` that ``package``'s contract forbids."""
    banned = FORBIDDEN[package]
    return [f"{line}: {name}" for line, name in imported_modules(source, module, is_package)
            if name.split(".")[0] in banned]


def _sources(package: str) -> list[Path]:
    return sorted((REPO / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layer_imports(package):
    files = _sources(package)
    assert files, f"no Python files under {package}/"
    bad = []
    for path in files:
        v = violations(path.read_text(encoding="utf-8"), package, _module_name(path, REPO),
                       path.name == "__init__.py")
        bad.extend(f"{path.relative_to(REPO)}:{x}" for x in v)
    assert not bad, f"{package}/ must not import {sorted(FORBIDDEN[package])}: " + "; ".join(bad)


@pytest.mark.parametrize("source", [
    "import models",
    "import models.llm.engine as e",
    "from models import backends",
    "from models.llm.scorer import build_engine",
    "import os, workers.local",
    "def f():\n    from workers.cli import main\n    return main",
    "if True:\n    import workers",
    "class A:\n    def m(self):\n        import models.rubric_backends.text",
    "import importlib\nimportlib.import_module('models.backends')",
    "__import__('workers.local')",
    "try:\n    from models.rubric_backends.text import load_spacy\nexcept ImportError:\n    pass",
])
def test_forbidden_import_is_caught(source):
    assert violations(source, "rubric"), source


@pytest.mark.parametrize("source", [
    "import rubric.scoring.specs\nfrom rubric import errors",
    "import modelsx\nfrom my_models import x\nimport workers_helper",
    "x = 'import models'  # a string, not an import",
    "from . import errors\nfrom .specs import RUBRICS",
])
def test_allowed_imports_pass(source):
    assert violations(source, "rubric", "rubric.io.readers") == []


def test_relative_imports_are_resolved():
    # Inside a top-level package a relative import stays inside it: rubric's ".." is still rubric.
    assert imported_modules("from .. import models", "rubric.sub.mod") == [(1, "rubric.models")]
    assert imported_modules("from ..specs import X", "rubric.sub", is_package=True) == [(1, "rubric.specs")]
    assert imported_modules("from . import scorer", "models.llm.engine") == [(1, "models.llm.scorer")]
    assert violations("from .. import models", "rubric", "rubric.sub.mod") == []


def test_models_may_import_rubric_but_not_workers():
    assert violations("from rubric.errors import RubricError", "models") == []
    assert violations("from workers.cluster.actors import X", "models") == ["1: workers.cluster.actors"]


def _tracked_text_files() -> list[Path]:
    try:
        names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True,
                               timeout=60).stdout.decode("utf-8").split("\0")
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"not a git checkout ({e})")
    out = []
    for n in filter(None, names):
        p = REPO / n
        if not p.is_file():  # deleted in the work tree, not yet committed
            continue
        with p.open("rb") as f:
            if b"\0" in f.read(8192):  # binary
                continue
        out.append(p)
    return out


def machine_paths(text: str, allowed: tuple[str, ...] = ()) -> list[tuple[int, str]]:
    """``(line, path start)`` of every machine-specific absolute path in ``text``, except ``allowed`` ones."""
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        for a in allowed:
            line = line.replace(a, "")
        out.extend((i, m.group(0)) for m in _MACHINE_PATH.finditer(line))
    return out


def test_machine_paths_are_found():
    home, work = "/" + "home/", "/" + "work/"
    assert machine_paths("a\n" + "data = '" + work + "shared/x.json'") == [(2, work)]
    assert machine_paths("--out " + home + "me/x") == [(1, home)]
    assert machine_paths("url file://" + home + "me") == [(1, home)]
    assert machine_paths("relative/work/data, ~/work/x and ./root/y") == []
    assert machine_paths(home + "ubuntu/out/x " + home + "me", allowed=(home + "ubuntu/out/",)) == [(1, home)]


def test_no_absolute_machine_paths_in_tracked_files():
    files = _tracked_text_files()
    assert any(p.name == "pyproject.toml" for p in files)
    bad = []
    for p in files:
        rel = p.relative_to(REPO).as_posix()
        allowed = tuple(path for (f, path) in ALLOWED_PATHS if f == rel)
        text = p.read_text(encoding="utf-8", errors="replace")
        bad.extend(f"{rel}:{line} ({start})" for line, start in machine_paths(text, allowed))
    assert not bad, "absolute machine paths (make them relative to the checkout or an argument): " + "; ".join(bad)


# --- rubric/ is a graph without cycles, and its rooms meet through their public faces ----------------

#: rubric's sub-packages; each ``__init__`` is the room's public face (``__all__``).
ROOMS = ("io", "scoring", "cpu_profile", "presets", "tables", "preference", "judging", "perturbation", "protocols",
         "analysis", "validity", "html_report")


def _is_module(name: str, modules: set[str]) -> bool:
    return name in modules


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """module -> the modules of ``sources`` its import statements run, function-level ones included.

    Args:
        sources: dotted module name -> (source text, is a package ``__init__``).

    ``from p import x`` runs ``p`` and, when ``p.x`` is a module, ``p.x``; importing ``p.q.m`` also
    runs the packages above it, except those the importer is itself inside (Python has started them).
    """
    modules = set(sources)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, (text, is_pkg) in sources.items():
        tree = ast.parse(text)
        targets: list[str] = [name for _, name in imported_modules(text, mod, is_pkg)]
        for node in ast.walk(tree):  # from p import x, where p.x is a module
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                targets += [f"{node.module}.{a.name}" for a in node.names]
        for t in targets:
            parts = t.split(".")
            for i in range(1, len(parts) + 1):
                target = ".".join(parts[:i])
                if target not in modules or target == mod:
                    continue
                if mod.startswith(target + ".") and i < len(parts):
                    continue  # a package above the importer: already running
                if mod.startswith(target + ".") and sources[target][1]:
                    continue  # the importer's own package, named to reach a sibling
                graph[mod].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected component with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


#: The packages whose modules form one import graph, edges between them included.
PACKAGES = ("rubric", "models", "workers")


def _package_sources(*packages: str) -> dict[str, tuple[str, bool]]:
    return {_module_name(p, REPO): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
            for package in packages for p in _sources(package)}


def _rubric_sources() -> dict[str, tuple[str, bool]]:
    return _package_sources("rubric")


def test_a_function_level_cycle_is_found():
    sources = {
        "rubric": ("", True),
        "rubric.a": ("from rubric.b import x\n", False),
        "rubric.b": ("def f():\n    from rubric.a import y\n    return y\n", False),
        "rubric.c": ("import rubric.a\n", False),
    }
    assert cycles(import_graph(sources)) == [["rubric.a", "rubric.b"]]


def test_a_cycle_through_a_public_face_is_found():
    # rubric.p's __init__ imports p.m; p.m imports q (a package); q's module imports p (the face): a cycle.
    sources = {
        "rubric": ("", True),
        "rubric.p": ("from rubric.p.m import A\n", True),
        "rubric.p.m": ("from rubric.q import B\nA = 1\n", False),
        "rubric.q": ("from rubric.q.n import B\n", True),
        "rubric.q.n": ("def f():\n    from rubric.p import A\n", False),
    }
    assert cycles(import_graph(sources)) == [["rubric.p", "rubric.p.m", "rubric.q", "rubric.q.n"]]
    # a module reaching a sibling through its own package is not a cycle
    sources["rubric.q.n"] = ("from rubric.q.o import C\n", False)
    sources["rubric.q.o"] = ("C = 1\n", False)
    assert cycles(import_graph(sources)) == []


def test_a_cycle_across_packages_is_found():
    # workers' CLI package imports the service, the service (in a function) the CLI's options module, which
    # runs the CLI package's __init__ first: the shape of the workers.cli <-> workers.serve cycle (issue 36).
    sources = {
        "models": ("", True),
        "models.m": ("from workers.jobs.score import J\n", False),
        "workers": ("", True),
        "workers.jobs.score": ("import models.m\n", False),
        "workers.cli": ("from workers.serve import start\n", True),
        "workers.cli.options": ("X = 1\n", False),
        "workers.serve": ("def start():\n    from workers.cli.options import X\n", True),
    }
    assert cycles(import_graph(sources)) == [["models.m", "workers.jobs.score"], ["workers.cli", "workers.serve"]]
    # the options in a module outside the CLI package: no cycle through workers.cli
    sources["workers.serve"] = ("def start():\n    from workers.options import X\n", True)
    sources["workers.options"] = ("X = 1\n", False)
    assert cycles(import_graph(sources)) == [["models.m", "workers.jobs.score"]]


def test_no_import_cycle_in_rubric_models_workers():
    sources = _package_sources(*PACKAGES)
    assert {m.split(".")[0] for m in sources} == set(PACKAGES)
    found = cycles(import_graph(sources))
    assert not found, "import cycles in rubric/, models/, workers/ (function-level imports included): " + "; ".join(
        " <-> ".join(c) for c in found)


def test_rooms_meet_through_their_public_faces():
    """A rubric module imports another room's names from the room (``rubric.scoring``), never from its
    modules (``rubric.scoring.specs``), and never a private name of another room."""
    bad = []
    for mod, (text, is_pkg) in _rubric_sources().items():
        own = mod.split(".")[1] if mod.count(".") >= 1 else ""
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                parts = node.module.split(".")
                if parts[0] != "rubric" or len(parts) < 2 or parts[1] not in ROOMS or parts[1] == own:
                    continue
                if len(parts) > 2:
                    bad.append(f"{mod}:{node.lineno} imports {node.module}")
                bad.extend(f"{mod}:{node.lineno} imports private {a.name} from {node.module}"
                           for a in node.names if a.name.startswith("_"))
            elif isinstance(node, ast.Import):
                bad.extend(f"{mod}:{node.lineno} imports {a.name}" for a in node.names
                           if a.name.split(".")[0] == "rubric" and len(a.name.split(".")) > 2
                           and a.name.split(".")[1] in ROOMS and a.name.split(".")[1] != own)
    assert not bad, "; ".join(bad)


def upward_imports(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """``module:line rubric.<room>`` for each import in a rubric room of a room after its own in :data:`ROOMS`."""
    bad = []
    for mod, (text, _) in sources.items():
        parts = mod.split(".")
        if parts[0] != "rubric" or len(parts) < 2 or parts[1] not in ROOMS:
            continue
        own = ROOMS.index(parts[1])
        for node in ast.walk(ast.parse(text)):
            names = []
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            bad.extend(f"{mod}:{node.lineno} rubric.{t[1]}" for t in (n.split(".") for n in names)
                       if t[0] == "rubric" and len(t) > 1 and t[1] in ROOMS and ROOMS.index(t[1]) > own)
    return sorted(set(bad))


def test_rooms_import_only_rooms_below_them():
    """A room imports only the rooms before it in :data:`ROOMS` (``cpu_profile`` registers into ``scoring``'s
    registry, ``presets`` checks its versions against it: neither is imported by a room below)."""
    bad = upward_imports(_rubric_sources())
    assert not bad, "; ".join(bad)


def test_an_upward_import_is_found():
    assert upward_imports({"rubric.scoring.specs": ("from rubric.cpu_profile import CPU_VERSIONS\n", False)}) == [
        "rubric.scoring.specs:1 rubric.cpu_profile"]
    assert upward_imports({"rubric.scoring.x": ("def f():\n    from rubric import presets\n", False)}) == [
        "rubric.scoring.x:2 rubric.presets"]
    assert upward_imports({"rubric.presets._p": ("from rubric import cpu_profile\n", False)}) == []


@pytest.mark.parametrize("room", ROOMS)
def test_each_room_has_a_public_face(room):
    import importlib

    face = importlib.import_module(f"rubric.{room}")
    names = getattr(face, "__all__", None)
    assert names, f"rubric/{room}/__init__.py declares no __all__"
    assert len(names) == len(set(names)), f"rubric.{room}.__all__ names something twice"
    missing = [n for n in names if not hasattr(face, n)]
    assert not missing, f"rubric.{room}.__all__ names what it does not hold: {missing}"


# --- models/ in rooms: each a package with a public face, imported only through it, never upward ---------

#: models' rooms, lowest first: a room imports only rooms before it, and only through their faces.
#: ``llm`` is the lowest and has no face yet (its modules are imported as they are: ``models.llm.engine``).
MODEL_ROOMS = ("llm", "rubric_backends", "judging", "linkage", "baselines", "attacks")
#: models' top-level modules below every room (any room may import them).
MODEL_BASE = ("manifests", "threads", "model_cache")
#: models' top-level modules above every room: the registries (no room imports them).
MODEL_TOP = ("backends", "scorer_set")


def model_room_problems(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """``module:line what`` for each import in a models room of another room's module (not its face), of a
    private name of another room, of a later room (upward) or of a top-level registry module."""
    bad = []
    for mod, (text, _) in sources.items():
        parts = mod.split(".")
        if parts[0] != "models" or len(parts) < 3 or parts[1] not in MODEL_ROOMS:
            continue
        own = MODEL_ROOMS.index(parts[1])
        targets: list[tuple[int, str, list[str]]] = []
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                targets.append((node.lineno, node.module, [a.name for a in node.names]))
            elif isinstance(node, ast.Import):
                targets += [(node.lineno, a.name, []) for a in node.names]
        for line, name, names in targets:
            t = name.split(".")
            if t[0] != "models" or len(t) < 2 or t[1] == parts[1] or t[1] in MODEL_BASE:
                continue
            if t[1] in MODEL_TOP:
                bad.append(f"{mod}:{line} imports the registry module {name}")
            elif t[1] not in MODEL_ROOMS:
                bad.append(f"{mod}:{line} imports {name}, which is in no room")
            elif MODEL_ROOMS.index(t[1]) > own:
                bad.append(f"{mod}:{line} imports {name}, a room above its own")
            elif len(t) > 2 and t[1] != "llm":
                bad.append(f"{mod}:{line} imports {name}, not the room's face models.{t[1]}")
            bad.extend(f"{mod}:{line} imports private {n} from {name}" for n in names if n.startswith("_"))
    return bad


def test_models_rooms_meet_through_their_faces_and_never_upward():
    sources = _package_sources("models")
    top = {m.split(".")[1] for m in sources if m.count(".") == 1}
    rooms = {m.split(".")[1] for m in sources if m.count(".") >= 2}
    assert rooms == set(MODEL_ROOMS), f"models/ packages and MODEL_ROOMS differ: {sorted(rooms ^ set(MODEL_ROOMS))}"
    allowed = set(MODEL_BASE) | set(MODEL_TOP) | rooms
    assert top <= allowed, f"models/ modules in no room: {sorted(top - allowed)}"
    bad = model_room_problems(sources)
    assert not bad, "; ".join(bad)


@pytest.mark.parametrize("source, found", [
    ("from models.rubric_backends.signals import sentence_encoder", "not the room's face"),
    ("from models.attacks import build_synonyms", "a room above its own"),
    ("from models.backends import BACKENDS", "the registry module"),
    ("from models.rubric_backends import _private", "private _private"),
])
def test_a_models_room_problem_is_found(source, found):
    [problem] = model_room_problems({"models.linkage.signals": (source, False)})
    assert found in problem


def test_a_models_room_may_import_a_lower_face_its_own_modules_and_llm():
    ok = ("from models.rubric_backends import sentence_encoder\nfrom models.linkage.scorer import LinkageScorer\n"
          "from models.llm.engine import Engine\nfrom models.manifests import x\n")
    assert model_room_problems({"models.linkage.signals": (ok, False)}) == []


@pytest.mark.parametrize("room", [r for r in MODEL_ROOMS if r != "llm"])
def test_each_models_room_has_a_public_face(room):
    import importlib

    face = importlib.import_module(f"models.{room}")
    names = getattr(face, "__all__", None)
    assert names, f"models/{room}/__init__.py declares no __all__"
    assert len(names) == len(set(names)), f"models.{room}.__all__ names something twice"
    missing = [n for n in names if not hasattr(face, n)]
    assert not missing, f"models.{room}.__all__ names what it does not hold: {missing}"
