"""The single-process score loop: order kept, a bad row is bisected out of its batch, engine failures raise."""

import pytest

from rubric.errors import BatchMismatchError, EngineError
from rubric.io.records import AnswerItem
from rubric.scoring.scorer import Provenance, Score
from rubric.scoring.specs import RUBRICS
from models.scorer_set import score_items

SPEC = RUBRICS.get("conciseness.lexical_density.v1")


class LengthScorer:
    """Scores answer length; misbehaves on request, to exercise the runner."""

    specs = (SPEC,)

    def __init__(self, mode="ok"):
        self.mode = mode

    def provenance(self, rubric):
        return Provenance(SPEC.version, "test")

    def score_batch(self, items):
        if self.mode == "raise" and any("boom" in it.answer for it in items):
            raise ValueError("cannot parse")
        if self.mode == "engine":
            raise EngineError("engine died")
        out = [{"conciseness": Score.ok(min(1.0, len(it.answer) / 100))} for it in items]
        return out[:-1] if self.mode == "lose" else out


def _items(n):
    return [AnswerItem(str(i), "q", ("boom " if i == 3 else "") + "x" * i) for i in range(n)]


def test_order_kept_and_a_failing_batch_is_bisected_to_the_bad_row():
    items = _items(7)
    run = score_items(items, [LengthScorer("raise")], batch_size=4, progress=False)
    scores = run.scores["conciseness"]
    assert len(scores) == 7
    assert scores[0].raw == 0.0 and scores[6].raw == pytest.approx(0.06)
    # items 0-3 share the failing batch; only item 3 carries the error
    assert [s.error is not None for s in scores] == [False, False, False, True, False, False, False]
    assert "ValueError: cannot parse" in scores[3].error


@pytest.mark.parametrize("mode,err", [("lose", BatchMismatchError), ("engine", EngineError)])
def test_fatal_errors_reraise(mode, err):
    with pytest.raises(err):
        score_items(_items(4), [LengthScorer(mode)], batch_size=4, progress=False)
