"""The output folder's safety: one writer at a time, nothing touched outside it, tables published together.

- :class:`OutLock` / :func:`locks_out`: every command that writes into ``OUT`` (score, judge and its
  protocols, fit into a folder) holds ``OUT/.lfqa-rubric.lock`` for its whole run. A second writer
  refuses with "OUT is in use by pid N (started ...)"; a lock left by a process that died (``kill -9``,
  a lost node) is taken over with a warning. The lock is an ``flock`` on the file, so the kernel
  frees it when its holder dies; the file's content (pid, host, start time, command) is only what the
  messages say. Re-entrant within one process (``arena`` runs the judge job into the same ``OUT``).
- :func:`inside`: every path the job deletes or renames is checked to lie strictly inside its
  root first (a shard named ``..`` once made the score store ``OUT/scores/..`` = ``OUT``, and its
  "reset" removed the whole folder). :func:`remove_tree` and :func:`replace` are the checked
  operations.
- :func:`publish`: the final files move from a staging folder into ``OUT`` between a marker file
  (``OUT/.publishing``, written first) and ``manifest.json`` (written last, with every published
  file's size). ``rubric.io.check_published`` is what readers call: a folder with the marker
  (a publish in progress, or one killed half-way) or whose files do not match the manifest is
  refused in one line instead of read as a mix of two runs.
"""

from __future__ import annotations

import errno
import functools
import inspect
import json
import logging
import os
import shutil
import socket
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from rubric.errors import ConfigError
from rubric.io import MANIFEST, PUBLISHING

__all__ = ["LOCK_FILE", "OutLock", "locks_out", "inside", "remove_tree", "replace", "atomic_write_bytes", "publish"]

log = logging.getLogger(__name__)

#: The lock file inside OUT.
LOCK_FILE = ".lfqa-rubric.lock"

F = TypeVar("F", bound=Callable[..., Any])

# resolved OUT -> (open lock fd, depth): a process that already holds OUT may enter it again
_held: dict[str, list[int]] = {}


def _forget_in_child() -> None:
    # A forked child (an engine worker) must not keep the parent's lock alive after the parent ends:
    # an flock lasts while any descriptor of it is open.
    for fd, _ in _held.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write via a temp file and rename, so a killed job never leaves a half-written file."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def inside(root: str | Path, path: str | Path) -> Path:
    """``path``, checked to lie strictly inside ``root`` (after resolving ``..`` and links).

    Raises:
        ConfigError: ``path`` is ``root`` itself or outside it; nothing is touched.
    """
    r, p = Path(root).resolve(), Path(path).resolve()
    if p == r or r not in p.parents:
        raise ConfigError(f"refusing to delete or replace {str(path)!r}: it is not inside {str(root)!r} "
                          "(an input or shard name that points outside its folder?)")
    return Path(path)


def remove_tree(root: str | Path, path: str | Path) -> None:
    """Remove the folder (or file) ``path`` after checking it lies inside ``root``; absent is fine."""
    p = inside(root, path)
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    else:
        p.unlink(missing_ok=True)


def replace(root: str | Path, src: str | Path, dst: str | Path) -> None:
    """``os.replace(src, dst)`` after checking both lie inside ``root``."""
    os.replace(inside(root, src), inside(root, dst))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _holder(text: str) -> dict:
    try:
        info = json.loads(text)
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


def _describe(info: Mapping[str, Any]) -> str:
    started = info.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started)) if isinstance(started, (int, float)) else "?"
    host = f" on {info['host']}" if info.get("host") and info.get("host") != socket.gethostname() else ""
    cmd = f": {info['command']}" if info.get("command") else ""
    return f"pid {info.get('pid', '?')}{host} (started {when}{cmd})"


