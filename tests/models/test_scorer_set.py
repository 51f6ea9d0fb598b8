"""The single-process score loop: order kept, a bad row is bisected out of its batch, engine failures raise."""

import pytest

from rubric.errors import BackendUnavailableError, BatchMismatchError, EngineError
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


def _sample_items():
    import json
    from importlib import resources

    rows = [json.loads(line) for line in
            (resources.files("rubric") / "data" / "sample_pairs.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return [AnswerItem(f"{i}-{k}", r["question_text"], r[k]) for i, r in enumerate(rows)
            if isinstance(r.get("question_text"), str) for k in ("answer_1", "answer_2") if isinstance(r.get(k), str)]


@pytest.mark.slow
def test_the_text_lane_scores_the_cpu_profile_as_one_process_does():
    """The cpu preset's nine on the packaged sample: the text pool's scorers (Harper, spaCy's conciseness) in their
    own process beside the spaCy + MiniLM scorer give the scores, order and provenance of one process, a row error
    there included; a call smaller than the lane's threshold stays in this process."""
    from models.scorer_set import ScorerSet, TextLane
    from rubric.config import ScoringConfig
    from rubric.presets import CPU

    items = _sample_items() + [AnswerItem("bad", "Why?", 3.5)]  # an answer that is not text: a row error
    specs = [RUBRICS.get(v) for v in CPU.rubric_versions.values()]
    config = ScoringConfig(batch_size=8)
    built = ScorerSet.build(specs, config)
    assert built.lane is not None and sorted(built.lane.names) == ["conciseness", "fluency", "grammar"]
    versions = built.lane.versions
    one = ScorerSet(built.scorers, 8).score(items)  # no lane: every scorer here, one after another
    beside = ScorerSet(built.scorers, 8, TextLane(versions, config, min_items=1))
    two = beside.score(items)
    assert beside.lane.provenance == {n: built.provenance[n] for n in beside.lane.names}
    assert [list(r[0]) for r in two] == [list(r[0]) for r in one] and len(one[0][0]) == 9
    assert two == one
    assert "not str" in (two[-1][0]["conciseness"].error or "")
    three = ScorerSet(built.scorers, 8).score(items[:3])  # (fp32 MiniLM's last bits move with its batch's padding)
    assert beside.score(items[:3]) == three  # a second call to the same process
    small = ScorerSet(built.scorers, 8, TextLane(versions, config, min_items=10))
    assert small.score(items[:3]) == three and small.lane._proc is None  # too small a call: never started


def test_an_error_in_the_text_lanes_process_is_raised_here():
    from models.scorer_set import TextLane
    from rubric.config import ScoringConfig

    # grammar.languagetool.v1 with a server that is not there: the process cannot build it, and says why
    lane = TextLane(["grammar.languagetool.v1"], ScoringConfig(languagetool_url="http://127.0.0.1:9"), min_items=1)
    with pytest.raises(BackendUnavailableError, match="LanguageTool server at http://127.0.0.1:9 is not usable"):
        lane.submit([AnswerItem("a", "q", "An answer.")])


def test_a_whole_job_gets_a_lane_only_beside_other_scorers_and_a_ray_stage_none():
    from models.scorer_set import LANE_POOL, ScorerSet
    from models.backends import pool_of_backend
    from rubric.config import ScoringConfig

    assert pool_of_backend("harper") == pool_of_backend("spacy") == LANE_POOL
    only_text = ScorerSet.build([RUBRICS.get("length.words.v1")], ScoringConfig())
    assert only_text.lane is None
    mixed = ScorerSet.build([RUBRICS.get("length.words.v1"), RUBRICS.get("use_of_examples.cues.v2")], ScoringConfig())
    assert mixed.lane is not None and mixed.lane.names == ["length"] and mixed.lane._proc is None
    staged = ScorerSet.build([], ScoringConfig(), stage=["length.words.v1", "use_of_examples.cues.v2"])
    assert staged.lane is None


def test_a_lane_whose_scorers_report_another_provenance_is_refused():
    from models.scorer_set import ScorerSet, TextLane
    from rubric.config import ScoringConfig
    from rubric.errors import ConfigError

    spec = RUBRICS.get("length.words.v1")

    class Length:  # this process's length scorer, made "another way" than the lane's
        specs = (spec,)

        def provenance(self, rubric):
            return Provenance(spec.version, "length", model_id="another split")

        def score_batch(self, items):
            return [{"length": Score.ok(1.0)} for _ in items]

    sets = ScorerSet([Length()], 2, TextLane([spec.version], ScoringConfig(batch_size=2), min_items=1))
    with pytest.raises(ConfigError, match="another provenance"):
        sets.score(_items(2))
