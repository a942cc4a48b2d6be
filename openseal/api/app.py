"""The FastAPI application: ``create_app(settings)``.

Example (what ``openseal serve`` does)::

    app = create_app(ApiSettings(host="127.0.0.1", workers=2, authority=load_authority(path)))
    uvicorn.run(app, host="127.0.0.1", port=8400)

Every route is under ``/api/v1`` and calls the service functions the CLI calls; the OpenAPI
document is at ``/api/v1/openapi.json`` (an interactive page at ``/api/v1/docs``, from bundled
assets); the web console is at ``/``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from openseal import __version__
from openseal.api import console, errors, openapi
from openseal.api.auth import caller
from openseal.api.http_metrics import HttpMetrics
from openseal.api.limits import RequestLimits
from openseal.api.routes import (
    actions,
    agent_requests,
    approvals,
    asks,
    authoring,
    definitions,
    deployments,
    events,
    flow,
    health,
    meta,
    objectives,
    runs,
    tokens,
    triggers,
)
from openseal.api.settings import ApiSettings
from openseal.api.state import ApiState
from openseal.api.workers import InProcessWorkers
from openseal.runtime.store import Store, open_store

PREFIX = "/api/v1"
ROUTERS = (
    meta, definitions, deployments, objectives, runs, approvals, actions, events, triggers,
    agent_requests, authoring, asks, flow,
    tokens,
)  # fmt: skip


def create_app(settings: ApiSettings, *, store: Store | None = None) -> FastAPI:
    """The API for ``settings``.

    The store is opened at start-up (``settings.database_url`` or SQLite under
    ``settings.home``) and closed at shutdown, unless ``store`` is given: then the caller owns
    it. With ``settings.workers`` > 0, that many engine workers run in the server process.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        opened = store
        if opened is None:
            opened = await run_in_threadpool(
                lambda: open_store(settings.database_url, home=settings.home)
            )
        app.state.openseal = ApiState.build(settings, opened)
        workers = InProcessWorkers(opened, settings) if settings.workers > 0 else None
        app.state.workers = workers
        if workers is not None:
            workers.start()
        try:
            yield
        finally:
            if workers is not None:
                await run_in_threadpool(workers.stop)
            # openseal.db alone a complete copy: uvicorn may end the process by the signal it
            # caught once this returns, before the caller's own clean-up runs
            await run_in_threadpool(opened.checkpoint)
            app.state.openseal = None
            if store is None:
                opened.close()

    app = FastAPI(
        title="openseal",
        version=__version__,
        summary="Deploy governed definitions, start and steer durable runs, decide approvals.",
        openapi_url=None,  # served by openapi.install, as this server enforces it
        docs_url=None,  # served from bundled assets by the console
        redoc_url=None,
        lifespan=lifespan,
    )
    errors.install(app)
    openapi_url = f"{PREFIX}/openapi.json"
    openapi.install(app, openapi_url)
    app.add_middleware(RequestLimits, limits=settings.limits)
    app.add_middleware(HttpMetrics)  # outermost: it counts what the limits refuse too
    for module in ROUTERS:
        app.include_router(module.router, prefix=PREFIX, dependencies=[Depends(caller)])
    docs_url = f"{PREFIX}/docs" if settings.docs else None
    console.install(app, prefix=PREFIX, docs_url=docs_url, dependencies=[Depends(caller)])
    app.include_router(health.router)
    redirect_unversioned(app, {"/openapi.json": openapi_url, "/docs": docs_url})
    return app


def redirect_unversioned(app: FastAPI, targets: dict[str, str | None]) -> None:
    """``/docs`` and ``/openapi.json``, where a FastAPI server usually serves them, answer with
    a redirect to the versioned ones (``/api/v1/...``) instead of a 404; one not served (the
    docs page turned off) is not redirected to."""
    for path, target in targets.items():
        if target:
            app.add_api_route(path, _redirect(target), methods=["GET"], include_in_schema=False)


def _redirect(target: str) -> Callable[[], RedirectResponse]:
    def redirect() -> RedirectResponse:
        return RedirectResponse(target, status_code=307)

    return redirect
