"""``lfqa-rubric encoder``: train (or apply) the trained-encoder baseline on a score output.

One straight line: read ``OUT/answers.parquet`` and ``OUT/pairs.parquet`` -> embed each distinct
answer once (``models.baselines.encoder.SentenceEncoder``, batched) -> fit the head on the training split's
a/b pairs, or load a trained one -> P(a) for every pair -> write the head (``head.safetensors`` +
``head.json``) and ``OUT/encoder_predictions.parquet`` (``pair_id``, ``system``, ``p_a``,
``predicted``, ``split``), and report test accuracy with a question-clustered CI.
"""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path

import numpy as np


__all__ = ["PREDICTIONS_FILE", "run_encoder_job", "embed_answers"]

log = logging.getLogger(__name__)

#: The predictions file, written into the score output folder (``analyze`` reads it there).
PREDICTIONS_FILE = "encoder_predictions.parquet"


def embed_answers(encoder, answer_ids, questions, answers, *, chunk: int = 256, progress: bool = False) -> dict:
    """answer_id -> embedding, each distinct answer embedded once, in chunks (with a progress bar).

    Args:
        encoder: a ``models.baselines.encoder.SentenceEncoder``.
        answer_ids: the answers' ids (duplicates are embedded once).
        questions: each answer's question.
        answers: each answer's text.
        chunk: answers per ``encode`` call (the encoder batches inside it).
        progress: show a tqdm bar.
    """
    from tqdm import tqdm

    todo: dict[str, tuple[str, str]] = {}
    for aid, q, a in zip(answer_ids, questions, answers):
        todo.setdefault(aid, (q, a))
    ids = list(todo)
    out: dict[str, np.ndarray] = {}
    with tqdm(total=len(ids), desc="embedding answers", disable=not progress, unit="answer") as bar:
        for i in range(0, len(ids), chunk):
            part = ids[i:i + chunk]
            emb = encoder.encode_answers([todo[x][0] for x in part], [todo[x][1] for x in part])
            out.update(zip(part, emb))
            bar.update(len(part))
    return out


def run_encoder_job(outdir: str | Path, *, out: str | Path | None = None, head_dir: str | Path | None = None,
                    predictions: str | Path | None = None, encoder: str | None = None, device: str | None = None,
                    batch_size: int = 32, C: float | str = "cv", split: str = "train", n_boot: int = 1000,
                    seed: int = 0, progress: bool = True, force: bool = False) -> dict:
    """Train the encoder baseline on a score output's split (or apply a trained one) and predict every pair.

    Args:
        outdir: a ``score`` output folder.
        out: the head folder to write (default ``OUTDIR/encoder``); not written when ``head_dir`` is given.
        head_dir: a trained head to apply instead of training one (its encoder is loaded).
        predictions: the predictions file (default ``OUTDIR/encoder_predictions.parquet``).
        encoder: the encoder (Hub id or folder); None for the packaged all-MiniLM-L6-v2.
        device: torch device.
        batch_size: texts per forward pass.
        C: the head's regularisation, or "cv" to choose it by cross-validation over questions
            (``rubric.preference.selection.cross_validate_C``) on the training split.
        split: the split to train on ("all" for every pair: then the test numbers are in-sample).
        n_boot: question-clustered bootstrap replicates of the test CI.
        seed: bootstrap seed.
        progress: show progress bars.
        force: write the head into a folder that is not an lfqa-rubric output (``workers.storage.outdir.OutputFolder``).

    The head folder is an output folder of its own (locked, ours or refused, published with a
    manifest). The predictions are written through ``workers.storage.outdir.output_file``; inside the score
    folder they are recorded in its manifest (``added``): they are made from its tables, so the next
    score run there removes them instead of leaving them beside other tables. While the job writes into
    the score folder it holds that folder, so a score run cannot publish into it meanwhile (and this job
    is refused while one is running).

    Returns:
        A summary: the head folder, the predictions file, the training facts and the test metrics.

    Raises:
        InputError: the score output is missing or lacks answer texts.
        ConfigError: the training split has no a/b pairs, or ``C`` is invalid; an output folder is in use,
            not ours, or overlaps the inputs.
    """
    from workers.storage.outdir import OutLock, out_path

    outdir = out_path(outdir)
    head_folder = None if head_dir is not None else (out_path(out) if out is not None else outdir / "encoder")
    pred_path = out_path(predictions) if predictions is not None else outdir / PREDICTIONS_FILE
    writes_here = any(p is not None and outdir.resolve() in (p.resolve(), *p.resolve().parents)
                      for p in (head_folder, pred_path))
    with OutLock(outdir) if writes_here else contextlib.nullcontext():
        return _encoder(outdir, head_folder, head_dir, pred_path, encoder=encoder, device=device,
                        batch_size=batch_size, C=C, split=split, n_boot=n_boot, seed=seed, progress=progress,
                        force=force)


