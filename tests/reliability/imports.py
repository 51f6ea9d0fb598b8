"""Reading imports from source with ``ast`` (no module is imported): what a file imports, the import graph of a set
of modules and its cycles, the names a module binds at its top level. ``test_layering.py``'s checks are built on
these."""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["module_name", "imported_modules", "import_statements", "import_graph", "cycles", "top_level_names",
           "guarded_lines"]


def module_name(path: Path, root: Path) -> str:
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
    for line, name, names, relative_bare in import_statements(source, module, is_package):
        if relative_bare:  # from . import x: x may be a module
            out.extend((line, f"{name}.{n}" if name else n) for n in names)
        else:
            out.append((line, name))
    return out


def import_statements(source: str, module: str, is_package: bool) -> list[tuple[int, str, tuple[str, ...], bool]]:
    """``(line, absolute module, names taken from it, a bare relative import)`` of each import in ``source``: ``import
    x`` and ``import_module("x")`` take no names; ``from x import a, b`` takes ``a`` and ``b``."""
    out: list[tuple[int, str, tuple[str, ...], bool]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name, (), False) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names = tuple(a.name for a in node.names)
            if node.level:
                base = module.split(".") if module else []
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                out.append((node.lineno, ".".join(base + ([node.module] if node.module else [])), names,
                            node.module is None))
            else:
                out.append((node.lineno, node.module or "", names, False))
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            f = node.func
            called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if called in ("import_module", "__import__"):
                out.append((node.lineno, node.args[0].value, (), False))
    return out


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


def top_level_names(source: str) -> set[str] | None:
    """The names a module binds at its top level (inside ``if``/``try``/``with`` blocks too); None when a star import
    or a module ``__getattr__`` leaves it open."""
    names: set[str] = set()

    def visit(body) -> bool:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                if node.name == "__getattr__":
                    return False
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    if a.name == "*":
                        return False
                    names.add(a.asname or a.name.split(".")[0])
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                blocks = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])]
                blocks += [h.body for h in getattr(node, "handlers", [])]
                if not all(visit(b) for b in blocks):
                    return False
        return True

    return names if visit(ast.parse(source).body) else None


def guarded_lines(tree: ast.AST) -> set[int]:
    """Lines of the imports inside a ``try`` that catches ImportError (an optional dependency)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                h.type is None or any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError",
                                                                            "Exception") for n in ast.walk(h.type))
                for h in node.handlers):
            out.update(n.lineno for b in node.body for n in ast.walk(b) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return out
