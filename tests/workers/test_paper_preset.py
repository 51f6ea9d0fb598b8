"""``--preset paper`` end to end: score, fit, evaluate, judge and analyze on the bundled sample (CPU rubric)
and on a WebGLM slice (with the paper's use-of-examples prompt on the embedded SmolLM2), and the reports
name the preset.

The judges are the judge job's deterministic fake (tests/workers/test_judge_job.py's LengthJudge): vote
mode on SmolLM2 takes minutes per handful of pairs on 2 CPU cores and would test nothing more here; the
engine judge is tested in tests/models/llm/test_judges.py.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rubric.presets import PAPER, get_preset
from tests.workers.test_judge_job import LengthJudge
from workers.cli import main

SAMPLE = resources.files("rubric") / "data" / "sample_pairs.jsonl"
WEBGLM = Path(__file__).resolve().parents[3] / "shared" / "data" / "WEBGLM_50.json"
TAG = "[paper preset]"
#: A model fitted with the preset's settings on fewer than its nine rubrics is not the paper's model.
NOT_ITS_MODEL = "[paper preset settings, not its model: "
TITLE = "paper preset (LFQA-HP-1M configuration)"


@pytest.fixture()
def fake_judge(monkeypatch):
    """The judge job builds a LengthJudge instead of an engine judge."""
    built = []

    def scorer(settings, config):
        built.append(settings)
        return LengthJudge([s.version for s in settings.specs])

    monkeypatch.setattr("workers.jobs.judge._scorer", scorer)
    return built


def _sample_with_splits(path: Path) -> Path:
    """The bundled sample with a split per record (the first two questions test, the third dev), so a small
    sample still has a test split with both labels."""
    recs = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    questions = list(dict.fromkeys(r.get("question_text") for r in recs))
    split = {q: "test" if i < 2 else "dev" if i == 2 else "train" for i, q in enumerate(questions)}
    path.write_text("".join(json.dumps({**r, "split": split[r.get("question_text")]}) + "\n" for r in recs))
    return path


def _run(*argv) -> None:
    assert main([str(a) for a in argv]) == 0


def _fitted(out: Path) -> Path:
    """A preset fit of ``out`` (for what it keeps), in a scratch file."""
    _run("fit", out, "--preset", "paper", "--out", out.parent / "probe.json", "--weight-boot", "0")
    return out.parent / "probe.json"


def _check_reports(out: Path, judge: Path, capsys, *, model_tag: str) -> str:
    """fit, evaluate and analyze with the preset on a score output and a judge output; the analysis text.
    ``model_tag``: what the model's rows must carry (the runs here score a subset of the nine rubrics)."""
    model = out / "model.json"
    _run("fit", out, "--preset", "paper", "--out", model, "--weight-boot", "0")
    doc = json.loads(model.read_text())
    assert doc["metadata"]["preset"] == "paper" and doc["style_features"] == []
    assert doc["metadata"]["fitted_on"]["split"] == PAPER.fit_split
    _run("evaluate", out, "--preset", "paper", "--model", model, "--n-boot", "30", "--report", out / "report.md")
    report = (out / "report.md").read_text()
    assert report.startswith(f"# Preference model report — {TITLE}")
    assert f"Split evaluated: **{PAPER.eval_split}**" in report
    assert f"| preference model (LR on rubric differences) {model_tag}" in report
    assert TAG not in report  # the title names the settings; no row claims to be the paper's model
    assert "- style covariates: none (fitted without style)" in report  # the paper's model has none
    manifest = json.loads((judge / "manifest.json").read_text())["settings"]
    assert (manifest["mode"], manifest["n_votes"], manifest["temperature"], manifest["tie"]) == (
        PAPER.judge_mode, PAPER.n_votes, PAPER.temperature, PAPER.tie)
    _run("analyze", out, judge, "--preset", "paper", "--n-boot", "30", "--out", out / "analysis.md")
    text = (out / "analysis.md").read_text()
    capsys.readouterr()
    assert text.startswith(f"# Judges, rubric model and baselines on the same pairs — {TITLE}")
    assert "--preset paper" in text.splitlines()[2]
    table4 = text[text.index("## Table 4"):text.index("### Pairs compared")]
    rows = [line for line in table4.splitlines() if line.startswith("| ") and "---" not in line][1:]
    judges = [r for r in rows if "| LLM judge |" in r]
    assert len(judges) == 2 * 3 and all(TAG in r for r in judges), judges  # plain and rubrics in ab, ba, debiased
    (model_row,) = [r for r in rows if "| rubric model |" in r]
    assert model_row.startswith(f"| preference model (LR on rubric differences) {model_tag}"), model_row
    assert len({r.split(" | ")[2] for r in rows}) == 1  # every system on the same number of pairs
    table6 = text[text.index("## Table 6"):text.index("## Table 7")]
    assert f"| judge.plain.v1 {TAG} (vote) |" in table6
    return text


