"""The assemble step's tables handed, as they stream out, to the files of a sink (:class:`TableFiles`).

``assemble_stream`` hands its pieces to ``write_*`` callables; a :class:`TableFiles`' methods are
those callables. The files themselves are the sink's (:class:`FileSink`: the run's staging,
``workers.storage.outdir.Staging``), so this package decides what a table holds and never opens a file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import IO, Any, Protocol

from rubric.io import Reject

__all__ = ["TableFiles", "FileSink"]


class FileSink(Protocol):
    """Where a job's files go (``workers.storage.outdir.Staging``)."""

    def table_writer(self, name: str, schema: Any) -> Any:
        """A streaming Parquet writer (``write_table``, ``close``) for the file ``name``."""
        ...

    def text_stream(self, name: str) -> IO[str]:
        ...

    def data(self, name: str, data: bytes) -> None:
        ...

    def scratch(self) -> str:
        """A scratch folder that goes with the sink."""
        ...


class TableFiles:
    """``<name>.parquet`` per table (one writer each, opened with its first piece's schema) and
    ``rejects.jsonl`` (opened at once: a job without rejects still has the file), in ``sink``.

    Pass :meth:`pairs`, :meth:`answers`, :meth:`claims` and :meth:`rejects` as ``assemble_stream``'s
    ``write_*`` arguments, then :meth:`close`.
    """

    def __init__(self, sink: FileSink) -> None:
        self.sink = sink
        self._tables: dict[str, Any] = {}  # name -> open writer
        self._rejects = sink.text_stream("rejects.jsonl")

    def _write(self, name: str, table) -> None:
        if name not in self._tables:
            self._tables[name] = self.sink.table_writer(f"{name}.parquet", table.schema)
        self._tables[name].write_table(table)

    def pairs(self, table) -> None:
        self._write("pairs", table)

    def answers(self, table) -> None:
        self._write("answers", table)

    def claims(self, table) -> None:
        self._write("claims", table)

    def rejects(self, rejects: Sequence[Reject]) -> None:
        self._rejects.write("".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in rejects))

    def close(self) -> list[str]:
        """Close every file (again: a no-op); returns the tables that received a piece, in the order begun."""
        names = list(self._tables)
        for w in self._tables.values():
            w.close()
        self._tables.clear()
        self._rejects.close()
        return names
