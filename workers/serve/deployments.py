"""The Ray Serve deployments of ``lfqa-rubric serve``: one scorer deployment per backend, and the
HTTP ingress (FastAPI) in front of them.

A scorer replica builds its scorers with ``models.backends.build_scorers`` (the LLM engine comes from
the process engine cache, ``models.llm.engines_cache.build_engine``) and scores with
``models.scorer_set.score_items`` - the batch job's own loop, bisection of failing batches included.
``@serve.batch`` gathers single answers from concurrent requests into engine batches of up to
``config.batch_size``, waiting at most ``batch_wait_s`` for a batch to fill.

The ingress checks the token, the body size and the item count, checks each item as the readers
check a row, answers repeated answers from a bounded cache, sends every other answer to every scorer
deployment, and lays the scores out with :mod:`rubric.preference.service` (the batch job's table functions).
A call whose replica died is sent again (at most :data:`ATTEMPTS` times, to whichever replica Serve
routes it); each call carries its own answer, so a retry can only return that answer's scores.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from ray import serve

from rubric.config import ScoringConfig
from rubric.errors import EngineError, InputError, LimitError, ProvenanceError, RubricError
from rubric.io import AnswerItem, PairRecord, Reject, explode
from rubric.scoring import Provenance, Score
from rubric.preference import (ServiceLimits, answer_item, cache_key, check_body_size, preference_pair, prefer_rows,
                            request_items, score_rows)
from rubric.scoring import RUBRICS
from workers.serve.settings import APP_NAME

__all__ = ["RubricScorer", "RubricService", "ATTEMPTS", "app"]

log = logging.getLogger(__name__)

#: Tries of one scorer call whose replica died (the first included): bounded, never a retry loop.
ATTEMPTS = 3


@serve.deployment(ray_actor_options={"num_cpus": 0.5})
class RubricScorer:
    """One backend's scorers (e.g. the LLM engine's rubrics, or spaCy's) on one replica.

    Args:
        versions: the rubric versions this replica computes (all of one backend).
        config: the server's scoring config (the batch job's ``ScoringConfig``).
        batch_wait_s: longest wait for a batch to fill before it is scored.
    """

    def __init__(self, versions: Sequence[str], config: ScoringConfig, batch_wait_s: float) -> None:
        from models.backends import build_scorers

        self.specs = [RUBRICS.get(v) for v in versions]
        self.scorers = build_scorers(self.specs, config)
        self.batch_size = config.batch_size
        self.broken: str | None = None
        self.score.set_max_batch_size(config.batch_size)
        self.score.set_batch_wait_timeout_s(batch_wait_s)

    def provenance(self) -> dict[str, Provenance]:
        return {s.name: sc.provenance(s.name) for sc in self.scorers for s in sc.specs}

    def check_health(self) -> None:
        # Serve calls this periodically; raising makes it replace the replica (a dead engine stays dead).
        if self.broken is not None:
            raise RuntimeError(f"the engine failed: {self.broken}")

    @serve.batch(max_batch_size=32, batch_wait_timeout_s=0.01)
    async def score(self, items: list[AnswerItem]) -> list[dict[str, Score]]:
        from models.scorer_set import score_items

        try:
            # in a thread, so the replica keeps answering Serve's health checks while the engine works
            run = await asyncio.to_thread(score_items, items, self.scorers, batch_size=self.batch_size,
                                          progress=False)
        except EngineError as e:
            self.broken = str(e)
            raise
        return [{name: col[i] for name, col in run.scores.items()} for i in range(len(items))]


# --- the HTTP ingress ----------------------------------------------------------------------------------------


def _serve_status(app_name: str) -> tuple[str | None, dict[str, tuple[str, dict[str, int]]]]:
    """The application's Serve status and, per deployment, its status and replicas by state (from the controller)."""
    app = serve.status().applications.get(app_name)
    if app is None:
        return None, {}
    return (str(getattr(app.status, "value", app.status)),
            {name: (str(getattr(d.status, "value", d.status)),
                     {str(getattr(k, "value", k)): int(v) for k, v in d.replica_states.items()})
             for name, d in app.deployments.items()})


