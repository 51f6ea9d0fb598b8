"""The Ray score step against the single-process path: the same job, the same tables, nothing lost.

The Ray tests share the session's 2-CPU local Ray (``ray_local``). Inputs are the bundled sample's
records dealt round-robin into three shards, so questions cross shards. The job against the
single-process one and its resume use a spaCy rubric (a model loaded in the actor); the tests of how
rows travel (a killed actor, an unreadable shard, the dedupe shuffle) use answer length, which loads
nothing, because what they check does not depend on the rubric (each Ray job starts its actors anew).
"""

import json
from importlib import resources

import pyarrow.parquet as pq
import pytest

from rubric.config import ScoringConfig
from rubric.errors import ConfigError, InputError
from rubric.scoring import resolve_rubrics
from workers.jobs.score import run_job
from models.backends import pool_of_backend
from tests.workers.conftest import run_ray_job
from workers.cluster.pipeline import PoolConfig

RUBRICS = "conciseness"
#: for the tests whose subject is the rows, not the scores: no model to load in each job's actors
PLUMBING = "length"
CONFIG = ScoringConfig(batch_size=8)
TABLES = ("answers.parquet", "pairs.parquet")
SAMPLE = resources.files("rubric") / "data" / "sample_pairs.jsonl"


@pytest.fixture(scope="module")
def specs():
    pytest.importorskip("spacy")
    return resolve_rubrics(RUBRICS)


@pytest.fixture(scope="module")
def plumbing():
    return resolve_rubrics(PLUMBING)


