"""The Ray score step's driver side: scored answer rows from the pools -> each shard's score store.

Rows arrive in any order and, under global dedupe, one scored answer stands for rows of many
shards, so no shard may be complete before the last batch. The driver therefore never holds a
shard's rows until it is complete: rows are appended to their shard's store as they come, a
bounded buffer at a time (``flush_rows`` rows over all shards), and a shard is marked finished
when its last answer is in. What the driver holds is the buffer plus one byte per answer of each
open shard (which of its answers came back), not the rows.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rubric.errors import BatchMismatchError, ConfigError
from workers.job import PendingShard
from workers.store import decode_provenance

__all__ = ["ShardCollector"]

log = logging.getLogger(__name__)


@dataclass
class _Open:
    """One shard whose answers are still coming back."""

    n_items: int
    seen: bytearray
    n_got: int = 0
    provenance: dict[str, str] = field(default_factory=dict)  # rubric -> encoded provenance, from its first row
    buffer: list[tuple[str, Mapping[str, str]]] = field(default_factory=list)  # (answer_id, encoded scores)


class ShardCollector:
    """Collects scored rows per shard and writes them to the shards' stores (see the module docstring).

    Args:
        shards: shard id -> the pending shard (its store is written).
        rubrics: rubric names each row carries a score and a provenance of.
        flush_rows: buffered rows over all shards that trigger a write of every buffer.
    """

    def __init__(self, shards: Mapping[int, PendingShard], rubrics: Sequence[str], *, flush_rows: int = 50_000) -> None:
        if flush_rows < 1:
            raise ConfigError(f"'flush_rows' must be >= 1, got {flush_rows}")
        self._shards = shards
        self._rubrics = list(rubrics)
        self._flush_rows = flush_rows
        self._open: dict[int, _Open] = {}
        self._buffered = 0
        self.finished: set[int] = set()

    def add(self, shard_id: int, index: int, n_items: int, answer_id: str, scores: Mapping[str, str],
            provenance: Mapping[str, str]) -> None:
        """One scored answer of one shard: its index in the shard, the shard's answer count, and its
        encoded scores and provenances by rubric.

        Raises:
            BatchMismatchError: the answer came back twice, or its index is out of the shard's range.
            ConfigError: two rows of one shard say a rubric was made two ways.
        """
        sh = self._shards[shard_id]
        st = self._open.get(shard_id)
        if st is None:
            if shard_id in self.finished:
                raise BatchMismatchError(f"shard {sh.uri}: answer {index} came back after the shard was complete")
            st = self._open[shard_id] = _Open(n_items=n_items, seen=bytearray(n_items))
        if not 0 <= index < st.n_items or n_items != st.n_items:
            raise BatchMismatchError(f"shard {sh.uri}: answer {index} of {n_items} does not fit a shard of "
                                     f"{st.n_items} answers")
        if st.seen[index]:
            raise BatchMismatchError(f"shard {sh.uri}: answer {index} came back twice")
        st.seen[index] = 1
        st.n_got += 1
        for r in self._rubrics:
            first = st.provenance.setdefault(r, provenance[r])
            if first != provenance[r] and decode_provenance(first) != decode_provenance(provenance[r]):
                raise ConfigError(f"shard {sh.uri}: actors disagree on how {r!r} is made: "
                                  f"{decode_provenance(first)} vs {decode_provenance(provenance[r])} "
                                  "(mixed model revisions?)")
        st.buffer.append((answer_id, scores))
        self._buffered += 1
        if st.n_got == st.n_items:
            self._write(shard_id, st)
            sh.store.finish(st.n_items)
            del self._open[shard_id]
            self.finished.add(shard_id)
            log.info("shard %s scored (%d answers)", sh.name, st.n_items)
        elif self._buffered >= self._flush_rows:
            for sid, s in self._open.items():
                self._write(sid, s)

    def _write(self, shard_id: int, st: _Open) -> None:
        if not st.buffer:
            return
        ids = [a for a, _ in st.buffer]
        self._shards[shard_id].store.append_encoded(
            ids, {r: [s[r] for _, s in st.buffer] for r in self._rubrics}, st.provenance)
        self._buffered -= len(st.buffer)
        st.buffer = []

    def still_open(self) -> dict[int, tuple[int, int]]:
        """Shards with answers still missing: shard id -> (answers back, answers)."""
        return {sid: (st.n_got, st.n_items) for sid, st in self._open.items()}
