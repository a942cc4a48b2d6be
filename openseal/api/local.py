"""Whether a caller is "this machine": the local operator is decided by who connects.

A connection is the local operator's when its peer address is loopback, it carries no
forwarding header (``Forwarded``, ``X-Forwarded-For``, ``X-Real-IP``...), and the server is not
configured behind a proxy (``--trusted-proxy``): a relay on the same host would otherwise make
every remote caller look local. Forwarding headers never grant anything; the server tells
uvicorn to honour them only from the configured proxies. The API tells the runtime through
``Caller.local``; the runtime never sees an address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from starlette.requests import HTTPConnection

#: headers a proxy adds; from anyone else they mean somebody pretends to be one
FORWARDING_HEADERS = (
    "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip",
)  # fmt: skip


def is_loopback(host: str) -> bool:
    """True for loopback listening addresses (``127.0.0.1``, ``::1``, ``localhost``...)."""
    host = host.strip()
    if host.startswith("["):  # [::1]:8080
        host = host[1 : host.find("]")]
    elif host.count(":") == 1:  # 127.0.0.1:8080
        host = host.split(":")[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_local_connection(connection: HTTPConnection, trusted_proxies: Sequence[str] = ()) -> bool:
    """The caller is on this machine: a loopback peer, no forwarding header, no proxy."""
    if trusted_proxies:  # behind a proxy every caller arrives from it: nobody is local
        return False
    if any(name in connection.headers for name in FORWARDING_HEADERS):
        return False
    client = connection.client
    return client is not None and is_loopback(client.host)
