"""Whether the API counts as "this machine": it does when it listens on a loopback address only.

The API decides this once, from its configured host, and tells the runtime through
``Caller.local``; the runtime never sees an address.
"""

from __future__ import annotations

import ipaddress


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
