"""The one Ray actor: it hosts one stage of a job kind's scorer, built once per process, then fed batch after batch.

``StageActor`` is a plain callable class so that Ray Data can run it in a fixed-size actor pool
(``map_batches(StageActor, compute=ActorPoolStrategy(size=N), fn_constructor_kwargs=...)``). It
holds no scoring logic: it rebuilds the job's kind from plain arguments, builds the kind's scorer for
its stage (``kind.scorer(stage)``: the score job's ``models.scorer_set.ScorerSet``, a judge, LINKAGE's
scorer) and scores a batch with its ``score``, the same call the single-process step makes, so a bad row becomes a per-row error in both paths and an engine failure re-raises in both.

Scores travel back as two Arrow string columns holding JSON: ``scores`` (per row, per store id, name ->
encoded :class:`~rubric.scoring.Score`) and ``provenance`` (name -> encoded provenance); a later stage
adds its names to both, so a raw value, an error reason and extras of any mix of types round-trip
exactly (Python's float repr is exact). A boolean ``restarted`` column says whether an actor that Ray
restarted (after its process or node died) scored the row at any stage; the driver reports it.

With ``batches_in_flight > 1`` (engine pools) Ray Data calls the actor from that many threads at
once; the actor then hands its LLM engines to an engine loop (:meth:`VLLMEngine.keep_busy`), so
the batches' requests share one running engine while other batches are rendered and written.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rubric.config import check_range
# The actor's process starts here: a judge of another package's protocol, named in a job kind's arguments, loads
# on the judge registry's first miss (workers.protocols hands it the loader).
import workers.protocols  # noqa: F401,E402
from workers.runner import check_results
from workers.storage.codec import encode_provenance, encode_score

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["StageActor"]

log = logging.getLogger(__name__)


class StageActor:
    """Builds one stage of a kind's scorer once, then scores Arrow batches of item rows.

    Args:
        kind_type: the job kind's class (``workers.runner.JobKind``).
        kind_args: its ``arguments()`` (plain data).
        stage: what this actor's scorer serves (``kind.scorer(stage)``; the score job: rubric versions).
        drop_record: leave the item records out of the output (the last stage).
        fault_marker: testing only. When set and the file does not exist yet, the first batch creates
            it and then kills this worker process, as a node failure would; Ray restarts the actor
            and retries the batch.
        batches_in_flight: Ray batches this actor scores at once (one thread each). Above 1, every
            LLM engine built in this process is kept busy (needs the vllm backend).

    Raises:
        ConfigError: ``batches_in_flight < 1``, or above 1 without a vLLM engine to keep busy.
    """

    def __init__(self, kind_type: type, kind_args: Mapping[str, Any], stage: Any = None, *, drop_record: bool = False,
                 fault_marker: str | None = None, batches_in_flight: int = 1) -> None:
        check_range("batches_in_flight", batches_in_flight, low=1)
        self.kind = kind_type(**kind_args)
        self._drop = drop_record
        self._fault_marker = fault_marker
        self._scorer = self.kind.scorer(stage)
        self.batches_in_flight = batches_in_flight
        if batches_in_flight > 1:
            from models.llm import keep_engines_busy

            keep_engines_busy(self.kind.config)
        self._provenance = {n: encode_provenance(p) for n, p in self._scorer.provenance.items()}
        self.restarted = _restarted()
        if self.restarted:
            # Ray restarted this actor after its process or its node died: the batch it held is retried here
            log.warning("stage actor for %s restarted (pid %d): Ray retries the batch the lost actor held",
                        ", ".join(self._provenance), os.getpid())
        else:
            log.info("stage actor pid %d ready for %s", os.getpid(), ", ".join(self._provenance))

    def _maybe_die(self) -> None:
        if self._fault_marker is None:
            return
        marker = Path(self._fault_marker)
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # exactly one process wins
        except FileExistsError:
            return
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        log.warning("fault injection: stage actor pid %d exits mid-batch", os.getpid())
        os._exit(1)

    def __call__(self, batch: "pa.Table") -> "pa.Table":
        """Score one batch; returns it with this stage's scores and provenances added."""
        import pyarrow as pa

        self._maybe_die()
        items = [self.kind.decode_item(t) for t in batch.column("record").to_pylist()]
        got = self._scorer.score(items)
        names = set(self._provenance)
        check_results(self.kind, [json.loads(t) for t in batch.column("ids").to_pylist()], got, names)
        before = (batch.column("scores").to_pylist() if "scores" in batch.column_names else [None] * len(items))
        prov_before = (batch.column("provenance").to_pylist() if "provenance" in batch.column_names
                       else [None] * len(items))
        scores, provs = [], []
        for g, old, old_prov in zip(got, before, prov_before):
            merged = json.loads(old) if old else [{} for _ in g]
            for row, new in zip(merged, g):
                row.update({n: encode_score(new[n]) for n in names})
            scores.append(json.dumps(merged, ensure_ascii=False))
            provs.append(json.dumps({**(json.loads(old_prov) if old_prov else {}), **self._provenance}))
        # which rows a restarted actor scored, at this stage or an earlier one (the driver's fault report)
        restarted = ([bool(r) or self.restarted for r in batch.column("restarted").to_pylist()]
                     if "restarted" in batch.column_names else [self.restarted] * len(items))
        out = batch.drop_columns([c for c in ("scores", "provenance", "restarted") if c in batch.column_names]
                                 + (["record"] if self._drop else []))
        return out.append_column("scores", pa.array(scores, pa.string())).append_column(
            "provenance", pa.array(provs, pa.string())).append_column("restarted", pa.array(restarted, pa.bool_()))


def _restarted() -> bool:
    """Whether Ray restarted this actor (its process or node died before); False outside an actor."""
    import warnings

    try:
        import ray

        with warnings.catch_warnings():  # Ray's own property reads a deprecated one of its own
            warnings.simplefilter("ignore")
            return ray.is_initialized() and bool(ray.get_runtime_context().was_current_actor_reconstructed)
    except Exception:  # not in an actor (a test building one in-process): a first start
        return False
