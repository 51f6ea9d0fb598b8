"""rubric.io.outputs: the one manifest reader and the published-set checks, on folders built here."""
from __future__ import annotations

import json
import os

import pytest

from rubric.errors import InputError
from rubric.io.outputs import MANIFEST, PUBLISHING, check_published, folder_state, read_manifest


def _published(tmp_path, files: dict[str, bytes]):
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / MANIFEST).write_text(json.dumps({"published": {k: len(v) for k, v in files.items()}}))
    return tmp_path


def test_read_manifest_absent_is_empty_and_a_good_one_is_read(tmp_path):
    assert read_manifest(tmp_path) == {}
    _published(tmp_path, {"a.parquet": b"xy"})
    assert read_manifest(tmp_path) == {"published": {"a.parquet": 2}}


@pytest.mark.parametrize("body, why", [("{not json", "not JSON"), ("[1, 2]", "JSON object")])
def test_read_manifest_refuses_what_is_not_a_json_object(tmp_path, body, why):
    (tmp_path / MANIFEST).write_text(body)
    with pytest.raises(InputError, match=why):
        read_manifest(tmp_path)


def test_read_manifest_refuses_a_link(tmp_path):
    (tmp_path / "elsewhere.json").write_text("{}")
    os.symlink(tmp_path / "elsewhere.json", tmp_path / MANIFEST)
    with pytest.raises(InputError, match="symbolic link"):
        read_manifest(tmp_path)


def test_check_published_vouches_for_one_complete_set(tmp_path):
    out = _published(tmp_path, {"a.parquet": b"xy", "b.json": b"{}"})
    assert check_published(out)["published"] == {"a.parquet": 2, "b.json": 2}
    (out / "b.json").write_bytes(b"{ }")
    with pytest.raises(InputError, match="mixes two runs"):
        check_published(out)
    (out / "b.json").unlink()
    with pytest.raises(InputError, match="is missing though"):
        check_published(out)


def test_check_published_refuses_a_publish_in_progress_and_ignores_a_damaged_manifest(tmp_path):
    out = _published(tmp_path, {"a.parquet": b"xy"})
    (out / PUBLISHING).write_text("")
    with pytest.raises(InputError, match="being written"):
        check_published(out)
    (out / PUBLISHING).unlink()
    (out / MANIFEST).write_text("{damaged")
    assert check_published(out) == {}  # vouches for nothing; the tables are read as they are


def test_folder_state_sees_a_replaced_file_and_reads_a_single_file_as_itself(tmp_path):
    out = _published(tmp_path, {"a.parquet": b"xy"})
    before = folder_state(out)
    assert [s[0] for s in before] == ["a.parquet", MANIFEST]
    assert folder_state(out) == before
    (out / "a.tmp").write_bytes(b"xz")
    os.replace(out / "a.tmp", out / "a.parquet")  # a publish: same size, new inode
    assert folder_state(out) != before
    single = folder_state(out / "a.parquet")
    assert len(single) == 1 and single[0][0] == "a.parquet"
    assert folder_state(tmp_path / "gone") == ()


def test_a_table_read_with_its_manifests_digest_is_that_runs_or_refused(tmp_path):
    """``read_parquet(sha256=...)`` checks the bytes of the one open file it reads: a table replaced since the
    manifest was read is refused in one line, never read as the manifest's run."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rubric.io import file_sha256, read_parquet

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), path)
    digest = file_sha256(path)
    assert read_parquet(path, sha256=digest).to_pylist() == [{"x": 1}, {"x": 2}]
    pq.write_table(pa.table({"x": [3, 4]}), path)  # another run's table under the same name
    with pytest.raises(InputError, match="does not match the sha256 its folder's manifest records") as e:
        read_parquet(path, sha256=digest)
    assert "damaged" not in str(e.value)
    assert read_parquet(path).to_pylist() == [{"x": 3}, {"x": 4}]  # without a digest: read as it is
