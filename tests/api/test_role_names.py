"""Approver, reviewer and decider lists naming roles (``role:approver``) beside principals:
a token granting the role counts, one without it is refused, over real HTTP on both backends."""

from __future__ import annotations

from pathlib import Path

from openseal.runtime import service
from openseal.runtime.actions.approvals import ApprovalAuthority
from openseal.runtime.governance import flow as gov
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.api.conftest import Serve
from tests.api.support import assert_error
from tests.runtime.action_support import PICK, Flow, definitions, simulator_fixture  # noqa: F401
from tests.runtime.engine_support import compile_files, register
from tests.runtime.governance_support import compile_set, governance_yaml


def token(store: Store, principal: str, *roles: str) -> str:
    request = service.NewToken(principal, roles, ("*",))
    return service.tokens.create_token(store, request, service.CLI).secret


def test_an_approval_naming_a_role_is_decided_by_a_token_holding_it(
    serve: Serve, store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    folder = definitions(tmp_path)
    workflow = folder / "workflow.hcl"
    text = workflow.read_text(encoding="utf-8")
    assert 'approvers  = ["requester"]' in text
    workflow.write_text(
        text.replace('approvers  = ["requester"]', 'approvers  = ["role:approver"]'), "utf-8"
    )
    register(store, compile_files(*sorted(folder.glob("*.hcl"))))
    f = Flow(store, simulator, tmp_path, [PICK])
    run = f.start()
    f.run_until_idle()
    assert f.status(run) == RunStatus.WAITING_FOR_APPROVAL
    [approval] = service.list_approvals(store, status="pending")
    assert approval.approvers == ["role:approver"]
    admin = token(store, "user:root", "admin")  # may use approvals.decide, is not named
    ann = token(store, "user:ann", "approver")
    server = serve(external_workers=True, authority=ApprovalAuthority(local_operator=False))
    body = {"decision": "approve", "hash": approval.proposal_hash}
    with server.client(admin) as root, server.client(ann) as approver:
        refused = root.post(f"/approvals/{approval.id}/decision", json=body)
        assert (
            "not one of the approvers" in assert_error(refused, 403, "not_an_approver")["message"]
        )
        decided = approver.post(f"/approvals/{approval.id}/decision", json=body)
        assert decided.status_code == 200, decided.text
        assert decided.json()["approval"]["decided_by"] == "user:ann"


def test_governance_naming_roles_counts_tokens_holding_them(
    serve: Serve, store: Store, tmp_path: Path
) -> None:
    policy = governance_yaml(reviewers=("role:reviewer",), deciders=("user:carol", "role:decider"))
    filed = gov.deploy(store, compile_set(tmp_path / "v1", governance=policy), "user:alice")
    assert filed.proposal is not None
    proposal = filed.proposal.id
    root = token(store, "user:root", "admin")  # every operation, named in no list
    rita = token(store, "user:rita", "reviewer")
    dee = token(store, "user:dee", "decider", "author")
    server = serve(external_workers=True, authority=ApprovalAuthority(local_operator=False))
    review = {"verdict": "approve"}
    decision = {"decision": "approve"}
    with server.client(root) as admin, server.client(rita) as reviewer, server.client(dee) as d:
        refused = admin.post(f"/proposals/{proposal}/review", json=review)
        assert "not a reviewer" in assert_error(refused, 403, "not_allowed")["message"]
        assert reviewer.post(f"/proposals/{proposal}/review", json=review).status_code == 200
        refused = admin.post(f"/proposals/{proposal}/decide", json=decision)
        assert "not a decider" in assert_error(refused, 403, "not_allowed")["message"]
        assert_error(
            reviewer.post(f"/proposals/{proposal}/decide", json=decision), 403, "forbidden"
        )
        decided = d.post(f"/proposals/{proposal}/decide", json=decision)
        assert decided.status_code == 200 and decided.json()["proposal"]["status"] == "approved"
        refused = admin.post(f"/proposals/{proposal}/activate", json={})
        assert "not a decider" in assert_error(refused, 403, "not_allowed")["message"]
        activated = d.post(f"/proposals/{proposal}/activate", json={})
        assert activated.status_code == 200, activated.text
        assert activated.json()["proposal"]["status"] == "activated"