class ScoreItem(BaseModel):
    question: str
    answer: str
    reference: str | None = None
    docs: list[str] | None = Field(default=None, description="evidence documents (factuality)")


class ScoreRequest(BaseModel):
    items: list[ScoreItem] = Field(description="answers to score; a bad item gets its reason, the others are scored")


class PreferItem(BaseModel):
    question: str
    answer_a: str
    answer_b: str
    reference: str | None = None
    docs_a: list[str] | None = None
    docs_b: list[str] | None = None


class PreferRequest(BaseModel):
    items: list[PreferItem]


class ScoreResult(BaseModel):
    index: int = Field(description="the item's position in the request")
    answer_id: str | None = None
    scores: dict[str, float | None] | None = Field(default=None, description="1-5 per rubric (declared range)")
    raw: dict[str, float | None] | None = None
    errors: dict[str, str | None] | None = Field(default=None, description="per rubric: why it has no score")
    extras: dict[str, dict[str, Any]] | None = None
    error: str | None = Field(default=None, description="why the item was not scored (the readers' reason)")
    field: str | None = None


class ScoreResponse(BaseModel):
    results: list[ScoreResult]
    rubrics: list[str]
    provenance: dict[str, dict[str, Any]] = Field(description="rubric -> how its scores are made")
    cached: int = Field(description="answers answered from the cache")
    retried: int = Field(description="scorer calls sent again after their replica died")


class PreferResult(BaseModel):
    index: int
    p_a: float | None = None
    p_b: float | None = None
    p_tie: float | None = None
    p_a_style_controlled: float | None = None
    predicted: str | None = None
    contributions: dict[str, float | None] | None = None
    intercept: float | None = None
    error: str | None = None
    field: str | None = None


class PreferResponse(BaseModel):
    results: list[PreferResult]
    features: list[str]
    cached: int
    retried: int


