"""What an API server is configured with (``openseal serve`` options, or embedding code)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from openseal.api.auth import TokenTable
from openseal.api.limits import Limits
from openseal.api.local import is_loopback
from openseal.authoring import DEFAULT_TOKEN_BUDGET, AuthoringSetup, availability
from openseal.local_operator import LocalOperator
from openseal.runtime.service import ApprovalAuthority, CapabilityConfig
from openseal.skills.credentials import RuntimeContext

if TYPE_CHECKING:
    from openseal.runtime.service.workers import ProviderFactory


@dataclass(frozen=True)
class ApiSettings:
    """Server configuration.

    ``host`` is the listening address. ``local_operator``, this start's secret, serves the
    local operator (``user:local``, :mod:`openseal.api.local`) — only when ``host`` is
    loopback and no ``trusted_proxies`` are configured; without it there is none.
    ``workers`` in-process engine workers execute runs; ``external_workers`` declares that
    ``openseal worker`` processes share the store instead. Both make run creation available.
    ``tokens``, ``authority.tokens`` and the store's tokens identify callers.
    """

    host: str = "127.0.0.1"
    port: int = 8400
    home: Path = Path(".openseal")
    database_url: str | None = None
    authority: ApprovalAuthority | None = None
    tokens: TokenTable = field(default_factory=TokenTable)
    workers: int = 0
    external_workers: bool = False
    context: RuntimeContext | None = None
    scripted_responses: Path | None = None
    scripted_calls: Path | None = None
    #: how often the event stream looks for new events
    stream_poll_seconds: float = 0.2
    #: a comment line keeps an idle event stream (and proxies) from timing out
    stream_keepalive_seconds: float = 15.0
    docs: bool = True
    #: request body size, JSON nesting, an objective's inputs
    limits: Limits = field(default_factory=Limits)
    #: authoring: the definitions drafts join and the model profile defined among them
    authoring_definitions: Path | None = None
    authoring_profile: str | None = None
    #: tokens one authoring request may spend over all its model calls
    authoring_token_budget: int = DEFAULT_TOKEN_BUDGET
    #: proxies in front of the server (addresses or networks): forwarding headers are honoured
    #: from them only, and the local operator is off
    trusted_proxies: tuple[str, ...] = ()
    #: without tokens, serve anonymous callers as user:local (never as a local connection)
    insecure_no_auth: bool = False
    #: the local operator's secret of this start (``--local-operator``); None: no local operator
    local_operator: LocalOperator | None = None

    @property
    def local(self) -> bool:
        """Whether the local operator is served: started for it, listening on loopback, not
        behind a proxy (each request is then judged by its secret and connection)."""
        return (
            self.local_operator is not None and is_loopback(self.host) and not self.trusted_proxies
        )

    def all_tokens(self) -> TokenTable:
        return self.tokens.merged(self.authority)

    def provider_factory(self) -> ProviderFactory:
        """The model providers of this server's turns and asks: scripted profiles from its
        responses file, ``openai`` profiles with credentials from its runtime context."""
        from openseal.runtime.service.workers import default_provider_factory

        return default_provider_factory(
            self.scripted_responses,
            self.scripted_calls,
            credentials=self.context.credentials if self.context else None,
        )

    def authoring_setup(self) -> AuthoringSetup:
        context = self.context or RuntimeContext.empty()
        return AuthoringSetup(self.authoring_definitions, self.authoring_profile, context)

    def capability_config(self, *, stored_tokens: bool = False) -> CapabilityConfig:
        """What the server is configured with; checks the authoring profile (a compile).
        ``stored_tokens``: the store holds tokens (``openseal tokens create``)."""
        authoring = availability(self.authoring_setup())
        return CapabilityConfig(
            workers=self.workers,
            external_workers=self.external_workers,
            authority=self.authority,
            tokens=bool(self.all_tokens()) or stored_tokens,
            local=self.local,
            authoring_model=authoring.name if authoring.complete else None,
            authoring_missing=authoring.missing,
        )
