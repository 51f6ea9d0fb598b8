"""What ``--preset`` promises, checked for any preset: its tag only on its own model, no factuality run without
evidence, and its split fractions the ones the jobs use.

The fakes: models are plain namespaces with the attributes the checks read (features, provenance, style,
metadata), the judge is the judge job's deterministic LengthJudge; nothing loads an engine.
"""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources
from types import SimpleNamespace

import pytest

from rubric.errors import ConfigError
from rubric.presets import PAPER, model_preset_problems, model_preset_tag
from tests.workers.test_judge_job import LengthJudge
from workers.cli import build_parser, main
from workers.cli.presets import apply_preset

SAMPLE = resources.files("rubric") / "data" / "sample_pairs.jsonl"
ALL_NINE = dict(PAPER.rubric_versions)


def _model(versions: dict[str, str], *, style=(), betas=None, **meta):
    return SimpleNamespace(features_=list(versions), provenance={r: {"rubric_version": v} for r, v in versions.items()},
                           style_features_=tuple(style), length_betas=betas, metadata_={"preset": "paper", **meta})


@pytest.mark.parametrize("preset", [PAPER, replace(PAPER, name="other", rubric_versions={
    "conciseness": "conciseness.lexical_density.v1", "grammar": "grammar.harper.v1"})])
def test_the_tag_is_only_for_a_model_with_every_rubric_of_the_preset_at_its_version(preset):
    versions = dict(preset.rubric_versions)
    assert model_preset_problems(preset, _model(versions)) == []
    first, *rest = versions
    # a subset: which rubrics are missing and why (fit left one out; --features did not ask for another)
    subset = _model({r: versions[r] for r in rest[1:]}, excluded={first: "constant on the train split (every "
                                                                           "difference is 0): nothing to learn"},
                    features_given=rest[1:])
    n = len(versions)
    assert model_preset_problems(preset, subset) == [
        f"{n - 2} of {n} rubrics; left out by fit, constant on the train split: {first}; not asked for by "
        f"--features: {rest[0]}"]
    other = _model({**versions, first: f"{first}.other.v9"}, style=("style_length",), betas={first: 0.1})
    assert model_preset_problems(preset, other) == [f"{first} is {first}.other.v9, not {versions[first]}",
                                                    "style covariates style_length", "length-decorrelated"]


def test_the_row_tag_says_the_preset_only_on_its_model():
    assert model_preset_tag(_model(ALL_NINE)) == " [paper preset]"
    three = _model({r: ALL_NINE[r] for r in ("conciseness", "coherence", "use_of_examples")})
    assert model_preset_tag(three) == (" [paper preset settings, not its model: 3 of 9 rubrics; not in the scored "
                                       "table: specificity, grammar, fluency, completeness, relevance, factuality]")
    assert model_preset_tag(SimpleNamespace(metadata_={})) == ""  # no preset: no tag


def _score_args(*extra):
    return build_parser().parse_args(["score", *map(str, extra)])


def _without_documents(tmp_path):
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    path = tmp_path / "lfqa_hp.jsonl"
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in ("doc_1", "doc_2")}) + "\n"
                            for r in rows), encoding="utf-8")
    return path


def test_factuality_on_lfqa_hp_records_without_evidence_is_refused_before_it_starts(tmp_path, capsys):
    bare = _without_documents(tmp_path)
    argv = [bare, "--format", "lfqa-hp", "--preset", "paper", "--rubrics", "conciseness,factuality", "--out",
            tmp_path / "out"]
    assert main(["score", *map(str, argv)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(bare) in err
    assert ("--preset paper: factuality.veriscore.v2 needs evidence, and " in err
            and "attaches no documents to its answers: add --factuality-corpus FILE" in err)
    assert not (tmp_path / "out").exists()  # refused before the job started
    # an evidence source, or documents attached to the answers, or no factuality: no refusal
    for ok in ([*argv, "--factuality-corpus", tmp_path / "corpus.jsonl"],
               [SAMPLE, *argv[1:]],
               [bare, "--format", "lfqa-hp", "--preset", "paper", "--rubrics", "conciseness", "--out", tmp_path / "o"]):
        args = _score_args(*ok)
        apply_preset(args, "score")
    # the Hub dataset's records attach none either, unless --map names a documents column
    with pytest.raises(ConfigError, match="attaches no documents"):
        apply_preset(_score_args("Anonymous/LFQA-HP-1M", "--format", "hf", "--preset", "paper", "--rubrics",
                                 "factuality", "--out", tmp_path / "h"), "score")
    apply_preset(_score_args("Anonymous/LFQA-HP-1M", "--format", "hf", "--preset", "paper", "--rubrics", "factuality",
                             "--map", "question=q,answer_a=a,answer_b=b,docs_a=d1", "--out", tmp_path / "h"), "score")


def test_the_presets_split_fractions_are_the_ones_the_jobs_use(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("workers.jobs.judge._scorer",
                        lambda settings, config: LengthJudge([s.version for s in settings.specs]))
    default = tmp_path / "default"
    assert main(["judge", str(SAMPLE), "--format", "lfqa-hp", "--out", str(default), "--quiet"]) == 0
    # a preset whose split is 40/30/30 (the paper's is 70/15/15, which is also our default)
    wide = replace(PAPER, split_fractions=(0.4, 0.3, 0.3))
    monkeypatch.setattr("workers.cli.presets.get_preset", lambda name: wide)
    args = build_parser().parse_args(["judge", str(SAMPLE), "--format", "lfqa-hp", "--preset", "paper", "--out",
                                      str(tmp_path / "preset"), "--quiet"])
    assert args.func(args) == 0
    got = json.loads((tmp_path / "preset" / "manifest.json").read_text())
    before = json.loads((default / "manifest.json").read_text())
    assert got["split_fractions"] == [0.4, 0.3, 0.3] and before["split_fractions"] == [0.7, 0.15, 0.15]
    assert got["counts"]["splits"]["train"] < before["counts"]["splits"]["train"]
    # given explicitly with other shares, under the preset: refused
    assert main(["judge", str(SAMPLE), "--format", "lfqa-hp", "--preset", "paper", "--split-fractions",
                 "0.5,0.25,0.25", "--out", str(tmp_path / "x")]) == 2
    assert "--preset paper sets --split-fractions (0.4, 0.3, 0.3); got (0.5, 0.25, 0.25)" in capsys.readouterr().err
