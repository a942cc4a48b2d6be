"""The HTTP adapter, and the one request function the built-in ``http`` step shares.

Outcomes follow the design's rule that an ambiguous dispatch is a state: a
connection that never opened is ``failed`` (nothing was sent); a timeout or a
broken connection after the request went out, a status listed in
``ambiguous_statuses``, or 409/425/429 to a request sent with an idempotency
key, is ``unknown`` for any skill that is not a read.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

import httpx

from openseal.compiler.lang.evaluate import EvaluationError, evaluate
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
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False, verify=tls_context()) as client:
            response = client.request(method, url, headers=sent_headers, content=content)
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol) as exc:
        raise RequestNotSent(f"{method} {url}: cannot connect ({exc.__class__.__name__})") from None
    except httpx.InvalidURL as exc:
        raise RequestNotSent(f"invalid URL `{url}`: {exc}") from None
    except httpx.TimeoutException:
        raise RequestAmbiguous(f"{method} {url}: no reply within {timeout:g}s") from None
    except httpx.HTTPError as exc:
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