def test_paper_preset_end_to_end_on_the_sample(tmp_path, fake_judge, capsys):
    src = _sample_with_splits(tmp_path / "sample.jsonl")
    out, judge = tmp_path / "score", tmp_path / "judge"
    _run("score", src, "--format", "lfqa-hp", "--preset", "paper", "--rubrics", "conciseness", "--out", out,
         "--quiet")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["rubrics"]["conciseness"]["rubric_version"] == PAPER.rubric_versions["conciseness"]
    assert manifest["rescale"] == PAPER.rescale
    _run("judge", src, "--format", "lfqa-hp", "--preset", "paper", "--out", judge, "--quiet")
    (settings,) = fake_judge
    assert [s.version for s in settings.specs] == ["judge.plain.v1", "judge.rubrics.v1"]
    assert (settings.mode, settings.n_votes, settings.temperature) == ("vote", 3, 0.0)
    _check_reports(out, judge, capsys, model_tag=f"{NOT_ITS_MODEL}1 of 9 rubrics; not in the scored table: "
                   "specificity, grammar, fluency, completeness, coherence, relevance, use_of_examples, factuality] |")


def test_the_preset_refuses_settings_and_inputs_that_are_not_its_own(tmp_path, fake_judge, capsys):
    src = _sample_with_splits(tmp_path / "sample.jsonl")
    for argv, message in [
        (["judge", src, "--format", "lfqa-hp", "--preset", "paper", "--mode", "logprob", "--out", tmp_path / "j"],
         "--preset paper sets --mode vote; got logprob"),
        (["judge", src, "--format", "lfqa-hp", "--preset", "paper", "--judges", "cot", "--out", tmp_path / "j"],
         "--preset paper runs the judges plain, rubrics, not cot"),
        (["score", src, "--format", "lfqa-hp", "--preset", "paper", "--rubrics", "grammar.harper.v1",
          "--out", tmp_path / "s"], "--preset paper uses grammar.languagetool.v1, not grammar.harper.v1"),
        (["score", src, "--format", "lfqa-hp", "--preset", "paper", "--rescale", "fitted", "--out", tmp_path / "s"],
         "--preset paper sets --rescale declared"),
    ]:
        assert main([str(a) for a in argv]) == 2
        assert message in capsys.readouterr().err
    # made without the preset: fit, evaluate and analyze refuse to call it the paper's
    _run("score", src, "--format", "lfqa-hp", "--rubrics", "conciseness", "--rescale", "fitted", "--out",
         tmp_path / "ours", "--quiet")
    assert main(["fit", str(tmp_path / "ours"), "--preset", "paper", "--out", str(tmp_path / "m.json")]) == 2
    assert "was not scored with --preset paper: conciseness was rescaled 'fitted'" in capsys.readouterr().err
    _run("fit", tmp_path / "ours", "--out", tmp_path / "m.json", "--weight-boot", "0")
    assert main(["evaluate", str(tmp_path / "ours"), "--preset", "paper", "--model", str(tmp_path / "m.json")]) == 2
    assert "was fitted without a preset, not with --preset paper" in capsys.readouterr().err
    _run("judge", src, "--format", "lfqa-hp", "--judges", "plain", "--out", tmp_path / "j", "--quiet")
    assert main(["analyze", str(tmp_path / "j"), "--preset", "paper", "--out", str(tmp_path / "a.md")]) == 2
    assert "mode is 'logprob', the preset's is 'vote'" in capsys.readouterr().err
    # our default model's rows say what they hold
    _run("evaluate", tmp_path / "ours", "--model", tmp_path / "m.json", "--n-boot", "20", "--report",
         tmp_path / "r.md")
    assert "| preference model (LR on rubric differences + length" in (tmp_path / "r.md").read_text()


def test_the_preset_is_defined_once():
    assert get_preset("paper") is PAPER


@pytest.mark.skipif(not WEBGLM.is_file(), reason=f"test data not found at {WEBGLM}")
@pytest.mark.slow  # the embedded LLM (transformers) scores use_of_examples and judges
def test_paper_preset_end_to_end_on_a_webglm_slice(tmp_path, fake_judge, capsys):
    data = json.loads(WEBGLM.read_text(encoding="utf-8"))
    src = tmp_path / "webglm.json"
    src.write_text(json.dumps({q: data[q] for q in list(data)[:8]}), encoding="utf-8")
    read = ["--format", "graded", "--max-pairs-per-question", "2"]
    out, judge = tmp_path / "score", tmp_path / "judge"
    # the paper's use-of-examples prompt on the embedded SmolLM2 (the suite's shared vLLM engine: its settings
    # are the defaults): one prompt per answer of 8 questions
    _run("score", src, *read, "--preset", "paper", "--rubrics", "conciseness,use_of_examples",
         "--batch-size", "8", "--out", out, "--quiet")
    answers = pq.read_table(out / "answers.parquet").to_pylist()
    raw = [a["use_of_examples_raw"] for a in answers if a.get("use_of_examples_raw") is not None]
    assert raw and set(raw) <= {0.0, 1.0}
    assert all((a["use_of_examples_p_yes"] > 0.5) == (a["use_of_examples_raw"] == 1.0)
               for a in answers if a.get("use_of_examples_raw") is not None)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["rubrics"]["use_of_examples"]["rubric_version"] == "use_of_examples.yesno.v2"
    _run("judge", src, *read, "--preset", "paper", "--out", judge, "--quiet")
    model = json.loads(_fitted(out).read_text())
    n = len(model["features"])
    _check_reports(out, judge, capsys, model_tag=f"{NOT_ITS_MODEL}{n} of 9 rubrics; ")
