"""Approval decisions over HTTP: bound to the hash, named by token identity, the local operator
only on loopback; the procurement example end to end; no secret in any response."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.api.settings import ApiSettings
from openseal.runtime import service
from openseal.runtime.actions.approvals import ApprovalAuthority, ApprovalError
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Approval, Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.api.conftest import ALICE_TOKEN, BOB_TOKEN, Serve, sha
from tests.api.support import assert_error
from tests.runtime.action_support import TOKEN, Flow, flow, simulator_fixture  # noqa: F401

AUTHORITY = ApprovalAuthority(
    local_operator=False,
    roles={"requester": frozenset({"user:alice"})},
    tokens={sha(ALICE_TOKEN): "user:alice", sha(BOB_TOKEN): "user:bob"},
)
LOCAL = ApprovalAuthority(local_operator=True)


@pytest.fixture
def waiting(store: Store, simulator: ProcurementSimulator, tmp_path: Path) -> tuple[Flow, str]:
    """A procurement run waiting for the requester's approval of the exact order."""
    f = flow(store, simulator, tmp_path)
    run = f.start()
    f.run_until_idle()
    assert f.status(run) == RunStatus.WAITING_FOR_APPROVAL
    return f, run.id


def pending(store: Store) -> Approval:
    [approval] = service.list_approvals(store, status="pending")
    return approval


def test_decisions_need_the_hash_and_name_the_token_holder(
    serve: Serve, waiting: tuple[Flow, str], simulator: ProcurementSimulator
) -> None:
    f, run_id = waiting
    approval = pending(f.store)
    server = serve(authority=AUTHORITY)
    url = f"/approvals/{approval.id}/decision"
    with server.anonymous() as anonymous:
        refused = anonymous.get("/approvals")
        assert_error(refused, 401, "unauthorized")
        assert refused.headers["www-authenticate"] == "Bearer"
    with server.client("not-a-known-token-000000") as stranger:
        assert_error(stranger.get("/approvals"), 401, "unauthorized")
    with server.client(BOB_TOKEN) as bob:
        refused = bob.post(url, json={"decision": "approve", "hash": approval.proposal_hash})
        error = assert_error(refused, 403, "not_an_approver")
        assert "user:bob" in error["message"]
    with server.client(ALICE_TOKEN) as alice:
        listed = alice.get("/approvals", params={"status": "pending"}).json()["approvals"]
        assert [a["id"] for a in listed] == [approval.id]
        shown = alice.get(f"/approvals/{approval.proposal_hash}").json()
        assert shown["hash"] == approval.proposal_hash and shown["verified"] is True
        assert shown["proposal"]["args"]["vendor"] == "northwind"
        assert shown["proposal"]["args"]["total"] == 11490
        assert_error(alice.post(url, json={"decision": "approve"}), 422, "invalid_request")
        wrong = alice.post(url, json={"decision": "approve", "hash": "0" * 64})
        assert_error(wrong, 409, "hash_mismatch")
        short = alice.post(url, json={"decision": "approve", "hash": approval.proposal_hash[:9]})
        assert_error(short, 422, "invalid_request")  # fewer than 10 hex digits
        other = "0" if approval.proposal_hash[9] != "0" else "1"
        unlike = approval.proposal_hash[:9] + other
        assert_error(
            alice.post(url, json={"decision": "approve", "hash": unlike}), 409, "hash_mismatch"
        )
        no_reason = alice.post(url, json={"decision": "reject", "hash": approval.proposal_hash})
        assert_error(no_reason, 422, "reason_required")
        assert pending(f.store).id == approval.id  # nothing was decided by the refusals
        prefix = approval.proposal_hash[:10]  # as `approvals list` shows it
        decided = alice.post(url, json={"decision": "approve", "hash": prefix})
        assert decided.status_code == 200, decided.text
        assert decided.json()["changed"] is True
        assert decided.json()["approval"]["decided_by"] == "user:alice"
        assert decided.json()["approval"]["decided_hash"] == approval.proposal_hash
        again = alice.post(url, json={"decision": "approve", "hash": approval.proposal_hash})
        assert again.status_code == 200 and again.json()["changed"] is False
        other = alice.post(
            url, json={"decision": "reject", "hash": approval.proposal_hash, "reason": "no"}
        )
        assert_error(other, 409, "already_decided")
    f.run_until_idle()
    assert f.store.runs.get(run_id).status == RunStatus.COMPLETED
    assert simulator.order_count() == 1


def test_the_local_operator_decides_through_a_loopback_server(
    serve: Serve, waiting: tuple[Flow, str]
) -> None:
    f, _ = waiting
    approval = pending(f.store)
    with serve(authority=LOCAL).client() as client:
        decided = client.post(
            f"/approvals/{approval.id}/decision",
            json={"decision": "request_changes", "hash": approval.proposal_hash,
                  "reason": "prefer fabrikam"},
        )  # fmt: skip
    assert decided.status_code == 200, decided.text
    assert decided.json()["approval"]["decided_by"] == "user:local"
    assert decided.json()["approval"]["status"] == "changes_requested"


