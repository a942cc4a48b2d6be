"""The web console for approvers and operators, served at ``/`` by ``openseal serve``.

:func:`install` adds the console's pages and assets (:mod:`.pages`), the views it reads
(:mod:`.views`, under ``/api/v1``), the local operator's session (:mod:`.session`), and the
security headers and cross-site refusal (:mod:`.security`) to an API application. See
``docs/console.md``.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import FastAPI
from fastapi.params import Depends

from openseal.api.console import pages, security, session, views


def install(
    app: FastAPI, *, prefix: str, docs_url: str | None, dependencies: Sequence[Depends]
) -> None:
    """Serve the console on ``app``; ``dependencies`` are those of every API route."""
    app.include_router(views.router, prefix=prefix, dependencies=list(dependencies))
    app.include_router(session.router)
    pages.mount(app, docs_url=docs_url)
    app.add_middleware(security.SecurityHeaders)


__all__ = ["install"]
