"""Capabilities: what this server offers and whether it serves each, computed from what is
configured. An operation whose capability is absent is not served (501), not merely hidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openseal.runtime.actions.approvals import ApprovalAuthority

CAPABILITY_VERSION = "v1"


@dataclass(frozen=True)
class Capability:
    """One capability: what it offers (``operations``) and whether this server serves it."""

    name: str
    version: str
    operations: tuple[str, ...]
    available: bool
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "operations": list(self.operations),
            "available": self.available,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class CapabilityConfig:
    """What a server (or a CLI asking about one) is configured with.

    ``workers`` counts in-process engine workers; ``external_workers`` says the operator
    declared that ``openseal worker`` processes serve the same store. ``tokens`` says whether
    callers can identify themselves; ``local`` says whether the local operator is served
    (the CLI; an API only when started for it on loopback: the local operator decides only then).
    """

    workers: int = 0
    external_workers: bool = False
    authority: ApprovalAuthority | None = None
    tokens: bool = False
    local: bool = True
    #: the complete model profile authoring uses (None: authoring is not served)
    authoring_model: str | None = None
    #: without ``authoring_model``: what is missing for authoring, in one sentence
    authoring_missing: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


#: capability → the operations (API operation ids) it covers
OPERATIONS: dict[str, tuple[str, ...]] = {
    "definitions": ("definitions.get",),
    "deployments": (
        "deployments.list", "deployments.show", "deployments.history", "deployments.rollback",
        "proposals.list", "proposals.show", "proposals.file", "proposals.review",
        "proposals.decide", "proposals.activate", "proposals.refresh", "proposals.replay",
        "proposals.migrate",
    ),
    "objectives": ("objectives.list", "objectives.show", "objectives.set_status"),
    "run_creation": ("objectives.create", "objectives.activate", "asks.plan", "asks.confirm"),
    "runs": ("runs.list", "runs.show", "runs.events", "runs.events_stream", "runs.turns"),
    "run_control": ("runs.pause", "runs.resume", "runs.cancel", "runs.intervene"),
    "approvals": ("approvals.list", "approvals.show"),
    "approval_decisions": ("approvals.decide",),
    "actions": ("actions.list", "actions.show", "actions.reconcile", "actions.resolve"),
    "inbound_events": ("events.deliver",),
    "agent_requests": (
        "agent_requests.list", "agent_requests.show", "agent_requests.accept",
        "agent_requests.decline", "agent_requests.ask", "agent_requests.clarify",
        "agent_requests.complete", "agent_requests.review",
    ),
    "triggers": ("triggers.list", "triggers.show", "triggers.set_status"),
    "flow_control": (
        "agents.show", "agents.pause", "agents.resume", "teams.show", "teams.pause",
        "teams.resume", "scopes.limits", "scopes.set_limit", "scopes.quotas",
        "scopes.set_quota", "scopes.set_queue",
    ),
    "retention": ("scopes.retention", "scopes.set_retention"),
    "authoring": ("authoring.draft",),
    "tokens": ("tokens.list", "tokens.create", "tokens.revoke"),
}  # fmt: skip


def capabilities(config: CapabilityConfig) -> tuple[Capability, ...]:
    """Every capability with its availability, computed from ``config``.

    Store-only capabilities are always available. Run creation needs workers (in-process or
    declared external): a run nobody executes is a promise the server cannot keep. Approval
    decisions need an approval authority through which somebody can actually decide. Authoring
    needs a complete model profile.
    """
    reasons = {
        "run_creation": _run_creation_reason(config),
        "approval_decisions": _decisions_reason(config),
        "authoring": _authoring_reason(config),
    }
    return tuple(
        Capability(name, CAPABILITY_VERSION, ops, reasons.get(name) is None, reasons.get(name))
        for name, ops in OPERATIONS.items()
    )


def capability_of(operation: str) -> str:
    """The capability an operation id belongs to."""
    for name, ops in OPERATIONS.items():
        if operation in ops:
            return name
    raise KeyError(operation)


def _run_creation_reason(config: CapabilityConfig) -> str | None:
    if config.workers > 0 or config.external_workers:
        return None
    return (
        "no workers: start the server with --workers N, or declare external workers "
        "(--external-workers) when `openseal worker` processes share this store"
    )


def _decisions_reason(config: CapabilityConfig) -> str | None:
    authority = config.authority
    if authority is None:
        return "no approval authority is configured (--authority FILE or <home>/approvals.yaml)"
    if config.tokens:
        return None
    if not authority.local_operator:
        return "the approval authority enables no local operator and no tokens are configured"
    if not config.local:
        return (
            "the local operator decides only on a server started for it (--local-operator) "
            "on a loopback address; configure tokens (--tokens FILE)"
        )
    return None


def _authoring_reason(config: CapabilityConfig) -> str | None:
    if config.authoring_model:
        return None
    return config.authoring_missing or "no complete model profile is configured for authoring"
