"""The console's views over HTTP (no browser): who the caller is and what it may do, runs with
their workflow, one run with its laid-out graph, on both backends."""

from __future__ import annotations

from openseal.api.auth import parse_tokens
from openseal.runtime import service
from openseal.runtime.actions.approvals import ApprovalAuthority
from openseal.runtime.store import Store
from tests.api.conftest import ALICE_TOKEN, BOB_TOKEN, CAROL_TOKEN, Serve, sha
from tests.api.support import assert_error

AUTHORITY = ApprovalAuthority(
    local_operator=False,
    roles={"requester": frozenset({"user:alice"})},
    tokens={sha(ALICE_TOKEN): "user:alice", sha(BOB_TOKEN): "user:bob"},
)


def test_me_says_what_the_caller_may_do_and_why_not(serve: Serve) -> None:
    local = serve(authority=ApprovalAuthority(local_operator=True))
    with local.client() as anyone:
        me = anyone.get("/me").json()
        assert (me["principal"], me["via_token"]) == ("user:local", False)
        assert me["operations"]["approvals.decide"] == {"allowed": True, "reason": None}
        assert me["operations"]["runs.pause"]["allowed"] is True
        creation = me["operations"]["objectives.create"]
        assert creation["allowed"] is False and "no workers" in creation["reason"]
    tokens = serve(authority=AUTHORITY, external_workers=True)
    with tokens.anonymous() as anonymous:
        assert_error(anonymous.get("/me"), 401, "unauthorized")
    with tokens.client(ALICE_TOKEN) as alice:
        me = alice.get("/me").json()
        assert me["principal"] == "user:alice" and me["approver_roles"] == ["requester"]
        assert me["operations"]["approvals.decide"]["allowed"] is True
        # the authority's tokens are approvers: they read and decide, nothing else
        assert (me["roles"], me["scopes"]) == (["approver", "viewer"], ["*"])
        creation = me["operations"]["objectives.create"]
        assert creation["allowed"] is False and "holds none of the roles" in creation["reason"]
    with tokens.client(BOB_TOKEN) as bob:
        # the authority's tokens hold the approver role: approvals naming role:approver are his
        decide = bob.get("/me").json()["operations"]["approvals.decide"]
        assert decide == {"allowed": True, "reason": None}
    admin = {"user:carol": {"sha256": sha(CAROL_TOKEN), "roles": ["admin"]}}
    admins = serve(authority=AUTHORITY, tokens=parse_tokens(admin))
    with admins.client(CAROL_TOKEN) as carol:  # every operation, but no approver name nor role
        decide = carol.get("/me").json()["operations"]["approvals.decide"]
        assert decide == {"allowed": False, "reason": "user:carol holds no approver role"}
    bare = serve(tokens=parse_tokens({sha(BOB_TOKEN): "user:bob"}))
    with bare.client(BOB_TOKEN) as bob:
        decide = bob.get("/me").json()["operations"]["approvals.decide"]
        assert decide["allowed"] is False and "no approval authority" in decide["reason"]


def test_runs_come_with_their_workflow_and_a_run_with_its_graph(serve: Serve, store: Store) -> None:
    first = service.create_objective(
        store, service.StartObjective("small", {"n": 1}), service.CLI
    ).run
    second = service.create_objective(
        store, service.StartObjective("small", {"n": 2}), service.CLI
    ).run
    server = serve()
    with server.client() as client:
        listed = client.get("/console/runs").json()
        assert listed["workflows"] == ["small"]
        assert [r["id"] for r in listed["runs"]] == [second.id, first.id]
        row = listed["runs"][0]
        assert row["workflow"] == "small" and row["status"] == "queued"
        assert row["version"].removeprefix("sha256:") == second.workflow_digest
        assert client.get("/console/runs", params={"workflow": "other"}).json()["runs"] == []
        queued = client.get("/console/runs", params={"status": "queued", "limit": 1}).json()
        assert [r["id"] for r in queued["runs"]] == [second.id]
        assert_error(client.get("/console/runs", params={"status": "nope"}), 422, "invalid_request")

        shown = client.get(f"/console/runs/{first.id}").json()
        assert shown["run"]["id"] == first.id
        names = {n["name"] for n in shown["graph"]["nodes"]}
        assert shown["position"]["current"] in names
        assert shown["graph"]["initial"] == shown["position"]["current"]
        assert shown["actions"] == [] and shown["trail"] == []
        assert_error(client.get("/console/runs/nope"), 404, "not_found")
        assert_error(client.get("/console/approvals/nope"), 404, "not_found")
