"""The job's score index: every unit's scores by store id in one on-disk table (SQLite), for one run.

One per run, beside the stores (``OUT/<store_dir>/.index-scores-<pid>.sqlite``: scratch, removed when the run
ends, and by the next run when a killed one left it), so memory does not grow with the job. Each unit's store
(:class:`workers.storage.store.UnitStore`) writes a chunk here as it writes the chunk's part, so a score this run
makes is written twice: its part and its row here. During the step the index is what a later unit copies from
(an item an earlier unit of this run scored is not scored again); what earlier runs stored is added when the
step is over (``UnitStore.merge``, each earlier part read once), and the index is then the job's merged scores
for the kind's assemble step (a ``rubric.tables.ScoreLookup``) and the cost table.

Which score of an id the index keeps, whatever order its rows came in (on Ray they come in any order): the
first unit's in plan order, within a unit its newest part (a retried id's new part wins over the failed one);
each row says whether an earlier run stored it (reused).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from rubric.scoring import Provenance, Score
from rubric.tables import CostRow
from workers.storage.codec import decode_score
from workers.storage.outdir import make_dirs, no_link, remove_tree

__all__ = ["ScoreIndex", "rank"]

#: Parts per unit a rank leaves room for (a unit's part numbers are below it).
_PARTS = 10 ** 9


def rank(position: int, part: int) -> int:
    """A row's rank in the index (lower wins): the unit's position in the plan first, then its newest part."""
    return position * _PARTS - part


class ScoreIndex:
    """Scores by store id on disk for one run (see the module docstring); a context manager that closes it.

    Attributes:
        provenance: name -> how this run's scores are made (what a copy of them into a later unit is stamped with).
    """

    def __init__(self, folder: Path) -> None:
        make_dirs(folder.parent, folder)
        self.folder = folder
        self.path = folder / f".index-scores-{os.getpid()}.sqlite"
        remove_tree(folder, no_link(self.path, "our scratch database"))  # this pid's leftover
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                              "CREATE TABLE s (aid TEXT PRIMARY KEY, scores TEXT, earlier INTEGER, rank INTEGER)"
                              " WITHOUT ROWID;")
        self.provenance: dict[str, Provenance] = {}

    def __enter__(self) -> "ScoreIndex":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def put(self, ids: Sequence[str], rows: Iterable[Mapping[str, str]], *, rank: int, earlier: bool = False) -> None:
        """Add one part's rows (``rows[i]``: ``ids[i]``'s encoded scores by name, ``workers.storage.codec``); an id
        already held keeps the row of the lower ``rank`` (:func:`rank`). ``earlier``: an earlier run stored them."""
        data = ((aid, json.dumps(dict(row)), int(earlier), rank) for aid, row in zip(ids, rows, strict=True))
        self.db.execute("BEGIN")
        self.db.executemany("INSERT INTO s VALUES (?, ?, ?, ?) ON CONFLICT(aid) DO UPDATE SET scores = excluded.scores,"
                            " earlier = excluded.earlier, rank = excluded.rank WHERE excluded.rank < s.rank", data)
        self.db.execute("COMMIT")

    def _rows(self, ids: Sequence[str], where: str = "") -> Iterable[tuple[str, str]]:
        for start in range(0, len(ids), 500):
            chunk = list(ids[start:start + 500])
            yield from self.db.execute(f"SELECT aid, scores FROM s WHERE aid IN ({','.join('?' * len(chunk))}){where}",
                                       chunk)

    def made_now(self, ids: Sequence[str]) -> dict[str, dict[str, str]]:
        """The encoded scores this run made of those of ``ids`` it made (id -> name -> encoded score)."""
        return {aid: json.loads(text) for aid, text in self._rows(ids, " AND earlier = 0")}

    def get(self, ids: Sequence[str]) -> dict[str, dict[str, Score]]:
        """id -> name -> Score for those of ``ids`` held (``rubric.tables.ScoreLookup``)."""
        return {aid: {r: decode_score(v) for r, v in json.loads(text).items()} for aid, text in self._rows(ids)}

    def cost_rows(self, names: Sequence[str]) -> Iterable[CostRow]:
        """Every id x name, ids in order, with its cost, whether it was reused, and its error."""
        for aid, text, earlier in self.db.execute("SELECT aid, scores, earlier FROM s ORDER BY aid"):
            scores = json.loads(text)
            for r in names:
                if r in scores:
                    sc = decode_score(scores[r])
                    yield CostRow(aid, r, sc.cost, bool(earlier) or bool(sc.cost.get("reused")), sc.error)

    def close(self) -> None:
        """Close and remove the index; a store folder it leaves empty goes with it (a run whose one input could not
        be read leaves no store: ``UnitStore.discard_if_empty``)."""
        self.db.close()
        remove_tree(self.folder, self.path)
        try:
            self.folder.rmdir()
        except OSError:  # the units' stores are there
            pass
