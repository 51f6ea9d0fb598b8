"""The output folder of a command (:class:`OutputFolder`) and a file a command writes (:func:`output_file`)."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import sqlite3
import stat
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from rubric.errors import ConfigError, InputError
from rubric.io import (DIGESTS, MANIFEST, PUBLISHING, file_sha256, is_uri, published_digests, published_files,
                       read_manifest)
from workers.storage.outdir._lock import OutLock
from workers.storage.outdir._paths import (LOCK_FILE, STAGING_MARK, TOOL, atomic_write_bytes, check_overlap, is_scratch,
                                           link_error, lstat_or_none, make_dirs, new_temp, our_scratch, out_path,
                                           remove_scratch, remove_tree, replace)

log = logging.getLogger("workers.storage.outdir")


def _marker_names(out: Path) -> set[str]:
    """The files an interrupted publish was moving (its marker names them): ours, though no manifest lists them."""
    try:
        doc = json.loads((out / PUBLISHING).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    names = doc.get("names") if isinstance(doc, dict) else None
    return {str(n) for n in names} if isinstance(names, list) else set()


def _is_store(path: Path) -> bool:
    """A score store root of ours: a real folder whose entries are scratch files of ours or folders each
    holding a ``key.json`` (or empty: a store made and not yet keyed)."""
    st = lstat_or_none(path)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return False
    with os.scandir(path) as entries:
        for e in entries:
            if our_scratch(path, e.name):
                continue
            if e.is_symlink() or not e.is_dir():
                return False
            if os.listdir(e.path) and not os.path.isfile(os.path.join(e.path, "key.json")):
                return False
    return True


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

    def __exit__(self, kind, exc, tb) -> None:
        if self._lock is not None:
            self._lock.release()
        failed = _write_failure(self.path, exc)
        if failed is not None:
            raise failed from exc

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
            return our_scratch(self.path, name, self._known())
        if name in self.own:
            return path.is_file() and not path.is_symlink()
        return name in self.stores and _is_store(path)

    def _known(self) -> set[str]:
        """The names of this command's files in OUT (an older ``.<name>.tmp-<pid>`` of one is ours)."""
        return {*self.outputs, *self.own, MANIFEST}

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
            removed = remove_scratch(folder, self._known())
            if folder != self.path:
                with os.scandir(folder) as entries:
                    units = [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
                for unit in units:
                    removed += remove_scratch(unit)
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

    def _check_ours(self, replacing: Sequence[str], removing: Sequence[str]) -> None:
        """Refuse, before anything moves, a name this publish replaces or removes that holds what no run of
        ours can be proven to have written: a folder (or anything but a file or a link) anywhere; a file whose
        sha256 is not the one the previous manifest records (edited, even keeping its size, or written over),
        or for which it records none (a manifest of an older version: replaced under ``--force`` only). An
        interrupted publish's names and ``--force``'s replaced files apart."""
        digests = published_digests(self.previous)
        marked = _marker_names(self.path)
        for name in [*replacing, *removing]:
            path = self.path / name
            st = lstat_or_none(path)
            if st is None:
                continue
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                raise ConfigError(f"{path} is a folder (or another non-file) where a run of ours published a file: "
                                  "lfqa-rubric never deletes what it did not write; move it away and run the job "
                                  "again (nothing was published; the scores are kept)")
            if stat.S_ISLNK(st.st_mode) or name in marked or name in self._replace:
                continue
            want = digests.get(name)
            if want is None and self.force:
                log.warning("--force: %s has no sha256 in %s (an older version's run): replacing it", path, MANIFEST)
                continue
            got = file_sha256(path)
            if got != want:
                said = f"{MANIFEST} records sha256 {want[:12]}..." if want else f"{MANIFEST} records no sha256 for it"
                raise ConfigError(f"{path} is not the file a run of ours published there (sha256 {got[:12]}...; "
                                  f"{said}): lfqa-rubric never deletes what it did not write; move it away and run "
                                  "the job again (nothing was published; the scores are kept)")

    # --- inside the folder ---
    def dir(self, name: str) -> Path:
        """The folder ``OUT/name`` (made if missing), never through a link."""
        return make_dirs(self.path, self.path / name)

    def staging(self) -> Path:
        """A fresh, empty staging folder inside OUT (the caller removes it with :meth:`remove`)."""
        path = self.path / f".staging-{os.getpid()}"
        st = lstat_or_none(path)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise link_error(path, "our staging folder")
        if st is not None and not our_scratch(self.path, path.name):
            raise ConfigError(f"{path} is where this run stages its files, and no run of ours made it (it lacks "
                              f"our {STAGING_MARK}): move it away (nothing in it was touched)")
        remove_tree(self.path, path)
        os.mkdir(path)
        atomic_write_bytes(path / STAGING_MARK, str(os.getpid()).encode())
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
            manifest: written as ``OUT/manifest.json`` with ``published``, every published file's size, and
                ``sha256``, its digest (what the next run proves the file by).
                The files the previous manifest listed that this run does not publish are removed (its
                ``added`` files too: they were made from that run's tables); no other file is.

        Raises:
            ConfigError: a file that is not ours appeared at a staged name, or a link stands there, or a name
                this run replaces or removes holds what no run of ours wrote there (a folder, a file whose sha256
                is not the one the previous manifest records); nothing is moved or removed then.
        """
        out = self.path
        for name in staged:
            dest = out / name
            st = lstat_or_none(dest)
            if st is None or Path(staged[name]) == dest:
                continue
            if stat.S_ISLNK(st.st_mode) and name not in self._replace:
                raise link_error(dest, f"our {name}")
            if name not in self._published and name not in self._replace:
                raise ConfigError(f"{dest} appeared while the job ran and no run of ours published it; move it away "
                                  "and run the job again (the scores are kept)")
        gone = sorted(self._published - set(staged) - {MANIFEST})
        self._check_ours([n for n in staged if Path(staged[n]) != out / n], gone)
        replaced = sorted(n for n in staged if n in self._replace and os.path.lexists(out / n))
        if replaced:
            log.warning("--force: replacing %s in %s (files lfqa-rubric did not write)", ", ".join(replaced), out)
        atomic_write_bytes(out / PUBLISHING, json.dumps({"pid": os.getpid(), "started": time.time(),
                                                         "names": sorted({*staged, *gone})}).encode())
        sizes: dict[str, int] = {}
        digests: dict[str, str] = {}
        for name, src in staged.items():
            sizes[name], digests[name] = Path(src).stat().st_size, file_sha256(src)
            if Path(src) != out / name:
                replace(out, src, out / name)
        for name in gone:
            remove_tree(out, out / name)
        published = {**manifest, "published": sizes, DIGESTS: digests}
        atomic_write_bytes(out / MANIFEST, json.dumps(published, indent=2, default=str).encode())
        (out / PUBLISHING).unlink()
        self.previous, self._published = published, set(sizes)


def _write_failure(out: Path, exc: BaseException | None) -> BaseException | None:
    """A write that failed inside ``out`` (a full disk in a scratch database, a Parquet writer or a rename) as
    one line naming ``out`` and the error; None for any other outcome (raised as it is)."""
    if isinstance(exc, sqlite3.OperationalError) and ("disk" in str(exc) or "I/O" in str(exc)):
        return OSError(errno.ENOSPC if "full" in str(exc) else errno.EIO,
                       f"a scratch database of the run could not be written ({exc}) in", str(out))
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG) \
            and not exc.filename:
        return OSError(exc.errno, f"{exc.strerror or exc} while writing into", str(out))
    return None


def check_output_file(dest: str | Path, *, register: bool = False) -> dict:
    """Refuse ``dest`` as an output file when it is a link, a folder, our own file name, or a file a run of
    ours published in its folder (or one a command recorded there, unless ``register``: it records it
    anew); returns that folder's manifest ({} when none). The caller holds the folder's lock
    (:func:`output_file` does)."""
    dest = Path(dest)
    st = lstat_or_none(dest)
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise link_error(dest, "the output file")
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
    """Write one file the user named: yields where to write it (under its own name, in a private temp
    folder beside it), renamed into place on success, with any file the writer put beside it there (a
    report's charts), each checked like ``dest``.

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
            remove_scratch(dest.parent)
        # the file is written under its own name inside a fresh private folder (made with an exclusive
        # mkdir, so nothing in it can be planted), then renamed: writers that derive ids from the name see it
        box = new_temp(dest.parent, dest.name, folder=True)
        try:
            yield box / dest.name
            beside = sorted(p.name for p in box.iterdir() if p.name != dest.name)
            for name in beside:  # all refused before any is moved
                check_output_file(dest.parent / name)
            for name in [*beside, dest.name]:
                os.replace(box / name, dest.parent / name)
        finally:
            remove_tree(dest.parent, box)
        if register and ours:
            added = dict(manifest.get("added") or {})
            added[dest.name] = dest.stat().st_size
            digests = {**published_digests(manifest), dest.name: file_sha256(dest)}
            atomic_write_bytes(dest.parent / MANIFEST, json.dumps({**manifest, "added": added, DIGESTS: digests},
                                                                  indent=2, default=str).encode())
