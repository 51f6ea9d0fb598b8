"""The output folder: ours or refused, one writer at a time, never through a link, published together.

Every command that writes goes through this module (``git clone`` refuses a non-empty destination;
SQLite refuses a file that is not one of its databases; so do we):

- :class:`OutputFolder` (score, judge and the protocols, through ``workers.runner``; the encoder's head
  folder): a context that, before anything is read,

  1. refuses an ``OUT`` that overlaps an input (:func:`check_overlap`: an input inside ``OUT``, ``OUT``
     inside or equal to an input folder), with ``~`` expanded (:func:`out_path`);
  2. takes the lock (:class:`OutLock`);
  3. refuses a folder that is not ours: one that holds anything but our ``manifest.json`` (``"tool":
     "lfqa-rubric"``) and our own leftovers (score stores with their ``key.json``, the lock, scratch
     files, an interrupted publish's files, the kind's own files). ``force=True`` writes into it anyway
     and logs which of its files it replaces; no other file of it is touched;
  4. removes the scratch files of killed runs (``.run-scores-<pid>.sqlite``, ``.staging-<pid>``, temp
     files), in a folder of ours only;
  5. refuses another command's output (the manifest lists a file outside ``outputs``) and a file named
     like one of ``outputs`` that no earlier run of ours published (it would be replaced), unless forced.

  :meth:`OutputFolder.staging` gives a fresh staging folder; :meth:`OutputFolder.publish` moves the
  staged files in between a marker (:data:`rubric.io.PUBLISHING`, written first, naming them) and
  ``manifest.json`` (written last, every file's size), removing only files the previous manifest listed.
  ``rubric.io.check_published`` is what readers call.
- :func:`output_file` (fit, predict, export, lfq, perturb, report --html, the encoder's predictions, the
  demo's pages): one file the user named, written to an exclusive temp file beside it and renamed, under
  the lock of its folder; refused when it is a link, a folder, an input of the command, or a table a run
  published there.
- Under both: the lock and every temp file are opened with ``O_NOFOLLOW`` / ``O_EXCL``
  (:func:`new_temp`, :func:`atomic_write_bytes`), folders under ``OUT`` are made and entered without
  following a link (:func:`make_dirs`), and every path deleted or renamed is checked to lie strictly
  inside its root first (:func:`inside`; a shard named ``..`` once made the score store ``OUT/scores/..``
  = ``OUT``, and its "reset" removed the whole folder).

The lock: every writer holds ``OUT/.lfqa-rubric.lock`` for its whole run. A second writer refuses with
"OUT is in use by pid N (started ...)"; a lock left by a process that died (``kill -9``, a lost node) is
taken over with a warning. The lock is an ``flock`` on the file, so the kernel frees it when its holder
dies; the file's content (pid, host, start time, command) is only what the messages say. Re-entrant
within one process (``arena`` writes its joined pairs, then runs the judge job into the same ``OUT``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import secrets
import shutil
import socket
import stat
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from rubric.errors import ConfigError, InputError
from rubric.io import MANIFEST, PUBLISHING, is_uri, published_files, read_manifest

__all__ = ["LOCK_FILE", "TOOL", "OutLock", "OutputFolder", "output_file", "out_path", "check_overlap", "inside",
           "remove_tree", "replace", "atomic_write_bytes", "new_temp", "make_dirs", "no_link", "is_scratch", "check_output_file"]

log = logging.getLogger(__name__)

#: The lock file inside OUT.
LOCK_FILE = ".lfqa-rubric.lock"
#: A manifest's ``tool``: what makes a folder ours.
TOOL = "lfqa-rubric"

# Names our runs use for scratch: a staging folder, the on-disk score lookups, temp files (ours, and the
# older ``.<name>.tmp-<pid>``). A killed run leaves them; the next one to take the folder removes them.
_SCRATCH = re.compile(r"^\.(staging-\d+|(run|merged)-scores-\d+\.sqlite(-journal|-wal|-shm)?|tmp-\d+-[0-9a-f]+-.+"
                      r"|.+\.tmp-\d+)$", re.S)

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


def is_scratch(name: str) -> bool:
    """Whether ``name`` is one of our runs' scratch names (removed by the next run that takes the folder)."""
    return _SCRATCH.match(name) is not None


