"""Approvals bound to a proposal's hash, the authority that may decide them, and decisions.

An ``approval`` state opens one approval request for the hash of the run's current proposal
(approvers, scope, ``expires_at``) and the run waits in ``waiting_for_approval`` holding no
lease. A decision (:func:`decide`) is made only through an :class:`ApprovalAuthority`: without
one nothing is decided at all (``approvals_unavailable``, invariant 11), and model output has no
path here. Each decision records who decided, when, and the hash the approver saw; a different
hash is refused (``hash_mismatch``), the same decision again is a no-op, a conflicting one is
refused (``already_decided``), and a proposal whose stored content cannot be verified against
its hash is never approved (``proposal_unverified``). The decision wakes the run in the same
transaction.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
import yaml

from openseal.errors import RuntimeFailure, UsageError
from openseal.runtime import actions as action_records
from openseal.runtime import schema
from openseal.runtime.clock import new_id
from openseal.runtime.events import change_run, iso
from openseal.runtime.records import Row
from openseal.runtime.statuses import (
    TERMINAL_RUN_STATUSES,
    ActionStatus,
    ApprovalStatus,
    RunStatus,
)
from openseal.runtime.store_errors import NotFound

if TYPE_CHECKING:  # the store's cancel imports this module
    from openseal.runtime.store import Store

approvals = schema.approvals
actions = schema.actions
#: the action statuses that follow their approval (nothing admitted or sent yet)
_FOLLOWS_APPROVAL = (
    ActionStatus.PROPOSED,
    ActionStatus.WAITING_FOR_APPROVAL,
    ActionStatus.DENIED,
)

LOCAL_OPERATOR = "user:local"
AUTHORITY_ENV = "OPENSEAL_APPROVAL_AUTHORITY"
AUTHORITY_FILE = "approvals.yaml"
#: where the CLI's requests come from: it runs on the machine holding the store
CLI_ADDRESS = "cli"

#: decision verb → the approval status it leads to
DECISIONS: dict[str, ApprovalStatus] = {
    "approve": ApprovalStatus.APPROVED,
    "reject": ApprovalStatus.REJECTED,
    "request_changes": ApprovalStatus.CHANGES_REQUESTED,
}


class ApprovalError(RuntimeFailure):
    """A decision was refused; ``code`` says why (stable, for the CLI and the HTTP API)."""

    code = "approval_refused"


@dataclass(frozen=True)
class Approval:
    id: str
    run_id: str
    proposal_id: str
    proposal_hash: str
    proposal_name: str
    state: str
    approvers: list[str]
    scope: str
    status: ApprovalStatus
    on_timeout: str
    expires_at: datetime | None
    decision: str | None
    decided_by: str | None
    decided_hash: str | None
    reason: str | None
    decided_at: datetime | None
    created_at: datetime
    revision: int

    @classmethod
    def from_row(cls, row: Row) -> Approval:
        values = {name: row[name] for name in cls.__dataclass_fields__}
        values["status"] = ApprovalStatus(row["status"])
        values["approvers"] = list(row["approvers"] or [])
        return cls(**values)

    def expired_at(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at


# -- the authority ---------------------------------------------------------------------


@dataclass(frozen=True)
class ApprovalAuthority:
    """Who may decide approvals.

    * ``local_operator``: the person at this machine decides as ``user:local`` — only through
      the CLI or an API listening on a loopback address. The local operator holds every
      approver role that ``roles`` does not map.
    * ``roles``: approver names used in definitions (``requester``) → the principals holding
      them (``user:alice``). A principal may also be listed in a definition directly.
    * ``tokens``: sha256 (hex) of a bearer token → its principal, for the HTTP API.
    """

    local_operator: bool = False
    roles: Mapping[str, frozenset[str]] = field(default_factory=dict)
    tokens: Mapping[str, str] = field(default_factory=dict)

    def principal_for_token(self, token: str) -> str | None:
        return self.tokens.get(hashlib.sha256(token.encode("utf-8")).hexdigest())

    def may_decide(self, principal: str, approvers: list[str]) -> bool:
        """Whether ``principal`` is one of ``approvers`` (names or principals)."""
        if not approvers:  # the definition names nobody: any principal the authority knows
            return True
        for name in approvers:
            if name == principal or principal in self.roles.get(name, frozenset()):
                return True
            if self.local_operator and principal == LOCAL_OPERATOR and name not in self.roles:
                return True
        return False


def load_authority(
    path: Path | None = None, *, home: Path | None = None
) -> ApprovalAuthority | None:
    """The authority from ``path``, ``$OPENSEAL_APPROVAL_AUTHORITY`` or ``<home>/approvals.yaml``.

    ``None`` when none is configured: decisions are then not served. The file::

        local_operator: true
        roles:
          requester: [user:local, user:alice]
        tokens:
          user:alice: {sha256: 9f86d0...}
    """
    if path is None:
        env = os.environ.get(AUTHORITY_ENV)
        if env:
            path = Path(env)
        elif home is not None and (home / AUTHORITY_FILE).exists():
            path = home / AUTHORITY_FILE
        else:
            return None
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read approval authority {path}: {exc}") from None
    except yaml.YAMLError:
        raise UsageError(f"approval authority {path} is not valid YAML") from None
    return parse_authority(raw, str(path))


def parse_authority(raw: object, where: str = "approval authority") -> ApprovalAuthority:
    if not isinstance(raw, dict):
        raise UsageError(f"{where}: expected a mapping with local_operator, roles, tokens")
    unknown = sorted(set(raw) - {"local_operator", "roles", "tokens"})
    if unknown:
        raise UsageError(f"{where}: unknown key {unknown[0]!r} (local_operator, roles, tokens)")
    local = raw.get("local_operator", False)
    if not isinstance(local, bool):
        raise UsageError(f"{where}: local_operator must be true or false")
    roles: dict[str, frozenset[str]] = {}
    for role, principals in (raw.get("roles") or {}).items():
        if not isinstance(principals, list) or not all(isinstance(p, str) for p in principals):
            raise UsageError(f"{where}: roles.{role} must be a list of principals")
        roles[str(role)] = frozenset(principals)
    tokens: dict[str, str] = {}
    for principal, entry in (raw.get("tokens") or {}).items():
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if not isinstance(digest, str) or len(digest) != 64:
            raise UsageError(f"{where}: tokens.{principal} needs `sha256: <64 hex>`")
        tokens[digest.lower()] = str(principal)
    if not local and not tokens:
        raise UsageError(f"{where}: enable local_operator or list tokens; nobody could decide")
    return ApprovalAuthority(local, roles, tokens)


def is_loopback(address: str) -> bool:
    """True for the CLI and for loopback listening addresses (``127.0.0.1``, ``::1``...)."""
    if address == CLI_ADDRESS:
        return True
    host = address.strip()
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


def decider(authority: ApprovalAuthority | None, principal: str | None, address: str) -> str:
    """The principal a decision is recorded for, or an :class:`ApprovalError`."""
    if authority is None:
        raise ApprovalError(
            "approval decisions are not served: no approval authority is configured "
            f"(set {AUTHORITY_ENV} or write <home>/{AUTHORITY_FILE})",
            code="approvals_unavailable",
        )
    if principal is not None:
        return principal
    if not authority.local_operator:
        raise ApprovalError(
            "the local operator is not enabled; identify yourself with a token",
            code="approvals_unavailable",
        )
    if not is_loopback(address):
        raise ApprovalError(
            f"the local operator ({LOCAL_OPERATOR}) may only decide through a loopback address, "
            f"not {address}",
            code="local_operator_refused",
        )
    return LOCAL_OPERATOR


# -- rows ------------------------------------------------------------------------------


def get(conn: sa.Connection, approval_id: str) -> Approval:
    row = conn.execute(sa.select(approvals).where(approvals.c.id == approval_id))
    found = row.mappings().one_or_none()
    if found is None:
        raise NotFound(f"approval {approval_id} not found")
    return Approval.from_row(found)


def find(conn: sa.Connection, ref: str) -> Approval:
    """An approval by id, or the newest one for a proposal hash (``sha256:`` optional)."""
    ref = ref.strip().removeprefix("sha256:")
    if len(ref) == 64:
        row = conn.execute(
            sa.select(approvals)
            .where(approvals.c.proposal_hash == ref)
            .order_by(approvals.c.id.desc())
            .limit(1)
        )
        found = row.mappings().one_or_none()
        if found is None:
            raise NotFound(f"no approval for proposal hash {ref}")
        return Approval.from_row(found)
    return get(conn, ref)


def open_request(
    conn: sa.Connection,
    *,
    run_id: str,
    proposal_id: str,
    proposal_hash: str,
    proposal_name: str,
    state: str,
    approvers: list[str],
    on_timeout: str,
    expires_at: datetime | None,
    now: datetime,
    actor: str = "system",
) -> Approval:
    """Insert a pending approval for ``proposal_hash``; its action now waits for it."""
    approval = Approval(
        id=new_id(),
        run_id=run_id,
        proposal_id=proposal_id,
        proposal_hash=proposal_hash,
        proposal_name=proposal_name,
        state=state,
        approvers=list(approvers),
        scope=f"run:{run_id}",
        status=ApprovalStatus.PENDING,
        on_timeout=on_timeout,
        expires_at=expires_at,
        decision=None,
        decided_by=None,
        decided_hash=None,
        reason=None,
        decided_at=None,
        created_at=now,
        revision=1,
    )
    conn.execute(sa.insert(approvals).values(**approval.__dict__))
    _set_action(conn, approval, ActionStatus.WAITING_FOR_APPROVAL, now, actor)
    return approval


def _set_action(
    conn: sa.Connection, approval: Approval, status: ActionStatus, now: datetime, actor: str
) -> None:
    """Move the approval's action (only one not yet admitted follows its approval's fate) to
    ``status``, with its ``action.<status>`` event, in the caller's transaction."""
    row = conn.execute(
        sa.select(actions).where(
            actions.c.run_id == approval.run_id,
            actions.c.proposal_hash == approval.proposal_hash,
            actions.c.status.in_(_FOLLOWS_APPROVAL),
        )
    ).mappings()
    for found in row.all():
        action = action_records.Action.from_row(found)
        if action.status == status and action.approval_id == approval.id:
            continue
        note = f"approval {approval.id} {approval.status}"
        action_records.move(
            conn, action, status, now=now, actor=actor, expect=_FOLLOWS_APPROVAL, note=note,
            approval_id=approval.id,
        )  # fmt: skip


