"""The OpenAPI document at ``/api/v1/openapi.json``, as this server enforces it.

Every operation declares the bearer scheme: a token, or the local operator's per-start secret.
Only a server started with ``--insecure-no-auth`` while no token is configured serves a caller
without one; its document lists the empty requirement (``{}``) beside ``bearer`` on each
operation, which is how OpenAPI says ``Authorization`` is optional. A token made later closes
that door, and the document says so from then on. Each variant is built once, from the routes'
own declarations.
"""

from __future__ import annotations

import copy
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from openseal.api.auth import tokens_configured
from openseal.api.state import state_of

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def with_optional_auth(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with every operation's security requirement made optional."""
    optional = copy.deepcopy(document)
    for path in optional.get("paths", {}).values():
        for method in METHODS:
            operation = path.get(method)
            if operation is not None and operation.get("security"):
                operation["security"] = [*operation["security"], {}]
    return optional


def install(app: FastAPI, url: str) -> None:
    """Serve the document at ``url`` (the application is built with ``openapi_url=None``)."""
    variants: dict[bool, dict[str, Any]] = {}

    def document(request: Request) -> JSONResponse:
        state = state_of(request)
        required = not state.settings.insecure_no_auth or tokens_configured(
            state.tokens, state.stored_tokens
        )
        if required not in variants:
            built = app.openapi()
            variants[required] = built if required else with_optional_auth(built)
        return JSONResponse(variants[required])

    app.add_api_route(url, document, methods=["GET"], include_in_schema=False)
