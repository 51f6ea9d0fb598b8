"""Grammar scorers: the real Harper linter; LanguageTool against a local stand-in server or skipped."""

import json
import random
import threading
import time
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pytest

from models.rubric_backends.grammar import HarperGrammarScorer, LanguageToolGrammarScorer
from rubric.errors import BackendUnavailableError, ConfigError, EngineError
from rubric.scoring.grammar import HARPER_KIND_TO_LT_ISSUE_TYPE
from rubric.io.records import AnswerItem
from rubric.scoring.scorer import Scorer, check_batch
from rubric.scoring.specs import RUBRICS

HARPER = RUBRICS.get("grammar.harper.v1")
LT = RUBRICS.get("grammar.languagetool.v1")

CLEAN = "The committee published its report in March. Most members agreed with the findings."
BROKEN = "He go to school every day. They was happy. She don't like it. He has went home."
# Only spelling / typography / formatting problems: Harper flags them, none counts as grammar.
NON_GRAMMAR = "Teh quick brown fox jumpd over the lazzy dog.  i think so"


def items(*texts: str) -> list[AnswerItem]:
    return [AnswerItem(answer_id=str(i), question="q", answer=t) for i, t in enumerate(texts)]


# --- Harper -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def harper() -> HarperGrammarScorer:
    pytest.importorskip("harper")
    return HarperGrammarScorer((HARPER,))


def test_harper_erroneous_text_scores_lower(harper):
    clean, broken = (r["grammar"] for r in harper.score_batch(items(CLEAN, BROKEN)))
    assert clean.raw == 5.0 and clean.extras["n_errors"] == 0
    assert broken.extras["n_errors"] >= 3
    assert broken.raw < clean.raw
    assert broken.extras["n_words"] == len(BROKEN.split())


def test_harper_counts_only_grammar_kinds(harper):
    s = harper.score_batch(items(NON_GRAMMAR))[0]["grammar"]
    assert s.extras["n_lints"] >= 3        # Harper did find things ...
    assert s.extras["n_errors"] == 0       # ... but spelling, typos, spacing, capitals are not grammar
    assert s.raw == 5.0


def test_every_kind_harper_emits_is_classified(harper):
    # A newer Harper with a new lint kind would silently not count it; make that visible.
    texts = [BROKEN, NON_GRAMMAR, "This is an test of the the linter. Alot of people could of come.",
             "On the other hand we should discuss about it, irregardless. Me and him went.",
             "I bought modems, mice and keyboards on my mobile phone and also my cell phone."]
    kinds = {lint.lint_kind for t in texts for lint in harper._linter.lint(t, language="plaintext")}
    assert kinds, "Harper found nothing at all"
    assert kinds <= set(HARPER_KIND_TO_LT_ISSUE_TYPE), kinds - set(HARPER_KIND_TO_LT_ISSUE_TYPE)


def test_harper_protocol_order_and_provenance(harper):
    assert isinstance(harper, Scorer)
    batch = items(BROKEN, CLEAN, "", BROKEN)
    results = harper.score_batch(batch)
    check_batch(harper, batch, results)
    raws = [r["grammar"].raw for r in results]
    assert raws[0] == raws[3] < raws[1] == raws[2] == 5.0
    p = harper.provenance("grammar")
    assert (p.rubric_version, p.backend, p.model_id) == ("grammar.harper.v1", "harper", "harper-py")
    assert p.model_revision


def test_harper_bad_row_does_not_sink_batch(harper):
    bad = AnswerItem(answer_id="x", question="q", answer=None)  # type: ignore[arg-type]
    results = harper.score_batch([*items(CLEAN), bad])
    assert results[0]["grammar"].raw == 5.0
    assert results[1]["grammar"].error.startswith("harper failed")


def test_harper_wrong_specs():
    with pytest.raises(ConfigError, match="exactly"):
        HarperGrammarScorer((LT,))


