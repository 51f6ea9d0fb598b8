"""The writer's lock on a folder (``workers.storage.outdir``'s module docstring says how it works)."""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import stat
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rubric.errors import ConfigError
from workers.storage.outdir._paths import LOCK_FILE, link_error, out_path

log = logging.getLogger("workers.storage.outdir")

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


def _open_lock(path: Path) -> int | None:
    """The lock file, created exclusively or opened without following a link; None when it vanished."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise link_error(path, "the lock") from None
            raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise ConfigError(f"{path} is not a lock file of ours (not a regular file, or a hard link to another "
                          "file): remove it")
    return fd


class OutLock:
    """The writer's lock on an output folder (see the module docstring); a context manager.

    Args:
        out: the output folder (created if missing).
        command: what the holder is doing, shown to a refused second writer.

    Attributes:
        first: whether this acquire took the folder (False: this process already held it).
    """

    def __init__(self, out: str | Path, command: str | None = None) -> None:
        self.out = out_path(out)
        self.path = self.out / LOCK_FILE
        self.command = command if command is not None else " ".join(Path(a).name if i == 0 else a
                                                                    for i, a in enumerate(sys.argv))
        self._key: str | None = None
        self._created = False
        self.first = False

    def acquire(self) -> None:
        """Take the lock.

        Raises:
            ConfigError: another live process holds it ("OUT is in use by pid N (started ...)"), or the
                lock file is a link or not ours.
        """
        import fcntl

        self._created = not os.path.lexists(self.out)
        self.out.mkdir(parents=True, exist_ok=True)
        key = str(self.out.resolve())
        if key in _held:
            _held[key][1] += 1
            self._key, self.first = key, False
            return
        for _ in range(100):  # bounded: each retry means another process removed the file between our steps
            fd = _open_lock(self.path)
            if fd is None:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                info = _holder(os.pread(fd, 1 << 16, 0).decode("utf-8", "replace"))
                os.close(fd)
                left = (info.get("host", socket.gethostname()) == socket.gethostname()
                        and isinstance(info.get("pid"), int) and not _alive(info["pid"]))
                raise ConfigError(f"{self.out} is in use by {_describe(info)}"
                                  + ("; that process has ended, but one it started still holds the lock: stop it"
                                     if left else "; wait for it to finish or write to another folder")) from None
            try:  # the file we locked must still be the one at the path (a releasing holder unlinks it)
                same = os.fstat(fd).st_ino == os.lstat(self.path).st_ino
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
            self._key, self.first = key, True
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
