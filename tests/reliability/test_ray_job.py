"""Repro: the Ray path assigned splits and fitted rescaling per shard.

A question whose pairs sat in two shards could land in train and in test at once, and
``--rescale fitted`` gave each shard its own bounds. Now the shards are scored on Ray and the job is
assembled once: one split per question, one set of bounds, and the same tables as the
single-process job on the concatenated rows.
"""

import json
from importlib import resources

import pyarrow.parquet as pq

from rubric.config import ScoringConfig
from rubric.scoring import resolve_rubrics
from workers.jobs.score import run_job
from tests.workers.conftest import run_ray_job

SAMPLE = resources.files("rubric") / "data" / "sample_pairs.jsonl"


def _write(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_fitted_rescale_and_splits_are_fitted_once_over_shards(ray_local, tmp_path):
    recs = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").split("\n") if line.strip()]
    recs = [{**r, "id": r.get("id") or f"rec-{i}"} for i, r in enumerate(recs)]
    # each question's pairs dealt to different shards, one shard per position: questions cross shards
    (tmp_path / "in").mkdir()
    shards = [_write(tmp_path / "in" / f"s{k}.jsonl", recs[k::4]) for k in range(4)]
    concat = _write(tmp_path / "all.jsonl", [r for k in range(4) for r in recs[k::4]])
    specs = resolve_rubrics("length")  # what is fitted once is the job's assembly, whatever the rubric
    config = ScoringConfig(batch_size=8, rescale="fitted")
    run_ray_job([tmp_path / "in"], "lfqa-hp", specs, tmp_path / "ray", config=config, progress=False)
    run_job(concat, "lfqa-hp", specs, tmp_path / "local", config=config, progress=False)

    assert (tmp_path / "ray" / "rescale.json").read_text() == (tmp_path / "local" / "rescale.json").read_text()
    assert not list((tmp_path / "ray").glob("s*/rescale.json")), "no per-shard bounds"
    for name in ("answers.parquet", "pairs.parquet"):
        a, b = pq.read_table(tmp_path / "ray" / name), pq.read_table(tmp_path / "local" / name)
        if name == "pairs.parquet":
            a, b = a.drop_columns(["row"]), b.drop_columns(["row"])
        assert a.equals(b, check_metadata=True), name
    splits_of_q: dict = {}
    for r in pq.read_table(tmp_path / "ray" / "pairs.parquet").to_pylist():
        splits_of_q.setdefault(r["question_id"], set()).add(r["split"])
    assert all(len(s) == 1 for s in splits_of_q.values())
    questions_in = [{json.loads(x).get("question_text") for x in s.read_text().split("\n") if x} for s in shards]
    assert any(len({k for k, qs in enumerate(questions_in) if q in qs}) > 1 for q in set().union(*questions_in))
