"""``rubric``, ``models`` and ``workers`` are generic top-level names: nothing else installed provides them,
they import from this checkout, and the command refuses in one line when something shadows them."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from workers.installed import DISTRIBUTION, PACKAGES, ROOT, shadowed

REPO = Path(__file__).resolve().parents[2]


def top_level_names(dist: importlib.metadata.Distribution) -> set[str]:
    """The top-level import names a distribution installs: its ``top_level.txt`` and its RECORD's files
    (wheels built by flit, hatch, poetry or maturin have no ``top_level.txt``)."""
    names = {line.strip().split("/")[0] for line in (dist.read_text("top_level.txt") or "").splitlines()
             if line.strip()}
    for f in dist.files or ():
        parts = f.parts
        if (not parts or parts[0] == ".." or parts[0] == "__pycache__"
                or parts[0].endswith((".dist-info", ".egg-info", ".data"))):
            continue
        if len(parts) > 1:
            names.add(parts[0])  # a package folder (a namespace portion counts: it merges with ours)
        elif parts[0].endswith((".py", ".so", ".pyd")):
            names.add(parts[0].split(".")[0])  # a module, extension modules included
    return names


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _fake_distribution(root: Path, name: str, record: list[str], top_level: str | None = None) -> Path:
    info = root / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "RECORD").write_text("".join(f"{r},,\n" for r in record))
    if top_level is not None:
        (info / "top_level.txt").write_text(top_level)
    return info


@pytest.mark.parametrize("record,top_level,expected", [
    (["models/__init__.py", "models/x.py", "foo-1.0.dist-info/RECORD"], None, {"models"}),
    (["workers.py", "../../bin/tool", "__pycache__/workers.cpython-311.pyc"], None, {"workers"}),
    (["rubric.cpython-311-x86_64-linux-gnu.so"], None, {"rubric"}),
    (["models/weights.bin"], None, {"models"}),  # a data folder without __init__: a namespace portion
    ([], "rubric\n", {"rubric"}),
    (["foo/__init__.py", "README.md"], "foo\n", {"foo"}),
])
def test_top_level_names_of_a_distribution(tmp_path, record, top_level, expected):
    dist = importlib.metadata.PathDistribution(_fake_distribution(tmp_path, "foo", record, top_level))
    assert top_level_names(dist) == expected


def test_no_other_installed_distribution_provides_our_packages():
    clashes = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"] or "?"
        if _canonical(name) == DISTRIBUTION:
            continue
        found = top_level_names(dist) & set(PACKAGES)
        if found:
            clashes[name] = sorted(found)
    assert not clashes, f"installed distributions that also provide our top-level packages: {clashes}"


def test_our_packages_import_from_this_checkout():
    import models
    import rubric
    import workers

    assert ROOT == REPO and shadowed() == []
    for module in (rubric, models, workers):
        assert Path(module.__file__).resolve() == REPO / module.__name__ / "__init__.py"


def test_the_wheel_holds_exactly_our_three_packages():
    from setuptools import find_packages

    include = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    found = set(find_packages(str(REPO), include=include))
    on_disk = {".".join(p.parent.relative_to(REPO).parts) for name in PACKAGES for p in (REPO / name).rglob("__init__.py")}
    assert found == on_disk and {p.split(".")[0] for p in found} == set(PACKAGES)


def _run(code: str, pythonpath: list[Path], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath))}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("declared", [True, False])
def test_a_shadowing_package_is_refused_in_one_line(tmp_path, declared):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("raise SystemExit('the foreign models package ran')\n")
    if declared:
        _fake_distribution(tmp_path, "foo-models", ["models/__init__.py"], "models\n")
    # the console script's function, with the foreign folder first on the path
    done = _run("from workers.entry import main; raise SystemExit(main(['rubrics']))", [tmp_path, REPO], tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lfqa-rubric: error: package 'models' resolves to "), done.stderr
    assert str(tmp_path / "models" / "__init__.py") in lines[0]
    assert ("installed by 'foo-models'" in lines[0]) == declared
    assert ("the current directory" in lines[0]) != declared
    # python -m workers.cli, or any import of the CLI: an ImportError naming the same before anything else runs
    done = _run("import workers.cli", [tmp_path, REPO], tmp_path)
    assert done.returncode == 1 and "foreign models package ran" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("workers.installed.ShadowedPackageError: package 'models'")
