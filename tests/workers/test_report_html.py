"""``lfqa-rubric report --html`` opened the way a person opens it: in a real headless Chromium.

The outputs are real command outputs on the bundled sample: ``score`` (CPU rubrics), ``fit``,
``evaluate`` and ``analyze`` (their Markdown is read back), a judge job over the same pairs (the judge
job's deterministic length judge, as in test_judge_job.py), and a LINKAGE job (the protocol tests' fake
engine on WebGLM-shaped lists). The browser is driven over the Chrome DevTools Protocol: every
section and chart rendered, the paged tables and the pair browser work, no console error, no request
leaves the file, and a screenshot of each section is saved.

Debian's ``chromium`` is needed (``make setup`` installs it as root); without it the browser tests
skip and say so.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import time
from importlib import resources
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rubric.config import ScoringConfig
from tests.rubric.html_report.test_html_report import md_rows, parse
from workers.cli import main

SAMPLE = resources.files("rubric") / "data" / "sample_pairs.jsonl"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: Where to copy the screenshots (the README's image is made this way); unset: only the test's tmp folder.
SCREENSHOTS = os.environ.get("LFQA_RUBRIC_SCREENSHOTS")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    from tests.workers.test_judge_job import LengthJudge
    from workers.jobs.judge import JudgeSettings, run_judge_job

    root = tmp_path_factory.mktemp("report")
    score, judge = root / "score", root / "judge"
    assert main(["score", str(SAMPLE), "--format", "lfqa-hp", "--rubrics", "conciseness,grammar", "--out", str(score),
                 "--quiet"]) == 0
    assert main(["fit", str(score), "--out", str(score / "model.json")]) == 0
    assert main(["evaluate", str(score), "--model", str(score / "model.json"), "--report",
                 str(root / "evaluate.md")]) == 0
    settings = JudgeSettings("plain")
    run_judge_job(str(SAMPLE), "lfqa-hp", settings, judge, config=ScoringConfig(batch_size=8), progress=False,
                  scorer=LengthJudge([s.version for s in settings.specs]))
    assert main(["analyze", str(score), str(judge), "--out", str(root / "analysis.md")]) == 0
    # LINKAGE on WebGLM-shaped lists (the protocol tests' fake engine ranks BEST > GOOD > POOR); the last
    # question's grades say the opposite, so the correlations are not all 1
    from tests.workers.test_protocol_job import SETTINGS, Counting, _webglm
    from workers.protocols.linkage import run_linkage_job

    graded = _webglm(root, n=4)
    data = json.loads(graded.read_text())
    last = data[list(data)[-1]]["doc_list"]
    for doc, label in zip(last, (1, 2, 3)):
        doc["label"] = label
    graded.write_text(json.dumps(data))
    run_linkage_job(graded, root / "linkage", config=ScoringConfig(batch_size=4), settings=SETTINGS, signals=False,
                    n_boot=1000, scorer=Counting(), progress=False)
    folders = [score, judge, root / "linkage"]
    html = root / "report.html"
    assert main(["report", *map(str, folders), "--html", str(html)]) == 0
    return root, folders, html


def test_html_numbers_are_the_markdown_reports(outputs):
    root, folders, html = outputs
    tables = parse(html.read_text(encoding="utf-8")).tables
    md = (root / "evaluate.md").read_text()
    assert {r[0]: r[3:] for r in md_rows(md, "| system | n pairs")} == {r[0]: r[3:] for r in tables["metrics"][1:]}
    assert {r[0]: r[2:] for r in md_rows(md, "| feature | kind")} == {r[0]: r[2:4] for r in tables["weights"][1:]}
    # beside each rubric's weight, what its version means to people (rubric.scoring.agreement_line)
    people = {r[0]: r[4] for r in tables["weights"][1:]}
    assert people["conciseness"].startswith(("\u03c1 ", "not measured against people's ratings of conciseness"))
    assert people["style_length"] == ""
    assert len(tables["weights"]) > 2 and "not computed" not in str(tables["weights"])
    analysis = (root / "analysis.md").read_text()
    table4 = {r[0]: r[2:] for r in md_rows(analysis, "| system | kind |")}  # n, undecided and the metrics
    assert table4 == {r[0]: r[2:] for r in tables["comparison"][1:]} and len(table4) >= 4
    linkage = {r[0]: r[1:4] for r in md_rows((root / "linkage" / "report.md").read_text(), "| system | Kendall")}
    assert linkage == {r[0]: r[1:4] for r in tables["linkage-table"][1:]}
    assert linkage["listwise"][0].startswith("0.500 [")  # three questions agree (tau 1), one disagrees (-1)


def test_the_sample_report_is_small_enough_to_mail(outputs):
    _, _, html = outputs
    assert html.stat().st_size < 2_000_000


# --- the browser ------------------------------------------------------------------------------

class DevTools:
    """A minimal Chrome DevTools Protocol client over the browser's loopback websocket (flat sessions)."""

    def __init__(self, url: str):
        from websockets.sync.client import connect

        self.ws = connect(url, max_size=None, open_timeout=30)
        self.n = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 60) -> dict:
        self.n += 1
        msg = {"id": self.n, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while True:
            m = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.1)))
            if m.get("id") == self.n:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_for(self, method: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            self.events.append(json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.1))))
        return next(e for e in self.events if e.get("method") == method)

    def close(self):
        self.ws.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("headless Chromium not found: install Debian's chromium (apt-get install chromium; "
                    "`make setup` does it when run as root)")
    pytest.importorskip("websockets.sync.client", reason="the DevTools client needs websockets >= 12")
    profile = tmp_path_factory.mktemp("chromium-profile")
    proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                             "--remote-allow-origins=*", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url, seen, deadline = None, [], time.monotonic() + 90
    while url is None and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        hit = re.search(r"DevTools listening on (ws://\S+)", line)
        url = hit.group(1) if hit else None
    if url is None:
        proc.kill()
        pytest.fail("chromium did not start its DevTools endpoint:\n" + "".join(seen[-20:]))
    cdp = DevTools(url)
    yield cdp
    cdp.close()
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


