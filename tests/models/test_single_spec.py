"""The base of the scorers that serve exactly one rubric version."""

from __future__ import annotations

import pytest

from models.rubric_backends.signals import LengthScorer
from models.rubric_backends.single_spec import SingleSpecScorer
from rubric.errors import ConfigError, UnknownNameError
from rubric.io import AnswerItem
from rubric.scoring import RUBRICS, Score


class _Echo(SingleSpecScorer):
    def __init__(self, specs):
        self._serve(specs, "length.words.v1")

    def provenance(self, rubric):
        return self._provenance(rubric, backend="echo", model_id="none")

    def score_batch(self, items):
        return self._score_sets(Score.ok(float(len(it.answer))) for it in items)


def test_a_single_spec_scorer_serves_exactly_its_version():
    spec = RUBRICS.get("length.words.v1")
    s = _Echo((spec,))
    assert s.spec is spec and s.specs == (spec,)
    for bad in [(), (spec, spec), (RUBRICS.get("conciseness.lexical_density.v1"),)]:
        with pytest.raises(ConfigError, match=r"_Echo serves exactly \('length.words.v1',\)"):
            _Echo(bad)


def test_provenance_and_score_sets_name_the_one_rubric():
    s = _Echo((RUBRICS.get("length.words.v1"),))
    p = s.provenance("length")
    assert (p.rubric_version, p.backend, p.model_id) == ("length.words.v1", "echo", "none")
    with pytest.raises(UnknownNameError, match="_Echo has no rubric 'grammar'; it serves 'length'"):
        s.provenance("grammar")
    items = [AnswerItem(answer_id=f"x{i}", question="q?", answer="ab" * i) for i in (1, 2)]
    assert [r["length"].raw for r in s.score_batch(items)] == [2.0, 4.0]


def test_the_length_scorer_is_one():
    s = LengthScorer((RUBRICS.get("length.words.v1"),))
    assert isinstance(s, SingleSpecScorer)
    with pytest.raises(UnknownNameError, match="LengthScorer has no rubric"):
        s.provenance("grammar")


def test_by_version_accepts_another_spec_of_the_version_only():
    from dataclasses import replace

    spec = replace(RUBRICS.get("length.words.v1"), raw_max=99.0)

    class ByVersion(_Echo):
        def __init__(self, specs):
            self._serve(specs, "length.words.v1", by_version=True)

    assert ByVersion((spec,)).spec is spec
    with pytest.raises(ConfigError, match="serves exactly"):
        _Echo((spec,))
    with pytest.raises(ConfigError, match="serves exactly"):
        ByVersion((spec, spec))
