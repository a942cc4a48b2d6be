"""The console's page at ``/``, its static assets, and the OpenAPI page served from bundled
assets (``/api/v1/docs`` works without internet access).

The console is hand-written HTML, CSS and JavaScript modules shipped inside the package
(``static/``): there is no build step, no CDN and nothing inline, so the strict
Content-Security-Policy holds. The OpenAPI page uses the Swagger UI files that the
``fastapi-offline`` package ships, started by a script of ours rather than an inline one.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"
STATIC_URL = "/console/static"
SWAGGER_URL = "/console/vendor/swagger"
_NO_CACHE = {"Cache-Control": "no-cache"}


def _swagger_assets() -> Path:
    return Path(str(resources.files("fastapi_offline") / "static"))


def mount(app: FastAPI, *, docs_url: str | None) -> None:
    """Serve the console at ``/`` and, when ``docs_url`` is set, the OpenAPI page there."""

    @app.get("/", include_in_schema=False)
    def console() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers=_NO_CACHE)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    app.mount(STATIC_URL, StaticFiles(directory=STATIC), name="console-static")
    if docs_url is None:
        return
    app.mount(SWAGGER_URL, StaticFiles(directory=_swagger_assets()), name="swagger")

    @app.get(docs_url, include_in_schema=False)
    def docs() -> FileResponse:
        return FileResponse(STATIC / "docs.html", headers=_NO_CACHE)
