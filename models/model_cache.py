"""Models we build once from a packaged one and keep in the user's cache: where, and how without a race.

The embedded judge's fp32 folder (``models.llm.smollm2``, converted from the packaged GGUF) and MiniLM's int8
ONNX file (``models.rubric_backends.minilm_onnx``, exported from the packaged weights) are made on first use (and
by ``make setup``) under :func:`cache_root`. :func:`build_once` makes one: a file lock serialises processes that
ask at once, the model is built in a temporary folder beside it and renamed into place with a marker file
written last, so nobody ever reads a half-written model and an interrupted build (left in its temporary folder) is
redone. A folder or link at the model's place without the marker is not one of our builds: it is refused, never
removed.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from rubric.errors import BackendUnavailableError

__all__ = ["cache_root", "built_folder", "build_once"]

log = logging.getLogger(__name__)


def cache_root() -> Path:
    """``$LFQA_RUBRIC_CACHE`` or ``~/.cache/lfqa-rubric/models``."""
    env = os.environ.get("LFQA_RUBRIC_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lfqa-rubric" / "models"


def built_folder(name: str, done: str, root: Path | None = None) -> Path | None:
    """The folder ``name`` under ``root`` (default :func:`cache_root`) if a finished build (its ``done`` marker)
    is there, else None; never builds."""
    target = (Path(root) if root is not None else cache_root()) / name
    return target if (target / done).is_file() else None


def build_once(name: str, done: str, build: Callable[[Path], str], *, what: str, root: Path | None = None) -> Path:
    """The folder ``name`` under ``root`` (default :func:`cache_root`), built by ``build`` if no finished one is there.

    Args:
        name: the folder's name in the cache.
        done: the marker file written last (a folder without it is an interrupted build, never a model).
        build: fills the temporary folder it is given; returns the marker's text.
        what: what is built, for the log line and the messages.
        root: cache directory.

    Raises:
        BackendUnavailableError: ``filelock`` is missing; something that is no finished build of ours (a folder
            without the marker, a file, a link) stands at ``name``; whatever ``build`` raises.
    """
    root = Path(root) if root is not None else cache_root()
    target = root / name
    if (target / done).is_file():
        return target
    try:
        from filelock import FileLock
    except ImportError as e:  # pragma: no cover - filelock comes with transformers
        raise BackendUnavailableError(f"building {what} needs 'filelock': install the [cpu] extra") from e
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / (name + ".lock"))):
        if (target / done).is_file():  # another process finished while we waited
            return target
        if target.is_symlink() or target.exists():  # ours are renamed in whole, marker included: this is not
            raise BackendUnavailableError(
                f"{target} is there but is no finished build of {what} (no {done} file in it): it was not made by "
                f"lfqa-rubric, so it is left as it is; move it away, or set LFQA_RUBRIC_CACHE to another folder")
        log.info("building %s at %s (once)", what, target)
        tmp = Path(tempfile.mkdtemp(prefix=name + ".", dir=root))
        try:
            marker = build(tmp)
            (tmp / done).write_text(marker, encoding="utf-8")
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target
