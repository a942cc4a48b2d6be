"""Who asks: the principal a request is made for, and whether it comes from this machine.

The runtime never sees a network address. The API decides ``local`` from where it listens
(only loopback counts); the CLI runs on the machine holding the store, so it is always local.
"""

from __future__ import annotations

from dataclasses import dataclass

from openseal.runtime.access import FULL, Grant

#: the person at the machine holding the store, when nobody identified themselves
LOCAL_OPERATOR = "user:local"


@dataclass(frozen=True)
class Caller:
    """``principal``: who a token identified (None: nobody, so the local operator, where that
    is allowed); ``local``: the request comes from the machine holding the store; ``grant``:
    the roles and scopes it holds (everything everywhere unless a token says otherwise)."""

    principal: str | None
    local: bool
    grant: Grant = FULL

    @property
    def actor(self) -> str:
        """The name recorded for what this caller does."""
        return self.principal or LOCAL_OPERATOR


#: the CLI: on the machine holding the store, as the local operator
CLI = Caller(None, local=True)
