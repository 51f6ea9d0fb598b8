"""The Ray actor that hosts scorers: built once per process, then fed batch after batch.

``ScorerActor`` is a plain callable class so that Ray Data can run it in a fixed-size actor pool
(``map_batches(ScorerActor, compute=ActorPoolStrategy(size=N), fn_constructor_kwargs=...)``). It
holds no scoring logic: the scorers come from :func:`models.backends.build_scorers`, and a batch is
scored by :func:`workers.local.score_items`, the same function the single-process path uses, so a
bad batch becomes per-row errors in both paths and an engine failure re-raises in both.

Scores travel back as Arrow string columns holding JSON, one per rubric, so that a raw value, an
error reason and rubric-specific extras of any mix of types round-trip exactly (Python's float repr
is exact). Column names: :func:`score_column` and :func:`provenance_column`.

With ``batches_in_flight > 1`` (engine pools) Ray Data calls the actor from that many threads at
once; the actor then hands its LLM engines to an engine loop (:meth:`VLLMEngine.keep_busy`), so
the batches' requests share one running engine while other batches are rendered and written.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rubric.config import ScoringConfig
from rubric.errors import ConfigError
from rubric.io import AnswerItem
from rubric.scoring import RUBRICS
from workers.store import encode_provenance, encode_score

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["ScorerActor", "score_column", "provenance_column"]

log = logging.getLogger(__name__)


def score_column(rubric: str) -> str:
    return f"score__{rubric}"


def provenance_column(rubric: str) -> str:
    return f"prov__{rubric}"


class ScorerActor:
    """Builds the scorers of some rubric versions once, then scores Arrow batches of answers.

    Args:
        versions: rubric versions (``grammar.harper.v1``) this actor serves; all of one resource kind.
        config: the job's scoring settings (``batch_size`` is the scorer batch inside one Ray batch).
        drop_columns: input columns to leave out of the output (the last pool drops the answer text,
            which the driver does not need back).
        fault_marker: testing only. When set and the file does not exist yet, the first batch creates
            it and then kills this worker process, as a node failure would; Ray restarts the actor
            and retries the batch.
        batches_in_flight: Ray batches this actor scores at once (one thread each). Above 1, every
            LLM engine built in this process is kept busy (needs the vllm backend).

    Raises:
        ConfigError: no versions, ``batches_in_flight < 1``, or above 1 without a vLLM engine to keep busy.
    """

    def __init__(self, versions: Sequence[str], config: ScoringConfig, *, drop_columns: Sequence[str] = (),
                 fault_marker: str | None = None, batches_in_flight: int = 1) -> None:
        from models.backends import build_scorers  # heavy backends import lazily inside their factories

        if not versions:
            raise ConfigError("a ScorerActor needs at least one rubric version")
        if batches_in_flight < 1:
            raise ConfigError(f"'batches_in_flight' must be >= 1, got {batches_in_flight}")
        self._specs = [RUBRICS.get(v) for v in versions]
        self._config = config
        self._fault_marker = fault_marker
        self._drop = list(drop_columns)
        self._scorers = build_scorers(self._specs, config)
        self.batches_in_flight = batches_in_flight
        if batches_in_flight > 1:
            from models.llm.engines_cache import keep_engines_busy

            keep_engines_busy(config)
        self._provenance = {s.name: encode_provenance(sc.provenance(s.name))
                            for sc in self._scorers for s in sc.specs}
        log.info("scorer actor pid %d ready for %s", os.getpid(), ", ".join(versions))

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
        log.warning("fault injection: scorer actor pid %d exits mid-batch", os.getpid())
        os._exit(1)

    def __call__(self, batch: "pa.Table") -> "pa.Table":
        """Score one batch; returns it with a score and a provenance column per rubric appended."""
        import pyarrow as pa

        from workers.local import score_items

        self._maybe_die()
        cols = {name: batch.column(name).to_pylist()
                for name in ("answer_id", "question", "answer", "docs", "reference")}
        items = [AnswerItem(answer_id=a, question=q, answer=t, docs=tuple(json.loads(d)), reference=r)
                 for a, q, t, d, r in zip(cols["answer_id"], cols["question"], cols["answer"], cols["docs"],
                                          cols["reference"])]
        run = score_items(items, self._scorers, batch_size=self._config.batch_size, progress=False)
        for spec in self._specs:
            scores = run.scores[spec.name]
            batch = batch.append_column(score_column(spec.name),
                                        pa.array([encode_score(s) for s in scores], type=pa.string()))
            batch = batch.append_column(provenance_column(spec.name),
                                        pa.array([self._provenance[spec.name]] * len(items), type=pa.string()))
        return batch.drop_columns(self._drop) if self._drop else batch
