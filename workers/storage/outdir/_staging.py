"""The files one run of a job stages before they are published: the only writer of a job's outputs.

A job kind never opens a file of its own: its assemble step hands its tables, rejects and report to
the run's :class:`Staging` (``workers.runner.JobRun.output``), which writes each into the run's
private staging folder inside ``OUT`` (made by :meth:`workers.storage.outdir.OutputFolder.staging`), with an
exclusive create that never follows a link, under a name the kind declared (``JobKind.outputs``). The
runner publishes what was staged with the manifest (:meth:`workers.storage.outdir.OutputFolder.publish`).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from rubric.errors import ConfigError

__all__ = ["Staging"]


class Staging:
    """The staged files of one run, in ``folder`` (a fresh staging folder the caller removes).

    Args:
        folder: the staging folder.
        names: the file names this run may stage (the kind's outputs).

    Attributes:
        files: file name in OUT -> the staged file, in the order staged.
    """

    def __init__(self, folder: Path, names: Sequence[str]) -> None:
        self.folder, self.names = Path(folder), tuple(names)
        self.files: dict[str, Path] = {}

    def stream(self, name: str) -> IO[bytes]:
        """A new binary file for ``name`` (the caller closes it): created exclusively, never through a link.

        Raises:
            ConfigError: ``name`` is not one of the run's outputs, or was staged already.
        """
        if name not in self.names:
            raise ConfigError(f"{name!r} is not one of this job's outputs ({', '.join(self.names)})")
        if name in self.files:
            raise ConfigError(f"{name} was staged twice in one run")
        path = self.folder / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        self.files[name] = path
        return os.fdopen(fd, "wb")

    def text_stream(self, name: str) -> IO[str]:
        """:meth:`stream` as UTF-8 text."""
        return io.TextIOWrapper(self.stream(name), encoding="utf-8", newline="")

    def data(self, name: str, data: bytes) -> None:
        with self.stream(name) as f:
            f.write(data)

    def text(self, name: str, text: str) -> None:
        self.data(name, text.encode("utf-8"))

    def jsonl(self, name: str, records: Iterable[dict]) -> None:
        """One JSON object per line (``rejects.jsonl``: pass ``r.to_dict()`` of each reject)."""
        self.text(name, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))

    def table(self, name: str, table: Any) -> int:
        """A pyarrow table as Parquet; returns its rows."""
        import pyarrow.parquet as pq

        with self.stream(name) as f:
            pq.write_table(table, f)
        return table.num_rows

    def table_writer(self, name: str, schema: Any) -> "TableWriter":
        """A streaming Parquet writer for ``name`` (``write_table`` pieces of ``schema``, then ``close``)."""
        return TableWriter(self.stream(name), schema)

    def scratch(self) -> str:
        """A private scratch folder inside the staging folder (on-disk indexes), never published; it goes
        with the staging folder."""
        return tempfile.mkdtemp(prefix="scratch-", dir=self.folder)


class TableWriter:
    """A ``pyarrow.parquet.ParquetWriter`` on a staged file; :meth:`close` closes both."""

    def __init__(self, file: IO[bytes], schema: Any) -> None:
        import pyarrow.parquet as pq

        self.file = file
        try:
            self.writer = pq.ParquetWriter(file, schema)
        except BaseException:
            file.close()
            raise

    def write_table(self, table: Any) -> None:
        self.writer.write_table(table)

    def close(self) -> None:
        try:
            self.writer.close()
        finally:
            self.file.close()
