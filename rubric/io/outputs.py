"""Reading an output folder safely: its files are one run's set, or the reader refuses in one line.

A job publishes its files between a marker (:data:`PUBLISHING`, written first) and
``manifest.json`` (written last, its ``published`` field giving every file's size; ``added``, the
files a later command made from that run's tables, such as ``encoder``'s predictions; ``sha256``, the
digest of every one of them, which is what a re-run proves its own files by before it replaces or removes
one: :func:`file_sha256`, :func:`published_digests`); see ``workers.storage.outdir.OutputFolder``. A folder
without a manifest (tables written by hand, or by an older version) is read as it is.

:func:`read_manifest` is the one reader of ``manifest.json``; :func:`check_published` (every reader
of a job's tables) and :func:`folder_state` (a reader that reads a folder several times, such as the
HTML report, compares it before and after) are built on it.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from rubric.errors import InputError
from rubric.io.files import stream_sha256

__all__ = ["MANIFEST", "PUBLISHING", "DIGESTS", "read_manifest", "published_files", "published_digests", "file_sha256",
           "check_published", "folder_state"]

#: The manifest, written last.
MANIFEST = "manifest.json"
#: Present while a job moves its files into the folder (and after a job killed while doing so).
PUBLISHING = ".publishing"
#: The manifest's section of file name -> sha256 (hex) of every file it vouches for.
DIGESTS = "sha256"


def file_sha256(path: str | Path) -> str:
    """The sha256 (hex) of a file's bytes, read in chunks.

    Raises:
        OSError: the file cannot be read.
    """
    with open(path, "rb") as f:
        return stream_sha256(f)


def read_manifest(out: str | Path) -> dict:
    """``OUT/manifest.json`` ({} when absent: a job that has not finished writes it last).

    Raises:
        InputError: the manifest is not JSON, not a JSON object, or a symbolic link.
    """
    path = Path(out) / MANIFEST
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return {}
    if stat.S_ISLNK(mode) or not stat.S_ISREG(mode):
        raise InputError(f"{path} is not a regular file (a symbolic link?); an lfqa-rubric manifest never is")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"{path} is not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path} must hold a JSON object")
    return doc


def published_files(manifest: dict) -> dict[str, int]:
    """File name in OUT -> size, for every file the manifest vouches for (``published`` and ``added``)."""
    out: dict[str, int] = {}
    for section in ("published", "added"):
        files = manifest.get(section)
        if isinstance(files, dict):
            out.update({str(k): v for k, v in files.items()})
    return out


def published_digests(manifest: dict) -> dict[str, str]:
    """File name in OUT -> the sha256 the manifest records for it (a manifest written before digests were
    recorded has none: what it lists cannot be proven ours by content)."""
    digests = manifest.get(DIGESTS)
    if not isinstance(digests, dict):
        return {}
    return {str(k): v for k, v in digests.items() if isinstance(v, str)}


def check_published(out: str | Path) -> dict:
    """Check that the files of output folder ``out`` are one run's complete set; returns its manifest.

    Raises:
        InputError: a publish is in progress or was interrupted, or a file differs from the size the
            manifest records (another run, or a copy, changed it afterwards).
    """
    out = Path(out)
    if os.path.lexists(out / PUBLISHING):
        raise InputError(f"{out} is being written, or a job was killed while writing its tables (a "
                         f"{PUBLISHING} marker is there): wait for it, or run the job again")
    try:
        doc = read_manifest(out)
    except InputError:
        return {}  # a damaged manifest vouches for nothing; the tables are read as they are
    for name, size in published_files(doc).items():
        path = out / name
        try:
            actual = path.stat().st_size
        except OSError:
            raise InputError(f"{path} is missing though {out / MANIFEST} lists it: the folder is not one "
                             "run's complete output; run the job again") from None
        if actual != size:
            raise InputError(f"{path} does not match {out / MANIFEST} ({actual} bytes, the manifest says {size}): "
                             "the folder mixes two runs' files; run the job again")
    return doc


def folder_state(out: str | Path) -> tuple:
    """The folder checked (:func:`check_published`), then what identifies its files now: each regular
    file directly inside it with its inode, size and change time.

    A publish replaces files by rename (new inodes), so two equal states taken before and after reading
    the folder mean every file read in between belonged to one run's set.
    """
    out = Path(out)
    if out.is_file():  # a single file given for a folder (a predictions file): itself
        st = out.stat()
        return ((out.name, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns),)
    check_published(out)
    state = []
    try:
        entries = sorted(os.scandir(out), key=lambda e: e.name)
    except OSError:
        return ()
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            state.append((e.name, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(state)