def _write(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Three shards (round-robin: questions cross shards) and their concatenation as one file."""
    recs = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").split("\n") if line.strip()]
    recs = [{**r, "id": r.get("id") or f"rec-{i}"} for i, r in enumerate(recs)]
    folder = tmp_path_factory.mktemp("shards")
    shards = [_write(folder / f"part{k}.jsonl", recs[k::3]) for k in range(3)]
    concat = _write(tmp_path_factory.mktemp("concat") / "all.jsonl", [r for k in range(3) for r in recs[k::3]])
    return folder, shards, concat


@pytest.fixture(scope="module")
def local_outputs(inputs, specs, plumbing, tmp_path_factory):
    """The single-process job: over the three shards, and over their concatenation; and the length job."""
    _, shards, concat = inputs
    out = tmp_path_factory.mktemp("local")
    run_job(shards, "lfqa-hp", specs, out / "shards", config=CONFIG, progress=False)
    run_job(concat, "lfqa-hp", specs, out / "concat", config=CONFIG, progress=False)
    run_job(shards, "lfqa-hp", plumbing, out / "length", config=CONFIG, progress=False)
    return out


@pytest.fixture(scope="module")
def ray_run(ray_local, inputs, specs, tmp_path_factory):
    folder, _, _ = inputs
    out = tmp_path_factory.mktemp("ray")
    manifest = run_ray_job([folder], "lfqa-hp", specs, out, config=CONFIG, progress=False)
    return out, manifest


def _assert_same_outputs(got, want, drop=()):
    for name in TABLES:
        a, b = pq.read_table(got / name), pq.read_table(want / name)
        if drop and name == "pairs.parquet":
            a, b = a.drop_columns(list(drop)), b.drop_columns(list(drop))
        assert a.schema == b.schema, name
        assert a.equals(b, check_metadata=True), name
    ga, wa = json.loads((got / "manifest.json").read_text()), json.loads((want / "manifest.json").read_text())
    assert ga["counts"] == wa["counts"] and ga["rubrics"] == wa["rubrics"]


# ---------------------------------------------------------------------------------------------
# On Ray
# ---------------------------------------------------------------------------------------------


def test_ray_job_matches_single_process_including_questions_across_shards(ray_run, local_outputs, inputs):
    out, manifest = ray_run
    _, shards, _ = inputs
    # the same shards: identical tables, rejects and accounting
    _assert_same_outputs(out, local_outputs / "shards")
    assert (out / "rejects.jsonl").read_text() == (local_outputs / "shards" / "rejects.jsonl").read_text()
    # the concatenated rows in one file: identical but for the row number, which is per input file
    _assert_same_outputs(out, local_outputs / "concat", drop=("row",))
    pairs = pq.read_table(out / "pairs.parquet").to_pylist()
    splits_of_q: dict = {}
    for r in pairs:
        splits_of_q.setdefault(r["question_id"], set()).add(r["split"])
    assert all(len(s) == 1 for s in splits_of_q.values()), "a question sits in two splits"
    shards_of_q: dict = {}
    for k, p in enumerate(shards):
        for line in p.read_text().split("\n"):
            if line.strip():
                shards_of_q.setdefault(json.loads(line).get("question_text"), set()).add(k)
    assert sum(len(v) > 1 for v in shards_of_q.values()) >= 3, "the test needs questions that cross shards"
    c = manifest["counts"]
    assert c["rows_in"] == c["rows_ok"] + c["rejected"] == 33
    # the default global dedupe scores each answer once across shards
    assert manifest["job"]["runner"] == "ray" and manifest["job"]["answers_scored_now"] >= c["unique_answers"]
    assert [i["status"] for i in manifest["inputs"]] == ["scored"] * 3
    assert not (out / "part0").exists(), "one layout for both paths: no per-shard table folders"


def test_rerun_rescores_nothing_and_repairs_a_damaged_store(ray_run, inputs, specs):
    out, first = ray_run
    folder, shards, _ = inputs
    again = run_ray_job([folder], "lfqa-hp", specs, out, config=CONFIG, progress=False)
    assert again["job"]["answers_scored_now"] == 0
    assert [i["status"] for i in again["inputs"]] == ["reused"] * 3
    assert again["counts"] == first["counts"]
    saved = pq.read_table(out / "answers.parquet")
    # a shard whose store lost its completion mark is scored again, alone
    (out / "scores" / shards[2].stem / "done.json").unlink()
    repaired = run_ray_job([folder], "lfqa-hp", specs, out, config=CONFIG, progress=False)
    assert [i["status"] for i in repaired["inputs"]] == ["reused", "reused", "scored"]
    assert repaired["job"]["answers_scored_now"] == 0  # every answer was still stored: none is sent out
    assert pq.read_table(out / "answers.parquet").equals(saved)
    # a partial store (the local step's resume rule): only the answers it lacks are sent to the pools
    store = out / "scores" / shards[1].stem
    (store / "done.json").unlink()
    parts = sorted(store.glob("part-*.parquet"))
    lost = sum(pq.read_table(p).num_rows for p in parts[len(parts) // 2:])
    for p in parts[len(parts) // 2:]:
        p.unlink()
    resumed = run_ray_job([folder], "lfqa-hp", specs, out, config=CONFIG, progress=False, global_dedupe=False)
    assert 0 < resumed["job"]["answers_scored_now"] == lost
    assert pq.read_table(out / "answers.parquet").equals(saved)


def test_killed_actor_loses_nothing(ray_local, inputs, plumbing, local_outputs, tmp_path):
    folder, _, _ = inputs
    marker = tmp_path / "actor-died"
    run_ray_job([folder], "lfqa-hp", plumbing, tmp_path / "out", config=CONFIG, progress=False,
                fault_marker=str(marker))
    assert marker.is_file(), "the fault was not injected: no actor died"
    _assert_same_outputs(tmp_path / "out", local_outputs / "length")


def test_unreadable_shard_stops_before_tables(ray_local, inputs, plumbing, tmp_path):
    _, shards, _ = inputs
    bad = tmp_path / "broken.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="broken.json.*not valid JSON"):
        run_ray_job([shards[0], bad], "lfqa-hp", plumbing, tmp_path / "out", config=CONFIG, progress=False)
    assert not (tmp_path / "out" / "pairs.parquet").exists()
    assert (tmp_path / "out" / "scores" / shards[0].stem / "done.json").is_file()


def test_global_dedupe_scores_a_shared_answer_once(ray_local, inputs, plumbing, tmp_path):
    _, shards, _ = inputs
    twin = tmp_path / "twin.jsonl"  # shard 0 again, with other pair ids: every answer is shared
    _write(twin, [{**json.loads(line), "id": f"twin-{i}"}
                  for i, line in enumerate(shards[0].read_text().split("\n")) if line.strip()])
    m = run_ray_job([shards[0], shards[1], twin], "lfqa-hp", plumbing, tmp_path / "out", config=CONFIG,
                    progress=False, global_dedupe=True, read_concurrency=1)
    per_shard = run_ray_job([shards[0], shards[1], twin], "lfqa-hp", plumbing, tmp_path / "per_shard", config=CONFIG,
                            progress=False, global_dedupe=False)
    ref = run_job([shards[0], shards[1], twin], "lfqa-hp", plumbing, tmp_path / "local", config=CONFIG, progress=False)
    assert m["counts"] == ref["counts"] == per_shard["counts"]
    # without the shuffle Ray scores the twin's answers again; with it, each unique answer once, exactly as
    # the single-process path does (it looks every answer up across shards before scoring it)
    assert m["job"]["answers_scored_now"] == ref["job"]["answers_scored_now"] == ref["counts"]["unique_answers"]
    assert per_shard["job"]["answers_scored_now"] > m["job"]["answers_scored_now"]
    assert m["job"]["read_concurrency"] == 1 and per_shard["job"]["read_concurrency"] is None
    _assert_same_outputs(tmp_path / "out", tmp_path / "local")


# ---------------------------------------------------------------------------------------------
# Without Ray
# ---------------------------------------------------------------------------------------------


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


def test_read_concurrency_below_one_is_refused_before_ray_starts(inputs, specs, tmp_path):
    _, shards, _ = inputs
    with pytest.raises(ConfigError, match="'read_concurrency' must be >= 1 or None, got 0"):
        run_ray_job([shards[0]], "lfqa-hp", specs, tmp_path / "out", config=CONFIG, progress=False,
                    read_concurrency=0)


def test_shutdown_ray_finalizes_unreachable_objects_while_ray_is_still_connected(monkeypatch):
    """Garbage holding Ray objects is finalized before ``ray.shutdown()``, not later in whichever thread the
    collector next runs in (after a shutdown, a call into Ray's core worker ends the process with exit 1)."""
    import gc

    import ray

    from workers.cluster.pipeline import shutdown_ray

    events: list[str] = []

    class HoldsARayObject:
        def __del__(self):
            events.append("finalized" if not events else f"finalized after {events[-1]}")

    monkeypatch.setattr(ray, "is_initialized", lambda: "shutdown" not in events)  # connected until shut down
    monkeypatch.setattr(ray, "shutdown", lambda: events.append("shutdown"))
    gc.disable()  # the cycle below stays until a collection, as between two automatic collections
    try:
        a, b = HoldsARayObject(), HoldsARayObject()
        a.other, b.other = b, a
        del a, b
        shutdown_ray()
    finally:
        gc.enable()
    assert events[-1] == "shutdown" and events[:-1] == ["finalized", "finalized after finalized"], events
