"""Whether a request is the local operator's: a deliberate, local choice (invariant 21).

The local operator (``user:local``) exists only on a server started for it
(``openseal serve --local-operator``: ``ApiSettings.local_operator``, a per-start secret) that
listens on loopback with no ``--trusted-proxy``. A request is the local operator's only when
all of these hold, checked by :func:`refuse_unless_local`:

* it presents this start's secret (:mod:`openseal.local_operator`): as a bearer token, or as
  the console's cookie;
* its peer address is loopback and it carries no forwarding header (``Forwarded``,
  ``X-Forwarded-For``, ``X-Real-IP``...): else ``403 local_operator_refused``;
* its ``Host`` names a loopback address (``127.0.0.1``, ``[::1]``, ``localhost``, with any
  port): else ``421 misdirected_request``. A web page whose name was re-pointed at
  127.0.0.1 (DNS rebinding) reaches the server with its own name there;
* its ``Origin``, when it has one, is a loopback origin: else ``403 foreign_origin``; and a
  request carrying the cookie that the browser marks as coming from another origin
  (``Sec-Fetch-Site``) is ``403 cross_site_request``: the cookie is the console's alone.

A relay on the same host (socat, a TCP-mode proxy) forwards whatever its callers send, but
none of them holds the secret, so none is the local operator. The runtime hears of all this
only through ``Caller.local``; it never sees an address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection

from openseal.api.errors import ApiError

#: headers a proxy adds; from anyone else they mean somebody pretends to be one
FORWARDING_HEADERS = (
    "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip",
)  # fmt: skip
#: what a browser says of a request from this server's own pages (or typed in the bar)
_OWN_PAGES = frozenset({"same-origin", "none"})


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


def is_loopback_authority(authority: str) -> bool:
    """Whether a ``Host`` value (or an origin's ``host[:port]``) names a loopback address:
    ``127.0.0.1``, ``[::1]`` or ``localhost``, with or without a port."""
    try:
        parts = urlsplit(f"//{authority.strip()}")
        _ = parts.port  # a malformed port is no loopback authority
    except ValueError:
        return False
    name = parts.hostname
    if not name or parts.username is not None or parts.password is not None:
        return False
    if ":" in name and not authority.strip().startswith("["):
        return False  # an IPv6 address is bracketed in a Host
    return is_loopback(name)


def is_local_connection(connection: HTTPConnection, trusted_proxies: Sequence[str] = ()) -> bool:
    """The caller is on this machine: a loopback peer, no forwarding header, no proxy."""
    if trusted_proxies:  # behind a proxy every caller arrives from it: nobody is local
        return False
    if any(name in connection.headers for name in FORWARDING_HEADERS):
        return False
    client = connection.client
    return client is not None and is_loopback(client.host)


def refuse_unless_local(
    connection: HTTPConnection, trusted_proxies: Sequence[str], *, by_cookie: bool
) -> None:
    """Raise the :class:`ApiError` that refuses the local operator's secret here, if any:
    ``by_cookie`` says it came as the console's cookie rather than a bearer token."""
    if not is_local_connection(connection, trusted_proxies):
        raise ApiError(
            403,
            "local_operator_refused",
            "the local operator is served only to this machine: a loopback connection with "
            "no proxy and no forwarding header",
        )
    host = connection.headers.get("host", "")
    if not is_loopback_authority(host):
        raise ApiError(
            421,
            "misdirected_request",
            f"the local operator is served only at a loopback address (127.0.0.1, [::1] or "
            f"localhost), not at Host {_shown(host)}: a web page whose name leads here, or "
            "a relay, sends its own name",
        )
    origin = connection.headers.get("origin")
    if origin is not None and not _loopback_origin(origin):
        raise ApiError(
            403,
            "foreign_origin",
            f"the local operator answers only pages served from a loopback address, not "
            f"Origin {_shown(origin)}",
        )
    fetch_site = connection.headers.get("sec-fetch-site")
    if by_cookie and fetch_site is not None and fetch_site.lower() not in _OWN_PAGES:
        raise ApiError(
            403,
            "cross_site_request",
            f"the browser marked this request as {_shown(fetch_site)}: the local operator's "
            "cookie counts only on this server's own pages",
        )


def _loopback_origin(origin: str) -> bool:
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and is_loopback_authority(parts.netloc)


def _shown(value: str) -> str:
    """A header value as an error message may quote it: short, on one line."""
    flat = " ".join(value.split())
    return repr(flat if len(flat) <= 80 else f"{flat[:80]}…")