def _body(model: type[BaseModel]) -> dict:
    """The OpenAPI request body of a route that reads its body itself (limits first, then per-item checks)."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}


app = FastAPI(title="lfqa-rubric", description="Rubric vectors and preferences for long-form answers",
              openapi_url=None, docs_url=None, redoc_url=None)


def _error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"detail": message}, headers=headers or None)


class _Calls:
    """Per request: how many scorer calls were sent again."""

    def __init__(self) -> None:
        self.retried = 0


@serve.deployment(ray_actor_options={"num_cpus": 0})
@serve.ingress(app)
class RubricService:
    """The HTTP face: ``/healthz``, ``/readyz``, ``/v1/rubrics``, ``/v1/score``, ``/v1/prefer``, ``/openapi.json``.

    Args:
        groups: per scorer deployment, the rubric versions it computes (same order as ``scorers``).
        limits: the request limits.
        model: a fitted preference model, or None (``/v1/prefer`` then answers 404).
        token_sha256: SHA-256 hex of the bearer token, or None for no token (only the digest travels).
        store_key: the score store's key for this server's rubrics and config (the cache's namespace).
        scorers: one handle per scorer deployment.
    """

    def __init__(self, groups: list[list[str]], limits: ServiceLimits, model, token_sha256: str | None,
                 store_key: dict, *scorers) -> None:
        if len(groups) != len(scorers):
            raise ValueError(f"{len(groups)} rubric groups for {len(scorers)} scorer deployments")
        self.groups = groups
        self.handles = list(scorers)
        self.specs = [RUBRICS.get(v) for g in groups for v in g]
        self.limits = limits
        self.model = model
        self.token = token_sha256
        self.namespace = hashlib.sha256(json.dumps(store_key, sort_keys=True).encode()).hexdigest()[:16]
        self.cache: OrderedDict[str, dict[str, Score]] = OrderedDict()
        self._provenance: dict[str, Provenance] | None = None
        try:
            self.app_name = serve.get_replica_context().app_name
        except Exception:  # built outside Serve (a test): the service's own name
            self.app_name = APP_NAME

    # --- plumbing ------------------------------------------------------------------------------------------

    def _denied(self, request: Request) -> JSONResponse | None:
        if self.token is None:
            return None
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        digest = hashlib.sha256(token.strip().encode()).hexdigest()
        if scheme.lower() == "bearer" and hmac.compare_digest(digest, self.token):
            return None
        return _error(401, "missing or wrong bearer token: send 'Authorization: Bearer <token>'",
                      **{"WWW-Authenticate": "Bearer"})

    async def _items(self, request: Request) -> list[Any]:
        length = request.headers.get("content-length")
        if length is not None and length.isdigit():
            check_body_size(int(length), self.limits)
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            check_body_size(len(body), self.limits)
        try:
            payload = json.loads(body)
        except ValueError as e:
            raise InputError(f"request body is not valid JSON: {e}") from None
        except RecursionError:  # Python's parser recurses once per level of nesting
            raise InputError("request body is nested too deeply to parse (arrays or objects inside each other "
                             "over ~1,000 levels); an item is an object of strings") from None
        return request_items(payload, self.limits)

    async def _handle(self, request: Request, work) -> Any:
        """Token, then body, then ``work(items)`` under the request timeout; errors become 4xx/5xx with the reason."""
        denied = self._denied(request)
        if denied is not None:
            return denied
        try:
            items = await self._items(request)
            return await asyncio.wait_for(work(items), timeout=self.limits.request_timeout_s)
        except LimitError as e:
            return _error(413, str(e))
        except InputError as e:
            return _error(422, str(e))
        except ProvenanceError as e:
            return _error(409, f"this server's rubrics are made differently from the model's: {e}")
        except asyncio.TimeoutError:
            return _error(504, f"request timed out after {self.limits.request_timeout_s:g} s (request_timeout_s, "
                               "--request-timeout); answers finished so far are cached, so a retry is faster")
        except RubricError as e:
            return _error(503, f"scoring failed: {type(e).__name__}: {e}")
        except Exception as e:  # a replica that stayed dead through every attempt, a scorer bug
            log.exception("request failed")
            return _error(503, f"scoring failed: {type(e).__name__}: {e}")

    async def _call(self, handle, item: AnswerItem, calls: _Calls) -> dict[str, Score]:
        from ray.exceptions import RayActorError

        for attempt in range(1, ATTEMPTS + 1):
            try:
                return await handle.score.remote(item)
            except RayActorError as e:
                if attempt == ATTEMPTS:
                    raise
                calls.retried += 1
                log.warning("scorer replica died during a call (%s); sending answer %s again (%d of %d)",
                            type(e).__name__, item.answer_id, attempt + 1, ATTEMPTS)
        raise AssertionError("unreachable")

    async def provenance(self) -> dict[str, Provenance]:
        if self._provenance is None:
            got: dict[str, Provenance] = {}
            for h in self.handles:
                got.update(await h.provenance.remote())
            self._provenance = got
        return self._provenance

    async def _score(self, items: list[AnswerItem], calls: _Calls) -> tuple[dict[str, list[Score]], int]:
        """Scores per rubric in ``items`` order: cached answers from the cache, the rest from every scorer."""
        keys = [f"{self.namespace}:{cache_key(it)}" for it in items]
        todo: dict[str, AnswerItem] = {}
        for k, it in zip(keys, items):
            if k not in self.cache:
                todo.setdefault(k, it)
        cached = sum(1 for k in dict.fromkeys(keys) if k not in todo)
        todo_keys = list(todo)
        got = await asyncio.gather(*(self._call(h, todo[k], calls) for k in todo_keys for h in self.handles))
        fresh: dict[str, dict[str, Score]] = {}
        for i, k in enumerate(todo_keys):
            merged: dict[str, Score] = {}
            for part in got[i * len(self.handles):(i + 1) * len(self.handles)]:
                merged.update(part)
            fresh[k] = merged
        out: dict[str, list[Score]] = {s.name: [] for s in self.specs}
        for k in keys:
            per = fresh.get(k) or self.cache[k]
            for s in self.specs:
                out[s.name].append(per[s.name])
        for k in keys:
            if k in self.cache:
                self.cache.move_to_end(k)
        if self.limits.cache_answers:
            for k, per in fresh.items():
                if all(sc.error is None for sc in per.values()):  # a failure may be transient: never cached
                    self.cache[k] = per
            while len(self.cache) > self.limits.cache_answers:
                self.cache.popitem(last=False)
        return out, cached

    # --- routes --------------------------------------------------------------------------------------------

    @app.get("/healthz")
    async def healthz(self) -> dict:
        """Liveness: this ingress answers (the scorers may still be loading; see ``/readyz``)."""
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz(self):
        """Readiness: 200 when the application runs and every deployment has its replicas running (engines
        loaded), else 503; the body says which deployment is waiting and its replicas by state."""
        from workers.serve.placement import readiness

        try:
            app_status, deployments = await asyncio.wait_for(asyncio.to_thread(_serve_status, self.app_name),
                                                             timeout=10)
        except Exception as e:  # the controller busy or gone: not ready, and why
            return JSONResponse(status_code=503, content={"ready": False, "error": f"{type(e).__name__}: {e}"})
        ready, body = readiness(app_status, deployments)
        return JSONResponse(status_code=200 if ready else 503, content=body)

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi(self, request: Request):
        return self._denied(request) or app.openapi()

    @app.get("/v1/rubrics")
    async def rubrics(self, request: Request):
        """The rubrics this server computes: version, backend, declared raw range, provenance."""
        denied = self._denied(request)
        if denied is not None:
            return denied
        prov = await self.provenance()
        out = [{"name": s.name, "version": s.version, "backend": s.backend, "raw_min": s.raw_min,
                "raw_max": s.raw_max, "description": s.description, "model_id": prov[s.name].model_id,
                "model_revision": prov[s.name].model_revision, "template_hash": prov[s.name].template_hash}
               for s in self.specs]
        features = None if self.model is None else list(self.model.features_)
        return {"rubrics": out, "model_features": features, "limits": self.limits.__dict__}

    @app.post("/v1/score", response_model=ScoreResponse, openapi_extra=_body(ScoreRequest))
    async def score(self, request: Request):
        """Per item: the 1-5 rubric vector, raw scores, per-rubric errors, and each rubric's provenance."""

        async def work(raw_items: list[Any]) -> dict:
            calls = _Calls()
            checked = [answer_item(rec, self.limits) for rec in raw_items]
            good = [(i, it) for i, it in enumerate(checked) if isinstance(it, AnswerItem)]
            scores, cached = await self._score([it for _, it in good], calls)
            rows, records = score_rows([it for _, it in good], self.specs, scores, await self.provenance())
            results: list[dict] = [{}] * len(checked)
            for (i, _), row in zip(good, rows):
                results[i] = {"index": i, **row}
            for i, it in enumerate(checked):
                if isinstance(it, Reject):
                    results[i] = {"index": i, "error": it.reason, "field": it.field}
            return {"results": results, "rubrics": [s.name for s in self.specs], "provenance": records,
                    "cached": cached, "retried": calls.retried}

        return await self._handle(request, work)

    @app.post("/v1/prefer", response_model=PreferResponse, openapi_extra=_body(PreferRequest))
    async def prefer(self, request: Request):
        """Per pair what ``lfqa-rubric predict`` writes: P(a), style-controlled P(a), the predicted label
        and each feature's contribution to the logit."""
        if self.model is None:
            return self._denied(request) or _error(404, "no preference model: start the server with --model OUT/model.json")

        async def work(raw_items: list[Any]) -> dict:
            calls = _Calls()
            checked = [preference_pair(rec, i, self.limits) for i, rec in enumerate(raw_items)]
            pairs = [p for p in checked if isinstance(p, PairRecord)]
            results: list[dict] = [{"index": i, "error": p.reason, "field": p.field} if isinstance(p, Reject) else {}
                                   for i, p in enumerate(checked)]
            if pairs:
                answers = explode(pairs)
                scores, cached = await self._score(answers, calls)
                rows = prefer_rows(self.model, pairs, answers, self.specs, scores, await self.provenance())
                for p, row in zip(pairs, rows):
                    results[p.row] = {"index": p.row, **row}
            else:
                cached = 0
            return {"results": results, "features": list(self.model.features_), "cached": cached,
                    "retried": calls.retried}

        return await self._handle(request, work)
