"""The HTTP adapter, and the one request function the built-in ``http`` step shares.

Outcomes follow the design's rule that an ambiguous dispatch is a state: a
connection that never opened is ``failed`` (nothing was sent); a timeout or a
broken connection after the request went out, a status listed in
``ambiguous_statuses``, or 409/425/429 to a request sent with an idempotency
key, is ``unknown`` for any skill that is not a read.

A skill's ``timeout`` bounds the whole exchange — connect, TLS, sending, and the reply to its
last byte — not each step of it: at the deadline the connection is cut (:class:`Deadline`), so
a reply that trickles in cannot keep an attempt open, and nothing is sent after the deadline.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import TracebackType
from typing import Any

import httpx

from openseal.compiler import EvaluationError, evaluate
from openseal.observability import tracing
from openseal.skills.base import (
    Outcome,
    SkillCall,
    SkillResult,
    check_args,
    check_output,
    failed,
    with_defaults,
)
from openseal.skills.credentials import CredentialError, resolve_credential


@dataclass(frozen=True, slots=True)
class HttpReply:
    status: int
    headers: Mapping[str, str]
    body: object

    def to_output(self) -> dict[str, object]:
        return {"status": self.status, "headers": dict(self.headers), "body": self.body}


class RequestNotSent(Exception):
    """The connection could not be made: the request certainly had no effect."""


class RequestAmbiguous(Exception):
    """The request may have reached the server; its effect is unknown."""


class _Expired(Exception):
    """The deadline passed before the request was sent."""


class Deadline:
    """Ends one exchange at its deadline, whatever it is doing then.

    httpx's timeouts bound each connect, read and write on its own, so a server that sends a
    byte now and then keeps an exchange open for as long as it likes. A timer cuts the
    connection at the deadline (the socket is shut down, which wakes a blocked read); a request
    whose headers were not sent by then is not sent at all. The socket comes from httpx's
    ``trace`` request extension, so the same client code serves plain and TLS connections.
    """

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self.expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._timer.cancel()

    def trace(self, event: str, info: Mapping[str, Any]) -> None:
        """httpx's trace callback: keep the connection's socket; refuse to send when late."""
        if event.endswith((".connect_tcp.complete", ".start_tls.complete")):
            stream = info.get("return_value")
            found = stream.get_extra_info("socket") if stream is not None else None
            with self._lock:
                self._socket = found
                late = self.expired
            if late:
                _cut(found)
        elif event.endswith(".send_request_headers.started") and self.expired:
            raise _Expired

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            found = self._socket
        _cut(found)


def _cut(found: socket.socket | None) -> None:
    # The plain socket's shutdown, also for a TLS socket (whose own would unwrap it under a
    # thread reading from it): both directions end, and a blocked read returns at once.
    if found is not None:
        with contextlib.suppress(OSError):
            socket.socket.shutdown(found, socket.SHUT_RDWR)


@cache
def tls_context() -> ssl.SSLContext:
    """httpx's default TLS context, made once a process rather than per request: building one
    loads the CA bundle, tens of milliseconds of CPU for each call otherwise. The http skill and
    the CLI's server client both use it."""
    return httpx.create_ssl_context()


