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
  4. removes the scratch files of killed runs (``.index-scores-<pid>.sqlite``, ``.staging-<pid>`` holding
     our mark, temp files of our names), in a folder of ours only: what it cannot prove a run of ours
     left stays (``our_scratch``);
  5. refuses another command's output (the manifest lists a file outside ``outputs``) and a file named
     like one of ``outputs`` that no earlier run of ours published (it would be replaced), unless forced.

  :meth:`OutputFolder.staging` gives a fresh staging folder; :meth:`OutputFolder.publish` moves the
  staged files in between a marker (:data:`rubric.io.PUBLISHING`, written first, naming them) and
  ``manifest.json`` (written last, every file's size and sha256), removing only files the previous manifest
  listed. Every name it replaces or removes is checked first, before the marker: a published name is a
  regular file whose sha256 is the one the previous manifest records (or one an interrupted publish was
  moving); a folder there, or a file of other content (edited in place, even keeping its size), is the
  user's: the run refuses in one line and nothing moves. A file a manifest of an older version lists without
  a digest cannot be proven ours: refused the same way, replaced under ``--force``.
  A write that fails (a full disk) is one line naming ``OUT`` and the error; nothing is half-published
  (readers refuse a folder whose publish marker is still there).
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

from workers.storage.outdir._folder import OutputFolder, check_output_file, output_file
from workers.storage.outdir._lock import OutLock
from workers.storage.outdir._staging import Staging
from workers.storage.outdir._paths import (LOCK_FILE, STAGING_MARK, TOOL, atomic_write_bytes, check_overlap, expand_user,
                                           inside, is_scratch, make_dirs, new_temp, no_link, our_scratch, out_path,
                                           remove_tree, replace)

__all__ = ["LOCK_FILE", "TOOL", "OutLock", "OutputFolder", "Staging", "output_file", "check_output_file", "out_path",
           "check_overlap", "inside", "remove_tree", "replace", "atomic_write_bytes", "new_temp", "make_dirs", "no_link",
           "is_scratch", "our_scratch", "STAGING_MARK", "expand_user"]
