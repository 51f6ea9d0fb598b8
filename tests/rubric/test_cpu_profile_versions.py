"""The CPU profile room's declarations (rubric/cpu_profile/): one declaration per version registers its spec and its
unit together, the preset's in one table and every other in the legacy table, and the registration function keeps the
two registries in step. The formulas themselves are tests/rubric/test_cpu_profile.py's; the shared pass that serves the
declarations, tests/models/test_cpu_rubrics.py's and tests/models/test_cpu_unit_plugin.py's."""

from __future__ import annotations

import pytest

from rubric.cpu_profile import (
    CPU_VERSIONS, READINGS, CPUVersion, register_cpu_version, unregister_cpu_version, versions_needing,
)
from rubric.cpu_profile._legacy import LEGACY
from rubric.cpu_profile._versions import VERSIONS
from rubric.errors import ConfigError, UnknownNameError
from rubric.presets import CPU
from rubric.scoring import RUBRICS, Score


def _formula(r, reading):
    return Score.ok(0.0)


def test_every_declaration_registers_its_spec_and_its_unit():
    declared = {d.version for d in VERSIONS + LEGACY}
    assert len(declared) == len(VERSIONS) + len(LEGACY)  # a version is declared once
    assert set(CPU_VERSIONS) == declared
    assert {v for v in RUBRICS if RUBRICS.get(v).backend == "cpu_text"} == declared
    for d in VERSIONS + LEGACY:
        assert RUBRICS.get(d.version) == d.spec and CPU_VERSIONS.get(d.version) is d


def test_the_main_table_is_the_presets_versions_and_the_rest_is_legacy():
    preset = {v for v in CPU.versions.values() if RUBRICS.get(v).backend == "cpu_text"}
    assert {d.version for d in VERSIONS} == preset
    assert {"information.minilm.v1", "relevance.minilm.v7", "coherence.minilm.v2"} <= preset
    assert not preset & {d.version for d in LEGACY}
    assert [d.version for d in VERSIONS if d.extra_signal] == ["information.minilm.v1"]


def test_information_is_relevance_v6s_reading_under_its_own_name():
    by = {d.version: d for d in VERSIONS + LEGACY}
    info, v6 = by["information.minilm.v1"], by["relevance.minilm.v6"]
    assert (info.reading, info.needs, info.raw) == (v6.reading, v6.needs, v6.raw) == (
        "open_words", frozenset({"parse", "embed", "wordfreq"}), (0.0, 1.0))
    assert info.spec.extra_signal and not v6.spec.extra_signal and info.spec.name == "information"


def test_a_reading_is_a_need_of_the_pass():
    assert "open_words" in CPU_VERSIONS.get("relevance.minilm.v7").pass_needs
    assert versions_needing("open_lines") == {"coherence.minilm.v7"}
    assert "given" not in CPU_VERSIONS.get("coherence.minilm.v2").pass_needs
    assert versions_needing("parse") >= {d.version for d in VERSIONS if d.model != "minilm" and d.needs}
    assert not versions_needing("parse") & {"use_of_examples.cues.v1", "use_of_examples.cues.v2"}  # a regex


@pytest.mark.parametrize("kwargs, message", [
    ({"needs": frozenset({"parse", "gpu"})}, "unknown needs"),
    ({"needs": frozenset({"embed"})}, "'embed' needs 'parse'"),
    ({"needs": frozenset({"parse"}), "reading": "open_words"}, "it needs 'embed'"),
    ({"needs": frozenset({"parse", "embed"}), "reading": "no_such_reading"}, "unknown reading"),
])
def test_a_bad_declaration_is_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        CPUVersion("relevance.toy.v1", _formula, raw=(0.0, 1.0), description="toy", **kwargs)


def test_registration_refuses_a_name_taken_in_either_registry_and_registers_nothing():
    taken = CPUVersion("relevance.minilm.v7", _formula, frozenset(), (0.0, 1.0), description="a second v7")
    with pytest.raises(ConfigError, match="already registered"):
        register_cpu_version(taken)
    assert CPU_VERSIONS.get("relevance.minilm.v7").formula is not _formula
    # a name another backend holds is taken too
    other = CPUVersion("qa_similarity.minilm.v1", _formula, frozenset(), (-1.0, 1.0), description="", extra_signal=True)
    with pytest.raises(ConfigError, match="already registered"):
        register_cpu_version(other)
    assert "qa_similarity.minilm.v1" not in CPU_VERSIONS and RUBRICS.get("qa_similarity.minilm.v1").backend == "minilm"
    # a spec that cannot be one (the range) registers nothing either
    with pytest.raises(ConfigError):
        register_cpu_version(CPUVersion("relevance.toy.v1", _formula, frozenset(), (1.0, 0.0), description=""))
    assert "relevance.toy.v1" not in RUBRICS and "relevance.toy.v1" not in CPU_VERSIONS


def test_register_and_unregister_keep_both_registries_in_step():
    spec = register_cpu_version(CPUVersion("relevance.toy.v1", _formula, frozenset({"parse"}), (0.0, 2.0),
                                           description="toy", kind="ordinal"))
    try:
        assert (spec.name, spec.backend, spec.raw_max, spec.kind) == ("relevance", "cpu_text", 2.0, "ordinal")
        assert RUBRICS.get("relevance.toy.v1") == spec and "relevance.toy.v1" in versions_needing("parse")
    finally:
        unregister_cpu_version("relevance.toy.v1")
    assert "relevance.toy.v1" not in RUBRICS and "relevance.toy.v1" not in CPU_VERSIONS
    with pytest.raises(UnknownNameError):
        unregister_cpu_version("relevance.toy.v1")


def test_every_declared_reading_exists():
    assert {d.reading for d in VERSIONS + LEGACY} <= set(READINGS)
