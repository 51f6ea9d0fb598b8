"""Agreement with people's ratings, aspect by aspect (issue 56): the statistics, their CIs and baselines."""

import math

import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr

from rubric.errors import ConfigError
from rubric.validity import LENGTH_SCORER, Rated, agreement_markdown, agreement_table, own_aspect_rows
from rubric.validity._agreement import _corr


@pytest.mark.parametrize("n", [2, 5, 16, 63, 64, 65, 300])
def test_correlations_match_scipy_with_ties(n):
    rng = np.random.default_rng(n)
    for _ in range(10):
        x = np.round(rng.random(n) * 4)
        y = np.round(rng.random(n) * 3) + 0.5 * x
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            continue
        assert _corr(x, y, "spearman") == pytest.approx(spearmanr(x, y)[0], abs=1e-12)
        assert _corr(x, y, "kendall") == pytest.approx(kendalltau(x, y)[0], abs=1e-12)


def test_a_correlation_with_a_constant_side_is_undefined_as_in_geval():
    assert math.isnan(_corr(np.ones(5), np.arange(5.0), "spearman"))
    assert math.isnan(_corr(np.arange(5.0), np.ones(5), "kendall"))
    assert math.isnan(_corr(np.array([1.0]), np.array([2.0]), "spearman"))


def _data(n_sources=30, per=8, seed=0):
    """Answers whose ``good`` rubric follows the coherence rating, ``long`` answers are the relevant ones, and
    ``noise`` follows nothing; 4 systems of different quality."""
    rng = np.random.default_rng(seed)
    answers, scores = [], {}
    for s in range(n_sources):
        for k in range(per):
            system = f"sys{k % 4}"
            coherence = rng.integers(1, 6) + (k % 4) * 0.5
            words = int(rng.integers(20, 200))
            relevance = words / 40 + rng.normal(0, 0.5)
            aid = f"s{s}a{k}"
            answers.append(Rated(aid, f"src{s}", system, {"coherence": float(coherence), "relevance": relevance},
                                 words))
            scores[aid] = {"coherence": coherence + rng.normal(0, 0.8), "relevance": float(rng.random()),
                           "grammar": 5.0}
    return answers, scores


VERSIONS = {"coherence": "coherence.x.v1", "relevance": "relevance.x.v1", "grammar": "grammar.x.v1"}


def test_every_scorer_meets_every_aspect_beside_length():
    answers, scores = _data()
    t = agreement_table(answers, scores, VERSIONS, ["coherence", "relevance"], n_boot=200)
    assert t.scorers == [*VERSIONS.values(), LENGTH_SCORER]
    for scorer in t.scorers:
        for aspect in ("coherence", "relevance"):
            for level in ("source", "pooled", "system"):
                for stat in ("spearman", "kendall"):
                    assert t.get(scorer, aspect, level, stat) is not None, (scorer, aspect, level, stat)
    own = t.get("coherence.x.v1", "coherence", "source", "spearman")
    assert own.own and own.value > 0.5 and own.ci[0] > 0.3 and own.n_groups == 30 and own.n == 240
    # the source level is the mean of each source's rho
    by_source = {}
    for a in answers:
        by_source.setdefault(a.source, []).append((scores[a.answer_id]["coherence"], a.ratings["coherence"]))
    expected = np.mean([spearmanr(*zip(*v))[0] for v in by_source.values()])
    assert own.value == pytest.approx(expected)
    # pooled is one correlation over all answers
    pooled = t.get("coherence.x.v1", "coherence", "pooled", "kendall")
    assert pooled.value == pytest.approx(kendalltau([scores[a.answer_id]["coherence"] for a in answers],
                                                    [a.ratings["coherence"] for a in answers])[0])
    # relevance here is length: length agrees, the relevance rubric (noise) does not, and the table says so
    length = t.get(LENGTH_SCORER, "relevance", "source", "spearman")
    rel = t.get("relevance.x.v1", "relevance", "source", "spearman")
    assert length.value > 0.5 and abs(rel.value) < 0.2 and rel.vs_length_ci[1] < 0
    assert math.isnan(length.vs_length)  # length is not compared with itself
    # a constant rubric has no source to rest on: nothing to compare, said as n/a with 0 sources
    constant = t.get("grammar.x.v1", "coherence", "source", "spearman")
    assert math.isnan(constant.value) and constant.n_groups == 0 and constant.n == 0
    readings = {o.row.scorer: o.reading for o in own_aspect_rows(t)}
    assert readings["coherence.x.v1"].startswith("tracks its aspect beyond length")
    assert readings["relevance.x.v1"].startswith("below length")
    md = agreement_markdown(t)
    assert "**" in md and "length (words)" in md and md.count("\n") == len(t.scorers) + 2


