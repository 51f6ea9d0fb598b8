"""The Ray driver's collector: rows go to the shards' stores as they come, a bounded buffer at a time."""

from __future__ import annotations

import pytest

from rubric.errors import BatchMismatchError, ConfigError
from rubric.scoring.scorer import Provenance, Score
from workers.cluster.collect import ShardCollector
from workers.runner import Unit
from workers.storage.codec import encode_provenance, encode_score
from workers.storage.index import ScoreIndex
from workers.storage.store import UnitStore

PROV = encode_provenance(Provenance("conciseness.lexical_density.v1", "spacy"))


@pytest.fixture
def index(tmp_path):
    with ScoreIndex(tmp_path) as index:
        yield index


def _shards(tmp_path, n: int, index: ScoreIndex) -> dict[int, Unit]:
    return {i: Unit(f"s{i}", f"/data/s{i}.jsonl", "", f"s{i}", None,
                    UnitStore(tmp_path, f"s{i}", {"shard": i}, index, ["conciseness"], i)) for i in range(n)}


def _add(c: ShardCollector, shard: int, idx: int, n: int, *, prov: str = PROV) -> None:
    c.add(shard, idx, n, [f"a{shard}-{idx}"], [{"conciseness": encode_score(Score.ok(idx / 10))}], {"conciseness": prov})


def test_rows_in_any_order_reach_each_store_and_finish_it(tmp_path, index):
    shards = _shards(tmp_path, 2, index)
    c = ShardCollector(shards, ["conciseness"], flush_rows=2)
    order = [(0, 2), (1, 0), (0, 0), (1, 1), (0, 1)]  # interleaved, out of order
    for s, i in order[:-1]:
        _add(c, s, i, 3 if s == 0 else 2)
    assert c.finished == {1} and c.still_open() == {0: (2, 3)}
    # two rows buffered wrote every buffer (a0-2, a1-0): the driver does not hold a shard until it completes
    assert shards[0].store.scored_ids() == {"a0-2"} and not shards[0].store.done
    _add(c, 0, 1, 3)
    assert c.finished == {0, 1} and c.still_open() == {}
    for s, n in ((0, 3), (1, 2)):
        assert shards[s].store.done and shards[s].store.scored_ids() == {f"a{s}-{i}" for i in range(n)}
        # each row reached the job's index as it reached the unit's part
        scores = index.get([f"a{s}-{i}" for i in range(n)])
        assert {a: sc["conciseness"].raw for a, sc in scores.items()} == {f"a{s}-{i}": i / 10 for i in range(n)}
        assert shards[s].store.merge() == {"conciseness": Provenance("conciseness.lexical_density.v1", "spacy")}


def test_a_doubled_or_misplaced_row_and_mixed_provenance_are_refused(tmp_path, index):
    c = ShardCollector(_shards(tmp_path, 1, index), ["conciseness"])
    _add(c, 0, 1, 3)
    with pytest.raises(BatchMismatchError, match="answer 1 came back twice"):
        _add(c, 0, 1, 3)
    with pytest.raises(BatchMismatchError, match="answer 3 of 3 does not fit"):
        _add(c, 0, 3, 3)
    other = encode_provenance(Provenance("conciseness.lexical_density.v1", "spacy", model_id="other"))
    with pytest.raises(ConfigError, match="actors disagree on how 'conciseness' is made"):
        _add(c, 0, 0, 3, prov=other)
    with pytest.raises(ConfigError, match="'flush_rows' must be >= 1"):
        ShardCollector({}, ["conciseness"], flush_rows=0)


def test_an_item_of_several_ids_is_stored_under_each_and_finishes_with_the_units_id_count(tmp_path, index):
    """LINKAGE: one item (a question) holds several store ids (its candidates); the store's count is the ids'."""
    shards = _shards(tmp_path, 1, index)
    c = ShardCollector(shards, ["conciseness"])
    score = {"conciseness": encode_score(Score.ok(0.5))}
    c.add(0, 0, 2, ["q0-a", "q0-b"], [score, score], {"conciseness": PROV}, n_ids=5)
    assert c.still_open() == {0: (1, 2)}
    with pytest.raises(BatchMismatchError, match="has 1 scores for 2 ids"):
        c.add(0, 1, 2, ["q1-a", "q1-b"], [score], {"conciseness": PROV}, n_ids=5)
    c.add(0, 1, 2, ["q1-a", "q1-b", "q1-c"], [score] * 3, {"conciseness": PROV}, n_ids=5)
    assert c.finished == {0} and shards[0].store.scored_ids() == {"q0-a", "q0-b", "q1-a", "q1-b", "q1-c"}
    import json

    assert json.loads((shards[0].store.dir / "done.json").read_text())["n_answers"] == 5
