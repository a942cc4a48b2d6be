"""Headers every response carries, and the refusal of cross-site state changes.

* A strict Content-Security-Policy: scripts, styles, images and connections only from this
  server, no inline script, no framing. The console never needs more; the OpenAPI page's
  renderer needs inline styles and nothing else.
* A state-changing request (any method but GET, HEAD, OPTIONS) that a browser marks as coming
  from another site (``Sec-Fetch-Site``) or whose ``Origin`` is not this server is refused with
  ``403 cross_site_request`` before anything runs. Programs that send neither header (the CLI,
  scripts, ``curl``) are not affected; bearer tokens are never sent by a browser on its own.

This is a plain ASGI middleware, so the event stream is passed through untouched.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openseal.api.errors import error_response

CONSOLE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
#: the OpenAPI page: its renderer sets inline styles
DOCS_POLICY = CONSOLE_POLICY.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")
DOCS_PATH = "/api/v1/docs"

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_SAME_SITE = frozenset({"same-origin", "none"})


def _headers(policy: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"content-security-policy", policy.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        (b"x-frame-options", b"DENY"),
        (b"cross-origin-opener-policy", b"same-origin"),
    ]


_CONSOLE_HEADERS = _headers(CONSOLE_POLICY)
_DOCS_HEADERS = _headers(DOCS_POLICY)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def cross_site(scope: Scope) -> str | None:
    """Why a state-changing request must be refused as cross-site (None: it may go on)."""
    if scope.get("method", "GET") in _SAFE_METHODS:
        return None
    fetch_site = _header(scope, b"sec-fetch-site")
    if fetch_site is not None and fetch_site.lower() not in _SAME_SITE:
        return f"the browser marked this request as {fetch_site}"
    origin = _header(scope, b"origin")
    if origin is None:
        return None
    host = _header(scope, b"host")
    if origin == "null" or host is None or urlsplit(origin).netloc.lower() != host.lower():
        return "its Origin is not this server"
    return None


class SecurityHeaders:
    """Add the headers to every response; refuse cross-site state changes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra: Iterable[tuple[bytes, bytes]] = (
            _DOCS_HEADERS if scope.get("path") == DOCS_PATH else _CONSOLE_HEADERS
        )

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [
                    *message.get("headers", []),
                    *((k, v) for k, v in extra if k not in present),
                ]
            await send(message)

        reason = cross_site(scope)
        if reason is not None:
            refusal = error_response(
                403,
                "cross_site_request",
                f"refused a state-changing request from another site: {reason}",
            )
            await refusal(scope, receive, with_headers)
            return
        await self.app(scope, receive, with_headers)