def out_path(path: str | Path) -> Path:
    """An output path as given, with a leading ``~`` expanded (a quoted ``--out '~'`` is the home folder,
    never a folder named ``~``).

    Raises:
        ConfigError: the path is empty, or starts with ``~user`` for no such user.
    """
    text = os.fspath(path)
    if not str(text).strip():
        raise ConfigError("an output path is empty")
    p = Path(text).expanduser()
    if p.parts and p.parts[0].startswith("~"):
        raise ConfigError(f"output path {str(text)!r}: {p.parts[0]!r} names no user whose home folder it could be; "
                          "give the folder itself")
    return p


def _link_error(path: Path, what: str) -> ConfigError:
    return ConfigError(f"{path} is a symbolic link where {what} goes; lfqa-rubric never writes through a link: "
                       "remove it (nothing was written)")


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def no_link(path: str | Path, what: str) -> Path:
    """``path``, checked not to be a symbolic link (a file of ours opened by its path: a cache appended to).

    Raises:
        ConfigError: it is one.
    """
    st = _lstat(Path(path))
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise _link_error(Path(path), what)
    return Path(path)


def make_dirs(root: str | Path, path: str | Path) -> Path:
    """Make folder ``path`` (``root`` or below it) and the folders between, refusing a link or a file on the way.

    Raises:
        ConfigError: a component under ``root`` is a symbolic link or not a folder.
    """
    root, path = Path(root), Path(path)
    cur = root
    for part in path.relative_to(root).parts:
        cur = cur / part
        try:
            os.mkdir(cur)
        except FileExistsError:
            st = os.lstat(cur)
            if stat.S_ISLNK(st.st_mode):
                raise _link_error(cur, "one of our folders") from None
            if not stat.S_ISDIR(st.st_mode):
                raise ConfigError(f"{cur} is a file where lfqa-rubric keeps a folder; move it away") from None
    return path


