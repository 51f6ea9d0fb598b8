"""Every room's face pins the names it exports (as spaCy pins its registries): a name added to or taken out of an
``__all__`` is an edit of ``faces.json`` in the same commit, so a face grows on purpose, never by accident.

``rubric.scoring`` is pinned as it stands now that the CPU profile (``rubric.cpu_profile``) and the presets
(``rubric.presets``) have rooms of their own (issue 58); the rest of its split, prompts and factuality's claims, is
not done. ``workers.storage`` has no ``__all__`` (its modules are imported as they are until it gets
one: ``tests/reliability/test_layering.py``'s ``PAST_A_FACE``).
"""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = Path(__file__).with_name("faces.json")
#: Faces with an ``__all__`` that are not pinned, and why.
UNPINNED: dict[str, str] = {}


def declared_faces() -> list[str]:
    """Every package of rubric/, models/ and workers/ below the top whose ``__init__`` assigns ``__all__``."""
    out = []
    for top in ("rubric", "models", "workers"):
        for init in sorted((REPO / top).rglob("__init__.py")):
            name = ".".join(init.parent.relative_to(REPO).parts)
            tree = ast.parse(init.read_text(encoding="utf-8"))
            if "." in name and any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__"
                                                                        for t in n.targets) for n in tree.body):
                out.append(name)
    return out


def _pinned() -> dict[str, list[str]]:
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def test_every_face_is_pinned():
    faces = set(declared_faces())
    assert {"models.llm", "workers.jobs", "workers.cluster", "rubric.io"} <= faces
    assert faces - set(UNPINNED) == set(_pinned()), (
        f"faces without a pin: {sorted(faces - set(UNPINNED) - set(_pinned()))}; pins without a face: "
        f"{sorted(set(_pinned()) - faces)} (tests/reliability/faces.json)")


@pytest.mark.parametrize("face", sorted(_pinned()))
def test_a_face_exports_what_it_pins(face):
    module = importlib.import_module(face)
    names = list(module.__all__)
    assert len(names) == len(set(names)), f"{face}.__all__ names something twice"
    assert not [n for n in names if not hasattr(module, n)], f"{face}.__all__ names what it does not hold"
    pinned = set(_pinned()[face])
    added, gone = sorted(set(names) - pinned), sorted(pinned - set(names))
    assert not added and not gone, (f"{face}'s face changed: added {added}, taken out {gone}. If that is meant, "
                                    "edit tests/reliability/faces.json in the same commit")