def test_the_local_operator_is_refused_when_the_server_listens_beyond_loopback(
    serve: Serve, waiting: tuple[Flow, str], store: Store
) -> None:
    f, _ = waiting
    approval = pending(f.store)
    settings = ApiSettings(host="0.0.0.0", authority=LOCAL)
    # the decision function, with the address the server is configured to listen on
    with pytest.raises(ApprovalError) as refused:
        service.decide_approval(
            store,
            settings.authority,
            service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
            service.Caller(None, local=settings.local),
        )
    assert refused.value.code == "local_operator_refused"
    # the server reports decisions as not served, and refuses them with the reason (reached as
    # --insecure-no-auth serves anybody: user:local, never a local connection)
    with serve(host="0.0.0.0", authority=LOCAL, insecure_no_auth=True).anonymous() as client:
        listed = {c["name"]: c for c in client.get("/capabilities").json()["capabilities"]}
        assert listed["approval_decisions"]["available"] is False
        assert "loopback" in listed["approval_decisions"]["reason"]
        decided = client.post(
            f"/approvals/{approval.id}/decision",
            json={"decision": "approve", "hash": approval.proposal_hash},
        )
        error = assert_error(decided, 501, "not_served")
        assert "loopback" in error["message"]
    assert pending(store).status == "pending"
    # with tokens, a person decides under their own name on any address
    authority = ApprovalAuthority(
        local_operator=True,
        roles={"requester": frozenset({"user:alice"})},
        tokens={sha(ALICE_TOKEN): "user:alice"},
    )
    server = serve(host="0.0.0.0", authority=authority)
    with server.anonymous() as anonymous:
        assert_error(anonymous.get("/capabilities"), 401, "unauthorized")
    with server.client(ALICE_TOKEN) as alice:
        decided = alice.post(
            f"/approvals/{approval.id}/decision",
            json={"decision": "approve", "hash": approval.proposal_hash},
        )
    assert decided.status_code == 200, decided.text
    assert decided.json()["approval"]["decided_by"] == "user:alice"


def test_no_secret_value_reaches_any_response(
    serve: Serve, waiting: tuple[Flow, str], store: Store
) -> None:
    f, run_id = waiting
    approval = pending(f.store)
    server = serve(authority=AUTHORITY)
    bodies: list[str] = []
    with server.client(ALICE_TOKEN) as alice:
        decided = alice.post(
            f"/approvals/{approval.id}/decision",
            json={"decision": "approve", "hash": approval.proposal_hash},
        )
        bodies.append(decided.text)
        f.run_until_idle()
        assert store.runs.get(run_id).status == RunStatus.COMPLETED
        [action] = alice.get("/actions").json()["actions"]
        assert action["result"]["order_id"].startswith("PO-")
        objective = store.runs.get(run_id).objective_id
        paths = [
            "/capabilities", "/runs", f"/runs/{run_id}", f"/runs/{run_id}/events?limit=1000",
            f"/runs/{run_id}/events/stream", "/objectives", f"/objectives/{objective}",
            "/approvals", f"/approvals/{approval.id}", "/actions", f"/actions/{action['id']}",
            "/deployments", "/deployments/procure_laptops/history", "/proposals",
        ]  # fmt: skip
        for path in paths:
            response = alice.get(path)
            assert response.status_code == 200, (path, response.text)
            bodies.append(response.text)
        for deployment in alice.get("/deployments").json()["deployments"]:
            document = alice.get(f"/definitions/{deployment['active_digest']}").json()
            bodies.append(str(document))
            for digest in document["document"]["dependencies"].values():
                bodies.append(alice.get(f"/definitions/{digest}").text)
    text = "\n".join(bodies)
    assert "procurement_api" in text  # the credential reference is there, as a name
    for secret in (TOKEN, ALICE_TOKEN, BOB_TOKEN):
        assert secret not in text


def test_an_unverifiable_proposal_is_shown_with_the_reason_and_not_approved(
    serve: Serve, waiting: tuple[Flow, str], simulator: ProcurementSimulator
) -> None:
    from tests.runtime.actions.test_artefact_hosts import change_row

    f, _ = waiting
    approval = pending(f.store)
    change_row(f.store, approval.proposal_id, quantity=17, total=19533)
    server = serve(authority=AUTHORITY)
    with server.client(ALICE_TOKEN) as alice:
        shown = alice.get(f"/approvals/{approval.id}").json()
        assert shown["verified"] is False
        assert "changed after it was drafted" in shown["unverified_reason"]
        assert shown["proposal"]["args"]["quantity"] == 10
        url = f"/approvals/{approval.id}/decision"
        refused = alice.post(url, json={"decision": "approve", "hash": approval.proposal_hash})
        error = assert_error(refused, 409, "proposal_unverified")
        assert "cannot be approved" in error["message"]
    assert pending(f.store).status == "pending"
    assert simulator.order_count() == 0
