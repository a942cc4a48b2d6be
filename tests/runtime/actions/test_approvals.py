"""Approvals: bound to the proposal hash, decided only through an authority (invariants 6, 11)."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path

import pytest

from openseal.api.local import is_loopback
from openseal.errors import UsageError
from openseal.runtime import service
from openseal.runtime.actions.approvals import (
    ApprovalAuthority,
    ApprovalError,
    parse_authority,
)
from openseal.runtime.caller import LOCAL_OPERATOR
from openseal.runtime.statuses import ActionStatus, ApprovalStatus, RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables.records import Run
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import (  # noqa: F401
    LOCAL,
    REQUEST,
    Flow,
    flow,
    simulator_fixture,
)
from tests.runtime.engine_support import assert_gap_free, event_types


def waiting(store: Store, sim: ProcurementSimulator, tmp: Path) -> tuple[Flow, Run, str, str]:
    """A procurement run waiting for approval: the flow, the run, approval id, proposal hash."""
    f = flow(store, sim, tmp)
    run = f.start()
    f.run_until_idle()
    assert f.status(run) == RunStatus.WAITING_FOR_APPROVAL
    [approval] = service.list_approvals(store, run_id=run.id)
    return f, run, approval.id, approval.proposal_hash


def refused(code: str, call: object) -> ApprovalError:
    with pytest.raises(ApprovalError) as raised:
        call()  # type: ignore[operator]
    assert raised.value.code == code, raised.value
    return raised.value


def test_waiting_for_approval_holds_no_lease_and_shows_the_request(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    _, run, approval_id, digest = waiting(store, simulator, tmp_path)
    current = store.runs.get(run.id)
    assert (current.lease_owner, current.lease_expires_at) == (None, None)
    assert current.waiting == {
        "kind": "approval",
        "state": "review",
        "approval_id": approval_id,
        "proposal": "order",
        "hash": digest,
        "expires_at": current.waiting["expires_at"],  # type: ignore[index]
    }
    approval = service.show_approval(store, approval_id).approval
    assert approval.status == ApprovalStatus.PENDING
    assert approval.approvers == ["requester"]
    assert approval.expires_at is not None
    assert approval.expires_at - approval.created_at == timedelta(hours=72)
    assert current.wake_at == approval.expires_at  # the expiry is the run's timer
    [action] = service.list_actions(store, run_id=run.id)
    assert action.status == ActionStatus.WAITING_FOR_APPROVAL


def test_decisions_are_not_served_without_an_authority(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f, run, approval_id, digest = waiting(store, simulator, tmp_path)
    refused(
        "approvals_unavailable",
        lambda: service.decide_approval(
            store, None, service.ApprovalDecision(approval_id, "approve", digest), service.CLI
        ),
    )
    # Not even a token-only authority lets the anonymous local operator in.
    tokens_only = ApprovalAuthority(tokens={"0" * 64: "user:alice"})
    refused(
        "approvals_unavailable",
        lambda: service.decide_approval(
            store,
            tokens_only,
            service.ApprovalDecision(approval_id, "approve", digest),
            service.CLI,
        ),
    )
    assert store.runs.get(run.id).status == RunStatus.WAITING_FOR_APPROVAL
    f.run_until_idle()
    assert simulator.order_count() == 0


@pytest.mark.parametrize(
    "address", ["0.0.0.0", "192.168.1.20:8080", "[2001:db8::1]:80", "example.org"]
)
def test_the_local_operator_is_refused_off_loopback(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path, address: str
) -> None:
    _, _, approval_id, digest = waiting(store, simulator, tmp_path)
    error = refused(
        "local_operator_refused",
        lambda: service.decide_approval(
            store,
            LOCAL,
            service.ApprovalDecision(approval_id, "approve", digest),
            service.Caller(None, local=is_loopback(address)),
        ),
    )
    assert "loopback" in str(error)
    approval = service.show_approval(store, approval_id).approval
    assert approval.status == ApprovalStatus.PENDING


def test_loopback_addresses() -> None:
    for address in ("127.0.0.1", "127.0.0.1:8000", "::1", "[::1]:8000", "localhost"):
        assert is_loopback(address), address
    for address in ("0.0.0.0", "10.0.0.1", "::", "host.example"):
        assert not is_loopback(address), address


def test_a_decision_on_another_hash_is_refused(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    _, run, approval_id, _ = waiting(store, simulator, tmp_path)
    other = hashlib.sha256(b"another proposal").hexdigest()
    refused(
        "hash_mismatch",
        lambda: service.decide_approval(
            store, LOCAL, service.ApprovalDecision(approval_id, "approve", other), service.CLI
        ),
    )
    assert service.show_approval(store, approval_id).approval.status == ApprovalStatus.PENDING
    assert "approval.decided" not in event_types(store, run)


def test_repeating_a_decision_is_a_no_op_and_a_conflicting_one_is_refused(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    _, run, approval_id, digest = waiting(store, simulator, tmp_path)
    first = service.decide_approval(
        store, LOCAL, service.ApprovalDecision(approval_id, "approve", digest), service.CLI
    )
    assert first.changed
    assert (first.approval.status, first.approval.decided_by) == ("approved", LOCAL_OPERATOR)
    assert first.approval.decided_hash == digest
    again = service.decide_approval(
        store, LOCAL, service.ApprovalDecision(digest, "approve", f"sha256:{digest}"), service.CLI
    )
    assert not again.changed
    assert again.approval == first.approval
    refused(
        "already_decided",
        lambda: service.decide_approval(
            store,
            LOCAL,
            service.ApprovalDecision(approval_id, "reject", digest, "changed my mind"),
            service.CLI,
        ),
    )
    assert event_types(store, run).count("approval.decided") == 1
    assert_gap_free(store, run.id)


def test_reject_and_request_changes_need_a_reason(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    _, _, approval_id, digest = waiting(store, simulator, tmp_path)
    for decision in ("reject", "request_changes"):
        with pytest.raises(ApprovalError) as raised:
            service.decide_approval(
                store,
                LOCAL,
                service.ApprovalDecision(approval_id, decision, digest, "  "),
                service.CLI,
            )
        assert raised.value.code == "reason_required"


def test_rejection_ends_the_run_without_an_order(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f, run, approval_id, digest = waiting(store, simulator, tmp_path)
    service.decide_approval(
        store,
        LOCAL,
        service.ApprovalDecision(approval_id, "reject", digest, "too expensive"),
        service.CLI,
    )
    f.run_until_idle()
    assert f.status(run) == RunStatus.CANCELED  # the `rejected` end state
    [action] = service.list_actions(store, run_id=run.id)
    assert action.status == ActionStatus.DENIED
    assert simulator.order_count() == 0
    output = store.runs.get(run.id).context["states"]["review"]
    assert (output["decision"], output["reason"]) == ("reject", "too expensive")


def test_approvers_must_match_through_the_authority(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    _, _, approval_id, digest = waiting(store, simulator, tmp_path)
    mapped = ApprovalAuthority(local_operator=True, roles={"requester": frozenset({"user:alice"})})
    refused(
        "not_an_approver",
        lambda: service.decide_approval(
            store, mapped, service.ApprovalDecision(approval_id, "approve", digest), service.CLI
        ),
    )
    refused(
        "not_an_approver",
        lambda: service.decide_approval(
            store,
            mapped,
            service.ApprovalDecision(approval_id, "approve", digest),
            service.Caller("user:mallory", local=True),
        ),
    )
    decided = service.decide_approval(
        store,
        mapped,
        service.ApprovalDecision(approval_id, "approve", digest),
        service.Caller("user:alice", local=False),
    )
    assert decided.approval.decided_by == "user:alice"


def test_an_unanswered_approval_expires_and_never_approves(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f, run, approval_id, digest = waiting(store, simulator, tmp_path)
    later = store.now() + timedelta(hours=73)
    store.clock = lambda: later
    f.run_until_idle()
    approval = service.show_approval(store, approval_id).approval
    assert approval.status == ApprovalStatus.EXPIRED
    assert f.status(run) == RunStatus.CANCELED  # review -[expired]-> rejected (end canceled)
    assert "approval.expired" in event_types(store, run)
    assert simulator.order_count() == 0
    refused(
        "approval_expired",
        lambda: service.decide_approval(
            store, LOCAL, service.ApprovalDecision(approval_id, "approve", digest), service.CLI
        ),
    )


def test_a_pending_approval_past_its_expiry_cannot_be_approved(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    _, _, approval_id, digest = waiting(store, simulator, tmp_path)
    later = store.now() + timedelta(hours=72, seconds=1)
    store.clock = lambda: later  # no worker has expired it yet
    refused(
        "approval_expired",
        lambda: service.decide_approval(
            store, LOCAL, service.ApprovalDecision(approval_id, "approve", digest), service.CLI
        ),
    )


def test_authority_files_are_validated() -> None:
    token = hashlib.sha256(b"alice-token").hexdigest()
    authority = parse_authority(
        {"roles": {"requester": ["user:alice"]}, "tokens": {"user:alice": {"sha256": token}}}
    )
    assert authority.principal_for_token("alice-token") == "user:alice"
    assert authority.principal_for_token("guess") is None
    assert not authority.local_operator
    with pytest.raises(UsageError, match="nobody could decide"):
        parse_authority({"roles": {}})
    # approvers identified by the store's tokens: the file maps roles only
    only_roles = parse_authority({"roles": {"requester": ["user:alice"]}})
    assert only_roles.roles == {"requester": frozenset({"user:alice"})}
    assert not only_roles.local_operator
    with pytest.raises(UsageError, match="unknown key"):
        parse_authority({"local_operator": True, "auto_approve": True})
    with pytest.raises(UsageError, match="true or false"):
        parse_authority({"local_operator": "yes"})


def test_runs_show_says_which_approval_the_run_waits_for(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    from openseal.runtime import service

    _, run, approval_id, digest = waiting(store, simulator, tmp_path)
    reason = service.show_run(store, run.id).reason
    assert reason is not None
    assert f"approval {approval_id} of proposal order {digest}" in reason


def test_the_runs_creator_does_not_approve_what_it_spends(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    """The order spends and its skill is external: separation of duties is on by default."""
    f = flow(store, simulator, tmp_path)
    alice = service.Caller("user:alice", local=False)
    start = service.StartObjective("procure_laptops", REQUEST)
    run = service.create_objective(store, start, alice).run
    assert run is not None
    f.run_until_idle()
    [approval] = service.list_approvals(store, run_id=run.id)
    people = ApprovalAuthority(roles={"requester": frozenset({"user:alice", "user:bob"})})
    approve = service.ApprovalDecision(approval.id, "approve", approval.proposal_hash)
    error = refused(
        "separation_of_duties", lambda: service.decide_approval(store, people, approve, alice)
    )
    assert f"user:alice created run {run.id}" in str(error)
    assert service.list_approvals(store, run_id=run.id)[0].status == ApprovalStatus.PENDING
    bob = service.Caller("user:bob", local=False)
    assert service.decide_approval(store, people, approve, bob).approval.decided_by == "user:bob"


def test_the_local_operator_approves_its_own_runs(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    """One person at one machine, holding the store: nothing it does can be separated."""
    _, run, approval_id, digest = waiting(store, simulator, tmp_path)
    assert store.objectives.get(run.objective_id).created_by == LOCAL_OPERATOR
    decision = service.ApprovalDecision(approval_id, "approve", digest)
    decided = service.decide_approval(store, LOCAL, decision, service.CLI)
    assert decided.approval.decided_by == LOCAL_OPERATOR
