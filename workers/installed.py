"""Our three top-level packages are ours: the check behind the ``lfqa-rubric`` command (:mod:`workers.entry`).

``rubric``, ``models`` and ``workers`` are the design card's folders and install as top-level packages
under those generic names, so another distribution (or a ``models/`` folder in the directory a user
runs ``python -m workers.cli`` from) can shadow one of them. Then the command would fail far from the
cause (``No module named 'rubric.errors'``) or run someone else's code. :func:`shadowed` says, before
anything imports them, where each name resolves that is not beside this module's ``workers/``, and who
installed it. Standard library only: it runs before ``rubric`` or ``models`` is imported, from the
console script (:func:`workers.entry.main`: one line and exit status 2) and from the top of
``workers/cli/__init__.py`` (an ImportError, for ``python -m workers.cli`` and every other importer).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

__all__ = ["PACKAGES", "DISTRIBUTION", "ShadowedPackageError", "shadowed", "check_installed"]

#: Our top-level packages, and the distribution that installs them.
PACKAGES = ("rubric", "models", "workers")
DISTRIBUTION = "lfqa-rubric"

#: The folder that holds our three packages (a checkout's root, or site-packages).
ROOT = Path(__file__).resolve().parent.parent


class ShadowedPackageError(ImportError):
    """One of our top-level package names resolves to code that is not ours."""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _where(name: str) -> Path | None:
    """The ``__init__.py`` (or the module file, or the namespace folder) that ``import name`` would run."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin and spec.origin not in ("namespace", "built-in", "frozen"):
        return Path(spec.origin).resolve()
    locations = list(spec.submodule_search_locations or ())
    return Path(locations[0]).resolve() if locations else None


def _owners(name: str) -> list[str]:
    """The installed distributions other than ours that declare the top-level name ``name``."""
    import importlib.metadata  # only on the way to an error: it reads every distribution's metadata

    try:
        owners = importlib.metadata.packages_distributions().get(name, [])
    except Exception:  # noqa: BLE001 - a broken distribution's metadata must not hide the real message
        return []
    return sorted({d for d in owners if _canonical(d) != DISTRIBUTION})


def shadowed() -> list[str]:
    """One line for each of :data:`PACKAGES` that would import from elsewhere than :data:`ROOT`; empty if none."""
    out = []
    for name in PACKAGES:
        expected = ROOT / name / "__init__.py"
        found = _where(name)
        if found == expected:
            continue
        others = _owners(name)
        who = (f"installed by {', '.join(repr(d) for d in others)}" if others else
               "no installed distribution declares it: a folder earlier on sys.path, such as the current directory")
        out.append(f"package {name!r} resolves to {found or 'nothing'}, not {DISTRIBUTION}'s {expected.parent} ({who})")
    return out


def check_installed() -> None:
    """Raise :class:`ShadowedPackageError` (one line) when :func:`shadowed` finds anything."""
    problems = shadowed()
    if problems:
        raise ShadowedPackageError("; ".join(problems) + f"; uninstall the other package or run {DISTRIBUTION} "
                                   "from another folder")
