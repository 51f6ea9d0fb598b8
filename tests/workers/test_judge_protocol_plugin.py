"""A judge-based protocol is one declaration: this module alone declares a protocol's pairwise prompt (its
own verdict tokens, a judge that reasons first and closes its reasoning its own way), the judge scorer
that prompt names, and the protocol, and ``lfqa-rubric judge --protocol`` runs it: no other file knows it,
the judge job builds the scorer the prompt names (no protocol list to extend), and the reasoning is closed
by this judge's rule, not RAG-QA Arena's."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow.parquet as pq
import pytest

from models.backends import JUDGE_SCORERS, register_judge_scorer
from models.judging import ProtocolJudgeScorer
from rubric.judging import JUDGES
from rubric.protocols import declare_protocol_prompt
from rubric.scoring import PROMPTS
from tests.workers.test_judge_job import _records, _write
from workers.cli import main
from workers.jobs.judge import JudgeKind, ProtocolPage, protocol_settings
from workers.protocols import PROTOCOLS, ProtocolOptions, ProtocolRun, ProtocolSpec, load_protocols, register_protocol
from workers.runner import run

VERSION = "toyjudge.pairwise.v1"
REASONING = "I compared how long they are"
TEXT = "Question: {{ question }}\nFirst: {{ answer_1 }}\nSecond: {{ answer_2 }}\nWhich is better, X, Y or Z (same)?"


def close_reasoning(reasoning: str) -> str:
    """This judge's own way to close its reasoning before the verdict is read (Arena's is ``<rating>``)."""
    return f"<why>{reasoning.split('</why>', 1)[0].strip()}</why> Verdict: "


class ToyEngine:
    """Whitespace tokens; generates a fixed reasoning; after it, prefers the longer answer shown."""

    backend = "fake"
    model_id = "fake/toyjudge"
    revision = "r1"
    top_k = 20
    max_context = 100_000

    def __init__(self) -> None:
        self.prefills: list[str] = []

    def encode(self, text):
        return text.split()

    def decode(self, ids):
        return " ".join(ids)

    def count_tokens(self, prompts):
        return [len(p.user.split()) + len(p.prefill.split()) for p in prompts]

    def generate(self, prompts, max_tokens, *, temperature=0.0, n=1, seed=None):
        assert all(p.prefill == "<why>" for p in prompts)
        return [f"{REASONING}</why> Verdict: X" for _ in prompts]

    def score_token_probs(self, prompts, candidates):
        out = []
        for p in prompts:
            self.prefills.append(p.prefill)
            first, second = p.user.split("\nFirst: ", 1)[1].split("\nSecond: ", 1)
            second = second.rsplit("\nWhich is better", 1)[0]
            longer_first = len(first.split()) >= len(second.split())
            out.append({"X": 0.7, "Y": 0.2, "Z": 0.1} if longer_first else {"X": 0.2, "Y": 0.7, "Z": 0.1})
        return out


ENGINE = ToyEngine()


@dataclass(frozen=True)
class ToyJudgeOptions(ProtocolOptions):
    pass


class ToyJudgeKind(JudgeKind):
    protocol = "toyjudge"

    def page(self, *, pairs, table, fields, shards) -> ProtocolPage:
        return ProtocolPage(f"# Toy judge\n\n{len(pairs)} pairs\n", {"toyjudge": {"pairs": len(pairs)}})


def run_toyjudge(r: ProtocolRun, o: ToyJudgeOptions) -> dict:
    # no scorer given: the judge job builds the one the prompt names
    kind = ToyJudgeKind(r.fmt, r.reader_options, protocol_settings(VERSION, r.judge), r.config, r.seed)
    return run(kind, r.inputs, r.out, progress=r.progress, check=False, force=r.force)


@pytest.fixture
def toyjudge():
    load_protocols()
    prompt = declare_protocol_prompt(VERSION, protocol="toyjudge", layout="pairwise", text=TEXT,
                                     source="a test's own wording", prefill="<why>", tokens=("X", "Y", "Z"),
                                     fields=("question", "answer_1", "answer_2"), verdicts=("1", "2", "tie"),
                                     verdict_format="[[{}]]", close_reasoning=close_reasoning, scorer="toyjudge")
    register_judge_scorer("toyjudge")(
        lambda settings, config: ProtocolJudgeScorer(ENGINE, settings.specs, mode=settings.mode,
                                                     max_reasoning_tokens=settings.max_reasoning_tokens))
    register_protocol(ProtocolSpec(name="toyjudge", help="a judge-based protocol of the tests",
                                   options=ToyJudgeOptions, run=run_toyjudge))
    yield prompt
    for registry, name in ((PROTOCOLS, "toyjudge"), (JUDGE_SCORERS, "toyjudge"), (JUDGES, VERSION),
                           (PROMPTS, VERSION)):
        registry.remove(name)


def test_a_judge_based_protocol_declared_here_runs_through_judge(toyjudge, tmp_path):
    ENGINE.prefills.clear()
    records = _records()[:5]
    src = _write(tmp_path / "in.jsonl", records)
    out = tmp_path / "toyjudge"
    assert main(["judge", str(src), "--format", "lfqa-hp", "--protocol", "toyjudge", "--out", str(out),
                 "--max-reasoning-tokens", "16", "--quiet"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["protocol"] == "toyjudge" and m["toyjudge"] == {"pairs": 5} and m["counts"]["pairs"] == 5
    assert m["judges"][VERSION]["model_id"] == "fake/toyjudge"
    rows = pq.read_table(out / "judgments.parquet").to_pylist()
    assert len(rows) == 10 and {r["judge"] for r in rows} == {VERSION} and not any(r["error"] for r in rows)
    # both orders of every pair read after this judge's own close of its reasoning, never Arena's <rating>
    assert len(ENGINE.prefills) == 10
    assert set(ENGINE.prefills) == {f"<why>{REASONING}</why> Verdict: "}
    assert all(r["text"] == f"{REASONING}</why> Verdict: X" for r in rows)
    # the verdict tokens X / Y / Z are this prompt's own, read as first / second / tie: the longer answer wins
    differ = [r for r in rows if r["n_words_a"] != r["n_words_b"]]
    assert differ and all(r["decision_debiased"] == ("a" if r["n_words_a"] > r["n_words_b"] else "b") for r in differ)
    assert (out / "report.md").read_text() == "# Toy judge\n\n5 pairs\n"


def test_the_judge_job_builds_the_scorer_a_judge_names(toyjudge):
    from rubric.config import ScoringConfig
    from rubric.errors import ConfigError, UnknownNameError
    from workers.jobs.judge import JudgeSettings, _scorer

    assert type(_scorer(JudgeSettings(VERSION), ScoringConfig())) is ProtocolJudgeScorer
    with pytest.raises(ConfigError, match="none of them runs the others' judges"):
        _scorer(JudgeSettings(f"plain,{VERSION}"), ScoringConfig())
    JUDGE_SCORERS.remove("toyjudge")
    try:
        with pytest.raises(UnknownNameError, match="unknown judge scorer 'toyjudge'"):
            _scorer(JudgeSettings(VERSION), ScoringConfig())
    finally:
        register_judge_scorer("toyjudge")(lambda settings, config: ProtocolJudgeScorer(ENGINE, settings.specs))
