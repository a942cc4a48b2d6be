"""Approvals bound to a proposal's hash, the authority that may decide them, and decisions.

An ``approval`` state opens one approval request for the hash of the run's current proposal
(approvers, scope, ``expires_at``) and the run waits in ``waiting_for_approval`` holding no
lease. A decision (:func:`decide_approval`) is made only through an :class:`ApprovalAuthority`:
without one nothing is decided at all (``approvals_unavailable``, invariant 11), and model
output has no path here. Each decision records who decided, when, and the hash the approver
saw; a different hash is refused (``hash_mismatch``), the same decision again is a no-op, a
conflicting one is refused (``already_decided``), a proposal whose stored content cannot be
verified against its hash is never approved (``proposal_unverified``), and with separation of
duties the run's creator does not approve its proposal (``separation_of_duties``). The decision
wakes the run in the same transaction. The hash may be named by a prefix of at least
:data:`MIN_HASH_PREFIX` hex digits (what ``openseal approvals list`` shows); it must be a
prefix of the stored proposal's hash.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from openseal.errors import RuntimeFailure, UsageError
from openseal.runtime.access import named
from openseal.runtime.actions.authority_location import AUTHORITY_ENV, AUTHORITY_FILE
from openseal.runtime.caller import LOCAL_OPERATOR, Caller
from openseal.runtime.clock import iso
from openseal.runtime.id_prefix import HASH_PREFIX, MIN_HASH_PREFIX
from openseal.runtime.requests import ApprovalDecision
from openseal.runtime.statuses import (
    TERMINAL_RUN_STATUSES,
    ApprovalStatus,
)
from openseal.runtime.store import Approval, Connection, NotFound, Store

#: decision verb → the approval status it leads to
DECISIONS: dict[str, ApprovalStatus] = {
    "approve": ApprovalStatus.APPROVED,
    "reject": ApprovalStatus.REJECTED,
    "request_changes": ApprovalStatus.CHANGES_REQUESTED,
}


class ApprovalError(RuntimeFailure):
    """A decision was refused; ``code`` says why (stable, for the CLI and the HTTP API)."""

    code = "approval_refused"


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

    def may_decide(
        self, principal: str, approvers: list[str], roles: frozenset[str] = frozenset()
    ) -> bool:
        """Whether ``principal`` is one of ``approvers``: named itself, through an approver
        name the authority maps to it, or as ``role:R`` for a role R its token grants
        (``roles``)."""
        if not approvers:  # the definition names nobody: any principal the authority knows
            return True
        if named(principal, roles, approvers):
            return True
        for name in approvers:
            if principal in self.roles.get(name, frozenset()):
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
    if not local and not tokens and not roles:
        # store tokens (``openseal tokens create``) identify approvers too: roles may be all
        raise UsageError(
            f"{where}: enable local_operator, list tokens or map roles; nobody could decide"
        )
    return ApprovalAuthority(local, roles, tokens)


def decider(authority: ApprovalAuthority | None, caller: Caller) -> str:
    """The principal a decision is recorded for, or an :class:`ApprovalError`."""
    if authority is None:
        raise ApprovalError(
            "approval decisions are not served: no approval authority is configured "
            f"(set {AUTHORITY_ENV} or write <home>/{AUTHORITY_FILE})",
            code="approvals_unavailable",
        )
    if caller.principal is not None:
        return caller.principal
    if not authority.local_operator:
        raise ApprovalError(
            "the local operator is not enabled; identify yourself with a token",
            code="approvals_unavailable",
        )
    if not caller.local:
        raise ApprovalError(
            f"the local operator ({LOCAL_OPERATOR}) may only decide from this machine: "
            "through the CLI or an API that listens on a loopback address",
            code="local_operator_refused",
        )
    return LOCAL_OPERATOR


# -- decisions -------------------------------------------------------------------------


@dataclass(frozen=True)
class Decided:
    approval: Approval
    #: False when the same decision had been made already (a no-op)
    changed: bool


def decide_approval(
    store: Store, authority: ApprovalAuthority | None, request: ApprovalDecision, caller: Caller
) -> Decided:
    """Decide an approval as the caller's principal (or the local operator, from this machine).

    Refusals raise :class:`ApprovalError` with a stable code.
    """
    ref, decision, reason = request.ref, request.decision, request.reason
    seen_hash = request.seen_hash
    actor = decider(authority, caller)
    assert authority is not None
    if decision not in DECISIONS:
        raise UsageError(f"unknown decision {decision!r} (approve, reject, request_changes)")
    if decision != "approve" and not (reason or "").strip():
        raise ApprovalError(
            f"a reason is required to {decision.replace('_', ' ')}", code="reason_required"
        )
    wanted = DECISIONS[decision]
    seen = seen_hash_prefix(seen_hash)
    separated = separated_creator(store, ref) if wanted == ApprovalStatus.APPROVED else None
    now = store.now()
    with store.write() as conn:
        found = store.approvals.find(conn, ref)
        run = store.runs.load(conn, found.run_id, lock=True)
        if not caller.grant.sees(run.scope):  # as if unknown: nothing about it leaks
            raise NotFound(f"approval {ref} not found")
        # Read again under the run lock (one lock order: the run first): on PostgreSQL a
        # decision committed while this one waited for the lock is only visible now, and an
        # identical decision must see it to be the documented no-op.
        approval = store.approvals.get(conn, found.id)
        if not approval.proposal_hash.startswith(seen):
            raise ApprovalError(
                f"approval {approval.id} is for proposal {approval.proposal_hash}, "
                f"not {seen}: show it again and decide on what you see",
                code="hash_mismatch",
            )
        if not authority.may_decide(actor, approval.approvers, caller.grant.roles):
            names = ", ".join(approval.approvers)
            raise ApprovalError(
                f"{actor} is not one of the approvers ({names})", code="not_an_approver"
            )
        if separated is not None and separated == actor:
            raise ApprovalError(
                f"{actor} created run {run.id}: with separation of duties another person "
                f"approves its proposal (approval state {approval.state})",
                code="separation_of_duties",
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
        closed = store.approvals.close(
            conn, approval, wanted, now=now, actor=actor, reason=reason, decision=decision,
            seen_hash=approval.proposal_hash,
        )  # fmt: skip
        if closed is None:  # cannot happen under the run lock; keep the refusal honest anyway
            raise ApprovalError(f"approval {approval.id} changed meanwhile", code="already_decided")
        store.approvals.announce_decision(conn, run, closed, now, actor)
        store.actions.settle_for_approval(conn, closed, now, actor)
    return Decided(closed, True)


def separated_creator(store: Store, ref: str) -> str | None:
    """Who may not approve ``ref`` under separation of duties (the approval state's
    ``separation_of_duties``, compiled in): the principal who created its run; None when
    duties are not separated. The local operator is one person at one machine, holding the
    store itself: nothing it does can be separated, so its own runs are its to approve (a
    single-person mode; name people with tokens to separate duties)."""
    with store.read() as conn:
        approval = store.approvals.find(conn, ref)
        run = store.runs.load(conn, approval.run_id)
    states = (store.definitions.get(run.workflow_digest).document.get("graph") or {}).get("states")
    config = ((states or {}).get(approval.state) or {}).get("config") or {}
    if config.get("separation_of_duties") is not True:
        return None
    creator = store.objectives.get(run.objective_id).created_by
    return None if creator in (None, LOCAL_OPERATOR) else creator


def seen_hash_prefix(text: str) -> str:
    """The hash a decision names, lower-case without ``sha256:``; a :class:`UsageError` unless
    it is a hash or a prefix of one with at least :data:`MIN_HASH_PREFIX` hex digits."""
    value = text.strip()
    if not HASH_PREFIX.fullmatch(value):
        raise UsageError(
            f"hash: name the proposal hash you were shown, or at least its first "
            f"{MIN_HASH_PREFIX} hex digits (got {value[:80]!r})"
        )
    return value.lower().removeprefix("sha256:")


def _refuse_unverified(store: Store, conn: Connection, approval: Approval) -> None:
    """Nobody approves content that cannot be shown to be the content its hash names."""
    from openseal.runtime.actions.proposal_check import problem_in

    problem = problem_in(conn, store.artifacts, store.proposals.get(conn, approval.proposal_id))
    if problem is not None:
        raise ApprovalError(
            f"proposal {approval.proposal_hash} cannot be approved: {problem}",
            code="proposal_unverified",
        )
