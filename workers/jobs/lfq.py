"""The long-form question filter over one input (paper appendix A.4): its questions -> the LLM's yes/no -> a table."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rubric.config import ScoringConfig

__all__ = ["run_lfq_job"]

log = logging.getLogger(__name__)


def run_lfq_job(path: str | Path, fmt: str, out: str | Path, *, config: ScoringConfig,
                reader_options: Mapping[str, Any]) -> None:
    """Classify each question of ``path`` as long-form or not; write ``out`` (Parquet, one row per question).

    Raises:
        BackendUnavailableError: no LLM engine (before the input is read).
        ConfigError: ``out`` is the input, a link, or in a folder another command is writing into.
    """
    from models.backends import check_backends
    from workers.storage.outdir import output_file

    # the table's folder is held from here on (a folder another command writes into is refused like score's)
    with output_file(out, inputs=[path]) as tmp:
        check_backends([], config, backends=["llm"])  # a missing engine package stops here, before reading
        _classify(path, fmt, out, tmp, config=config, reader_options=reader_options)


def _classify(path, fmt: str, out, tmp, *, config: ScoringConfig, reader_options: Mapping[str, Any]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from models.llm import build_engine, classify_questions
    from rubric.scoring import LFQ_FILTER_VERSION
    from rubric.io import read_input

    read = read_input(path, fmt, **reader_options)
    questions: dict[str, str] = {}
    n_pairs: dict[str, int] = {}
    for p in read.pairs:
        questions.setdefault(p.question_id, p.question)
        n_pairs[p.question_id] = n_pairs.get(p.question_id, 0) + 1
    engine = build_engine(config)
    qids = list(questions)
    decisions = classify_questions(engine, [questions[q] for q in qids])
    table = pa.table({
        "question_id": qids, "question": [questions[q] for q in qids], "n_pairs": [n_pairs[q] for q in qids],
        "is_lfq": [d.is_lfq for d in decisions], "p_yes": [d.p_yes for d in decisions],
        "log_score": [d.log_score for d in decisions], "confident": [d.confident for d in decisions],
        "error": [d.error for d in decisions],
        "model": [engine.model_id] * len(qids), "template": [LFQ_FILTER_VERSION] * len(qids),
    })
    pq.write_table(table, tmp)
    kept = sum(1 for d in decisions if d.is_lfq and d.confident)
    log.info("%d questions: %d long-form with confidence (log_score = 0), %d long-form, %d errors -> %s",
             len(qids), kept, sum(1 for d in decisions if d.is_lfq), sum(1 for d in decisions if d.error), out)
