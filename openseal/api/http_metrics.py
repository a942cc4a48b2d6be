"""Every HTTP request the server answers, counted and timed by route template, method and status
(:data:`openseal.observability.metrics.HTTP_REQUESTS` and ``HTTP_SECONDS``, served at
``/metrics``).

The route is the template the request matched (``/api/v1/runs/{run_id}``), never the raw path,
so ids do not make a series each; a request no route serves (a 404, or one refused before
routing, such as a body over the limit) is ``unmatched``.
"""

from __future__ import annotations

import time
from typing import Any

from openseal.api.limits import App, Message, Receive, Scope, Send
from openseal.observability import metrics

UNMATCHED = "unmatched"


class HttpMetrics:
    """ASGI middleware: one count and one duration per HTTP request, when it has been answered
    (a request that fails with an exception counts as a 500)."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            labels = {"route": route_of(scope), "method": scope["method"], "status": str(status)}
            metrics.HTTP_REQUESTS.labels(**labels).inc()
            metrics.HTTP_SECONDS.labels(**labels).observe(time.perf_counter() - started)


def route_of(scope: Scope) -> str:
    """The template of the route that served the request (``/api/v1/runs/{run_id}``), or
    ``unmatched``. A route included under a prefix knows only its own part (``/runs/{run_id}``),
    so the part of the path before it is kept as the prefix."""
    route: Any = scope.get("route")
    template = getattr(route, "path_format", None) or getattr(route, "path", None)
    if not template:
        return UNMATCHED
    path = str(scope.get("path", ""))
    try:
        rendered = str(template).format(**(scope.get("path_params") or {}))
    except (KeyError, IndexError, ValueError):
        return str(template)
    return path.removesuffix(rendered) + str(template) if path.endswith(rendered) else str(template)
