"""Import contracts between the layers, and no machine-specific absolute paths in tracked files.

``rubric/`` is the science and must import without torch, vLLM, Ray or spaCy, so it may import
neither ``models`` nor ``workers``; ``models/`` hosts the backends and may not import ``workers``
(the job runners sit on top of both). No module of the three packages imports, through any chain,
one that imports it back. Rooms meet through their faces only: from ``models/``, ``workers/`` and ``scripts/``
another room is reached through its ``__init__`` (never one of its modules), no room's private module or name is
imported from outside it, and every import in ``scripts/`` and ``tests/`` resolves. The checks read the source with
``ast`` (``tests/reliability/imports.py``), so an import inside a function counts as much as one at the top of a
module.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

from tests.reliability.imports import (cycles, guarded_lines, import_graph, import_statements, imported_modules,
                                       module_name, top_level_names)

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
        v = violations(path.read_text(encoding="utf-8"), package, module_name(path, REPO),
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


#: The packages whose modules form one import graph, edges between them included.
PACKAGES = ("rubric", "models", "workers")


def _package_sources(*packages: str) -> dict[str, tuple[str, bool]]:
    return {module_name(p, REPO): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
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

#: models' rooms, lowest first: a room imports only rooms before it (and only through their faces, which
#: :func:`door_problems` checks for every importer).
MODEL_ROOMS = ("llm", "rubric_backends", "judging", "linkage", "baselines", "attacks")
#: models' top-level modules below every room (any room may import them).
MODEL_BASE = ("manifests", "threads", "model_cache")
#: models' top-level modules above every room: the registries (no room imports them).
MODEL_TOP = ("backends", "scorer_set")


def model_room_problems(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """``module:line what`` for each import in a models room of a later room (upward), of a top-level registry
    module or of a module in no room (past a face or private: :func:`door_problems`)."""
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
        for line, name, _ in targets:
            t = name.split(".")
            if t[0] != "models" or len(t) < 2 or t[1] == parts[1] or t[1] in MODEL_BASE:
                continue
            if t[1] in MODEL_TOP:
                bad.append(f"{mod}:{line} imports the registry module {name}")
            elif t[1] not in MODEL_ROOMS:
                bad.append(f"{mod}:{line} imports {name}, which is in no room")
            elif MODEL_ROOMS.index(t[1]) > own:
                bad.append(f"{mod}:{line} imports {name}, a room above its own")
    return bad


def test_models_rooms_never_import_upward():
    sources = _package_sources("models")
    top = {m.split(".")[1] for m in sources if m.count(".") == 1}
    rooms = {m.split(".")[1] for m in sources if m.count(".") >= 2}
    assert rooms == set(MODEL_ROOMS), f"models/ packages and MODEL_ROOMS differ: {sorted(rooms ^ set(MODEL_ROOMS))}"
    allowed = set(MODEL_BASE) | set(MODEL_TOP) | rooms
    assert top <= allowed, f"models/ modules in no room: {sorted(top - allowed)}"
    bad = model_room_problems(sources)
    assert not bad, "; ".join(bad)


@pytest.mark.parametrize("source, found", [
    ("from models.attacks import build_synonyms", "a room above its own"),
    ("from models.backends import BACKENDS", "the registry module"),
    ("from models.nowhere import x", "in no room"),
])
def test_a_models_room_problem_is_found(source, found):
    [problem] = model_room_problems({"models.linkage.signals": (source, False)})
    assert found in problem


def test_a_models_room_may_import_a_lower_room_and_its_own_modules():
    ok = ("from models.rubric_backends import sentence_encoder\nfrom models.linkage.scorer import LinkageScorer\n"
          "from models.llm import Engine\nfrom models.manifests import x\n")
    assert model_room_problems({"models.linkage.signals": (ok, False)}) == []


@pytest.mark.parametrize("room", MODEL_ROOMS)
def test_each_models_room_has_a_public_face(room):
    import importlib

    face = importlib.import_module(f"models.{room}")
    names = getattr(face, "__all__", None)
    assert names, f"models/{room}/__init__.py declares no __all__"
    assert len(names) == len(set(names)), f"models.{room}.__all__ names something twice"
    missing = [n for n in names if not hasattr(face, n)]
    assert not missing, f"models.{room}.__all__ names what it does not hold: {missing}"


# --- faces are the only doors: from models/, workers/ and scripts/ another room is reached through its face, no
# module takes another room's private module or name, and every import in scripts/ and tests/ resolves -------------

#: The importers the door checks read: every module of these packages, and every script.
DOOR_IMPORTERS = ("models", "workers", "scripts")

_STORAGE = ("workers/storage/ has no face yet: its store per unit (issue 58) landed without one, and its modules are "
            "imported as they are until it gets one")
#: Modules past a face (or private) that another room may still import, each with the reason and what removes it.
PAST_A_FACE: dict[str, str] = {
    "workers.storage.store": _STORAGE,
    "workers.storage.index": _STORAGE,
    "workers.storage.codec": _STORAGE,
    "workers.storage.shards": _STORAGE,
    "models.rubric_backends.cpu_rubrics": "the CPU profile moves into a room of its own (issue 58, another branch); "
                                          "scripts/explore_background.py swaps its row's information and "
                                          "scripts/bench_minilm_int8.py reads its encode batch until then",
    "rubric.html_report._build": "scripts/repro_outdir_safety.py re-scores between the page's two reads by swapping "
                                 "its private summary function: a fault injected on purpose, in a repro, not a door",
}


def package_modules(*packages: str) -> dict[str, frozenset[str] | None]:
    """Dotted name -> the names a package's ``__init__`` (the face) binds, or None for a module, for every module of
    ``packages``."""
    out: dict[str, frozenset[str] | None] = {}
    for m, (text, is_pkg) in _package_sources(*packages).items():
        out[m] = frozenset(top_level_names(text) or ()) if is_pkg else None
    return out


def room_of(name: str, modules: dict[str, frozenset[str] | None]) -> str | None:
    """The room ``name`` is in (``models.llm`` for ``models.llm.engine``); None for a top-level module or package."""
    parts = name.split(".")
    room = ".".join(parts[:2])
    return room if len(parts) >= 2 and modules.get(room) is not None else None


def door_problems(source: str, importer: str, modules: dict[str, frozenset[str] | None], *, is_package: bool = False,
                  allowed: frozenset[str] | dict = frozenset()) -> list[str]:
    """``line: what`` for each import in ``source`` (the module ``importer``) that goes past another room's face (one
    of its modules, not a package's ``__init__``: ``models.llm.vllm_engine``), or that takes another room's private
    module (``rubric.html_report._build``) or private name (``from models.rubric_backends import _hint``).

    Args:
        modules: :func:`package_modules` of the packages whose rooms count.
        allowed: modules past a face that may be imported for now (:data:`PAST_A_FACE`).
    """
    own = room_of(importer, modules)
    bad = []
    for line, name, names, _ in import_statements(source, importer, is_package):
        # from a face, a name it binds is the face's (rubric.preference's function transfer), not the module's
        face = modules.get(name) or frozenset()
        for t in [name] + [f"{name}.{n}" for n in names if f"{name}.{n}" in modules and n not in face]:
            room = room_of(t, modules)
            if room is None or room == own or t not in modules or t in allowed:
                continue
            if any(part.startswith("_") for part in t.split(".")[1:]):
                bad.append(f"{line}: {t} is a private module of {room}")
            elif modules[t] is None:
                bad.append(f"{line}: {t} is past the face {t.rsplit('.', 1)[0]}")
        if room_of(name, modules) not in (None, own):
            bad.extend(f"{line}: {n} is a private name of {name}" for n in names
                       if n.startswith("_") and f"{name}.{n}" not in modules)
    return bad


def _door_sources() -> list[tuple[Path, str]]:
    return [(p, module_name(p, REPO)) for top in DOOR_IMPORTERS for p in sorted((REPO / top).rglob("*.py"))]


def test_other_rooms_are_reached_only_through_their_faces():
    modules = package_modules(*PACKAGES)
    bad = []
    for path, module in _door_sources():
        bad += [f"{path.relative_to(REPO)}:{x}" for x in door_problems(
            path.read_text(encoding="utf-8"), module, modules, is_package=path.name == "__init__.py",
            allowed=PAST_A_FACE)]
    assert not bad, "imports past a face or of another room's private module or name: " + "; ".join(bad)


def test_every_past_a_face_entry_is_still_a_module():
    modules = package_modules(*PACKAGES)
    assert all(modules.get(m, ()) is None for m in PAST_A_FACE), sorted(set(PAST_A_FACE) - set(modules))


#: A synthetic tree for the planted imports below: two rooms, one with a private module.
_TREE = {"models": frozenset(), "models.llm": frozenset({"VLLMEngine"}), "models.llm.vllm_engine": None,
         "models.backends": None, "rubric": frozenset(), "rubric.html_report": frozenset(),
         "rubric.html_report._build": None, "rubric.errors": None, "rubric.preference": frozenset({"transfer"}),
         "rubric.preference.transfer": None, "workers": frozenset(), "workers.cli": frozenset(),
         "workers.cli.tools": None, "workers.jobs": frozenset({"JudgeSettings"}), "workers.jobs.judge": None}


@pytest.mark.parametrize("importer, source, found", [
    ("workers.cli.tools", "from models.llm.vllm_engine import VLLMEngine", "models.llm.vllm_engine is past the face"),
    ("workers.cli.tools", "def f():\n    import models.llm.vllm_engine", "past the face models.llm"),
    ("workers.cli.tools", "from models.llm import vllm_engine", "models.llm.vllm_engine is past the face"),
    ("workers.cli.tools", "import importlib\nimportlib.import_module('workers.jobs.judge')",
     "past the face workers.jobs"),
    ("scripts.bench_x", "from workers.jobs.judge import JudgeSettings", "workers.jobs.judge is past the face"),
    ("scripts.bench_x", "import rubric.html_report._build", "rubric.html_report._build is a private module"),
    ("models.backends", "from rubric.html_report import _build", "a private module of rubric.html_report"),
    ("workers.cli.tools", "from models.llm import _cache", "_cache is a private name of models.llm"),
])
def test_an_import_past_a_face_is_found(importer, source, found):
    [problem] = door_problems(source, importer, _TREE)
    assert found in problem, problem


def test_faces_top_level_modules_and_own_room_pass():
    ok = ("from models.llm import VLLMEngine\nimport models.backends\nfrom rubric.errors import RubricError\n"
          "from workers.jobs import JudgeSettings\nfrom workers.cli.tools import x\nfrom . import tools\n"
          "from models.llm.vllm_engine import y  # noqa\nfrom rubric.preference import transfer\n")
    assert door_problems(ok, "workers.cli.tools", _TREE, allowed={"models.llm.vllm_engine"}) == []
    assert door_problems("from models.llm.vllm_engine import y", "models.llm.engine", _TREE) == []  # its own room


def test_a_planted_file_past_a_face_fails_the_check(tmp_path):
    planted = tmp_path / "scripts" / "bench_planted.py"
    planted.parent.mkdir()
    planted.write_text("from models.rubric_backends.text import load_spacy\n", encoding="utf-8")
    [problem] = door_problems(planted.read_text(encoding="utf-8"), "scripts.bench_planted", package_modules(*PACKAGES))
    assert "models.rubric_backends.text is past the face models.rubric_backends" in problem


#: Top-level names that are this checkout's folders: what they import must exist here, name by name.
OURS = ("rubric", "models", "workers", "scripts", "tests")


def _module_file(name: str, root: Path = REPO) -> Path | None:
    """The file of the dotted module ``name`` under ``root`` (a package's ``__init__``, a namespace folder)."""
    base = root.joinpath(*name.split("."))
    for f in (base.with_suffix(".py"), base / "__init__.py", base):
        if f.exists():
            return f
    return None


def unresolved(source: str, module: str = "", is_package: bool = False, root: Path = REPO,
               script_dir: Path | None = None) -> list[str]:
    """``line: what`` for each import in ``source`` that does not resolve: a module of this checkout (:data:`OURS`)
    that does not exist, a name a module of ours does not define, or another installed package that is not there
    (an import inside ``try: ... except ImportError`` is an optional one and may be missing). A script run as a file
    (``script_dir``: its folder, first on ``sys.path``) may import its siblings by their bare names."""
    import importlib.util

    guarded = guarded_lines(ast.parse(source))
    bad = []
    for line, name, names, bare in import_statements(source, module, is_package):
        top, base = name.split(".")[0], root
        if script_dir is not None and top not in OURS and _module_file(top, script_dir) is not None:
            base = script_dir  # a sibling script: checked as one of ours, from its folder
        elif top not in OURS:
            if line not in guarded and top and importlib.util.find_spec(top) is None:
                bad.append(f"{line}: no module {top!r} is installed")
            continue
        path = _module_file(name, base)
        if path is None:
            bad.append(f"{line}: no module {name}")
            continue
        if not names or path.is_dir():
            continue
        defined = top_level_names(path.read_text(encoding="utf-8"))
        missing = [n for n in names if n != "*" and _module_file(f"{name}.{n}", base) is None
                   and defined is not None and n not in defined]
        bad.extend(f"{line}: {name} has no {n}" for n in missing)
    return bad


def test_every_import_in_scripts_and_tests_resolves():
    bad = []
    for top in ("scripts", "tests"):
        for path in sorted((REPO / top).rglob("*.py")):
            bad += [f"{path.relative_to(REPO)}:{x}" for x in unresolved(
                path.read_text(encoding="utf-8"), module_name(path, REPO), path.name == "__init__.py",
                script_dir=path.parent if top == "scripts" else None)]
    assert not bad, "imports that do not resolve: " + "; ".join(bad)


@pytest.mark.parametrize("source, found", [
    ("from models.llm.engine_cache import build_engine", "no module models.llm.engine_cache"),
    ("def main():\n    from rubric.claims import parse_claims", "no module rubric.claims"),
    ("from rubric.errors import NoSuchError", "rubric.errors has no NoSuchError"),
    ("import no_such_module_of_anyone", "no module 'no_such_module_of_anyone' is installed"),
])
def test_an_import_that_does_not_resolve_is_found(source, found):
    [problem] = unresolved(source, "scripts.planted")
    assert found in problem, problem


def test_a_planted_script_that_does_not_resolve_fails_the_check(tmp_path):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "_common.py").write_text("from rubric.errors import RubricError\nX = 1\n")
    planted = tmp_path / "scripts" / "record.py"
    planted.write_text("from scripts._common import X, Y\nfrom scripts.gone import Z\n"
                       "try:\n    import no_such_module_of_anyone\nexcept ImportError:\n    pass\n")
    assert unresolved(planted.read_text(), "scripts.record", root=tmp_path) == [
        "1: scripts._common has no Y", "2: no module scripts.gone"]
    assert unresolved("from scripts._common import X, RubricError", "scripts.record", root=tmp_path) == []
    # run as a file, a script imports its siblings by their bare names; a missing sibling or name still fails
    siblings = "from _common import X\nfrom _common import W\nimport record_gone\n"
    assert unresolved(siblings, "scripts.record", script_dir=tmp_path / "scripts") == [
        "2: _common has no W", "3: no module 'record_gone' is installed"]