class OutLock:
    """The writer's lock on an output folder (see the module docstring); a context manager.

    Args:
        out: the output folder (created if missing).
        command: what the holder is doing, shown to a refused second writer.
    """

    def __init__(self, out: str | Path, command: str | None = None) -> None:
        self.out = Path(out)
        self.path = self.out / LOCK_FILE
        self.command = command if command is not None else " ".join(Path(a).name if i == 0 else a
                                                                    for i, a in enumerate(sys.argv))
        self._key: str | None = None
        self._created = False

    def acquire(self) -> None:
        """Take the lock.

        Raises:
            ConfigError: another live process holds it ("OUT is in use by pid N (started ...)").
        """
        import fcntl

        self._created = not self.out.exists()
        self.out.mkdir(parents=True, exist_ok=True)
        key = str(self.out.resolve())
        if key in _held:
            _held[key][1] += 1
            self._key = key
            return
        for _ in range(100):  # bounded: each retry means another process removed the file between our steps
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                try:
                    info = _holder(self.path.read_text())
                except OSError:
                    info = {}
                left = (info.get("host", socket.gethostname()) == socket.gethostname()
                        and isinstance(info.get("pid"), int) and not _alive(info["pid"]))
                raise ConfigError(f"{self.out} is in use by {_describe(info)}"
                                  + ("; that process has ended, but one it started still holds the lock: stop it"
                                     if left else "; wait for it to finish or write to another folder")) from None
            try:  # the file we locked must still be the one at the path (a releasing holder unlinks it)
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            old = _holder(os.pread(fd, 1 << 16, 0).decode("utf-8", "replace"))
            if old and old.get("pid") != os.getpid():
                pid = old.get("pid")
                how = ("is no longer running" if old.get("host", socket.gethostname()) == socket.gethostname()
                       and isinstance(pid, int) and not _alive(pid) else "no longer holds it")
                log.warning("%s: taking over the lock of %s, which %s (an interrupted run; its finished work "
                            "is resumed)", self.out, _describe(old), how)
            info = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time(),
                    "command": self.command}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
            _held[key] = [fd, 1]
            self._key = key
            return
        raise ConfigError(f"could not take the lock {self.path}: it kept being replaced")  # pragma: no cover

    def release(self) -> None:
        import fcntl

        key, self._key = self._key, None
        if key is None or key not in _held:
            return
        _held[key][1] -= 1
        if _held[key][1] > 0:
            return
        fd, _ = _held.pop(key)
        try:
            self.path.unlink(missing_ok=True)  # while still locked: a waiting opener re-checks the inode
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        if self._created:  # a run that failed before writing anything leaves no empty folder behind
            try:
                self.out.rmdir()
            except OSError:
                pass

    def __enter__(self) -> "OutLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def locks_out(param: str = "out") -> Callable[[F], F]:
    """Decorate a job function so that it holds :class:`OutLock` on its ``param`` argument while it runs."""

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def run(*args, **kwargs):
            out = sig.bind(*args, **kwargs).arguments[param]
            with OutLock(out):
                return fn(*args, **kwargs)

        return run  # type: ignore[return-value]

    return wrap


def publish(out: str | Path, staged: Mapping[str, str | Path], manifest: Mapping[str, Any], *,
            remove: Iterable[str] = ()) -> None:
    """Move finished files into ``OUT`` as one set, the manifest last (see the module docstring).

    Args:
        out: the output folder.
        staged: file name in OUT -> the finished file (inside OUT, e.g. in a staging folder).
        manifest: written as ``OUT/manifest.json`` with ``published``: every published file's size.
        remove: names of earlier outputs this run does not produce (removed, so no stale table stays).
    """
    out = Path(out)
    marker = out / PUBLISHING
    atomic_write_bytes(marker, json.dumps({"pid": os.getpid(), "started": time.time()}).encode())
    (out / MANIFEST).unlink(missing_ok=True)
    sizes: dict[str, int] = {}
    for name, src in staged.items():
        sizes[name] = Path(src).stat().st_size
        replace(out, src, out / name)
    for name in remove:
        remove_tree(out, out / name)
    atomic_write_bytes(out / MANIFEST, json.dumps({**manifest, "published": sizes}, indent=2, default=str).encode())
    marker.unlink()
