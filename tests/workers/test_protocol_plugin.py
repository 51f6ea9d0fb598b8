"""A protocol is one declaration: a toy protocol registered from this module (its options, job kind, page and
HTML section) runs through ``lfqa-rubric judge --protocol`` and ``report --html`` without any other file
knowing it; the real protocols are declared the same way."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from rubric.html_report import HtmlSection
from tests.workers.test_judge_job import LengthJudge, _records, _write
from workers.cli import main
from workers.jobs.judge import JudgeKind, ProtocolPage, protocol_settings
from workers.protocols import (PROTOCOLS, ProtocolOptions, ProtocolRun, ProtocolSpec, load_protocols, option,
                               register_protocol)
from workers.runner import prebuilt, run


@dataclass(frozen=True)
class ToyOptions(ProtocolOptions):
    toy_margin: float = option(0.5, low=0.0, high=1.0, help="how far past one half a verdict must be")
    toy_title: str = option("Toy", help="the report's title")


class ToyKind(JudgeKind):
    protocol = "toy"

    def __init__(self, *args, margin: float = 0.5, title: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.margin, self.title = margin, title

    def page(self, *, pairs, table, fields, shards) -> ProtocolPage:
        rows = table.to_pylist()
        sure = sum(1 for r in rows if r["p_a_debiased"] is not None and abs(r["p_a_debiased"] - 0.5) >= self.margin / 2)
        return ProtocolPage(f"# {self.title}\n\n{len(pairs)} pairs, {sure} judgment rows past the margin.\n",
                            {"toy": {"margin": self.margin, "sure": sure}})


def run_toy(r: ProtocolRun, o: ToyOptions) -> dict:
    settings = protocol_settings("judge.plain.v1", r.judge)
    kind = ToyKind(r.fmt, r.reader_options, settings, r.config, r.seed,
                   prebuilt(LengthJudge([s.version for s in settings.specs])), margin=o.toy_margin, title=o.toy_title)
    return run(kind, r.inputs, r.out, progress=r.progress, check=False, force=r.force)


@dataclass(frozen=True)
class ToySection:
    folder: str
    sure: int


def read_toy(folder, *, n_boot, seed) -> ToySection:
    manifest = json.loads((Path(folder) / "manifest.json").read_text())
    return ToySection(str(folder), manifest["toy"]["sure"])


TOY = ProtocolSpec(name="toy", help="a toy protocol of the tests", options=ToyOptions, run=run_toy,
                   section=HtmlSection(read_toy, "toy.html.j2",
                                       source='<div class="toy" data-kind="toy">toy section: {{ x.sure }} sure '
                                              'rows in <code>{{ x.folder }}</code></div>'))


@pytest.fixture
def toy():
    load_protocols()
    register_protocol(TOY)
    yield TOY
    PROTOCOLS.remove("toy")


def test_a_toy_protocol_runs_through_judge_and_the_html_report(toy, tmp_path, capsys):
    src = _write(tmp_path / "in.jsonl", _records()[:6])
    out = tmp_path / "toy"
    assert main(["judge", str(src), "--format", "lfqa-hp", "--protocol", "toy", "--toy-margin", "0.3",
                 "--toy-title", "Toy run", "--out", str(out), "--quiet"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["protocol"] == "toy" and m["toy"]["margin"] == 0.3 and m["counts"]["pairs"] == 6
    assert (out / "report.md").read_text().startswith("# Toy run\n\n6 pairs, ")
    assert set(m["published"]) == {"judgments.parquet", "rejects.jsonl", "report.md", "costs.parquet"}
    html = tmp_path / "r.html"
    assert main(["report", str(out), "--html", str(html)]) == 0
    page = html.read_text()
    assert f'toy section: {m["toy"]["sure"]} sure rows in <code>{out}</code>' in page and 'href="#protocols"' in page


def test_a_toy_protocols_flags_are_its_own_and_bounded(toy, tmp_path, capsys):
    src = _write(tmp_path / "in.jsonl", _records()[:3])
    base = ["judge", str(src), "--format", "lfqa-hp", "--out", str(tmp_path / "o"), "--quiet"]
    assert main([*base, "--protocol", "toy", "--toy-margin", "2"]) == 2
    assert "'--toy-margin' must be in 0..1, got 2.0" in capsys.readouterr().err
    assert main([*base, "--toy-margin", "0.2"]) == 2  # without --protocol toy
    assert "--toy-margin applies to --protocol toy, not the pairwise judges" in capsys.readouterr().err
    assert main([*base, "--protocol", "toy", "--systems", "a=b"]) == 2  # another protocol's flag
    assert "--systems applies to --protocol arena, not toy" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_the_real_protocols_are_declared_the_same_way(capsys):
    protocols = load_protocols()
    assert {"linkage", "arena", "lfqa-e"} <= set(protocols.names())
    for name in ("linkage", "arena", "lfqa-e"):
        spec = protocols.get(name)
        assert isinstance(spec, ProtocolSpec) and issubclass(spec.options, ProtocolOptions)
        assert isinstance(spec.section, HtmlSection)
    with pytest.raises(SystemExit):
        main(["judge", "--help"])
    text = capsys.readouterr().out
    for name in protocols.names():
        assert f"{name}: {protocols.get(name).help}"[:40] in " ".join(text.split())
    # one flag for an option several protocols take, its help per protocol
    assert ("arena: only the first N annotated questions; lfqa-e: graded lists: only the first N questions; linkage: "
            "only the first N questions") in " ".join(text.split())
    with pytest.raises(Exception, match="already registered"):
        register_protocol(protocols.get("arena"))
