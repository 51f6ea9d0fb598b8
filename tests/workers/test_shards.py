"""Shard discovery, hashing and reading (workers/storage/shards.py), shared by both job paths."""

import pytest

from rubric.errors import InputError
from rubric.io import read_whole as read_shard
from workers.storage.shards import list_shards, shard_name, shard_sha256

OPTIONS = {"max_pairs_per_question": 4}


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


def test_sha256_sees_a_change_at_the_same_path(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"a": 1}\n')
    before = shard_sha256(str(p))
    assert before == shard_sha256(f"file://{p}")
    p.write_text('{"a": 2}\n')
    assert shard_sha256(str(p)) != before
    with pytest.raises(InputError, match="cannot read"):
        shard_sha256(str(tmp_path / "gone.jsonl"))
