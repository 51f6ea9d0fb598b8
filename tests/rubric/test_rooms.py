"""The pieces the rooms of rubric/ share: the estimator core, the input-format registry, and judges
that another room registers."""

from __future__ import annotations

import numpy as np
import pytest

from rubric.errors import ConfigError
from rubric.io import FORMATS, INPUT_FORMATS, check_options, read_input
from rubric.judging import JUDGES, JudgeSpec, resolve_judges
from rubric.preference import check_core_params, fit_core, restore_core


def test_the_core_restored_from_its_arrays_predicts_as_fitted():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3)) * [1.0, 10.0, 0.1] + [0.0, 5.0, -1.0]
    y = np.where(X[:, 0] + 0.1 * X[:, 1] > 0.5, "a", "b")
    scaler, lr = fit_core(X, y, C=0.5, max_iter=200)
    assert lr.C == 0.5 and lr.max_iter == 200
    np.testing.assert_allclose(scaler.mean_, X.mean(axis=0))
    again_scaler, again_lr = restore_core(C=0.5, max_iter=200, classes=lr.classes_, coef=lr.coef_,
                                          intercept=lr.intercept_, mean=scaler.mean_, scale=scaler.scale_)
    np.testing.assert_array_equal(again_scaler.var_, scaler.scale_ ** 2)
    np.testing.assert_array_equal(again_lr.predict_proba(again_scaler.transform(X)),
                                  lr.predict_proba(scaler.transform(X)))


@pytest.mark.parametrize("C, max_iter, match", [(0, 10, "'C'"), (True, 10, "'C'"), (1.0, 0, "'max_iter'"),
                                                (1.0, 2.5, "'max_iter'")])
def test_core_parameters_are_checked(C, max_iter, match):
    with pytest.raises(ConfigError, match=match):
        check_core_params(C, max_iter)


def test_every_format_is_registered_in_the_order_the_cli_lists_them():
    assert FORMATS == ("lfqa-hp", "lfqa-eval", "graded", "jsonl", "parquet", "csv", "hf")
    assert set(INPUT_FORMATS) == set(FORMATS)
    assert INPUT_FORMATS.get("csv").needs_mapping and not INPUT_FORMATS.get("graded").needs_mapping
    assert "max_pairs_per_question" in INPUT_FORMATS.get("graded").options


def test_the_format_registry_checks_names_and_options(tmp_path):
    with pytest.raises(ConfigError, match="unknown input format 'xml'; known: lfqa-hp, lfqa-eval, graded"):
        read_input(tmp_path / "x.xml", "xml")
    with pytest.raises(ConfigError, match="needs a column mapping"):
        check_options("csv", {})
    with pytest.raises(ConfigError, match=r"unknown option\(s\) 'mapping' for format 'graded'"):
        check_options("graded", {"mapping": "question=q"})
    assert check_options("jsonl", {"mapping": "question=q,answer_a=x,answer_b=y"}).name == "jsonl"


def test_the_protocols_register_their_pairwise_judges():
    import rubric.protocols  # noqa: F401  (registers them)

    assert "arena.pairwise.v1" in JUDGES and rubric.protocols.is_protocol_judge(JUDGES.get("arena.pairwise.v1"))
    spec, plain = resolve_judges("arena.pairwise.v1,plain")
    assert spec.version == "arena.pairwise.v1" and rubric.protocols.is_protocol_judge(spec)
    assert not rubric.protocols.is_protocol_judge(plain) and isinstance(spec, JudgeSpec)
    with pytest.raises(ConfigError, match="already registered"):
        JUDGES.register("judge.plain.v1", plain)
    with pytest.raises(ConfigError, match="already registered"):
        rubric.protocols.declare_protocol_prompt("arena.pairwise.v1", protocol="arena", layout="pairwise", source="",
                                                 prefill="", tokens=("1", "2"), fields=(), verdicts=("1", "2"))