def send(
    method: str,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    body: object = None,
    timeout: float,
) -> HttpReply:
    """Send one request: non-string bodies as JSON; a JSON reply is decoded."""
    content: bytes | None = None
    sent_headers = dict(headers or {})
    tracing.inject(sent_headers)
    if body is not None:
        if isinstance(body, str):
            content = body.encode("utf-8")
        else:
            content = json.dumps(body, separators=(",", ":")).encode("utf-8")
            sent_headers.setdefault("content-type", "application/json")
    deadline = Deadline(timeout)
    try:
        with (
            deadline,
            httpx.Client(timeout=timeout, follow_redirects=False, verify=tls_context()) as client,
        ):
            response = client.request(
                method, url, headers=sent_headers, content=content,
                extensions={"trace": deadline.trace},
            )  # fmt: skip
    except _Expired:
        raise RequestNotSent(f"{method} {url}: not connected within {timeout:g}s") from None
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol) as exc:
        raise RequestNotSent(f"{method} {url}: cannot connect ({exc.__class__.__name__})") from None
    except httpx.InvalidURL as exc:
        raise RequestNotSent(f"invalid URL `{url}`: {exc}") from None
    except httpx.HTTPError as exc:
        if deadline.expired or isinstance(exc, httpx.TimeoutException):
            raise RequestAmbiguous(f"{method} {url}: no reply within {timeout:g}s") from None
        raise RequestAmbiguous(f"{method} {url}: {exc.__class__.__name__} after sending") from None
    return HttpReply(response.status_code, dict(response.headers), _decode(response))


def _decode(response: httpx.Response) -> object:
    if "json" in response.headers.get("content-type", ""):
        try:
            return response.json()
        except ValueError:
            pass
    return response.text


#: answers to a request that carries an idempotency key which say "not now", not "no": the
#: key is in use by a request still in flight (409), too early (425), too many (429). Only a
#: definite answer to *this* request proves it had no effect.
KEYED_AMBIGUOUS_STATUSES = frozenset({409, 425, 429})


class HttpAdapter:
    """Calls ``adapter "http"``; URL and headers are templates over ``args`` and ``config``."""

    kind = "http"

    def call(self, call: SkillCall) -> SkillResult:
        problem = check_args(call)
        if problem is not None:
            return problem
        spec = call.spec.adapter.http
        assert spec is not None, "HttpAdapter called for a skill without an http adapter"
        args = with_defaults(call)
        scope = {"args": args, "config": dict(call.config), "action": dict(call.action)}
        try:
            url = str(evaluate(spec.url, scope))
            headers = {k: str(evaluate(v, scope)) for k, v in spec.headers.items()}
            body = evaluate(spec.body, scope) if spec.body is not None else args
        except EvaluationError as exc:
            return failed(f"skill `{call.skill}`: {exc.message} ({exc.span})")
        try:
            headers.update(self._auth(call))
        except CredentialError as exc:
            return failed(exc.message)
        key_header = call.spec.idempotency.key_header if call.spec.idempotency else None
        if key_header and call.idempotency_key:
            headers[key_header] = call.idempotency_key
        body = None if spec.method == "GET" else body
        ambiguous = set(spec.ambiguous_statuses)
        if key_header and call.idempotency_key:
            ambiguous |= KEYED_AMBIGUOUS_STATUSES
        result = self._send(call, spec.method, url, headers, body, ambiguous)
        return check_output(call, result)

    def _auth(self, call: SkillCall) -> dict[str, str]:
        if call.spec.credential is None:
            return {}
        if call.credentials is not None:
            token = call.credentials.resolve(call.spec.credential).reveal()
        else:
            token = resolve_credential(call.spec.credential, call.config)
        return {"authorization": f"Bearer {token}"}

    def _send(
        self,
        call: SkillCall,
        method: str,
        url: str,
        headers: dict[str, str],
        body: object,
        ambiguous: set[int],
    ) -> SkillResult:
        unsure: Outcome = "failed" if call.spec.effect == "read" else "unknown"
        try:
            reply = send(method, url, headers=headers, body=body, timeout=call.timeout)
        except RequestNotSent as exc:
            return failed(str(exc))
        except RequestAmbiguous as exc:
            return SkillResult(unsure, error=str(exc))
        detail = {"status": reply.status}
        if 200 <= reply.status < 300:
            return SkillResult("succeeded", reply.body, detail=detail)
        message = f"{method} {url} answered {reply.status}"
        if reply.status in ambiguous:
            return SkillResult(unsure, error=message, detail=detail)
        return SkillResult("failed", error=message, detail=detail)
