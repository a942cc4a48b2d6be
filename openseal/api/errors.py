"""One JSON shape for every error the API answers.

``{"error": {"code": "<stable code>", "message": "<one line>", "details": {...}}}``

Refusals from the service layer keep their own stable code (``hash_mismatch``,
``stale_revision``, ``not_an_approver``...) and the HTTP status the error registry
(:mod:`openseal.error_codes`) declares for it. Request
validation is ``422 invalid_request``; an operation whose capability is absent is
``501 not_served``; anything unexpected is ``500 internal_error`` with an opaque reference —
never a traceback, an exception text or a secret.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount

from openseal.error_codes import http_status
from openseal.errors import OpenSealError, UsageError
from openseal.runtime.store import describe_fault, transient

log = logging.getLogger("openseal.api")


class ApiError(OpenSealError):
    """An error raised by the API layer itself (authentication, capabilities, idempotency).

    ``status`` is the one the registry declares for ``code`` (a test checks every call).
    """

    def __init__(
        self, status: int, code: str, message: str, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.status = status
        self.details = dict(details or {})


class ErrorDetail(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str
    message: str
    details: dict[str, Any]


class ErrorBody(BaseModel):
    """The body of every error response."""

    model_config = ConfigDict(extra="forbid")

    error: ErrorDetail


def error_response(
    status: int,
    code: str,
    message: str,
    details: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    body = {"error": {"code": code, "message": message, "details": dict(details or {})}}
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


def from_openseal(exc: OpenSealError) -> JSONResponse:
    """A service refusal: its stable code, its one-line message, the status for that code."""
    code = "invalid_request" if isinstance(exc, UsageError) else exc.code
    details: dict[str, Any] = {"reason": exc.code} if code != exc.code else {}
    # a refusal that passes (a full queue) says when to send again
    retry_after = getattr(exc, "retry_after", None)
    headers = {"Retry-After": str(int(retry_after))} if isinstance(retry_after, int) else None
    if headers is not None:
        details["retry_after"] = retry_after
    return error_response(http_status(code), code, exc.message, details, headers)


def _validation(exc: RequestValidationError) -> JSONResponse:
    # Only where and what: the offending input is never echoed (it may hold a secret).
    problems = [
        {
            "location": [str(part) for part in error.get("loc", ())],
            "message": str(error.get("msg", "")),
            "type": str(error.get("type", "")),
        }
        for error in exc.errors()
    ]
    first = problems[0] if problems else {"location": [], "message": "invalid request"}
    where = ".".join(first["location"]) or "request"
    message = f"invalid request: {where}: {first['message']}"
    return error_response(422, "invalid_request", message, {"problems": problems})


_HTTP_CODES = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed"}


#: the methods a 405's ``Allow`` may name, in the order it names them
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request, exc: StarletteHTTPException) -> str:
    """``Allow`` for a 405: every method the application routes at the request's path. A path
    served by several routes (``GET`` and ``POST /objectives``) lists them all, which the
    refusing route's own header does not; files under a mount are read with GET and HEAD."""
    routes = [route for route in request.app.router.routes if not isinstance(route, Mount)]
    allowed = [
        method
        for method in METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes
        )
    ]
    return ", ".join(allowed) or (exc.headers or {}).get("Allow", "GET, HEAD")


def install(app: FastAPI) -> None:
    """Register the handlers that give every error the one shape."""

    async def api_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return error_response(exc.status, exc.code, exc.message, exc.details, headers)

    async def openseal_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, OpenSealError)
        return from_openseal(exc)

    async def validation_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return _validation(exc)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = _HTTP_CODES.get(exc.status_code, "invalid_request")
        message = {
            404: "no such endpoint",
            405: "method not allowed on this endpoint",
        }.get(exc.status_code, str(exc.detail))
        if exc.status_code >= 500:
            code, message = "internal_error", "internal error"
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = allowed_methods(request, exc)
        return error_response(exc.status_code, code, message, headers=headers)

    async def data_error(_request: Request, exc: Exception) -> JSONResponse:
        # The database refused a value (a NUL byte, a string longer than its column): the
        # request is at fault, not the server.
        return error_response(422, "invalid_request", "a value was not accepted by the database")

    async def database_unavailable(request: Request, exc: Exception) -> JSONResponse:
        # Unreachable, restarting, a lock or statement timeout, a deadlock, (SQLite) locked
        # past the busy timeout: nothing was changed and a retry is worth it.
        if not transient(exc):
            return await unexpected(request, exc)
        log.warning("database unavailable: %s", describe_fault(exc))
        return error_response(503, "unavailable", "the database is unavailable; try again")

    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        reference = uuid.uuid4().hex[:12]
        log.error("internal error %s: %s", reference, exc.__class__.__name__, exc_info=exc)
        return error_response(500, "internal_error", f"internal error (reference {reference})", {})

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(OpenSealError, openseal_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(sa.exc.DataError, data_error)
    app.add_exception_handler(sa.exc.DBAPIError, database_unavailable)
    app.add_exception_handler(sa.exc.DisconnectionError, database_unavailable)
    app.add_exception_handler(sa.exc.TimeoutError, database_unavailable)
    app.add_exception_handler(Exception, unexpected)


#: what each error status means, for the OpenAPI document
ERROR_STATUSES: dict[int, str] = {
    401: "No or an unknown bearer token",
    403: "Refused for this caller (it holds none of the roles the operation needs)",
    404: "Not found",
    409: "Conflict: stale revision, idempotency key reuse, or a state that forbids it",
    413: "The request body is larger than the server accepts",
    422: "Invalid request",
    429: (
        "Too many: the ready queue of the workflow or scope is full, or a quota of the scope "
        "is used up; send again after `Retry-After`"
    ),
    500: "Internal error (the message carries a reference to the server's log)",
    501: "Not served: the capability is not configured on this server",
    502: "An upstream endpoint (the model) failed",
    503: "Unavailable for now (the database, or the model endpoint); retry",
}
#: what every operation may answer: no or a bad token, a role it lacks, a body over the limit,
#: an invalid request, an internal error, the database unavailable
EVERY_OPERATION = (401, 403, 413, 422, 500, 503)


def responses(
    *statuses: int, ok: type[BaseModel] | None = None, ok_statuses: tuple[int, ...] = (200,)
) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for an operation: ``ok`` (the document it answers with, under
    each of ``ok_statuses``) and the error statuses it may answer besides
    :data:`EVERY_OPERATION`, each with the one error shape (:class:`ErrorBody`)."""
    declared: dict[int | str, dict[str, Any]] = {}
    if ok is not None:
        for status in ok_statuses:
            declared[status] = {"model": ok, "description": "Success"}
    for status in sorted({*EVERY_OPERATION, *statuses}):
        declared[status] = {"model": ErrorBody, "description": ERROR_STATUSES[status]}
    return declared