def close(
    conn: sa.Connection,
    approval: Approval,
    status: ApprovalStatus,
    *,
    now: datetime,
    actor: str,
    reason: str | None = None,
    decision: str | None = None,
    seen_hash: str | None = None,
) -> Approval | None:
    """Move a pending approval to ``status``; None when it was no longer pending. Then call
    :func:`settle_action`."""
    result = conn.execute(
        sa.update(approvals)
        .where(approvals.c.id == approval.id, approvals.c.status == ApprovalStatus.PENDING)
        .values(
            status=status,
            decision=decision,
            decided_by=actor,
            decided_hash=seen_hash,
            reason=reason,
            decided_at=now,
            revision=approvals.c.revision + 1,
        )
    )
    if result.rowcount != 1:
        return None
    closed = replace(
        approval,
        status=status,
        decision=decision,
        decided_by=actor,
        decided_hash=seen_hash,
        reason=reason,
        decided_at=now,
        revision=approval.revision + 1,
    )
    return closed


def settle_action(conn: sa.Connection, closed: Approval, now: datetime, actor: str) -> None:
    """After :func:`close`, in its transaction: an approval that did not approve denies its
    action (when not admitted yet), with the action's event. Call it after the approval's own
    event, so the run's events read in order."""
    if closed.status != ApprovalStatus.APPROVED:
        _set_action(conn, closed, ActionStatus.DENIED, now, actor)