# --- one Harper pass for grammar and fluency ----------------------------------------------------

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def _real_answers() -> list[AnswerItem]:
    """Real answers (WebGLM's, TREC-DL-NF passages) and the rows a reader refuses or Harper fails on."""
    texts = [CLEAN, BROKEN, NON_GRAMMAR, "Rosewater is a gentel ingredicnt; it is, easy to use ."]
    if (SHARED / "WEBGLM_50.json").is_file():
        web = json.loads((SHARED / "WEBGLM_50.json").read_text(encoding="utf-8"))
        texts += [d["answer"] for v in list(web.values())[:8] for d in v["doc_list"]]
        trec = json.loads((SHARED / "TREC-DL-NF.json").read_text(encoding="utf-8"))
        texts += [p["passage"] for ps in list(trec.values())[:3] for p in ps][:20]
    return [*items(*texts), AnswerItem("none", "q", None), AnswerItem("dots", "q", "... !")]  # type: ignore[arg-type]


def test_one_harper_pass_scores_grammar_and_fluency_as_the_two_scorers_alone(monkeypatch):
    pytest.importorskip("harper")
    pytest.importorskip("wordfreq")
    from models.backends import build_scorers
    from models.rubric_backends.fluency import HarperFluencyScorer
    from models.rubric_backends.grammar import HarperPass, SharedLinter, harper_linter
    from rubric.config import ScoringConfig
    from rubric.scoring import count_harper_lints, grammar_score

    batch = _real_answers()
    for fluency in ("fluency.harper.v1", "fluency.harper.v2"):
        specs = [HARPER, RUBRICS.get("conciseness.lexical_density.v1"), RUBRICS.get(fluency)]
        alone = [HarperGrammarScorer((HARPER,)), HarperFluencyScorer((RUBRICS.get(fluency),))]
        expected = [{} for _ in batch]
        for sc in alone:
            for row, got in zip(expected, sc.score_batch(batch)):
                row.update(got)
        calls = []
        real = SharedLinter.lint
        monkeypatch.setattr(SharedLinter, "lint", lambda self, t, **kw: calls.append(t) or real(self, t, **kw))
        scorers = build_scorers(specs, ScoringConfig())
        (shared,) = [sc for sc in scorers if isinstance(sc, HarperPass)]
        assert [s.version for s in shared.specs] == ["grammar.harper.v1", fluency]
        assert len(scorers) == 2 and scorers[0] is shared  # in grammar's place, conciseness after it
        results = shared.score_batch(batch)
        monkeypatch.setattr(SharedLinter, "lint", real)
        check_batch(shared, batch, results)
        assert results == expected  # every Score: raw, extras, errors
        assert calls == [it.answer for it in batch]  # each answer linted once, not once per rubric
        assert {n: shared.provenance(n) for n in ("grammar", "fluency")} == {
            "grammar": alone[0].provenance("grammar"), "fluency": alone[1].provenance("fluency")}
    # the scores are what the formulas give on a fresh linter's findings (what the two scorers computed before)
    fresh = harper_linter()
    for it, r in zip(batch[:-2], results):
        n = count_harper_lints(lint.lint_kind for lint in fresh.lint(it.answer))
        assert r["grammar"].raw == grammar_score(n, it.answer)
    assert results[-2]["grammar"].error.startswith("harper failed") and "not str" in results[-2]["fluency"].error
    assert results[-1]["grammar"].raw is not None and "no letter or digit" in results[-1]["fluency"].error
    assert any(r["fluency"].raw < 5 for r in results[:-2]) and any(r["grammar"].raw < 5 for r in results[:-2])
    assert len(batch) > 30 or not (SHARED / "WEBGLM_50.json").is_file()


# --- LanguageTool: pure parts and a stand-in server -------------------------------------------

