"""The assemble step's tables written into one folder as they stream out (:class:`TableFiles`).

``assemble_stream`` hands its pieces to ``write_*`` callables; a :class:`TableFiles`' methods are
those callables, so the writing stays inside ``rubric.tables`` and the job only names the folder (a
staging folder it publishes or removes) and closes the files afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rubric.io import Reject

__all__ = ["TableFiles"]


class TableFiles:
    """``<name>.parquet`` per table (one ParquetWriter each, opened with its first piece's schema) and
    ``rejects.jsonl`` (opened at once: a job without rejects still has the file), inside ``folder``.

    Pass :meth:`pairs`, :meth:`answers`, :meth:`claims` and :meth:`rejects` as ``assemble_stream``'s
    ``write_*`` arguments, then :meth:`close`.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._tables: dict[str, Any] = {}  # name -> open ParquetWriter
        self._rejects = (self.folder / "rejects.jsonl").open("w", encoding="utf-8")

    def _write(self, name: str, table) -> None:
        import pyarrow.parquet as pq

        if name not in self._tables:
            self._tables[name] = pq.ParquetWriter(self.folder / f"{name}.parquet", table.schema)
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
