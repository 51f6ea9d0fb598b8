"""build_once: a model built once into the cache, and nothing it did not build touched."""

from __future__ import annotations

import pytest

from models.model_cache import build_once
from rubric.errors import BackendUnavailableError


def _build(calls):
    def build(folder):
        calls.append(folder)
        (folder / "weights.bin").write_bytes(b"w")
        return "v1\n"
    return build


def test_built_once_then_reused(tmp_path):
    calls = []
    first = build_once("m", "DONE", _build(calls), what="a toy model", root=tmp_path)
    again = build_once("m", "DONE", _build(calls), what="a toy model", root=tmp_path)
    assert first == again == tmp_path / "m" and len(calls) == 1
    assert (first / "DONE").read_text() == "v1\n" and (first / "weights.bin").read_bytes() == b"w"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "m.lock"]  # the temporary folder is gone


def test_a_folder_we_did_not_finish_is_refused_and_kept(tmp_path):
    foreign = tmp_path / "m"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("user's")
    with pytest.raises(BackendUnavailableError, match="no finished build of a toy model"):
        build_once("m", "DONE", _build([]), what="a toy model", root=tmp_path)
    assert (foreign / "mine.txt").read_text() == "user's"


def test_a_link_at_the_models_place_is_refused_and_what_it_points_at_kept(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("x")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "m").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(BackendUnavailableError, match="left as it is"):
        build_once("m", "DONE", _build([]), what="a toy model", root=cache)
    assert (cache / "m").is_symlink() and (elsewhere / "keep.txt").read_text() == "x"
    assert [p.name for p in elsewhere.iterdir()] == ["keep.txt"]
