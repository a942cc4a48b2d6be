"""``Idempotency-Key`` on creates: the same key and body replay the first response.

The first successful response to a key is stored with a hash of the operation and the request
body. Sending the key again with the same body answers that stored response, byte for byte, with
``Idempotent-Replayed: true``; with another body (or for another operation) it is refused with
``409 idempotency_conflict``. Failed requests are not remembered: nothing was created, so the
client may correct the body and retry with the same key. Two requests racing with one key both
reach the service, which deduplicates the create itself (the key is its request key); the
second to store its response gets the first one's instead.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from fastapi.responses import JSONResponse

from openseal.api.errors import ApiError
from openseal.runtime.store import Store, StoredResponse

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
#: what a key may be, as each route declares its header: 1 to 200 visible ASCII characters
KEY_PATTERN = r"^[!-~]{1,200}$"


def request_hash(operation: str, body: Any) -> str:
    """A hash of what was asked: the operation and the body as JSON with sorted keys."""
    text = json.dumps([operation, body], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def replay(stored: StoredResponse, key: str, operation: str, digest: str) -> JSONResponse:
    """The stored response, or a 409 when the key was used for something else."""
    if stored.operation != operation or stored.request_hash != digest:
        raise ApiError(
            409,
            "idempotency_conflict",
            f"{HEADER} {key!r} was already used with a different request",
            {"key": key},
        )
    return JSONResponse(stored.response, stored.status_code, headers={REPLAYED: "true"})


def answered_once(
    store: Store,
    key: str | None,
    operation: str,
    body: Any,
    principal: str,
    create: Callable[[str | None], tuple[int, Any]],
) -> JSONResponse:
    """Run ``create(key)`` (it answers ``(status, document)``) at most once per ``key``.

    Without a key it simply runs. With one, a stored response to the same operation and body
    is replayed, another is refused (409), and a new response is stored; should a concurrent
    request with the key have stored first, that one is answered.
    """
    if key is None:
        status, document = create(None)
        return JSONResponse(document, status)
    digest = request_hash(operation, body)
    stored = store.idempotency.get(principal, key)
    if stored is not None:
        return replay(stored, key, operation, digest)
    status, document = create(key)
    stored = store.idempotency.remember(key, operation, digest, status, document, principal)
    if stored.response != document:
        return replay(stored, key, operation, digest)
    return JSONResponse(document, status)
