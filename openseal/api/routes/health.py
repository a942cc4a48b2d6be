"""Operations endpoints, outside ``/api/v1``: ``/healthz``, ``/readyz`` and ``/metrics``.

- ``GET /healthz``: the process is up and serving (no database access, no token);
- ``GET /readyz``: the database answers, its schema is current, the store is not in recovery
  mode after a restore, and — when this server runs workers — at least one of them is alive;
  503 ``unavailable`` naming what is not (no token);
- ``GET /metrics``: Prometheus text exposition of this process's counters and the store's
  gauges (the same bearer token as the API when tokens are configured; a token for some scopes
  sees only the store's gauges of those scopes).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from openseal.api.auth import Caller, caller
from openseal.api.errors import error_response
from openseal.api.state import state_of
from openseal.api.workers import InProcessWorkers
from openseal.observability import metrics
from openseal.runtime.service.workers import StoreCollector
from openseal.runtime.store import Store

router = APIRouter(include_in_schema=False)


@router.get("/healthz")
def healthz() -> dict[str, Any]:
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    state = state_of(request)
    ready = await run_in_threadpool(state.store.health.readiness)
    checks = dict(ready.checks)
    recovering = await run_in_threadpool(_recovery_check, state.store) if ready.ok else None
    if recovering is not None:
        checks["recovery"] = recovering
    workers: InProcessWorkers | None = getattr(request.app.state, "workers", None)
    if workers is not None:
        checks["workers"] = "ok" if workers.alive() else "no worker is alive"
    failing = {name: why for name, why in checks.items() if why != "ok"}
    if failing:
        summary = "; ".join(f"{name}: {why}" for name, why in failing.items())
        return error_response(503, "unavailable", f"not ready: {summary}", {"checks": checks})
    return JSONResponse({"status": "ready", "checks": checks})


def _recovery_check(store: Store) -> str | None:
    """None, or that the store is in recovery mode after a restore: nothing is claimed or
    sent until its actions are reconciled (invariant 18)."""
    if store.recoveries.active() is None:
        return None
    return "recovery mode after a restore: no run is claimed (`openseal db recovery status`)"


@router.get("/metrics")
def prometheus_metrics(request: Request, who: Annotated[Caller, Depends(caller)]) -> Response:
    """A token for every scope (or the local operator) gets every number; one for some scopes
    gets the store's numbers of those scopes only, without this process's counters, which add
    up every scope's work."""
    scopes = who.grant.visible()
    collector = StoreCollector(state_of(request).store, scopes)
    body, content_type = metrics.exposition([collector], process=scopes is None)
    return Response(body, media_type=content_type)