class _FakeLanguageTool(BaseHTTPRequestHandler):
    """Answers /v2/languages and /v2/check like a LanguageTool server: every "ERR" in the text is
    a grammar match and every "SPELL" a misspelling, so expected counts are known."""

    def _send(self, payload) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 - http.server's naming
        if self.path.startswith("/v2/languages"):
            self._send([{"name": "English (US)", "code": "en", "longCode": "en-US"}])
        else:
            self.send_error(404)

    #: While True, a text holding "FAIL500" gets HTTP 500 with a Java trace for a body (a real server's answer to
    #: a text one of its rules crashes on), not JSON.
    fail_500 = True

    def do_POST(self):  # noqa: N802
        form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        text = form.get("text", [""])[0]
        time.sleep(random.uniform(0, 0.02))  # finish out of order
        if type(self).fail_500 and "FAIL500" in text:
            body = b"Error: Internal Error: java.lang.NullPointerException\n\tat org.languagetool.rules.X"
            self.send_response(500)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        matches = []
        for word in text.split():
            kind = {"ERR": "grammar", "SPELL": "misspelling"}.get(word.strip(".,"))
            if kind:
                matches.append({
                    "message": "m", "replacements": [], "offset": 0, "length": 1,
                    "context": {"text": text[:40], "offset": 0, "length": 1}, "sentence": text[:40],
                    "rule": {"id": "R", "issueType": kind, "category": {"id": "C", "name": "c"}},
                })
        self._send({"software": {"name": "LanguageTool", "version": "6.6-fake"}, "matches": matches})

    def log_message(self, *args):  # keep test output quiet
        pass


@pytest.fixture
def fake_lt_url():
    pytest.importorskip("language_tool_python")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeLanguageTool)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", server
    server.shutdown()
    server.server_close()


def test_languagetool_remote_counts_grammar_only_in_order(fake_lt_url, monkeypatch):
    url, _ = fake_lt_url
    monkeypatch.setenv("LANGUAGETOOL_URL", url)  # picked up when no url is passed
    lt = LanguageToolGrammarScorer((LT,), threads=4)
    assert isinstance(lt, Scorer)
    texts = [f"word {'ERR ' * i}{'SPELL ' * (5 - i)}end" for i in range(6)] * 3
    batch = items(*texts)
    results = lt.score_batch(batch)
    check_batch(lt, batch, results)
    assert [r["grammar"].extras["n_errors"] for r in results] == [0, 1, 2, 3, 4, 5] * 3
    assert [r["grammar"].extras["n_matches"] for r in results] == [5, 5, 5, 5, 5, 5] * 3
    words = len(texts[0].split())
    assert results[1]["grammar"].raw == pytest.approx(5 - 4 / 5) and words <= 100
    p = lt.provenance("grammar")
    assert (p.rubric_version, p.backend, p.model_id, p.model_revision) == (
        "grammar.languagetool.v1", "languagetool", "LanguageTool", "6.6-fake")


def test_languagetool_dead_server_is_an_engine_error(fake_lt_url):
    url, server = fake_lt_url
    lt = LanguageToolGrammarScorer((LT,), url=url, threads=2)
    server.shutdown()
    server.server_close()
    with pytest.raises(EngineError, match="cannot be reached"):
        lt.score_batch(items("some text"))


def test_languagetool_http_500_for_one_text_fails_that_row_only(fake_lt_url):
    url, _ = fake_lt_url
    lt = LanguageToolGrammarScorer((LT,), url=url, threads=2)
    got = lt.score_batch(items("word ERR end", "a text FAIL500 here", "plain end"))
    assert [r["grammar"].extras.get("n_errors") for r in got] == [1, None, 0]
    error = got[1]["grammar"].error
    assert error.startswith("languagetool failed: ") and "NullPointerException" in error
    assert "\n" not in got[1]["grammar"].error


