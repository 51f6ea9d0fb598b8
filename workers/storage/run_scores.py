"""A job's scores by store id on disk (SQLite): what one run has scored, and the job's merged scores.

The runner (``workers.runner``) keeps what a run scores here, so memory does not grow with the job, and
merges every unit's store into one for the kind's assemble step and the cost table.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from rubric.scoring import Provenance, Score
from rubric.tables import CostRow
from workers.storage.outdir import make_dirs, no_link, remove_tree
from workers.storage.store import decode_score

__all__ = ["RunScores"]


class RunScores:
    """Scores by store id on disk (SQLite), so memory does not grow with the job: what this run has
    scored (an item met again in a later unit is copied, not scored again), and the job's merged
    scores for the assemble step (an :class:`rubric.assemble.ScoreLookup`), each id marked when an
    earlier run stored it (reused)."""

    def __init__(self, folder: Path, name: str = "run") -> None:
        make_dirs(folder.parent, folder)
        self.folder = folder
        self.path = folder / f".{name}-scores-{os.getpid()}.sqlite"
        remove_tree(folder, no_link(self.path, "our scratch database"))  # this pid's leftover
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                              "CREATE TABLE s (aid TEXT PRIMARY KEY, scores TEXT, earlier INTEGER) WITHOUT ROWID;")
        self.provenance: dict[str, Provenance] = {}

    def get(self, ids: Sequence[str]) -> dict[str, dict[str, Score]]:
        out: dict[str, dict[str, Score]] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start:start + 500])
            q = f"SELECT aid, scores FROM s WHERE aid IN ({','.join('?' * len(chunk))})"
            for aid, text in self.db.execute(q, chunk):
                out[aid] = {r: decode_score(v) for r, v in json.loads(text).items()}
        return out

    def put_encoded(self, ids: Sequence[str], encoded: Mapping[str, Sequence[str]], earlier: bool = False) -> None:
        """Add scores already encoded (``workers.storage.store.encode_score``); an id stored before keeps its
        scores. ``earlier``: an earlier run stored them (they are reused)."""
        rows = ((aid, json.dumps({r: col[i] for r, col in encoded.items()}), int(earlier)) for i, aid in enumerate(ids))
        self.db.execute("BEGIN")
        self.db.executemany("INSERT OR IGNORE INTO s VALUES (?, ?, ?)", rows)
        self.db.execute("COMMIT")

    def cost_rows(self, names: Sequence[str]) -> Iterable[CostRow]:
        """Every id x name, ids in order, with its cost, whether it was reused, and its error."""
        for aid, text, earlier in self.db.execute("SELECT aid, scores, earlier FROM s ORDER BY aid"):
            scores = json.loads(text)
            for r in names:
                if r in scores:
                    sc = decode_score(scores[r])
                    yield CostRow(aid, r, sc.cost, bool(earlier) or bool(sc.cost.get("reused")), sc.error)

    def close(self) -> None:
        self.db.close()
        remove_tree(self.folder, self.path)