def summary(approval: Approval) -> dict[str, Any]:
    """The approval as a run event payload / state output."""
    return {
        "approval_id": approval.id,
        "proposal": approval.proposal_name,
        "hash": approval.proposal_hash,
        "status": str(approval.status),
        "decision": approval.decision,
        "approver": approval.decided_by,
        "reason": approval.reason,
        "scope": approval.scope,
        "decided_at": iso(approval.decided_at),
        "expires_at": iso(approval.expires_at),
    }


# -- decisions -------------------------------------------------------------------------


@dataclass(frozen=True)
class Decided:
    approval: Approval
    #: False when the same decision had been made already (a no-op)
    changed: bool


def decide(
    store: Store,
    authority: ApprovalAuthority | None,
    ref: str,
    decision: str,
    *,
    seen_hash: str,
    reason: str | None = None,
    principal: str | None = None,
    address: str = CLI_ADDRESS,
) -> Decided:
    """Decide approval ``ref`` (id or proposal hash) as ``principal`` (or the local operator).

    ``seen_hash`` is the proposal hash the approver was shown; ``address`` is where the
    request came in (the API's listening address, or :data:`CLI_ADDRESS`). Refusals raise
    :class:`ApprovalError` with a stable code.
    """
    actor = decider(authority, principal, address)
    assert authority is not None
    if decision not in DECISIONS:
        raise UsageError(f"unknown decision {decision!r} (approve, reject, request_changes)")
    if decision != "approve" and not (reason or "").strip():
        raise ApprovalError(
            f"a reason is required to {decision.replace('_', ' ')}", code="reason_required"
        )
    wanted = DECISIONS[decision]
    seen = seen_hash.strip().removeprefix("sha256:").lower()
    now = store.now()
    with store.write() as conn:
        found = find(conn, ref)
        run = store.load_run(conn, found.run_id, lock=True)
        # Read again under the run lock (one lock order: the run first): on PostgreSQL a
        # decision committed while this one waited for the lock is only visible now, and an
        # identical decision must see it to be the documented no-op.
        approval = get(conn, found.id)
        if seen != approval.proposal_hash:
            raise ApprovalError(
                f"approval {approval.id} is for proposal {approval.proposal_hash}, "
                f"not {seen}: show it again and decide on what you see",
                code="hash_mismatch",
            )
        if not authority.may_decide(actor, approval.approvers):
            names = ", ".join(approval.approvers)
            raise ApprovalError(
                f"{actor} is not one of the approvers ({names})", code="not_an_approver"
            )
        if approval.status == wanted:
            return Decided(approval, False)
        if approval.status != ApprovalStatus.PENDING:
            code = {
                ApprovalStatus.EXPIRED: "approval_expired",
                ApprovalStatus.CANCELED: "approval_canceled",
            }.get(approval.status, "already_decided")
            raise ApprovalError(f"approval {approval.id} is already {approval.status}", code=code)
        if run.status in TERMINAL_RUN_STATUSES:
            raise ApprovalError(f"run {run.id} has ended ({run.status})", code="run_ended")
        if approval.expired_at(now):
            raise ApprovalError(
                f"approval {approval.id} expired at {iso(approval.expires_at)}",
                code="approval_expired",
            )
        if wanted == ApprovalStatus.APPROVED:
            _refuse_unverified(store, conn, approval)
        closed = close(
            conn, approval, wanted, now=now, actor=actor, reason=reason, decision=decision,
            seen_hash=seen,
        )  # fmt: skip
        if closed is None:  # cannot happen under the run lock; keep the refusal honest anyway
            raise ApprovalError(f"approval {approval.id} changed meanwhile", code="already_decided")
        _wake(store, conn, run.id, closed, now, actor, waiting=run.waiting, status=run.status)
        settle_action(conn, closed, now, actor)
    return Decided(closed, True)


