"""The service's start-up and request checks that need no cluster: the replica plan against the nodes, readiness,
and the ingress's answers to a lone surrogate and to deeply nested JSON.

The ingress is its real class (``RubricService`` without Serve around it) called with real Starlette
requests; its scorer handle is an in-process stand-in that runs the real ``length`` scorer through the
batch loop (``models.scorer_set.score_items``), as a scorer replica does, without Ray.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from rubric.config import ScoringConfig
from rubric.errors import ConfigError
from rubric.preference import ServiceLimits
from rubric.scoring import resolve_rubrics
from workers.serve.placement import Replicas, check_placement, readiness

# --- the replica plan ---------------------------------------------------------------------------------------


def test_three_backends_times_two_replicas_on_two_cpus_is_refused_in_one_line():
    from workers.serve import ServeSettings, replica_plan

    settings = ServeSettings(specs=tuple(resolve_rubrics("conciseness,grammar,coherence")), replicas=2)
    plan = replica_plan(settings)
    assert [(r.name, r.count, dict(r.resources)) for r in plan] == [
        ("scorer-spacy", 2, {"CPU": 0.5}), ("scorer-harper", 2, {"CPU": 0.5}), ("scorer-llm", 2, {"CPU": 0.5})]
    with pytest.raises(ConfigError) as e:
        check_placement(plan, [{"CPU": 2.0, "memory": 1e9}], hint="lower --replicas")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg == ("cannot place the service's replicas on this Ray cluster: scorer-spacy x 2 (0.5 CPU each), "
                   "scorer-harper x 2 (0.5 CPU each), scorer-llm x 2 (0.5 CPU each) need 3 CPU in all; the cluster's "
                   "1 node(s) have 2 CPU (largest node: 2 CPU), so 2 of scorer-llm would wait for ever; lower --replicas")
    check_placement(plan, [{"CPU": 3.0}])  # exactly enough
    check_placement(plan, [{"CPU": 1.5}, {"CPU": 1.5}])


@pytest.mark.parametrize("plan,nodes,unplaced", [
    # 3 x 0.75 CPU on two 1-CPU nodes: 1.5 CPU short of nothing in all, but only one fits per node
    ([Replicas("a", 3, {"CPU": 0.75})], [{"CPU": 1.0}, {"CPU": 1.0}], "1 of a"),
    # a GPU replica on a CPU-only cluster
    ([Replicas("llm", 1, {"CPU": 1, "GPU": 1})], [{"CPU": 8.0}], "1 of llm"),
    # a custom resource no node has
    ([Replicas("x", 1, {"CPU": 0.5, "lfqa_gpu_node": 1})], [{"CPU": 4.0}], "1 of x"),
])
def test_a_plan_is_placed_node_by_node(plan, nodes, unplaced):
    with pytest.raises(ConfigError, match=f"so {unplaced} would wait for ever"):
        check_placement(plan, nodes)


def test_large_replicas_are_placed_first():
    # first-fit in the given order would put the small ones on the 2-CPU node and strand the 2-CPU replica
    check_placement([Replicas("small", 2, {"CPU": 0.5}), Replicas("big", 1, {"CPU": 2})], [{"CPU": 2}, {"CPU": 1}])


# --- readiness ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("app,deployments,ready,waiting", [
    ("RUNNING", {"scorer-llm": ("HEALTHY", {"RUNNING": 2}), "RubricService": ("HEALTHY", {"RUNNING": 1})}, True, None),
    # the ingress answers while the LLM replica still loads its engine: not ready
    ("DEPLOYING", {"scorer-llm": ("UPDATING", {"STARTING": 1}), "RubricService": ("HEALTHY", {"RUNNING": 1})},
     False, ["scorer-llm"]),
    # one replica of two placed, the other pending (no room): not ready
    ("DEPLOYING", {"scorer-llm": ("UPDATING", {"RUNNING": 1, "STARTING": 1})}, False, ["scorer-llm"]),
    # autoscaling between its bounds still serves
    ("RUNNING", {"scorer-llm": ("UPSCALING", {"RUNNING": 1, "STARTING": 1})}, True, None),
    ("RUNNING", {"scorer-llm": ("UNHEALTHY", {"RUNNING": 0, "STARTING": 1})}, False, ["scorer-llm"]),
    ("DEPLOY_FAILED", {"scorer-llm": ("DEPLOY_FAILED", {})}, False, ["scorer-llm"]),
    (None, {}, False, ["the application"]),
])
def test_readiness(app, deployments, ready, waiting):
    got, body = readiness(app, deployments)
    assert got is ready and body["ready"] is ready and body["application"] == app
    assert body.get("waiting_for") == waiting
    assert set(body["deployments"]) == set(deployments)


# --- the ingress ----------------------------------------------------------------------------------------------


class _Method:
    def __init__(self, fn):
        self.fn = fn

    def remote(self, *args):
        async def call():
            return self.fn(*args)
        return call()


class InProcessScorer:
    """Stands for a scorer deployment's handle: ``score.remote(item)`` and ``provenance.remote()`` answered by the
    real scorers of ``specs`` in this process, through the batch job's loop."""

    def __init__(self, specs, config):
        from models.backends import build_scorers
        from models.scorer_set import score_items

        scorers = build_scorers(specs, config)

        def score(item):
            run = score_items([item], scorers, batch_size=config.batch_size, progress=False)
            return {name: col[0] for name, col in run.scores.items()}

        self.score = _Method(score)
        self.provenance = _Method(lambda: {s.name: sc.provenance(s.name) for sc in scorers for s in sc.specs})


