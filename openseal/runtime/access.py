"""Who may do what, and where: roles, the role × operation table, and scopes.

A principal (``user:alice``, ``service:ci``) holds roles and the scopes it may read and act in.
:data:`PERMISSIONS` is the one table saying which roles may use each operation (the API's
operation ids); every API route checks it through one dependency, ``GET /me`` reports from
it, and the tests generate their role × operation matrix from it. Every role may read;
``admin`` may do everything.

A record's scope is its run's (approvals, actions, events, artefacts, agent requests), its
objective's, or its change proposal's; a caller sees only records in its scopes, and an id in
another scope is answered as not found (see ``docs/decisions/0007-principals-roles-scopes.md``).

Example::

    >>> alice = Grant(frozenset({"operator"}), frozenset({"procurement"}))
    >>> alice.may("runs.cancel"), alice.may("approvals.decide"), alice.sees("default")
    (True, False, False)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from openseal.contract import ROLE_PREFIX, TOKEN_ROLES
from openseal.errors import RuntimeFailure
from openseal.runtime.store import DEFAULT_SCOPE, NotFound, Run

if TYPE_CHECKING:
    from openseal.runtime.store import Store

#: every role, least to most
ROLES = TOKEN_ROLES
VIEWER, OPERATOR, APPROVER, AUTHOR, REVIEWER, DECIDER, ADMIN = ROLES

#: in a grant's scopes: every scope
ANY_SCOPE = "*"


_READS = (
    "definitions.get", "deployments.list", "deployments.show", "deployments.history",
    "proposals.list", "proposals.show", "proposals.replay", "objectives.list", "objectives.show",
    "runs.list", "runs.show",
    "runs.events", "runs.events_stream", "runs.turns", "approvals.list", "approvals.show",
    "actions.list", "actions.show", "agent_requests.list", "agent_requests.show", "triggers.list",
    "triggers.show", "agents.show", "teams.show", "scopes.limits", "scopes.quotas",
    "scopes.retention",
)  # fmt: skip

#: operation (the API's operation id) → the roles that may use it; ``admin`` may use all
PERMISSIONS: dict[str, frozenset[str]] = {
    **{operation: frozenset(ROLES) for operation in _READS},
    "objectives.create": frozenset({OPERATOR, ADMIN}),
    "asks.plan": frozenset({OPERATOR, ADMIN}),
    "asks.confirm": frozenset({OPERATOR, ADMIN}),
    "objectives.set_status": frozenset({OPERATOR, ADMIN}),
    "objectives.activate": frozenset({OPERATOR, ADMIN}),
    "runs.pause": frozenset({OPERATOR, ADMIN}),
    "runs.resume": frozenset({OPERATOR, ADMIN}),
    "runs.cancel": frozenset({OPERATOR, ADMIN}),
    "runs.intervene": frozenset({OPERATOR, ADMIN}),
    "actions.reconcile": frozenset({OPERATOR, ADMIN}),
    "actions.resolve": frozenset({OPERATOR, ADMIN}),
    "events.deliver": frozenset({OPERATOR, ADMIN}),
    # an agent request's step: also the principal it is for (the callee agent, or the caller
    # run's owner for answering and reviewing), see service.named_principal
    **{
        f"agent_requests.{step}": frozenset({OPERATOR, ADMIN})
        for step in ("accept", "decline", "ask", "clarify", "complete", "review")
    },
    "triggers.set_status": frozenset({OPERATOR, ADMIN}),
    # pausing reaches every scope's runs (a token for scope ``*``); raising or removing a
    # scope's cap widens it and is an admin's (the service checks)
    **{
        f"{what}.{step}": frozenset({OPERATOR, ADMIN})
        for what in ("agents", "teams")
        for step in ("pause", "resume")
    },
    "scopes.set_limit": frozenset({OPERATOR, ADMIN}),
    "scopes.set_quota": frozenset({OPERATOR, ADMIN}),
    "scopes.set_queue": frozenset({OPERATOR, ADMIN}),
    # shortening or removing a scope's retention lets runs leave sooner: an admin's (the
    # service checks)
    "scopes.set_retention": frozenset({OPERATOR, ADMIN}),
    # the authority still decides which approvals an approver is named for
    "approvals.decide": frozenset({APPROVER, ADMIN}),
    "proposals.file": frozenset({AUTHOR, ADMIN}),
    "proposals.refresh": frozenset({AUTHOR, ADMIN}),
    "proposals.activate": frozenset({AUTHOR, ADMIN}),
    # a dry run is the review's view; moving runs is for the policy's deciders only
    "proposals.migrate": frozenset({AUTHOR, REVIEWER, DECIDER, ADMIN}),
    "deployments.rollback": frozenset({AUTHOR, ADMIN}),
    "authoring.draft": frozenset({AUTHOR, ADMIN}),
    # governance's policy still decides which reviewers and deciders count
    "proposals.review": frozenset({REVIEWER, ADMIN}),
    "proposals.decide": frozenset({DECIDER, ADMIN}),
    # and only in every scope: a token may reach any scope (see ``service.tokens``)
    "tokens.list": frozenset({ADMIN}),
    "tokens.create": frozenset({ADMIN}),
    "tokens.revoke": frozenset({ADMIN}),
}


def roles_for(operation: str) -> frozenset[str]:
    """The roles that may use ``operation`` (an operation missing from the table: admin only)."""
    return PERMISSIONS.get(operation, frozenset({ADMIN}))


@dataclass(frozen=True)
class Grant:
    """What a caller may do (``roles``) and where (``scopes``; ``*`` is every scope)."""

    roles: frozenset[str]
    scopes: frozenset[str]

    @classmethod
    def of(cls, roles: Iterable[str], scopes: Iterable[str] = (DEFAULT_SCOPE,)) -> Grant:
        return cls(frozenset(roles), frozenset(scopes))

    def may(self, operation: str) -> bool:
        return ADMIN in self.roles or bool(self.roles & roles_for(operation))

    def sees(self, scope: str) -> bool:
        return ANY_SCOPE in self.scopes or scope in self.scopes

    @property
    def everywhere(self) -> bool:
        return ANY_SCOPE in self.scopes

    def visible(self) -> tuple[str, ...] | None:
        """The scopes to filter lists by (None: every scope)."""
        return None if self.everywhere else tuple(sorted(self.scopes))

    def home(self, wanted: str | None = None) -> str | None:
        """The scope a new record goes to: ``wanted`` if the caller may act there, else its
        only scope or ``default`` (None: ``wanted`` is a scope it may not act in)."""
        if wanted is not None:
            return wanted if self.sees(wanted) else None
        if self.everywhere or DEFAULT_SCOPE in self.scopes or not self.scopes:
            return DEFAULT_SCOPE
        return sorted(self.scopes)[0]

    def union(self, other: Grant) -> Grant:
        return Grant(self.roles | other.roles, self.scopes | other.scopes)


#: everything everywhere: the local operator, and the CLI on the machine holding the store
FULL = Grant(frozenset({ADMIN}), frozenset({ANY_SCOPE}))


def approver_grant() -> Grant:
    """What the approval authority's own tokens hold: reading and deciding, in every scope."""
    return Grant(frozenset({VIEWER, APPROVER}), frozenset({ANY_SCOPE}))