def test_the_cis_resample_sources_and_are_the_same_replicates_for_every_scorer():
    answers, scores = _data(n_sources=12)
    t1 = agreement_table(answers, scores, VERSIONS, ["coherence"], n_boot=300, seed=4)
    t2 = agreement_table(answers, scores, VERSIONS, ["coherence"], n_boot=300, seed=4)
    assert [r.ci for r in t1.rows] == [r.ci for r in t2.rows]
    # one source: a point value and no CI
    one = [a for a in answers if a.source == "src0"]
    t = agreement_table(one, scores, VERSIONS, ["coherence"], n_boot=50)
    r = t.get("coherence.x.v1", "coherence", "source", "spearman")
    assert r.n_groups == 1 and math.isfinite(r.value) and all(math.isnan(c) for c in r.ci)


def test_missing_scores_are_counted_not_guessed():
    answers, scores = _data(n_sources=10)
    for a in answers[::3]:
        scores[a.answer_id]["coherence"] = None  # abstained
    t = agreement_table(answers, scores, VERSIONS, ["coherence"], n_boot=50)
    r = t.get("coherence.x.v1", "coherence", "pooled", "spearman")
    assert r.n_missing == len(answers[::3]) and r.n == len(answers) - r.n_missing


def test_systems_need_three_and_every_answer_named():
    answers, scores = _data(n_sources=10)
    two = [Rated(a.answer_id, a.source, "A" if i % 2 else "B", a.ratings, a.n_words) for i, a in enumerate(answers)]
    t = agreement_table(two, scores, VERSIONS, ["coherence"], n_boot=50)
    assert not [r for r in t.rows if r.level == "system"]
    t = agreement_table(answers, scores, VERSIONS, ["coherence"], n_boot=50)
    r = t.get("coherence.x.v1", "coherence", "system", "spearman")
    assert r.n_groups == 4 and r.value == pytest.approx(1.0)  # the systems' quality order is kept by their means


def test_pairwise_aspect_judgements_share_the_table():
    pairs = []
    scores = {}
    for q in range(20):
        for k in range(3):
            a, b = f"q{q}a{k}", f"q{q}b{k}"
            scores[a], scores[b] = {"coherence": 3.0 + k}, {"coherence": 2.0}
            pairs.append({"question_id": f"q{q}", "answer_id_a": a, "answer_id_b": b, "n_words_a": 10,
                          "n_words_b": 30, "aspects": {"coherence": "a", "overall": "b" if k else "tie"}})
    t = agreement_table([], scores, {"coherence": "coherence.x.v1"}, ["coherence", "overall"], n_boot=50, pairs=pairs)
    own = t.get("coherence.x.v1", "coherence", "pairs", "agreement")
    assert own.own and own.value == 1.0 and own.n == 60 and own.n_groups == 20
    assert t.get(LENGTH_SCORER, "coherence", "pairs", "agreement").value == 0.0
    overall = t.get("coherence.x.v1", "overall", "pairs", "agreement")
    assert overall.value == 0.0 and overall.n == 40  # ties left out


def test_refusals():
    with pytest.raises(ConfigError, match="no aspect"):
        agreement_table([], {}, VERSIONS, [])
    with pytest.raises(ConfigError, match="n_boot"):
        agreement_table([], {}, VERSIONS, ["x"], n_boot=0)