@pytest.fixture(scope="module")
def ingress():
    pytest.importorskip("ray.serve", reason="ray[serve] is not installed")
    from workers.serve import deployments

    # the class under @serve.deployment and @serve.ingress (whose wrapper subclasses it and takes its name)
    cls = [c for c in deployments.RubricService.func_or_class.__mro__
           if c.__module__ == deployments.__name__ and c.__name__ == "RubricService"][-1]
    specs = resolve_rubrics("length")
    return cls([[s.version for s in specs]], ServiceLimits(max_items=8), None, None, {"k": 1},
               InProcessScorer(specs, ScoringConfig(batch_size=4)))


def _post(ingress, body: bytes, path: str = "/v1/score"):
    from starlette.requests import Request

    sent = []

    async def receive():
        if sent:
            return {"type": "http.disconnect"}
        sent.append(1)
        return {"type": "http.request", "body": body, "more_body": False}

    scope = {"type": "http", "method": "POST", "path": path, "query_string": b"",
             "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]}
    got = asyncio.run(getattr(ingress, path.rsplit("/", 1)[-1])(Request(scope, receive)))
    if isinstance(got, dict):
        return 200, got
    return got.status_code, json.loads(got.body)


def test_a_lone_surrogate_is_that_items_error_and_the_others_are_scored(ingress):
    good = {"question": "Why is the sky blue?", "answer": "Air scatters blue light more than red light."}
    body = ('{"items": [' + json.dumps(good) + ', {"question": "Why?", "answer": "half a pair \\ud800 here"}, '
            + json.dumps(good) + "]}").encode()
    status, reply = _post(ingress, body)
    assert status == 200
    first, bad, last = reply["results"]
    assert bad["field"] == "answer" and "U+D800" in bad["error"] and "lone surrogate" in bad["error"]
    assert bad.get("scores") is None
    assert first.get("error") is None and first["scores"]["length"] == last["scores"]["length"] is not None
    assert [r["index"] for r in reply["results"]] == [0, 1, 2]
    json.dumps(reply).encode("utf-8")  # the answer itself is valid UTF-8


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_deeply_nested_json_is_422_not_503(ingress, depth):
    status, reply = _post(ingress, b'{"items": ' + b"[" * depth + b"]" * depth + b"}")
    assert status == 422 and "nested too deeply" in reply["detail"]
    status, reply = _post(ingress, b'{"items": [{"question": "Why?", "answer": ' + b"[" * depth + b"]" * depth + b"}]}")
    assert status == 422 and "nested too deeply" in reply["detail"]


def test_nested_json_within_the_parser_is_the_items_error(ingress):
    status, reply = _post(ingress, b'{"items": [{"question": "Why?", "answer": ' + b"[" * 50 + b"]" * 50 + b"}]}")
    assert status == 200 and reply["results"][0]["error"] == "field 'answer' must be a string, got list"