def test_a_flaky_languagetool_server_is_failed_rows_under_the_budget_and_retried(fake_lt_url, tmp_path, capsys,
                                                                                 monkeypatch):
    """Issue 59: a server that answers HTTP 500 for 4 of 60 texts is 4 failed cells (published, over the default
    budget: exit 3; within --max-failed: exit 0), which --retry-failed scores again once the server is fixed; only a
    server that cannot be reached at all stops the job, in one line. On f2de0e0 the 500s ended the job with
    "LanguageTool server unreachable", exit 2, nothing published."""
    import pyarrow.parquet as pq

    from rubric.io import read_manifest
    from workers.cli import main

    url, server = fake_lt_url
    monkeypatch.setenv("LANGUAGETOOL_URL", url)
    monkeypatch.setattr(_FakeLanguageTool, "fail_500", True)
    rows = [{"id": f"p{i}", "question_text": f"What is thing number {i}?",
             "answer_1": f"Thing {i} is a plain answer{' FAIL500' if i < 4 else ''}, number {i}.",
             "answer_2": f"Thing {i} is ERR another answer, number {i}.", "human_judgment": "answer_1"}
            for i in range(30)]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    argv = ["score", str(src), "--format", "lfqa-hp", "--rubrics", "grammar.languagetool.v1", "--quiet",
            "--out", str(out)]
    assert main(argv) == 3  # 4 of 60 = 6.7%, over the default 5%: published, and said
    err = capsys.readouterr().err
    assert "4 of 60 rows failed" in err and "unreachable" not in err
    cost = read_manifest(out)["cost"]["per_name"]["grammar"]
    assert (cost["rows"], cost["failed"]) == (60, 4)
    assert main([*argv, "--max-failed", "0.1"]) == 0
    answers = pq.read_table(out / "answers.parquet").to_pylist()
    failed = [a for a in answers if a["grammar_error"] is not None]
    assert len(failed) == 4 and all("FAIL500" in a["answer"] for a in failed)
    monkeypatch.setattr(_FakeLanguageTool, "fail_500", False)  # the server is fixed
    assert main([*argv, "--retry-failed"]) == 0
    m = read_manifest(out)
    assert m["job"]["retry_failed"]["cells_retried"] == {"grammar": 4}
    assert m["cost"]["per_name"]["grammar"]["failed"] == 0
    server.shutdown()
    server.server_close()  # now it cannot be reached at all: one line, exit 2
    capsys.readouterr()
    assert main([*argv[:-2], "--out", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "LanguageTool" in err[0] and url in err[0], err


def test_languagetool_unreachable_server_is_actionable():
    pytest.importorskip("language_tool_python")
    with pytest.raises(BackendUnavailableError, match="not usable.*docker run") as e:
        LanguageToolGrammarScorer((LT,), url="http://127.0.0.1:9")  # discard port: refused at once
    assert isinstance(e.value, ImportError)


def test_languagetool_wrong_arguments():
    with pytest.raises(ConfigError, match="exactly"):
        LanguageToolGrammarScorer((HARPER,))
    with pytest.raises(ConfigError, match="'threads' must be >= 1, got 0"):
        LanguageToolGrammarScorer((LT,), url="http://127.0.0.1:9", threads=0)


# --- LanguageTool: the real local server (Java + jars) --------------------------------------------

def _local_languagetool_or_skip(monkeypatch) -> LanguageToolGrammarScorer:
    pytest.importorskip("language_tool_python")
    monkeypatch.delenv("LANGUAGETOOL_URL", raising=False)
    try:
        return LanguageToolGrammarScorer((LT,))
    except BackendUnavailableError as e:
        pytest.skip(f"no local LanguageTool: {str(e).split('. Options')[0]}")


def test_languagetool_local_without_jars_says_what_to_do(monkeypatch):
    pytest.importorskip("language_tool_python")
    monkeypatch.delenv("LANGUAGETOOL_URL", raising=False)
    try:
        lt = LanguageToolGrammarScorer((LT,))
    except BackendUnavailableError as e:
        assert "Options:" in str(e) and "grammar.harper.v1" in str(e)
    else:
        lt.close()
        pytest.skip("a local LanguageTool is installed here; nothing is unavailable")


@pytest.mark.slow
def test_languagetool_local_real(monkeypatch):
    lt = _local_languagetool_or_skip(monkeypatch)
    try:
        clean, broken = (r["grammar"] for r in lt.score_batch(items(CLEAN, BROKEN)))
        assert broken.raw < clean.raw
        assert lt.provenance("grammar").model_revision
    finally:
        lt.close()
