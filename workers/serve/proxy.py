"""What the HTTP proxy answers for a request lost with the replica that held it: ``503`` with ``Retry-After``.

Ray Serve's proxy forwards each request to an ingress replica (:class:`workers.serve.deployments.RubricService`).
When that replica dies with the request in it (its node left the cluster, its process was killed), the
proxy gets the actor's death instead of an answer, sends nothing and the HTTP server answers a bare
``500 Internal Server Error``: to a client, a lost request looks like a bug. Our ingress always answers
(every error of ours is a 4xx or a 503 that says why), so a request that gets *no* answer from it was
lost with its replica. :class:`LostRequestAnswer`, an ASGI middleware around the proxy, answers such a
request ``503 Service Unavailable`` with ``Retry-After`` and a body that says so; a response the replica
started is passed on as it is (a 500 of ours, if ever, stays a 500).

The proxy loads it through Ray Serve's hook, the environment variable :data:`PROXY_CALLBACK_ENV` naming
:func:`proxy_middlewares`; :func:`workers.serve.service.start_service` sets it in the Serve controller's
environment, which the proxies it starts inherit (on a cluster whose Serve is started another way, set it
on the head node before ``ray start``: docs/serve.md).

It imports nothing heavy itself: the proxy process imports this module to start.
"""

from __future__ import annotations

import json
import logging
from typing import Any

__all__ = ["LostRequestAnswer", "proxy_middlewares", "PROXY_CALLBACK_ENV", "PROXY_CALLBACK", "RETRY_AFTER_S",
           "LOST_MESSAGE"]

log = logging.getLogger(__name__)

#: Ray Serve's hook: an import path of a function returning the proxy's Starlette middlewares.
PROXY_CALLBACK_ENV = "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"
#: This module's :func:`proxy_middlewares`, as that hook names it.
PROXY_CALLBACK = "workers.serve.proxy:proxy_middlewares"
#: Seconds a client waits before sending a lost request again: Serve routes the retry to a live ingress
#: replica at once (there are as many as scorer replicas), and starts a new one in seconds.
RETRY_AFTER_S = 1
#: The body's reason.
LOST_MESSAGE = ("the request was lost with the service replica that held it (its node left the cluster, or its "
                "process stopped) before an answer came; nothing of it was kept: send it again")


class LostRequestAnswer:
    """ASGI middleware: an HTTP request the wrapped app ends (or fails) without starting a response is
    answered 503 with ``Retry-After: RETRY_AFTER_S`` and ``{"error": LOST_MESSAGE, "retry": true}``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: dict) -> None:
            nonlocal started
            if message.get("type") == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception as e:  # noqa: BLE001 - the proxy's own failure to reach the replica
            if started:
                raise
            log.warning("request %s %s lost before an answer (%s: %s): answered 503", scope.get("method"),
                        scope.get("path"), type(e).__name__, e)
        if not started:
            try:
                await send_lost(send)
            except Exception:  # noqa: BLE001 - the client went away too: nobody to answer
                pass


async def send_lost(send: Any) -> None:
    """Send the lost request's 503 (see :class:`LostRequestAnswer`)."""
    body = json.dumps({"error": LOST_MESSAGE, "retry": True}).encode()
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"retry-after", str(RETRY_AFTER_S).encode())]})
    await send({"type": "http.response.body", "body": body})


def proxy_middlewares() -> list:
    """The proxy's middlewares (Ray Serve calls this through :data:`PROXY_CALLBACK_ENV`)."""
    from starlette.middleware import Middleware

    return [Middleware(LostRequestAnswer)]
