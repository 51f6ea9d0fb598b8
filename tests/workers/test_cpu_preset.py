"""``--preset cpu`` on the commands: score resolves the profile's versions, fit records it, transfer checks
its inputs and names it, judge and analyze refuse it.

The score runs here take use_of_examples.cues.v2 alone (example cues: no model is loaded), so they are fast;
the profile's real-model scorers are tested in tests/models/test_cpu_rubrics.py.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from rubric.errors import ConfigError
from rubric.presets import CPU
from workers.cli import build_parser, main
from workers.cli.presets import apply_preset

SAMPLE = resources.files("rubric") / "data" / "sample_pairs.jsonl"
TITLE = "cpu preset (CPU rubric profile)"


def _run(*argv) -> None:
    assert main([str(a) for a in argv]) == 0


def _score(out: Path, *extra) -> Path:
    with resources.as_file(SAMPLE) as path:
        _run("score", path, "--format", "lfqa-hp", "--quiet", "--out", out, *extra)
    return out


def test_score_takes_the_profiles_versions():
    args = build_parser().parse_args(["score", "x.jsonl", "--format", "lfqa-hp", "--out", "o", "--preset", "cpu"])
    apply_preset(args, "score")
    assert args.rubrics.split(",") == list(CPU.versions.values())  # the nine and the signals
    assert args.rubrics.split(",")[-2:] == ["qa_similarity.minilm.v1", "information.minilm.v1"]
    args = build_parser().parse_args(["score", "x.jsonl", "--format", "lfqa-hp", "--out", "o", "--preset", "cpu",
                                      "--rubrics", "relevance,grammar,qa_similarity"])
    apply_preset(args, "score")
    assert args.rubrics == "relevance.minilm.v7,grammar.harper.v1,qa_similarity.minilm.v1"
    args = build_parser().parse_args(["score", "x.jsonl", "--format", "lfqa-hp", "--out", "o", "--preset", "cpu",
                                      "--rubrics", "relevance.geval.v1"])
    with pytest.raises(ConfigError, match="--preset cpu uses relevance.minilm.v7, not relevance.geval.v1"):
        apply_preset(args, "score")


@pytest.mark.parametrize("command,argv", [
    ("judge", ["judge", "x.jsonl", "--format", "lfqa-hp", "--out", "o"]),
    ("analyze", ["analyze", "o", "--out", "a.md"]),
])
def test_judge_and_analyze_refuse_a_profile_without_judges(command, argv):
    args = build_parser().parse_args([*argv, "--preset", "cpu"])
    with pytest.raises(ConfigError, match="--preset cpu is a rubric profile with no judges"):
        apply_preset(args, command)


def test_transfer_fixes_the_model_settings():
    args = build_parser().parse_args(["transfer", "--train", "a", "--eval", "b", "--out", "t.md", "--preset", "cpu",
                                      "--no-style"])
    with pytest.raises(ConfigError, match="--preset cpu sets --style True"):
        apply_preset(args, "transfer")


def test_fit_and_transfer_with_the_profile(tmp_path, capsys):
    out = _score(tmp_path / "cpu", "--preset", "cpu", "--rubrics", "use_of_examples")
    answers = json.loads((out / "manifest.json").read_text())
    assert "use_of_examples.cues.v2" in json.dumps(answers)
    _run("fit", out, "--preset", "cpu", "--out", out / "model.json", "--weight-boot", "0")
    doc = json.loads((out / "model.json").read_text())
    assert doc["metadata"]["preset"] == "cpu" and doc["style_features"]  # the profile keeps style control
    _run("transfer", "--train", out, "--eval", out, "--preset", "cpu", "--n-boot", "20", "--out", tmp_path / "t.md")
    text = (tmp_path / "t.md").read_text()
    assert text.startswith(f"# Transfer of the preference model — {TITLE}")
    assert "## Style-controlled" in text
    capsys.readouterr()


def test_transfer_refuses_a_table_made_otherwise(tmp_path, capsys):
    made = _score(tmp_path / "cpu", "--preset", "cpu", "--rubrics", "use_of_examples")
    other = _score(tmp_path / "length", "--rubrics", "length")
    assert main(["transfer", "--train", str(made), "--eval", str(other), "--preset", "cpu",
                 "--out", str(tmp_path / "t.md")]) == 2
    err = capsys.readouterr().err
    assert "was not scored with --preset cpu" in err and "length" in err
    assert not (tmp_path / "t.md").exists()


@pytest.mark.parametrize("names,versions,profile_only", [
    (None, list(CPU.versions.values()), True),  # the demo's default: the nine and the signals, the profile's
    ("relevance,grammar", [CPU.rubric_versions["relevance"], "grammar.harper.v1"], True),
    ("relevance,coherence.geval.v1", [CPU.rubric_versions["relevance"], "coherence.geval.v1"], False),  # as named
    ("length", ["length"], False),  # not a column of the profile: resolved later, as named
])
def test_demo_rubrics_take_the_profiles_versions(names, versions, profile_only):
    from workers.cli.score import DEMO_RUBRICS, demo_rubrics

    got, only = demo_rubrics(names or build_parser().parse_args(["demo"]).rubrics)
    assert got.split(",") == ([CPU.versions[n] for n in DEMO_RUBRICS.split(",")] if names is None else versions)
    assert only is profile_only


def test_the_profiles_factuality_needs_no_evidence_source(tmp_path):
    """It abstains without evidence both answers share and reads no --factuality-corpus, so the paper preset's
    refusal of factuality on records without documents is not the profile's."""
    from tests.workers.test_preset_checks import _without_documents

    bare = _without_documents(tmp_path)
    args = build_parser().parse_args(["score", str(bare), "--format", "lfqa-hp", "--preset", "cpu", "--rubrics",
                                      "factuality", "--out", str(tmp_path / "o")])
    apply_preset(args, "score")
    assert args.rubrics == "factuality.support.v3"