def named(actor: str, roles: Iterable[str], names: Iterable[str]) -> bool:
    """Whether ``names`` (an approver, reviewer or decider list) names ``actor`` itself or, as
    ``role:R``, a role R it holds. ``admin`` is not every role here: a list naming
    ``role:reviewer`` means the tokens granting ``reviewer``.

    >>> named("user:ann", {"reviewer"}, ["user:bob", "role:reviewer"])
    True
    >>> named("user:ann", {"admin"}, ["role:reviewer"])
    False
    """
    held = {ROLE_PREFIX + role for role in roles}
    return any(name == actor or name in held for name in names)


#: ``kind:name`` (:func:`is_principal` also refuses ``role:`` names and more than 200 characters)
PRINCIPAL_PATTERN = r"^[a-z][a-z0-9_-]*:[^\s:][^\s]*$"
#: a scope name, or ``*`` (:func:`is_scope`)
SCOPE_PATTERN = r"^(\*|[a-z0-9][a-z0-9_.-]{0,99})$"
_PRINCIPAL = re.compile(PRINCIPAL_PATTERN)
_SCOPE = re.compile(SCOPE_PATTERN)


def is_principal(value: str) -> bool:
    """``kind:name`` such as ``user:alice`` or ``service:ci`` (``role:`` names roles, not
    principals)."""
    return bool(_PRINCIPAL.match(value)) and len(value) <= 200 and not value.startswith(ROLE_PREFIX)


def is_scope(value: str) -> bool:
    """A scope name (lowercase letters, digits, ``_ . -``), or ``*`` for every scope."""
    return bool(_SCOPE.match(value))


class Forbidden(RuntimeFailure):
    """The caller's roles or scopes do not allow the operation at all (403)."""

    code = "forbidden"


def check_everywhere(grant: Grant, operation: str) -> None:
    """Refuse an operation that reaches records of every scope to a caller limited to some."""
    if not grant.everywhere:
        raise Forbidden(f"{operation} reaches runs of every scope: it needs a token for scope *")


def check_scope(grant: Grant, scope: str, what: str) -> None:
    """Refuse a record in a scope ``grant`` does not reach exactly as an unknown one: as not
    found (404), so a caller learns nothing about what it may not see."""
    if not grant.sees(scope):
        raise NotFound(f"{what} not found")


def visible_run(store: Store, run_id: str, grant: Grant) -> Run:
    """The run ``run_id`` if ``grant`` reaches its scope; else :class:`NotFound`."""
    run = store.runs.get(run_id)
    check_scope(grant, run.scope, f"run {run_id}")
    return run
