"""What the judge and protocol pools share on Ray: a session, a keyed actor pool, checked batches.

Both send keyed records (pairs, questions) of several shards through one fixed-size actor pool and
must get each key back exactly once; this module holds that plumbing so each pool's module keeps
only what is its own (the actor and how a returned row is stored).
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rubric.errors import BatchMismatchError
from workers.ray_pipeline import PoolConfig, _connect, _resolve_gpus

__all__ = ["ray_session", "keyed_pool", "checked_batches"]


@contextmanager
def ray_session(address: str | None) -> Iterator[None]:
    """Join or start Ray (as :func:`workers.ray_pipeline.run_ray_job` does); shut down what was started here."""
    started, temp_dir = _connect(address)
    try:
        yield
    finally:
        if started:
            import ray

            ray.shutdown()
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)


def keyed_pool(rows: Sequence[Mapping[str, Any]], actor: type, ctor_kwargs: Mapping[str, Any], *, pool: PoolConfig,
               batch_size: int, progress: bool):
    """A dataset of ``rows`` mapped by a fixed-size pool of ``actor`` (an engine pool: GPUs as
    :class:`PoolConfig` resolves them for "llm"; bounded restarts and retries)."""
    import ray

    ray.data.DataContext.get_current().enable_progress_bars = progress
    n_blocks = max(1, min(len(rows) // batch_size + 1, 64 * pool.size))
    ds = ray.data.from_items(list(rows), override_num_blocks=n_blocks)
    with warnings.catch_warnings():
        # Ray 2.60 has no named parameter for max_restarts / max_task_retries yet (see ray_pipeline)
        warnings.filterwarnings("ignore", message=".*ray_remote_args.* is deprecated")
        return ds.map_batches(actor, fn_constructor_kwargs=dict(ctor_kwargs), batch_size=batch_size,
                              batch_format="pyarrow", compute=ray.data.ActorPoolStrategy(size=pool.size),
                              num_cpus=pool.num_cpus, num_gpus=_resolve_gpus("llm", pool) or None,
                              max_restarts=pool.max_restarts, max_task_retries=pool.max_task_retries)


def checked_batches(ds, expected: Mapping[int, set[str]], key: str, *, what: str, uris: Sequence[str]
                    ) -> Iterator[tuple[dict[str, list], dict[int, list[int]], list[int]]]:
    """The pool's returned batches, each key checked to come back exactly once.

    Yields:
        (the batch's columns, shard -> its row positions in the batch, shards complete with this batch).

    Raises:
        BatchMismatchError: a key came back twice or was never sent, or (after the last batch) a
            shard's keys did not all come back.
    """
    seen: dict[int, set[str]] = {i: set() for i in expected}
    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
        cols = batch.to_pydict()
        by_shard: dict[int, list[int]] = {}
        for j, (shard, k) in enumerate(zip(cols["shard"], cols[key])):
            if k not in expected[shard] or k in seen[shard]:
                raise BatchMismatchError(f"shard {uris[shard]}: {what} {k!r} came back "
                                         f"{'twice' if k in seen[shard] else 'but was never sent'}")
            seen[shard].add(k)
            by_shard.setdefault(shard, []).append(j)
        yield cols, by_shard, [s for s in by_shard if seen[s] == expected[s]]
    for i, want in expected.items():
        if seen[i] != want:
            raise BatchMismatchError(f"shard {uris[i]}: {len(seen[i])} of {len(want)} {what}s came back; "
                                     f"first missing {sorted(want - seen[i])[:3]}")
