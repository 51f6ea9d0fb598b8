"""Reading an output folder safely: its files are one run's set, or the reader refuses in one line.

A job publishes its files between a marker (:data:`PUBLISHING`, written first) and
``manifest.json`` (written last, its ``published`` field giving every file's size); see
``workers.outdir.publish``. A folder without a manifest (tables written by hand, or by an older
version) is read as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

from rubric.errors import InputError

__all__ = ["MANIFEST", "PUBLISHING", "check_published"]

#: The manifest, written last.
MANIFEST = "manifest.json"
#: Present while a job moves its files into the folder (and after a job killed while doing so).
PUBLISHING = ".publishing"


def check_published(out: str | Path) -> None:
    """Check that the files of output folder ``out`` are one run's complete set.

    Raises:
        InputError: a publish is in progress or was interrupted, or a file differs from the size the
            manifest records (another run, or a copy, changed it afterwards).
    """
    out = Path(out)
    if (out / PUBLISHING).exists():
        raise InputError(f"{out} is being written, or a job was killed while writing its tables (a "
                         f"{PUBLISHING} marker is there): wait for it, or run the job again")
    try:
        doc = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return
    published = doc.get("published") if isinstance(doc, dict) else None
    if not isinstance(published, dict):
        return
    for name, size in published.items():
        path = out / str(name)
        try:
            actual = path.stat().st_size
        except OSError:
            raise InputError(f"{path} is missing though {out / MANIFEST} lists it: the folder is not one "
                             "run's complete output; run the job again") from None
        if actual != size:
            raise InputError(f"{path} does not match {out / MANIFEST} ({actual} bytes, the manifest says {size}): "
                             "the folder mixes two runs' files; run the job again")
