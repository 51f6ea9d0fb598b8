"""A scorer that loses a result is refused the same way in both steps: the local step and a Ray stage
actor call the runner's one check (``workers.runner.check_results``); nothing of the chunk is stored."""

from __future__ import annotations

import pytest

from rubric.config import ScoringConfig
from rubric.errors import BatchMismatchError
from rubric.scoring.scorer import Provenance, Score
from workers.cluster.actors import StageActor
from workers.cluster.pipeline import item_rows
from workers.runner import FunctionScorer, JobKind, Unit, local_step
from workers.storage.index import ScoreIndex
from workers.storage.store import UnitStore


class _Kind(JobKind):
    """Items are strings, one store id each; the scorer drops the last result when ``lose`` is set."""

    what = "judge"

    def __init__(self, lose: bool) -> None:
        self.lose, self.names, self.config, self.options, self.checkpoint = lose, ["j"], ScoringConfig(), {}, 10

    def arguments(self) -> dict:
        return {"lose": self.lose}

    def work_items(self, uri, block):
        items = ["a", "b", "c"]
        return items, [[i] for i in items]

    def scorer(self, stage=None) -> FunctionScorer:
        def score(items):
            got = [[{"j": Score(raw=float(len(i)))}] for i in items]
            return got[:-1] if self.lose else got

        return FunctionScorer(score, {"j": Provenance("j.v1", "test")})

    def encode_item(self, item: str) -> str:
        return item

    def decode_item(self, text: str) -> str:
        return text


@pytest.mark.parametrize("lose", [False, True])
def test_a_lost_result_is_refused_by_the_stage_actor(lose):
    kind = _Kind(lose)
    batch = item_rows(kind, ["a", "b"], [["a"], ["b"]])
    actor = StageActor(_Kind, kind.arguments())
    if lose:
        with pytest.raises(BatchMismatchError, match="returned 1 results for 2 items"):
            actor(batch)
    else:
        assert actor(batch).num_rows == 2


@pytest.mark.parametrize("lose", [False, True])
def test_a_lost_result_is_refused_by_the_local_step_before_anything_is_stored(tmp_path, lose):
    with ScoreIndex(tmp_path / "scores") as index:
        store = UnitStore(tmp_path / "scores", "in", {"k": 1}, index, ["j"])
        unit = Unit("in", "in.jsonl", "0", "in", None, store)
        if lose:
            with pytest.raises(BatchMismatchError, match="returned 2 results for 3 items"):
                local_step(_Kind(lose), [unit], progress=False)
            assert store.scored_ids() == set() and not store.done and index.get(["a", "b", "c"]) == {}
        else:
            assert local_step(_Kind(lose), [unit], progress=False).scored == 3
            assert store.scored_ids() == {"a", "b", "c"} and store.done
            assert {a: s["j"].raw for a, s in index.get(["a", "b", "c"]).items()} == {"a": 1.0, "b": 1.0, "c": 1.0}