CHECK = """(() => {
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.width, r.height]; };
  return {
    ready: document.body.dataset.ready || null,
    sections: [...document.querySelectorAll("section.report-section")].map((s) => [s.id, s.dataset.kind, box(s)[1]]),
    charts: [...document.querySelectorAll("figure.chart")].map((f) => {
      const svg = f.querySelector("svg");
      return [f.dataset.chart, svg ? box(svg) : [0, 0], svg ? svg.querySelectorAll("path, text, image").length : 0];
    }),
    paged: [...document.querySelectorAll(".ready[data-rows]")].map((h) =>
      [h.className, Number(h.dataset.rows), h.querySelectorAll("tbody tr").length]),
    detail: (() => { const d = document.querySelector(".pair-detail");
      return d ? {pair: d.dataset.pair || null, answers: d.querySelectorAll(".answer .text").length,
                  bars: d.querySelectorAll("tr.contrib .bar").length,
                  verdicts: d.querySelectorAll("table.verdicts tr").length} : null; })(),
  };
})()"""


#: What a reader at this width sees of the page: horizontal overflow, chart text under 10 px or outside its
#: chart (cut), legends over a plot area.
LAYOUT = """(() => {
  const inside = (r, b) => r.left >= b.left - 1 && r.right <= b.right + 1 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1;
  const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const out = {overflow: document.documentElement.scrollWidth - window.innerWidth, small: [], cut: [], covered: [],
               fonts: [], wide: []};
  for (const e of document.querySelectorAll("body *")) {  // what sticks out, outermost first (for the message)
    const r = e.getBoundingClientRect();
    if (r.right > window.innerWidth + 0.5 && !(e.parentElement && e.parentElement.getBoundingClientRect().right
        > window.innerWidth + 0.5) && out.wide.length < 5) out.wide.push([e.tagName, e.className, Math.round(r.right)]);
  }
  for (const f of document.querySelectorAll("figure.chart")) {
    const svg = f.querySelector("svg");
    const box = svg.getBoundingClientRect(), scale = box.width / svg.viewBox.baseVal.width;
    for (const t of svg.querySelectorAll("text")) {
      const px = parseFloat(getComputedStyle(t).fontSize) * scale, r = t.getBoundingClientRect();
      out.fonts.push(px);
      if (px < 10) out.small.push([f.dataset.chart, t.textContent, px]);
      if (r.width && !inside(r, box)) out.cut.push([f.dataset.chart, t.textContent]);
    }
    const areas = [...svg.querySelectorAll('g[id^="axes_"]')].map((a) => a.querySelector('g[id^="patch_"]'))
      .filter((p) => p).map((p) => p.getBoundingClientRect());
    for (const lg of svg.querySelectorAll('g[id^="legend_"]')) {
      const l = lg.getBoundingClientRect();
      if (areas.some((a) => meet(l, a))) out.covered.push(f.dataset.chart);
    }
  }
  return out;
})()"""


