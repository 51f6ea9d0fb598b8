"""README's "Layout" and DEVELOPERS.md's "How the code is split" match the tree.

- Every path either section names in backticks (``rubric/io/``, ``records.py``,
  ``prompts/judge.*.j2``, ``cli/__init__.py``) exists. A name with a top-level folder
  (``rubric/``, ``models/``, ``workers/``, ``scripts/``, ``tests/``, ``docs/``) is taken from the
  repository root; a shorter one must be the end of some path under the folder whose bullet it is in
  (DEVELOPERS.md), or under the packages (README).
- Every package under ``rubric/``, ``models/`` and ``workers/`` is named in both sections.
- DEVELOPERS.md names every module directly inside ``rubric/``, ``models/`` and ``workers/`` in
  that package's bullet (a sub-package may be described as a whole through its public face).
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("rubric", "models", "workers")
TOP = ("rubric", "models", "workers", "scripts", "tests", "docs")
_TICKED = re.compile(r"`([^`\s]+)`")


def section(path: Path, heading: str) -> str:
    """The text under ``heading`` (a ``## `` line) up to the next ``## `` heading."""
    text = path.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def path_names(text: str) -> list[str]:
    """The backticked names in ``text`` that are paths: with a ``/``, or ending in ``.py`` or ``.j2``;
    ``file.py:function`` is the file."""
    out = []
    for name in _TICKED.findall(text):
        name = name.split(":", 1)[0] if ".py:" in name else name
        if ("/" in name or name.endswith((".py", ".j2"))) and "<" not in name and "$" not in name:
            out.append(name)
    return out


def _expand(pattern: str) -> list[str]:
    """``{a,b}`` alternatives expanded (one level), for names like ``prompts/{linkage,arena}.*.j2``."""
    m = re.search(r"\{([^}]*)\}", pattern)
    if not m:
        return [pattern]
    return [pattern[:m.start()] + alt + pattern[m.end():] for alt in m.group(1).split(",")]


def _tree(root: Path) -> list[str]:
    """Every file and folder under ``root`` (relative to the repository, folders with a trailing ``/``),
    caches and hidden entries left out."""
    out = []
    for p in root.rglob("*"):
        rel = p.relative_to(REPO).as_posix()
        if "__pycache__" in rel or any(part.startswith(".") for part in p.relative_to(REPO).parts):
            continue
        out.append(rel + "/" if p.is_dir() else rel)
    return out


def exists(name: str, under: tuple[str, ...] = PACKAGES) -> bool:
    """Whether ``name`` (see :func:`path_names`) is in the tree: from the root when it starts with a
    top-level folder, else as the end of a path under one of ``under``."""
    for pattern in _expand(name):
        if pattern.split("/", 1)[0] in TOP:
            if any(fnmatch.fnmatchcase(p, pattern) for p in _tree(REPO / pattern.split("/", 1)[0])) \
                    or (REPO / pattern).exists():
                return True
            continue
        for root in under:
            if any(fnmatch.fnmatchcase(p, f"*/{pattern}") for p in _tree(REPO / root)):
                return True
    return False


def bullets(text: str) -> dict[str, str]:
    """DEVELOPERS.md's top-level bullets (``- `rubric/` — ...``) by their folder."""
    out: dict[str, str] = {}
    for m in re.finditer(r"^- `(\w+)/`(.*?)(?=^- `|^#|\Z)", text, re.S | re.M):
        out[m.group(1)] = m.group(2)
    return out


def packages() -> list[str]:
    """Every package under rubric/, models/ and workers/, as ``rubric/io/``."""
    return sorted(p.parent.relative_to(REPO).as_posix() + "/" for root in PACKAGES
                  for p in (REPO / root).rglob("__init__.py") if "__pycache__" not in p.parts)


README = section(REPO / "README.md", "Layout")
DEVELOPERS = section(REPO / "DEVELOPERS.md", "How the code is split")


def test_the_parser_finds_names_and_misses():
    text = "- `rubric/` — x: `io/`, `records.py`, `prompts/{judge,linkage}.*.j2`, `nope.py` and `OUT`.\n"
    assert path_names(text) == ["rubric/", "io/", "records.py", "prompts/{judge,linkage}.*.j2", "nope.py"]
    assert bullets(text)["rubric"].startswith(" — x")
    assert exists("rubric/io/") and exists("records.py", ("rubric",)) and exists("prompts/{judge,linkage}.*.j2")
    assert not exists("nope.py") and not exists("rubric/nope/") and not exists("records.py", ("models",))


@pytest.mark.parametrize("doc", ["README", "DEVELOPERS"])
def test_every_named_path_exists(doc):
    if doc == "README":
        missing = [n for n in path_names(README) if not exists(n)]
    else:
        missing = [n for top, text in bullets(DEVELOPERS).items() for n in path_names(text)
                   if not exists(n, (top,))]
        # the prose before the bullets and any subsection after them name paths from the root
        subsections = DEVELOPERS.split("\n### ", 1)[1] if "\n### " in DEVELOPERS else ""
        missing += [n for n in path_names(DEVELOPERS.split("\n- `", 1)[0] + subsections) if not exists(n)]
    assert not missing, f"{doc} names what the tree does not hold: {missing}"


@pytest.mark.parametrize("doc", ["README", "DEVELOPERS"])
def test_every_package_is_described(doc):
    text = README if doc == "README" else DEVELOPERS
    names = set(path_names(text))
    missing = [p for p in packages()
               if p not in names and (p.count("/") == 1 or p.split("/", 1)[1] not in names)]
    assert not missing, f"{doc} does not describe: {missing}"


def test_developers_names_every_module_of_the_flat_packages():
    parts = bullets(DEVELOPERS)
    missing = []
    for root in PACKAGES:
        named = {Path(n).name for n in path_names(parts.get(root, ""))}
        missing += [f"{root}/{p.name}" for p in sorted((REPO / root).glob("*.py"))
                    if p.name != "__init__.py" and p.name not in named]
    assert not missing, f"DEVELOPERS.md's bullets do not name: {missing}"


def test_the_suites_groups_keep_ray_on_one_worker_and_spread_the_golden_chains():
    """tests/conftest.py's xdist groups, read from test ids as the controller sees them."""
    from tests.conftest import RAY_GROUP, RAY_MODULES, pytest_xdist_make_scheduler, test_group
    from tests.golden.golden import CHAINS

    for module in RAY_MODULES:
        assert (REPO / module).is_file(), module
        assert test_group(f"{module}::test_x[a-b]") == RAY_GROUP
    golden = [test_group(f"tests/golden/test_golden.py::test_golden_outputs_are_unchanged[{c}]") for c in CHAINS]
    assert golden.count(RAY_GROUP) == 1 and len(set(golden)) == len(CHAINS)
    assert test_group("tests/rubric/test_specs.py::test_a") == test_group("tests/rubric/test_specs.py::K::test_b")
    assert test_group("tests/rubric/test_specs.py::test_a") != test_group("tests/rubric/scoring/test_rescale.py::test_a")
    pytest.importorskip("xdist")

    class Config:  # what the scheduler reads of pytest's config: `-n 2`
        def getvalue(self, name):
            return {"tx": ["2*popen"]}.get(name)

    sched = pytest_xdist_make_scheduler(Config(), log=None)
    assert sched.numnodes == 2 and sched._split_scope(f"{sorted(RAY_MODULES)[0]}::t") == RAY_GROUP
