"""The torch paths on CUDA, set against the same code on CPU: skipped where no CUDA device is visible.

CI has no GPU, so these run only on a lent GPU machine (docs/llm.md says which run, where and with
what result). Three models: the embedded SmolLM2-135M judge through the transformers engine, a
tiny BERT classifier built here through the SubjECTive-QA specificity scorer, and the packaged
all-MiniLM-L6-v2 through the sentence encoder (signals, encoder baseline).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from rubric.scoring import ChatPrompt, get_template, parse_score  # noqa: E402
from rubric.io.records import AnswerItem  # noqa: E402
from tests.models.llm.conftest import TEST_CONTEXT  # noqa: E402
from tests.models.test_specificity import SPEC, _text, tiny_model  # noqa: E402,F401  - the fixture too

pytestmark = [pytest.mark.gpu, pytest.mark.slow,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device visible")]

QUESTION = "Why is the sky blue?"
ANSWERS = (
    "Because of Rayleigh scattering: air molecules scatter short (blue) wavelengths of sunlight more than red.",
    "sky blue yes",
    "Blue light scatters more. For example, at sunset the light crosses more air, so the sky looks red. "
    "The same happens with smoke, which makes distant hills look bluish.",
)
VERSIONS = ("coherence.geval.v1", "relevance.geval.v1", "fluency.geval.v1", "completeness.geval.v1",
            "use_of_examples.yesno.v1")


def _engine(path, device, dtype, batch_size=8):
    from models.llm.hf_engine import TransformersEngine
    from models.manifests import get_profile

    m = get_profile("cpu").manifest
    return TransformersEngine(str(path), model_id=m.id, revision=m.revision, max_context=TEST_CONTEXT,
                              device=device, dtype=dtype, batch_size=batch_size)


@pytest.fixture(scope="module")
def engines(smollm2_path):
    return {"cpu": _engine(smollm2_path, "cpu", "float32"),
            "cuda32": _engine(smollm2_path, "cuda", "float32"),
            "cuda16": _engine(smollm2_path, "cuda", None)}


def _all_prompts():
    for v in VERSIONS:
        t = get_template(v)
        yield t, [t.render(question=QUESTION, answer=a) for a in ANSWERS]


def test_default_on_cuda_is_bfloat16_on_the_gpu(engines):
    e = engines["cuda16"]
    assert e.device == "cuda" and e.model.dtype == torch.bfloat16
    assert next(e.model.parameters()).is_cuda


def test_cuda_float32_gives_the_cpu_probabilities(engines):
    """Same weights, same token ids, fp32 on both devices: the score-token distributions agree."""
    worst = 0.0
    for t, prompts in _all_prompts():
        cpu = engines["cpu"].score_token_probs(prompts, t.score_tokens)
        gpu = engines["cuda32"].score_token_probs(prompts, t.score_tokens)
        for a, b in zip(cpu, gpu):
            assert set(a) == set(b) and a
            for tok in a:
                worst = max(worst, abs(a[tok] - b[tok]))
                assert b[tok] == pytest.approx(a[tok], abs=1e-3)
            assert parse_score(b, t).value == pytest.approx(parse_score(a, t).value, abs=5e-3)
    print(f"\nfloat32 cuda vs cpu: max |p diff| = {worst:.2e}")


def test_cuda_bfloat16_scores_stay_close_to_float32(engines):
    """bf16 (the GPU default) moves the weighted score a little, never the scale: recorded, bounded."""
    diffs = []
    for t, prompts in _all_prompts():
        ref = engines["cpu"].score_token_probs(prompts, t.score_tokens)
        got = engines["cuda16"].score_token_probs(prompts, t.score_tokens)
        for a, b in zip(ref, got):
            sa, sb = parse_score(a, t), parse_score(b, t)
            assert sa.error is None and sb.error is None
            diffs.append(abs(sa.value - sb.value))
    print(f"\nbfloat16 cuda vs float32 cpu, {len(diffs)} scores: max |diff| = {max(diffs):.3f}, "
          f"mean = {sum(diffs) / len(diffs):.3f}")
    assert sum(diffs) / len(diffs) < 0.1 and max(diffs) < 0.5


def test_cuda_left_padded_batches_equal_one_prompt_per_call(smollm2_path, engines):
    t, prompts = next(_all_prompts())
    batched = engines["cuda32"].score_token_probs(prompts, t.score_tokens)
    single = _engine(smollm2_path, "cuda", "float32", batch_size=1).score_token_probs(prompts, t.score_tokens)
    for a, b in zip(batched, single):
        assert a == pytest.approx(b, abs=1e-4)


def test_cuda_greedy_generate_matches_cpu(engines):
    prompts = [ChatPrompt(user="List two facts about the Moon, one per line.", prefill="- "),
               ChatPrompt(user="Name a primary colour.", prefill="")]
    a = engines["cpu"].generate(prompts, max_tokens=12)
    b = engines["cuda32"].generate(prompts, max_tokens=12)
    assert all(x.strip() for x in b)
    # the first words: a later token can differ where two logits tie within float noise
    assert [x.split()[:4] for x in a] == [x.split()[:4] for x in b]


def test_cuda_seeded_sampling_is_reproducible(engines):
    p = [ChatPrompt(user="Name a primary colour.", prefill="")]
    e = engines["cuda32"]
    one = e.generate(p, max_tokens=8, temperature=1.0, n=3, seed=7)
    two = e.generate(p, max_tokens=8, temperature=1.0, n=3, seed=7)
    assert one == two and len(one[0]) == 3


def test_specificity_classifier_on_cuda_matches_cpu(tiny_model):
    from models.rubric_backends.specificity import SubjectiveQAScorer

    items = [AnswerItem("long", "why is the sky blue ?", _text(900, 1)),  # several 512-token windows
             AnswerItem("short", "why is the sky red ?", "because light scatters ."),
             AnswerItem("mid", "why ?", _text(700, 2))]
    cpu = SubjectiveQAScorer((SPEC,), model=str(tiny_model), device="cpu", batch_size=2).score_batch(items)
    gpu_scorer = SubjectiveQAScorer((SPEC,), model=str(tiny_model), device="cuda", batch_size=2)
    assert next(gpu_scorer.model.parameters()).is_cuda
    gpu = gpu_scorer.score_batch(items)
    for a, b in zip(cpu, gpu):
        sa, sb = a["specificity"], b["specificity"]
        assert sa.error is None and sb.error is None
        assert sb.extras["n_windows"] == sa.extras["n_windows"]
        assert sb.raw == pytest.approx(sa.raw, abs=1e-4)
    assert gpu[0]["specificity"].extras["n_windows"] == 3


def test_minilm_encoder_on_cuda_matches_cpu():
    import numpy as np

    from models.baselines.encoder import SentenceEncoder
    from rubric.errors import BackendUnavailableError

    try:
        cpu = SentenceEncoder(device="cpu")
    except BackendUnavailableError as e:
        pytest.skip(f"packaged MiniLM unavailable: {e}")
    gpu = SentenceEncoder(device="cuda")
    assert str(gpu.model.device).startswith("cuda")
    texts = [QUESTION, *ANSWERS, "word " * 400]  # the last one is cut at the encoder's 256 word pieces
    a, b = cpu.encode(texts), gpu.encode(texts)
    assert a.shape == b.shape == (len(texts), cpu.dim) and b.dtype == np.float32
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    print(f"\nMiniLM cuda vs cpu: min cosine {cos.min():.7f}, max |diff| {np.abs(a - b).max():.2e}")
    assert cos.min() > 0.9999 and np.abs(a - b).max() < 1e-3