def _eval(cdp: DevTools, session: str, expression: str):
    got = cdp.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                   session=session)
    if "exceptionDetails" in got:
        raise AssertionError(f"page script failed: {got['exceptionDetails']}")
    return got["result"].get("value")


def _pairs_with(rows, predicate) -> int:
    return sum(1 for r in rows if r["label"] in ("a", "b") and predicate(r))


def test_the_report_in_a_real_browser(outputs, browser, tmp_path):
    root, folders, html = outputs
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        browser.send(f"{domain}.enable", session=session)
    browser.send("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 1000, "deviceScaleFactor": 1,
                                                        "mobile": False}, session=session)
    browser.send("Page.navigate", {"url": html.as_uri()}, session=session)
    browser.wait_for("Page.loadEventFired")
    page = _eval(browser, session, CHECK)

    assert page["ready"] == "1"  # the script ran to its end
    kinds = {sid: kind for sid, kind, _ in page["sections"]}
    assert kinds == {"score-0": "score", "cost": "cost", "model-0": "model", "pairs-0": "pairs",
                     "analysis": "analysis", "protocols": "protocols"}
    assert all(h > 100 for _, _, h in page["sections"])
    charts = {name for name, _, _ in page["charts"]}
    assert charts == {"distributions", "correlations", "accuracy", "weights", "calibration", "agreement", "position",
                      "verbosity", "linkage"}
    for name, (w, h), marks in page["charts"]:
        assert w > 200 and h > 100 and marks > 10, (name, w, h, marks)

    # paged tables: rejects, the pair list, the answers; at most one page of rows in the DOM
    paged = {cls.split()[0]: (n, shown) for cls, n, shown in page["paged"]}
    pairs = pq.read_table(folders[0] / "pairs.parquet")
    answers = pq.read_table(folders[0] / "answers.parquet")
    assert paged["rejects-table"] == (3, 3)
    assert paged["pair-list"] == (pairs.num_rows, 15) and paged["answers-table"] == (answers.num_rows, 15)
    d = page["detail"]
    assert d["pair"] and d["answers"] == 2 and d["bars"] >= 1 and d["verdicts"] == 2  # header + the one judge

    # the filters: the model's mistakes and the judge's disagreements with people, counted here independently
    from rubric.preference import predict_pairs
    from rubric.preference import PreferenceModel

    pred = predict_pairs(PreferenceModel.from_json(folders[0] / "model.json"), pairs, split="all").to_pylist()
    mistakes = _pairs_with(pred, lambda r: r["predicted"] is not None and r["predicted"] != r["label"])
    judged = pq.read_table(folders[1] / "judgments.parquet").to_pylist()
    disagree = {r["pair_id"] for r in judged if r["order"] == "ab" and r["label"] in ("a", "b")
                and r["decision_debiased"] and r["decision_debiased"] != r["label"]}
    rows_after = """((value) => { const s = document.querySelector("select.pair-filter"); s.value = value;
      s.dispatchEvent(new Event("change")); return Number(document.querySelector(".pair-list").dataset.rows); })"""
    assert _eval(browser, session, f"{rows_after}('mistakes')") == mistakes
    assert _eval(browser, session, f"{rows_after}('disagreements')") == len(disagree) > 0
    assert _eval(browser, session, f"{rows_after}('all')") == pairs.num_rows
    # sort the answer table by words (twice: descending) and turn a page
    first_words = """(() => { const h = document.querySelector(".answers-table");
      [...h.querySelectorAll("th")].find((t) => t.textContent === "words").click();
      return Number(h.querySelector("tbody tr td:nth-child(2)").textContent); })()"""
    words = answers.column("n_words").to_pylist()
    assert _eval(browser, session, first_words) == min(words)
    assert _eval(browser, session, first_words) == max(words)
    assert _eval(browser, session, """(() => { const h = document.querySelector(".answers-table");
      [...h.querySelectorAll(".pager button")].pop().click(); return h.dataset.page; })()""") == "2"
    # and read one answer whole
    picked = _eval(browser, session, """(() => { document.querySelector(".answers-table tbody tr").click();
      const d = document.querySelector(".answer-detail");
      return [d.dataset.answer, d.querySelector(".text").textContent]; })()""")
    texts = dict(zip(answers.column("answer_id").to_pylist(), answers.column("answer").to_pylist()))
    assert picked[1] == texts[picked[0]] and len(picked[1]) > 100

    # the pair list shows each pair's question (shortened), and its search finds question text
    first_q = pairs.column("question")[0].as_py()
    shown = _eval(browser, session, """(() => { const h = document.querySelector(".pair-list");
      return [h.querySelector("th").textContent, h.querySelector("tbody tr td").textContent,
              h.querySelector("tbody tr td span").title]; })()""")
    assert shown[0] == "question" and shown[2] == first_q and len(shown[1]) <= 71
    assert first_q.startswith(shown[1].rstrip("…"))
    words = first_q.split()
    fragment = " ".join(words[1:4]).lower()
    found = _eval(browser, session, f"""(() => {{ const i = document.querySelector(".pair-list input[type=search]");
      i.value = {json.dumps(fragment)}; i.dispatchEvent(new Event("input"));
      return Number(document.querySelector(".pair-list").dataset.rows); }})()""")
    assert found == sum(fragment in q.lower() for q in pairs.column("question").to_pylist()) > 0
    _eval(browser, session, """(() => { const i = document.querySelector(".pair-list input[type=search]");
      i.value = ""; i.dispatchEvent(new Event("input")); })()""")

    # at two widths: nothing wider than the window, chart text whole and >= 10 px, legends beside the data;
    # a screenshot of each section at each width
    views = {sid: f"document.getElementById('{sid}')" for sid in kinds}
    views["pair-detail"] = "document.querySelector('.pair-detail')"  # both answers, bars and verdicts (README)
    for width in (1400, 800):
        browser.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": 1000, "deviceScaleFactor": 1,
                                                            "mobile": False}, session=session)
        layout = _eval(browser, session, LAYOUT)
        assert layout["overflow"] <= 0, (width, layout["overflow"], layout["wide"])
        assert layout["small"] == [] and layout["cut"] == [] and layout["covered"] == [], (width, layout)
        assert min(layout["fonts"]) >= 10
        shots = tmp_path / "shots" / str(width)
        shots.mkdir(parents=True)
        for sid, element in views.items():
            _eval(browser, session, f"{element}.scrollIntoView(); window.scrollBy(0, -120)")  # below the sticky header
            png = base64.b64decode(browser.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"])
            assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
            (shots / f"{sid}.png").write_bytes(png)
            if SCREENSHOTS:
                folder = Path(SCREENSHOTS) if width == 1400 else Path(SCREENSHOTS) / str(width)
                folder.mkdir(parents=True, exist_ok=True)
                shutil.copy(shots / f"{sid}.png", folder / f"{sid}.png")

    errors = [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"
              or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert"))
              or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
    assert errors == []
    requests = [e["params"]["request"]["url"] for e in browser.events if e.get("method") == "Network.requestWillBeSent"]
    # the page itself and what it carries inline (the heatmap's pixels are a data: URI): nothing leaves the file
    assert requests[0] == html.as_uri() and all(u == html.as_uri() or u.startswith("data:") for u in requests), \
        requests
    browser.send("Target.closeTarget", {"targetId": target})


def test_arena_win_rates_and_ratings_equal_its_report(tmp_path):
    """A RAG-QA Arena output: its section shows the win rates and ratings of its own report.md."""
    from models.judging import ProtocolJudgeScorer
    from rubric.protocols import protocol_judge
    from tests.models.test_protocols import FakeEngine
    from tests.workers.test_protocol_job import _arena_files
    from workers.protocols.arena import run_arena_job

    ann, files = _arena_files(tmp_path)
    out = tmp_path / "arena"
    run_arena_job(ann, files, out, config=ScoringConfig(batch_size=4), n_boot=1000, progress=False,
                  scorer=ProtocolJudgeScorer(FakeEngine(), [protocol_judge("arena.pairwise.v1")]),
                  answer_mapping="qid=qid,answer=answer,label=human")
    html = tmp_path / "arena.html"
    assert main(["report", str(out), "--html", str(html)]) == 0
    page = html.read_text(encoding="utf-8")
    assert set(parse(page).sections.values()) == {"protocols"} and 'data-chart="arena"' in page
    tables = parse(page).tables
    md = (out / "report.md").read_text()
    assert {r[0]: r[1:] for r in md_rows(md, "| system | win |")} == {r[0]: r[1:] for r in tables["win-rates"][1:]}
    elo = {r[0]: r[1] for r in md_rows(md, "| system | Elo")}
    assert elo["lfrqa"].startswith("1016") and {r[0]: r[1] for r in tables["ratings"][1:]} == elo
    assert "Bradley-Terry ratings are unbounded" in page  # said, as in the Markdown, not hidden


def test_report_errors_are_one_line(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing"), "--html", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "is not an output folder" in err and str(tmp_path / "missing") in err
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty"), "--html", str(tmp_path / "r.html")]) == 2
    assert "holds no pairs.parquet, judgments.parquet or protocol output" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_lfqa_e_judge_row_equals_its_report(tmp_path):
    """An LFQA-E output: its judge's accuracy and macro-F1, overall and by pair type, as in its report.md."""
    from models.judging import ProtocolJudgeScorer
    from rubric.protocols import protocol_judge
    from tests.models.test_protocols import FakeEngine
    from tests.workers.test_protocol_job import _webglm
    from workers.protocols.lfqa_e import run_lfqa_e_job

    out = tmp_path / "lfqa_e"
    run_lfqa_e_job(_webglm(tmp_path, n=4), "graded", out, config=ScoringConfig(batch_size=4), n_boot=1000,
                   progress=False, scorer=ProtocolJudgeScorer(FakeEngine(), [protocol_judge("lfqa_e.reference_tie.v1")]))
    html = tmp_path / "lfqa_e.html"
    assert main(["report", str(out), "--html", str(html)]) == 0
    tables = parse(html.read_text(encoding="utf-8")).tables
    md = (out / "report.md").read_text()
    [overall] = md_rows(md, "| system | accuracy | macro-F1 |")
    assert tables["lfqa-e-table"][1] == overall[:6] and overall[1].startswith("1.000")
    by_type = {r[1]: r[2:] for r in md_rows(md, "| system | pair type |")}
    assert {r[0]: r[1:] for r in tables["lfqa-e-types"][1:]} == by_type and by_type