def _encoder(outdir: Path, head_folder: Path | None, head_dir, pred_path: Path, *, encoder, device, batch_size: int,
             C, split: str, n_boot: int, seed: int, progress: bool, force: bool) -> dict:
    """Read, embed, fit or load, predict, write (the science is ``rubric.preference``'s encoder baseline)."""
    import pyarrow.parquet as pq

    from models.baselines import (HEAD_JSON, HEAD_WEIGHTS, PreferenceHead, SentenceEncoder, load_encoder_baseline,
                                  system_name)
    from rubric.preference import (encoder_pairs, encoder_predictions_table, encoder_test_metrics, fit_encoder_head,
                                   pair_differences, read_output_table, read_pairs)
    from workers.storage.outdir import TOOL, OutputFolder, output_file

    t0 = time.perf_counter()
    pairs = encoder_pairs(read_output_table(outdir, "answers"), read_pairs(outdir), where=str(outdir))
    if head_dir is not None:
        enc, head = load_encoder_baseline(head_dir, device=device, batch_size=batch_size)
    else:
        enc, head = SentenceEncoder(encoder, device=device, batch_size=batch_size), None
    t_load = time.perf_counter()
    ids = pairs.answer_ids()
    emb = embed_answers(enc, ids, [pairs.text[a][0] for a in ids], [pairs.text[a][1] for a in ids], progress=progress)
    t_embed = time.perf_counter()
    X = pair_differences(pairs, emb)
    system = system_name(enc.model_id)
    info: dict = {}
    if head is None:
        head = PreferenceHead()
        info = fit_encoder_head(head, X, pairs, split=split, C=C, trained_on=str(outdir))
    t_fit = time.perf_counter()
    p_a = head.predict_proba(X)[:, list(head.classes_).index("a")]
    trained = info.get("question_hashes", head.metadata_.get("question_hashes"))
    predicted, metrics = encoder_test_metrics(system, p_a, pairs, trained, n_boot=n_boot, seed=seed)
    if metrics is None:
        log.warning("the test split of %s has no pairs labelled 'a' or 'b': no test accuracy", outdir)
    else:
        v, ci = metrics["values"], metrics["ci"]
        log.info("%s on the test split: accuracy %.4f (95%% CI %.4f-%.4f, question-clustered bootstrap; %d pairs, "
                 "%d questions)", system, v["accuracy"], ci["accuracy"][0], ci["accuracy"][1], metrics["n"],
                 metrics["n_questions"])
    tables = [outdir / "answers.parquet", outdir / "pairs.parquet"]
    if head_folder is not None:
        with OutputFolder(head_folder, outputs=(HEAD_WEIGHTS, HEAD_JSON), inputs=tables, force=force) as folder:
            staging = folder.staging()
            try:
                head.save(staging, encoder=enc.describe(), system=system, test=metrics, **info)
                folder.publish({n: staging / n for n in (HEAD_WEIGHTS, HEAD_JSON)},
                               {"tool": TOOL, "kind": "encoder", "system": system, "trained_on": str(outdir)})
            finally:
                folder.remove(staging)
        log.info("head written to %s (%s, %s)", head_folder, HEAD_WEIGHTS, HEAD_JSON)
    with output_file(pred_path, inputs=tables, register=pred_path.parent.resolve() == outdir.resolve()) as tmp:
        pq.write_table(encoder_predictions_table(pairs, system, p_a, predicted, trained), tmp)
    timings = {"load": round(t_load - t0, 3), "embed": round(t_embed - t_load, 3), "fit": round(t_fit - t_embed, 3),
               "total": round(time.perf_counter() - t0, 3)}
    log.info("%d answers embedded (%d forward passes), %d pairs predicted -> %s; timings %s", len(ids), enc.n_encoded,
             len(p_a), pred_path, timings)
    return {"system": system, "head": None if head_folder is None else str(head_folder),
            "predictions": str(pred_path), "encoder": enc.describe(), "train": info, "test": metrics,
            "n_answers": len(ids), "n_pairs": len(p_a), "timings_s": timings}