def new_temp(parent: str | Path, name: str, *, folder: bool = False) -> Path:
    """A new, empty file (or, with ``folder``, folder) in ``parent`` for ``name``: created with ``O_EXCL |
    O_NOFOLLOW`` (an exclusive ``mkdir``), so it is never an existing file or a link; its name ends with
    ``name`` (a writer that goes by the suffix still sees it)."""
    parent = Path(parent)
    tail = name if len(name.encode("utf-8", "surrogateescape")) <= 120 else name[-60:]
    for _ in range(100):  # bounded: a clash needs the same pid and 32 random bits
        tmp = parent / f".tmp-{os.getpid()}-{secrets.token_hex(4)}-{tail}"
        try:
            if folder:
                os.mkdir(tmp, 0o755)
            else:
                os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644))
        except FileExistsError:
            continue
        return tmp
    raise ConfigError(f"could not create a temp file in {parent}")  # pragma: no cover


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write via an exclusive temp file and rename, so a killed job never leaves a half-written file.

    Raises:
        ConfigError: ``path`` is a symbolic link (refused, not replaced or followed).
    """
    path = Path(path)
    st = _lstat(path)
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise _link_error(path, f"our {path.name}")
    tmp = new_temp(path.parent, path.name)
    try:
        with open(tmp, "r+b") as f:  # the file new_temp made: a regular file of ours
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


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
    """Remove the folder (or file) ``path`` after checking it lies inside ``root``; absent is fine.
    A link is removed itself, never what it points to."""
    p = inside(root, path)
    st = _lstat(p)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(p)
    else:
        p.unlink(missing_ok=True)


def replace(root: str | Path, src: str | Path, dst: str | Path) -> None:
    """``os.replace(src, dst)`` after checking both lie inside ``root``."""
    os.replace(inside(root, src), inside(root, dst))


def check_overlap(inputs: Iterable[str | Path], out: str | Path, *, own: Iterable[str] = ()) -> None:
    """Refuse an output folder that overlaps an input, before anything is read or written.

    Args:
        inputs: the command's inputs as given (files, folders, globs; URIs and Hub ids are not local).
        out: the output folder.
        own: names of files directly in ``out`` that the command wrote itself and reads back (RAG-QA
            Arena's joined pairs).

    Raises:
        ConfigError: an input is ``out``, lies inside it, or is a folder holding it.
    """
    import glob

    out = out_path(out)
    out_r = out.resolve()
    own = set(own)
    for raw in inputs:
        s = os.fspath(raw)
        if is_uri(str(s)):
            continue
        found = glob.glob(str(Path(s).expanduser())) if any(c in str(s) for c in "*?[") else [s]
        for given in found:
            p = Path(given).expanduser()
            if not os.path.exists(p):
                continue
            r = p.resolve()
            why = None
            if r == out_r:
                why = "it is the output folder itself"
            elif out_r in r.parents and not (r.parent == out_r and r.name in own):
                why = "it lies inside the output folder (the output would overwrite it, or be read as input next time)"
            elif r.is_dir() and r in out_r.parents:
                why = "the output folder lies inside it (the next run would read its own tables)"
            if why:
                raise ConfigError(f"output folder {out} overlaps input {given}: {why}; write the output to a "
                                  "folder apart from the inputs (nothing was read or written)")


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
                raise _link_error(path, "the lock") from None
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


def _marker_names(out: Path) -> set[str]:
    """The files an interrupted publish was moving (its marker names them): ours, though no manifest lists them."""
    try:
        doc = json.loads((out / PUBLISHING).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    names = doc.get("names") if isinstance(doc, dict) else None
    return {str(n) for n in names} if isinstance(names, list) else set()


def _is_store(path: Path) -> bool:
    """A score store root of ours: a real folder whose entries are scratch files or folders each holding
    a ``key.json`` (or empty: a store made and not yet keyed)."""
    st = _lstat(path)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return False
    for e in os.scandir(path):
        if is_scratch(e.name) and not e.is_symlink():
            continue
        if e.is_symlink() or not e.is_dir():
            return False
        if any(True for _ in os.scandir(e.path)) and not os.path.isfile(os.path.join(e.path, "key.json")):
            return False
    return True


def _remove_scratch(folder: Path) -> list[str]:
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for e in entries:
        if is_scratch(e.name) and not e.is_symlink():  # a link at a scratch name is not ours: left, refused on use
            remove_tree(folder, e.path)
            removed.append(e.name)
    return removed


class OutputFolder:
    """One command's output folder, from the checks to the publish (see the module docstring); a context.

    Args:
        out: the folder (``~`` expanded; created if missing).
        outputs: every file the command may publish into it (an earlier run's manifest listing another
            is another command's output: refused).
        own: files the command writes into it before publishing (RAG-QA Arena's joined pairs, LINKAGE's
            generated references): a folder holding them without a manifest is still ours.
        stores: the command's store folders under it (``scores``): ours when each of their folders has a
            ``key.json``; their scratch files are removed with the folder's.
        inputs: the command's inputs (:func:`check_overlap`).
        force: write into a folder that is not ours, replacing those of its files named like ``outputs``.
        command: what the lock says the holder is doing.

    Attributes:
        path: the folder.
        previous: the manifest an earlier run left ({} when none).
    """

    def __init__(self, out: str | Path, *, outputs: Sequence[str] = (), own: Sequence[str] = (),
                 stores: Sequence[str] = (), inputs: Iterable[str | Path] = (), force: bool = False,
                 command: str | None = None) -> None:
        self.path = out_path(out)
        self.outputs, self.own, self.stores = tuple(outputs), tuple(own), tuple(stores)
        self.inputs, self.force, self.command = list(inputs), force, command
        self.previous: dict = {}
        self._replace: set[str] = set()
        self._lock: OutLock | None = None

    # --- taking the folder ---
    def __enter__(self) -> "OutputFolder":
        check_overlap(self.inputs, self.path, own=self.own)
        self._lock = OutLock(self.path, self.command)
        self._lock.acquire()
        try:
            if self._lock.first:
                self._take()
            self._check_outputs()
        except BaseException:
            self._lock.release()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self._lock is not None:
            self._lock.release()

    def _manifest(self) -> dict:
        try:
            doc = read_manifest(self.path)
        except InputError:
            return {}
        return doc if doc.get("tool") == TOOL else {}

    def _ours(self, name: str, marked: set[str]) -> bool:
        path = self.path / name
        if name in (LOCK_FILE, PUBLISHING) or name in marked:
            return True
        if is_scratch(name):
            return not path.is_symlink()
        if name in self.own:
            return path.is_file() and not path.is_symlink()
        return name in self.stores and _is_store(path)

    def _take(self) -> None:
        """Ours or refused (unless forced); then our killed runs' scratch files go."""
        self.previous = self._manifest()
        names = sorted(os.listdir(self.path))
        if not self.previous:
            marked = _marker_names(self.path)
            foreign = [n for n in names if not self._ours(n, marked)]
            if foreign and not self.force:
                shown = ", ".join(repr(n) for n in foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5
                                                                  else "")
                raise ConfigError(f"{self.path} is not an lfqa-rubric output folder (it holds {shown} and no "
                                  f"{MANIFEST} of ours): write to a new or empty folder, or pass --force to write "
                                  "into it anyway (its files named like this command's outputs are then replaced, "
                                  "no other)")
            if foreign:
                log.warning("--force: writing into %s, which is not an lfqa-rubric output folder; its other "
                            "files stay as they are", self.path)
                return
        for folder in [self.path, *(self.path / s for s in self.stores if _is_store(self.path / s))]:
            removed = _remove_scratch(folder)
            if folder != self.path:
                for e in os.scandir(folder):
                    if e.is_dir(follow_symlinks=False):
                        removed += _remove_scratch(Path(e.path))
            if removed:
                log.info("%s: removed %d scratch file(s) a killed run left (%s)", folder, len(removed),
                         ", ".join(removed[:3]) + (" ..." if len(removed) > 3 else ""))

    def _check_outputs(self) -> None:
        if not self._lock or not self._lock.first:
            self.previous = self._manifest()
        published = self.previous.get("published")
        if not isinstance(published, dict):  # a manifest of ours from before manifests listed their files
            published = {n: None for n in self.outputs} if self.previous else {}
        other = sorted(set(published) - set(self.outputs))
        if other and self.outputs:
            job = self.previous.get("protocol") or self.previous.get("kind") or "score"
            raise ConfigError(f"{self.path} holds another kind of job's output ({job}: {', '.join(other)}, by its "
                              f"{MANIFEST}); write this job's output to its own folder")
        self._published = set(published) | set(published_files(self.previous)) | _marker_names(self.path)
        clash = [n for n in self.outputs if os.path.lexists(self.path / n) and n not in self._published]
        if clash and not self.force:
            raise ConfigError(f"{self.path} holds {', '.join(clash)}, which no earlier run of ours published there "
                              f"(its {MANIFEST} does not list {'it' if len(clash) == 1 else 'them'}) and this "
                              "command would replace: move them away, or pass --force to replace them")
        if clash:
            log.warning("--force: %s holds %s, named like this command's outputs: each one this run writes is "
                        "replaced", self.path, ", ".join(clash))
        self._replace |= set(clash)

    # --- inside the folder ---
    def dir(self, name: str) -> Path:
        """The folder ``OUT/name`` (made if missing), never through a link."""
        return make_dirs(self.path, self.path / name)

    def staging(self) -> Path:
        """A fresh, empty staging folder inside OUT (the caller removes it with :meth:`remove`)."""
        path = self.path / f".staging-{os.getpid()}"
        st = _lstat(path)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise _link_error(path, "our staging folder")
        remove_tree(self.path, path)
        os.mkdir(path)
        return path

    def remove(self, path: str | Path) -> None:
        """Remove a folder or file of this run inside OUT (checked to lie inside it)."""
        remove_tree(self.path, path)

    def write_bytes(self, name: str, data: bytes) -> Path:
        """Write ``OUT/name`` atomically (one of the command's own files), never through a link."""
        path = self.path / name
        atomic_write_bytes(path, data)
        return path

    def publish(self, staged: Mapping[str, str | Path], manifest: Mapping[str, Any]) -> None:
        """Move finished files into OUT as one set, the manifest last (see the module docstring).

        Args:
            staged: file name in OUT -> the finished file (inside OUT, e.g. in the staging folder; a file
                already at its place is listed as it is).
            manifest: written as ``OUT/manifest.json`` with ``published``: every published file's size.
                The files the previous manifest listed that this run does not publish are removed (its
                ``added`` files too: they were made from that run's tables); no other file is.

        Raises:
            ConfigError: a file that is not ours appeared at a staged name, or a link stands there.
        """
        out = self.path
        for name in staged:
            dest = out / name
            st = _lstat(dest)
            if st is None or Path(staged[name]) == dest:
                continue
            if stat.S_ISLNK(st.st_mode) and name not in self._replace:
                raise _link_error(dest, f"our {name}")
            if name not in self._published and name not in self._replace:
                raise ConfigError(f"{dest} appeared while the job ran and no run of ours published it; move it away "
                                  "and run the job again (the scores are kept)")
        replaced = sorted(n for n in staged if n in self._replace and os.path.lexists(out / n))
        if replaced:
            log.warning("--force: replacing %s in %s (files lfqa-rubric did not write)", ", ".join(replaced), out)
        gone = sorted(self._published - set(staged) - {MANIFEST})
        atomic_write_bytes(out / PUBLISHING, json.dumps({"pid": os.getpid(), "started": time.time(),
                                                         "names": sorted({*staged, *gone})}).encode())
        sizes: dict[str, int] = {}
        for name, src in staged.items():
            sizes[name] = Path(src).stat().st_size
            if Path(src) != out / name:
                replace(out, src, out / name)
        for name in gone:
            remove_tree(out, out / name)
        atomic_write_bytes(out / MANIFEST, json.dumps({**manifest, "published": sizes}, indent=2,
                                                      default=str).encode())
        (out / PUBLISHING).unlink()
        self.previous, self._published = dict(manifest, published=sizes), set(sizes)


def check_output_file(dest: str | Path, *, register: bool = False) -> dict:
    """Refuse ``dest`` as an output file when it is a link, a folder, our own file name, or a file a run of
    ours published in its folder (or one a command recorded there, unless ``register``: it records it
    anew); returns that folder's manifest ({} when none). The caller holds the folder's lock
    (:func:`output_file` does)."""
    dest = Path(dest)
    st = _lstat(dest)
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise _link_error(dest, "the output file")
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{dest} is a folder; give a file name")
    if dest.name in (MANIFEST, LOCK_FILE, PUBLISHING) or is_scratch(dest.name):
        raise ConfigError(f"{dest}: {dest.name} is lfqa-rubric's own file name; give another")
    try:
        manifest = read_manifest(dest.parent)
    except InputError:
        return {}
    vouched = set(manifest.get("published") or ()) if register else set(published_files(manifest))
    if manifest.get("tool") == TOOL and dest.name in vouched:
        raise ConfigError(f"{dest} is a table the job in {dest.parent} published (its {MANIFEST} lists it); "
                          "write to another file")
    return manifest


@contextlib.contextmanager
def output_file(dest: str | Path, *, inputs: Iterable[str | Path] = (), register: bool = False,
                command: str | None = None) -> Iterator[Path]:
    """Write one file the user named: yields a new temp file beside it to write, renamed into place on success.

    Held for the write: the lock of its folder (a folder another command is writing into is refused
    like ``score``). Refused before anything is written: ``dest`` is a link or a folder, one of
    ``inputs`` (output over input), our manifest or lock, or a table a run published in that folder.

    Args:
        dest: the file (``~`` expanded; its folder made if missing).
        inputs: the files the command reads.
        register: record the file in the folder's manifest (``added``) when a run of ours published
            there: it is made from that run's tables, and that folder's next run removes it.
        command: what the lock says the holder is doing.
    """
    dest = out_path(dest)
    if dest.name in ("", ".", ".."):
        raise ConfigError(f"{dest} is not a file name")
    for given in inputs:
        if not is_uri(str(given)) and os.path.exists(given) and Path(given).resolve() == dest.resolve():
            raise ConfigError(f"{dest} is also this command's input {given}: write the output to another file "
                              "(nothing was written)")
    with OutLock(dest.parent, command) as lock:
        manifest = check_output_file(dest, register=register)
        ours = manifest.get("tool") == TOOL
        if ours and lock.first:
            _remove_scratch(dest.parent)
        # the file is written under its own name inside a fresh private folder (made with an exclusive
        # mkdir, so nothing in it can be planted), then renamed: writers that derive ids from the name see it
        box = new_temp(dest.parent, dest.name, folder=True)
        try:
            yield box / dest.name
            os.replace(box / dest.name, dest)
        finally:
            remove_tree(dest.parent, box)
        if register and ours:
            added = dict(manifest.get("added") or {})
            added[dest.name] = dest.stat().st_size
            atomic_write_bytes(dest.parent / MANIFEST, json.dumps({**manifest, "added": added}, indent=2,
                                                                  default=str).encode())
