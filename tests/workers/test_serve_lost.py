"""A request lost with its ingress replica (the proxy gets no answer: the replica's node left, its process
died) is answered 503 with Retry-After and a body saying why, never a bare 500; a response the replica
started passes as it is. The middleware runs here on plain ASGI callables; the service's proxy loads it
(tests/workers/test_serve.py, tests/multinode/test_serve_nodes.py)."""

from __future__ import annotations

import asyncio
import importlib
import json

import pytest

from workers.serve.proxy import (LOST_MESSAGE, PROXY_CALLBACK, RETRY_AFTER_S, LostRequestAnswer,
                                 proxy_middlewares)


def _call(app, scope=None) -> list[dict]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(LostRequestAnswer(app)(scope or {"type": "http", "method": "POST", "path": "/v1/score"},
                                       receive, send))
    return sent


def _lost(sent: list[dict]) -> None:
    start, body = sent
    assert start["status"] == 503
    headers = dict(start["headers"])
    assert headers[b"retry-after"] == str(RETRY_AFTER_S).encode() and headers[b"content-type"] == b"application/json"
    doc = json.loads(body["body"])
    assert doc == {"error": LOST_MESSAGE, "retry": True} and "send it again" in doc["error"]
    assert int(headers[b"content-length"]) == len(body["body"])


def test_no_answer_from_the_replica_is_a_503_with_retry_after():
    async def lost(scope, receive, send):  # what Ray's proxy does when the replica died: it sends nothing
        return None

    _lost(_call(lost))


def test_a_failure_before_the_answer_is_a_503_too():
    class ActorDiedError(Exception):
        pass

    async def died(scope, receive, send):
        raise ActorDiedError("The actor died unexpectedly before finishing this task.")

    _lost(_call(died))


@pytest.mark.parametrize("status", [200, 422, 500, 504])
def test_a_started_response_passes_as_it_is(status):
    async def answers(scope, receive, send):
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    sent = _call(answers)
    assert [m.get("status") for m in sent] == [status, None] and sent[1]["body"] == b"{}"


def test_a_failure_after_the_answer_started_is_not_hidden():
    async def half(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("broken mid-body")

    with pytest.raises(RuntimeError, match="broken mid-body"):
        _call(half)


def test_other_scopes_pass_through():
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    assert _call(app, {"type": "lifespan"}) == [] and seen == ["lifespan"]


def test_the_hook_ray_serve_calls_names_this_middleware():
    module, _, name = PROXY_CALLBACK.partition(":")
    (mw,) = getattr(importlib.import_module(module), name)()
    assert mw.cls is LostRequestAnswer and proxy_middlewares()[0].cls is LostRequestAnswer
