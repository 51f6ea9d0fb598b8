import pytest

import rubric.cpu_profile  # noqa: F401  the room registers the CPU profile's versions
from rubric.errors import ConfigError, UnknownNameError
from rubric.registry import Registry
from rubric.scoring.specs import DEFAULT_VERSIONS, EXTRA_SIGNALS, PAPER_RUBRICS, RUBRICS, RubricSpec, resolve_rubrics

# Snapshot: an entry must not vanish silently. Extend this list when a version is added.
EXPECTED_VERSIONS = {
    "coherence.geval.v1", "completeness.geval.v1", "conciseness.lexical_density.v1", "fluency.geval.v1",
    "grammar.harper.v1", "grammar.languagetool.v1", "relevance.geval.v1", "use_of_examples.yesno.v1",
    "use_of_examples.yesno.v2",
    "specificity.subjectiveqa.v1", "specificity.geval.v1", "factuality.veriscore.v1",
    "factuality.veriscore.v2",
    "factuality.veriscore.v3",
    # the CPU profile's versions (--preset cpu)
    "relevance.minilm.v1", "coherence.minilm.v1", "completeness.coverage.v1", "factuality.support.v1",
    "specificity.concrete.v1", "use_of_examples.cues.v1", "fluency.harper.v1",
    "relevance.minilm.v2", "coherence.minilm.v2", "completeness.coverage.v2", "completeness.reference.v1",
    "factuality.support.v2", "factuality.support.v3", "coherence.minilm.v8", "completeness.coverage.v7", "relevance.minilm.v7", "use_of_examples.cues.v2",
    "relevance.minilm.v3", "coherence.minilm.v3", "completeness.coverage.v3", "coherence.minilm.v4",
    "relevance.minilm.v4", "completeness.coverage.v4", "coherence.minilm.v5",
    # extra signals (opt-in, outside the paper's nine)
    "length.words.v1", "qa_similarity.minilm.v1", "ref_rouge_l.v1", "ref_similarity.minilm.v1",
}
EXPECTED_EXTRA_SIGNALS = {"length.words.v1", "qa_similarity.minilm.v1", "information.minilm.v1", "ref_rouge_l.v1",
                          "ref_similarity.minilm.v1"}


def test_registry_snapshot():
    assert EXPECTED_VERSIONS <= set(RUBRICS.names())
    for name, version in DEFAULT_VERSIONS.items():
        assert RUBRICS.get(version).name == name
    for name, version in EXTRA_SIGNALS.items():
        assert RUBRICS.get(version).name == name


def test_extra_signals_are_marked_and_never_defaults():
    marked = {v for v in RUBRICS.names() if RUBRICS.get(v).extra_signal}
    assert marked == EXPECTED_EXTRA_SIGNALS == set(EXTRA_SIGNALS.values())
    assert set(DEFAULT_VERSIONS) == set(PAPER_RUBRICS) and len(PAPER_RUBRICS) == 9
    assert not marked & set(DEFAULT_VERSIONS.values())
    assert not set(EXTRA_SIGNALS) & set(PAPER_RUBRICS)
    for version in marked:  # a bare extra-signal name never shadows a paper rubric's default
        assert RUBRICS.get(version).name not in DEFAULT_VERSIONS


def test_score_holds_no_extra_signal_by_default_and_the_demo_only_the_presets():
    from rubric.presets import CPU
    from workers.cli import DEMO_RUBRICS, build_parser

    demo = resolve_rubrics(DEMO_RUBRICS)
    assert sorted(s.name for s in demo if not s.extra_signal) == sorted(PAPER_RUBRICS)
    # the demo fits the cpu preset's model: its signals are there on purpose, and only they
    assert sorted(s.name for s in demo if s.extra_signal) == sorted(CPU.signals)
    args = build_parser().parse_args(["score", "x.jsonl", "--format", "lfqa-hp", "--out", "o"])
    assert not any(s.extra_signal for s in resolve_rubrics(args.rubrics))


@pytest.mark.parametrize("bare,version", sorted(EXTRA_SIGNALS.items()))
def test_resolve_extra_signal_by_bare_name(bare, version):
    (spec,) = resolve_rubrics(bare)
    assert spec.version == version and spec.extra_signal


def test_resolve_mixes_rubrics_and_extra_signals():
    specs = resolve_rubrics("qa_similarity,conciseness,ref_rouge_l.v1")
    assert [s.version for s in specs] == ["qa_similarity.minilm.v1", "conciseness.lexical_density.v1",
                                          "ref_rouge_l.v1"]
    with pytest.raises(ConfigError, match="'length' is given twice"):
        resolve_rubrics("length,length.words.v1")


def test_unknown_name_lists_extra_signals():
    with pytest.raises(UnknownNameError, match="extra signals: information, length, qa_similarity, ref_rouge_l, ref_similarity"):
        resolve_rubrics("qa_sim")


def test_registry_duplicate_and_unknown():
    reg: Registry[int] = Registry("thing")
    reg.register("a.v1", 1)
    with pytest.raises(ConfigError, match="already registered"):
        reg.register("a.v1", 2)
    with pytest.raises(UnknownNameError, match="known: a.v1"):
        reg.get("b.v1")


@pytest.mark.parametrize("raw,lo,hi,want", [
    (0.0, 0, 1, 1.0), (1.0, 0, 1, 5.0), (0.5, 0, 1, 3.0),   # 0-1 -> 1+4x
    (1.0, 1, 3, 1.0), (2.0, 1, 3, 3.0), (3.0, 1, 3, 5.0),   # fluency 1-3 -> 1+2(x-1)
    (4.0, 1, 5, 4.0),                                        # already 1-5: identity
    (1.7, 0, 1, 5.0), (-0.2, 0, 1, 1.0),                     # clipped
])
def test_rescale(raw, lo, hi, want):
    spec = RubricSpec("x", "x.t.v1", "b", lo, hi)
    assert spec.rescale(raw) == pytest.approx(want)


def test_resolve_bare_and_versioned():
    specs = resolve_rubrics("conciseness, grammar.languagetool.v1")
    assert [s.version for s in specs] == ["conciseness.lexical_density.v1", "grammar.languagetool.v1"]


@pytest.mark.parametrize("names,err,msg", [
    ("nonsense", UnknownNameError, "unknown rubric 'nonsense'"),
    ("grammar,grammar.languagetool.v1", ConfigError, "given twice"),
    ("", ConfigError, "no rubrics"),
])
def test_resolve_errors(names, err, msg):
    with pytest.raises(err, match=msg):
        resolve_rubrics(names)


def test_bad_spec():
    with pytest.raises(ConfigError, match="must start with"):
        RubricSpec("a", "b.x.v1", "be", 0, 1)
    with pytest.raises(ConfigError, match="'raw_max' must be > 'raw_min'"):
        RubricSpec("a", "a.x.v1", "be", 1, 1)