def _refuse_unverified(store: Store, conn: sa.Connection, approval: Approval) -> None:
    """Nobody approves content that cannot be shown to be the content its hash names."""
    # Imported here: proposals needs the workflow module, which needs the store, whose
    # commands import this module.
    from openseal.runtime import proposals
    from openseal.runtime.proposal_check import verify_in

    checked = verify_in(conn, store.artifacts, proposals.get(conn, approval.proposal_id))
    if checked.problem is not None:
        raise ApprovalError(
            f"proposal {approval.proposal_hash} cannot be approved: {checked.problem}",
            code="proposal_unverified",
        )


def _wake(
    store: Store,
    conn: sa.Connection,
    run_id: str,
    approval: Approval,
    now: datetime,
    actor: str,
    *,
    waiting: dict[str, Any] | None,
    status: RunStatus,
) -> None:
    # The decision and the run's wake-up commit together, so a decision is never missed.
    values: dict[str, Any] = {}
    waits_for_it = (waiting or {}).get("approval_id") == approval.id
    if waits_for_it and status in (RunStatus.WAITING_FOR_APPROVAL, RunStatus.PAUSED):
        values["wake_at"] = now  # a paused run wakes once resumed
    change_run(
        conn, run_id, event_type="approval.decided", actor=actor, payload=summary(approval),
        now=now, values=values,
    )  # fmt: skip
    if values:
        store.notify_work(conn)


def cancel_for_run(conn: sa.Connection, run_id: str, now: datetime, actor: str) -> list[str]:
    """Cancel the run's pending approvals (the run is being canceled); their ids."""
    ids = list(
        conn.execute(
            sa.select(approvals.c.id).where(
                approvals.c.run_id == run_id, approvals.c.status == ApprovalStatus.PENDING
            )
        ).scalars()
    )
    if ids:
        conn.execute(
            sa.update(approvals)
            .where(approvals.c.id.in_(ids))
            .values(
                status=ApprovalStatus.CANCELED,
                decided_by=actor,
                decided_at=now,
                reason="the run was canceled",
                revision=approvals.c.revision + 1,
            )
        )
    return ids
