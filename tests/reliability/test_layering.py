"""Import contracts between the layers, and no machine-specific absolute paths in tracked files.

``rubric/`` is the science and must import without torch, vLLM, Ray or spaCy, so it may import
neither ``models`` nor ``workers``; ``models/`` hosts the backends and may not import ``workers``
(the job runners sit on top of both). The check reads the source with ``ast``, so an import inside
a function counts as much as one at the top of a module.
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
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
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
    "class A:\n    def m(self):\n        import models.text",
    "import importlib\nimportlib.import_module('models.backends')",
    "__import__('workers.local')",
    "try:\n    from models.text import load_spacy\nexcept ImportError:\n    pass",
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
    assert violations("from workers.actors import X", "models") == ["1: workers.actors"]


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
