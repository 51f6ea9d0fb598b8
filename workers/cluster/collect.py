"""The Ray step's driver side: scored item rows from the pools -> each unit's store (every job kind).

The collector drives each unit through its store object (``workers.storage.store.UnitStore``), as the local
step does: a chunk of rows is recorded (its part, then its rows in the job's index), and the unit finished.

Rows arrive in any order and, under global dedupe, one scored item stands for rows of many
units, so no unit may be complete before the last batch. The driver therefore never holds a
unit's rows until it is complete: rows are appended to their unit's store as they come, a
bounded buffer at a time (``flush_rows`` store ids over all units), and a unit is marked finished
when its last item is in. What the driver holds is the buffer plus one byte per item of each
open unit (which of its items came back), not the rows.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rubric.config import check_range
from rubric.errors import BatchMismatchError, ConfigError
from workers.runner import Unit
from workers.storage.codec import decode_provenance

__all__ = ["ShardCollector"]

log = logging.getLogger(__name__)


@dataclass
class _Open:
    """One shard whose answers are still coming back."""

    n_items: int
    n_ids: int  # the unit's store ids, stored before or now (``store.finish``'s count)
    seen: bytearray
    n_got: int = 0
    provenance: dict[str, str] = field(default_factory=dict)  # name -> encoded provenance, from its first row
    buffer: list[tuple[str, Mapping[str, str]]] = field(default_factory=list)  # (store id, encoded scores)


class ShardCollector:
    """Collects scored rows per unit and writes them to the units' stores (see the module docstring).

    Args:
        shards: unit id -> the pending unit (its store is written).
        rubrics: the names each store id carries a score and a provenance of.
        flush_rows: buffered store ids over all units that trigger a write of every buffer.
    """

    def __init__(self, shards: Mapping[int, Unit], rubrics: Sequence[str], *, flush_rows: int = 50_000) -> None:
        check_range("flush_rows", flush_rows, low=1)
        self._shards = shards
        self._rubrics = list(rubrics)
        self._flush_rows = flush_rows
        self._open: dict[int, _Open] = {}
        self._buffered = 0
        self.finished: set[int] = set()

    def add(self, shard_id: int, index: int, n_items: int, ids: Sequence[str], scores: Sequence[Mapping[str, str]],
            provenance: Mapping[str, str], *, n_ids: int | None = None) -> None:
        """One scored item of one unit: its index among the unit's items sent, how many were sent, its
        store ids with their encoded scores by name (in the same order), and the encoded provenances.

        Args:
            n_ids: the unit's store ids, stored before or now (default: ``n_items``, one id per item).

        Raises:
            BatchMismatchError: the item came back twice, its index is out of the unit's range, or it
                has not one score per id.
            ConfigError: two rows of one unit say a name was made two ways.
        """
        sh = self._shards[shard_id]
        st = self._open.get(shard_id)
        if st is None:
            if shard_id in self.finished:
                raise BatchMismatchError(f"shard {sh.uri}: answer {index} came back after the shard was complete")
            st = self._open[shard_id] = _Open(n_items=n_items, n_ids=n_items if n_ids is None else n_ids,
                                              seen=bytearray(n_items))
        if not 0 <= index < st.n_items or n_items != st.n_items:
            raise BatchMismatchError(f"shard {sh.uri}: answer {index} of {n_items} does not fit a shard of "
                                     f"{st.n_items} answers")
        if st.seen[index]:
            raise BatchMismatchError(f"shard {sh.uri}: answer {index} came back twice")
        if len(ids) != len(scores):
            raise BatchMismatchError(f"shard {sh.uri}: answer {index} has {len(scores)} scores for {len(ids)} ids")
        st.seen[index] = 1
        st.n_got += 1
        for r in self._rubrics:
            first = st.provenance.setdefault(r, provenance[r])
            if first != provenance[r] and decode_provenance(first) != decode_provenance(provenance[r]):
                raise ConfigError(f"shard {sh.uri}: actors disagree on how {r!r} is made: "
                                  f"{decode_provenance(first)} vs {decode_provenance(provenance[r])} "
                                  "(mixed model revisions?)")
        st.buffer.extend(zip(ids, scores))
        self._buffered += len(ids)
        if st.n_got == st.n_items:
            self._write(shard_id, st)
            sh.store.finish(st.n_ids)
            del self._open[shard_id]
            self.finished.add(shard_id)
            log.info("shard %s scored (%d answers)", sh.name, st.n_items)
        elif self._buffered >= self._flush_rows:
            for sid, s in self._open.items():
                self._write(sid, s)

    def _write(self, shard_id: int, st: _Open) -> None:
        if not st.buffer:
            return
        self._shards[shard_id].store.record_encoded([a for a, _ in st.buffer], [s for _, s in st.buffer],
                                                    st.provenance)
        self._buffered -= len(st.buffer)
        st.buffer = []

    def still_open(self) -> dict[int, tuple[int, int]]:
        """Shards with answers still missing: shard id -> (answers back, answers)."""
        return {sid: (st.n_got, st.n_items) for sid, st in self._open.items()}
