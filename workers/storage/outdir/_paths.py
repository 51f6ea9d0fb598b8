"""The file operations under the output folder: never through a link, never outside their root.

Paths are made and entered without following a link (:func:`make_dirs`, :func:`no_link`), temp files
are created with ``O_EXCL | O_NOFOLLOW`` (:func:`new_temp`, :func:`atomic_write_bytes`), and every path
deleted or renamed is checked to lie strictly inside its root first (:func:`inside`). The package's
face is ``workers.storage.outdir``.
"""

from __future__ import annotations

import glob
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

from rubric.errors import ConfigError
from rubric.io import is_uri

#: The lock file inside OUT.
LOCK_FILE = ".lfqa-rubric.lock"
#: A manifest's ``tool``: what makes a folder ours.
TOOL = "lfqa-rubric"

# Names our runs use for scratch: a staging folder, the job's on-disk score index (and the two lookups it
# replaced, which a killed run of an older version may have left), temp files (ours, and the older
# ``.<name>.tmp-<pid>``). A killed run leaves them; the next one to take the folder removes them,
# when it can prove they are ours (:func:`our_scratch`).
_SCRATCH = re.compile(r"^\.(staging-\d+|(index|run|merged)-scores-\d+\.sqlite(-journal|-wal|-shm)?|tmp-\d+-[0-9a-f]+-.+"
                      r"|.+\.tmp-\d+)$", re.S)
_STAGING = re.compile(r"^\.staging-\d+$")
_OLD_TEMP = re.compile(r"^\.(.+)\.tmp-\d+$", re.S)
# the files of ours an older ``.<name>.tmp-<pid>`` temp file was written for, besides a command's outputs
_OWN_NAMES = re.compile(r"^(manifest\.json|key\.json|done\.json|part-\d+\.parquet)$")

#: The file our staging folder holds from its first moment: a ``.staging-<pid>`` folder without it is not ours.
STAGING_MARK = ".lfqa-rubric-staging"


def is_scratch(name: str) -> bool:
    """Whether ``name`` is one of our runs' scratch names (never a name a user may give an output)."""
    return _SCRATCH.match(name) is not None


def our_scratch(folder: str | Path, name: str, known: Iterable[str] = ()) -> bool:
    """Whether ``folder/name`` is scratch that a run of ours provably left, so the next run may remove it: a
    scratch name (:func:`is_scratch`), not a link; a staging folder holding our :data:`STAGING_MARK`; an
    older ``.<name>.tmp-<pid>`` temp file only for a ``name`` of ours (``known``: the command's files, or a
    manifest's or a store's). A user's ``.staging-1/notes.txt`` or ``.draft.tmp-2024`` is not."""
    if not is_scratch(name):
        return False
    path = Path(folder) / name
    st = lstat_or_none(path)
    if st is None or stat.S_ISLNK(st.st_mode):
        return False
    if _STAGING.match(name):
        if not stat.S_ISDIR(st.st_mode):
            return False
        mark = lstat_or_none(path / STAGING_MARK)
        return mark is not None and stat.S_ISREG(mark.st_mode)
    old = _OLD_TEMP.match(name)
    if old and not name.startswith(".tmp-"):
        return stat.S_ISREG(st.st_mode) and (old.group(1) in set(known) or _OWN_NAMES.match(old.group(1)) is not None)
    return True


def out_path(path: str | Path) -> Path:
    """An output path as given, with a leading ``~`` expanded (a quoted ``--out '~'`` is the home folder,
    never a folder named ``~``).

    Raises:
        ConfigError: the path is empty, or starts with ``~user`` for no such user.
    """
    text = os.fspath(path)
    if not str(text).strip():
        raise ConfigError("an output path is empty")
    p = expand_user(text)
    if p is None or (p.parts and p.parts[0].startswith("~")):
        first = Path(text).parts[0]
        raise ConfigError(f"output path {str(text)!r}: {first!r} names no user whose home folder it could be; "
                          "give the folder itself")
    return p


def expand_user(path: str | Path) -> Path | None:
    """``path`` with a leading ``~`` or ``~user`` expanded; None when there is no such user (or no home)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:  # pathlib: "Could not determine home directory"
        return None


def link_error(path: Path, what: str) -> ConfigError:
    return ConfigError(f"{path} is a symbolic link where {what} goes; lfqa-rubric never writes through a link: "
                       "remove it")


def lstat_or_none(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def no_link(path: str | Path, what: str) -> Path:
    """``path``, checked not to be a symbolic link (a file of ours opened by its path: a cache appended to).

    Raises:
        ConfigError: it is one.
    """
    st = lstat_or_none(Path(path))
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise link_error(Path(path), what)
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
                raise link_error(cur, "one of our folders") from None
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
    st = lstat_or_none(path)
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise link_error(path, f"our {path.name}")
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
    st = lstat_or_none(p)
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
    out = out_path(out)
    out_r = out.resolve()
    own = set(own)
    for raw in inputs:
        s = os.fspath(raw)
        if is_uri(str(s)):
            continue
        expanded = expand_user(s)
        if expanded is None:  # ~nosuchuser: nothing there to overlap (the reader says it is missing)
            continue
        found = glob.glob(str(expanded)) if any(c in str(s) for c in "*?[") else [s]
        for given in found:
            p = expand_user(given)
            if p is None or not os.path.exists(p):
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


def remove_scratch(folder: Path, known: Iterable[str] = ()) -> list[str]:
    """Remove the scratch files a run of ours provably left (:func:`our_scratch`, with ``known`` names) directly
    in ``folder``, a folder of ours that the caller holds; anything else at a scratch name is left (a link, a
    user's ``.staging-1/``: not ours; using that name is refused). Returns their names."""
    removed = []
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except OSError:
        return removed
    known = set(known)
    for e in entries:
        if our_scratch(folder, e.name, known):
            remove_tree(folder, e.path)
            removed.append(e.name)
    return removed
