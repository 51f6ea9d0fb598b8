"""Real engines on the embedded SmolLM2-135M judge: exact (transformers) and top-K (vLLM) probabilities."""

from __future__ import annotations

import pytest

from rubric.errors import ConfigError
from rubric.scoring import ChatPrompt, get_template, parse_score

pytestmark = pytest.mark.slow

QUESTION = "Why is the sky blue?"
ANSWERS = (
    "Because of Rayleigh scattering: air molecules scatter short (blue) wavelengths of sunlight more than red.",
    "sky blue yes",
    "Blue light scatters more. For example, at sunset the light crosses more air, so the sky looks red.",
)
DIGITS = ("1", "2", "3", "4", "5")


def _prompts(version="coherence.geval.v1"):
    t = get_template(version)
    return t, [t.render(question=QUESTION, answer=a) for a in ANSWERS]


def test_candidates_resolve_to_single_tokens(hf_engine):
    digits = hf_engine.candidate_ids(DIGITS)
    assert sorted(digits.values()) == list(DIGITS)  # SmolLM2: '1'..'5', no leading-space variants
    yn = set(hf_engine.candidate_ids(("yes", "no")).values())
    assert {"Ġyes", "Ġno", "yes", "no"} <= yn


def test_chat_template_ends_in_the_prefill(hf_engine):
    text = hf_engine.decode(hf_engine.prompt_ids(ChatPrompt("Rate it.", "- Coherence: ")))
    assert text.endswith("<|im_start|>assistant\n- Coherence: ")


def test_transformers_exact_probabilities_and_batching(hf_engine):
    t, prompts = _prompts()
    batched = hf_engine.score_token_probs(prompts, DIGITS)
    assert len(batched) == 3 and all(set(r) == set(DIGITS) for r in batched)  # full softmax: every token
    for r in batched:
        assert 0.3 < sum(r.values()) <= 1.0  # the pre-fill puts most mass on digits
        assert parse_score(r, t).error is None
    # Left-padded batches give the same numbers as one prompt per call.
    bs = hf_engine.batch_size
    hf_engine.batch_size = 1
    try:
        single = hf_engine.score_token_probs(prompts, DIGITS)
    finally:
        hf_engine.batch_size = bs
    for a, b in zip(batched, single):
        assert a == pytest.approx(b, abs=1e-5)


def test_prompt_over_context_is_refused(hf_engine):
    with pytest.raises(ConfigError, match="max_context"):
        hf_engine.score_token_probs([ChatPrompt("word " * 2000, "- Coherence: ")], DIGITS)


def test_vllm_top_k_probabilities(vllm_engine):
    t, prompts = _prompts()
    out = vllm_engine.score_token_probs(prompts, DIGITS)
    assert len(out) == 3
    for r in out:
        assert set(r) <= set(DIGITS) and sum(r.values()) > 0.3
    from models.manifests import get_profile

    assert vllm_engine.top_k == 20 and vllm_engine.max_context == get_profile("cpu").max_context


def test_backends_agree_on_score_token_probabilities(hf_engine, vllm_engine):
    # Same model, same token ids, fp32 on both: ENGINE-NOTES measured agreement to ~6e-6.
    for version in ("coherence.geval.v1", "use_of_examples.yesno.v1"):
        t, prompts = _prompts(version)
        exact = hf_engine.score_token_probs(prompts, t.score_tokens)
        topk = vllm_engine.score_token_probs(prompts, t.score_tokens)
        for e, k in zip(exact, topk):
            for tok, p in k.items():
                assert p == pytest.approx(e[tok], abs=1e-4)
            # A candidate missing from vLLM's top-20 must be small in the exact distribution.
            for tok in set(e) - set(k):
                assert e[tok] < 0.02
            assert parse_score(k, t).value == pytest.approx(parse_score(e, t).value, abs=2e-3)


def test_greedy_generate_agrees_across_backends(hf_engine, vllm_engine):
    """Claim extraction generates text: both engines continue the same pre-filled prompts greedily,
    in input order, and (fp32, same weights) produce the same words."""
    from rubric.scoring import ChatPrompt

    prompts = [ChatPrompt(user="List two facts about the Moon, one per line.", prefill="- "),
               ChatPrompt(user="Name a primary colour.", prefill="")]
    a = hf_engine.generate(prompts, max_tokens=12)
    b = vllm_engine.generate(prompts, max_tokens=12)
    assert len(a) == len(b) == 2 and all(x.strip() for x in a)
    # compare the first few words: the last token can differ where two logits tie within float noise
    assert [x.split()[:4] for x in a] == [x.split()[:4] for x in b]


def test_kept_busy_vllm_engine_returns_the_sync_numbers_from_concurrent_calls(vllm_engine):
    from concurrent.futures import ThreadPoolExecutor

    batches = [_prompts(v)[1] for v in ("coherence.geval.v1", "relevance.geval.v1", "fluency.geval.v1")]
    sync_probs = [vllm_engine.score_token_probs(b, DIGITS) for b in batches]
    sync_text = vllm_engine.generate(batches[0], max_tokens=6)
    vllm_engine.keep_busy()
    try:
        assert vllm_engine.kept_busy
        with ThreadPoolExecutor(max_workers=4) as pool:
            probs = pool.map(lambda b: vllm_engine.score_token_probs(b, DIGITS), batches)
            text = pool.submit(vllm_engine.generate, batches[0], 6)
            probs = list(probs)
            assert text.result() == sync_text
        for want, got in zip(sync_probs, probs):
            assert len(got) == len(want)
            for w, g in zip(want, got):
                assert set(g) == set(w)
                assert max(abs(g[t] - w[t]) for t in w) < 1e-5
    finally:
        vllm_engine.close()
    assert not vllm_engine.kept_busy

