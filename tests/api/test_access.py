"""Principals, roles and scopes over real HTTP, on both backends.

The role × operation matrix is generated from the one table every route checks
(``service.PERMISSIONS``) and the served OpenAPI document: each role's token calls every
operation, and is refused with 403 exactly where the table says so. A caller limited to another
scope finds no record of this one (404, as if unknown) and lists nothing of it.
"""

from __future__ import annotations

from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from openseal.cli.main import main
from openseal.runtime import service
from openseal.runtime.actions.approvals import ApprovalAuthority
from openseal.runtime.clock import new_id
from openseal.runtime.service import governance as gov
from openseal.runtime.statuses import AgentRequestStatus, RunStatus
from openseal.runtime.store import AgentRequest, Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.api.conftest import Serve
from tests.api.support import LiveServer, assert_error
from tests.runtime.action_support import flow, simulator_fixture  # noqa: F401
from tests.runtime.engine_support import PROCUREMENT, compile_files
from tests.runtime.trigger_support import EVENT_TRIGGER, deploy_triggers, trigger_project

#: deployments and definition versions are the catalogue every scope shares
SHARED = {
    "definitions.get", "deployments.list", "deployments.show", "deployments.history",
    "deployments.rollback",
    "triggers.list", "triggers.show", "agents.show", "teams.show",
}  # fmt: skip
#: reach records of every scope (a caller limited to some is refused with 403)
EVERY_SCOPE = {
    "triggers.set_status", "tokens.list", "tokens.create", "tokens.revoke", "agents.pause",
    "agents.resume", "teams.pause", "teams.resume",
}  # fmt: skip


def token(store: Store, principal: str, roles: tuple[str, ...], scopes: tuple[str, ...]) -> str:
    request = service.NewToken(principal, roles, scopes)
    return service.tokens.create_token(store, request, service.CLI).secret


class Records:
    """One of each record, all in the default scope: a run waiting for approval of an order
    (with its objective, approval and action), and a change proposal."""

    def __init__(self, store: Store, run_id: str) -> None:
        run = store.runs.get(run_id)
        [approval] = service.list_approvals(store, run_id=run_id)
        [action] = service.list_actions(store, run_id=run_id)
        filed = gov.rollback(store, gov.Rollback("procure_laptops", None, "back"), service.CLI)
        assert filed.proposal is not None
        spare = service.NewToken("service:spare", ("viewer",))
        issued = service.tokens.create_token(store, spare, service.CLI)
        self.ids = {
            "request_id": agent_request(store, run.id),
            "run_id": run.id,
            "objective_id": run.objective_id,
            "approval": approval.id,
            "action": action.id,
            "proposal_id": filed.proposal.id,
            "name": "procure_laptops",
            "digest": run.workflow_digest,
            "trigger": "restock",  # tests.runtime.trigger_support.EVENT_TRIGGER
            "token_id": issued.token.id,
            "agent": "buyer",
            "team": "procurement",
            "scope": "default",
            "measure": "runs",
            "per": "day",
        }

    def path(self, operation: str, template: str) -> str:
        ref = self.ids["approval"] if operation.startswith("approvals.") else self.ids["action"]
        values = {**self.ids, "ref": ref}
        return template.format(**values)


def agent_request(store: Store, run_id: str) -> str:
    """An agent request of the run (made as a delegate state makes one), its id."""
    now = store.now()
    request = AgentRequest(
        id=new_id(), caller_run_id=run_id, callee="agent.finance", child_run_id=None,
        status=AgentRequestStatus.REQUESTED, request={"goal": "confirm"}, response=None,
        clarification=None, review=None, created_at=now, updated_at=now,
    )  # fmt: skip
    with store.write() as conn:
        store.agent_requests.insert(conn, request)
    return request.id


@pytest.fixture
def records(store: Store, simulator: ProcurementSimulator, tmp_path: Path) -> Records:
    f = flow(store, simulator, tmp_path)
    run = f.start()
    f.run_until_idle()
    assert f.status(run) == RunStatus.WAITING_FOR_APPROVAL
    # a second activation, so a rollback has somewhere to go; and a trigger
    service.register_documents(store, compile_files(*sorted(PROCUREMENT.glob("*.hcl"))))
    deploy_triggers(store, trigger_project(tmp_path, EVENT_TRIGGER))
    return Records(store, run.id)


def routes(server: LiveServer) -> dict[str, tuple[str, str]]:
    """operation id → (method, path template under /api/v1), from the served document."""
    # generous: the first request builds the document, which a loaded machine makes slow
    document = httpx.get(f"{server.url}/api/v1/openapi.json", timeout=60).json()
    found = {}
    for path, methods in document["paths"].items():
        for method, spec in methods.items():
            found[spec["operationId"]] = (method.upper(), path.removeprefix("/api/v1"))
    return found


#: bodies that pass validation, so what answers is the guard and the service, not the schema
BODIES: dict[str, dict[str, Any]] = {
    "actions.resolve": {"outcome": "succeeded", "evidence": "checked with the vendor"},
    "approvals.decide": {"decision": "approve", "hash": "0" * 64},
    "runs.intervene": {"reason": "repair"},
    "proposals.review": {"verdict": "approve"},
    "proposals.decide": {"decision": "approve"},
    "events.deliver": {"name": "nothing.waits"},
    "triggers.set_status": {"status": "paused"},
    # already active: refused (409) after the guard, and nothing changes for later operations
    "objectives.set_status": {"status": "active"},
    "objectives.create": {"workflow": "procure_laptops", "inputs": {}},
    "agent_requests.decline": {"reason": "busy"},
    "agent_requests.ask": {"question": "which one?"},
    "agent_requests.clarify": {"answer": "this one"},
    "agent_requests.complete": {"response": {}},
    "agent_requests.review": {"verdict": "accept"},
    "tokens.create": {"principal": "user:made", "roles": ["viewer"]},
    # lowering: an operator's to do
    "scopes.set_limit": {"max": 100},
    "scopes.set_quota": {"max": 100},
    "scopes.set_queue": {"max_queued": 100},
    # setting (lengthening): an operator's to do
    "scopes.set_retention": {"keep_ended_runs": "400d"},
}


def call(client: httpx.Client, method: str, path: str, operation: str = "") -> httpx.Response:
    if path.endswith("/stream"):  # a live stream does not end: its status is all we read
        with client.stream("GET", path) as streamed:
            if streamed.status_code >= 400:
                streamed.read()
            return streamed
    if method == "GET":
        return client.get(path, params={"limit": 5}, headers={"Accept": "application/json"})
    return client.request(method, path, json=BODIES.get(operation, {}))


def serve_with_tokens(serve: Serve) -> LiveServer:
    return serve(external_workers=True, authority=ApprovalAuthority(local_operator=False))


def test_every_operation_is_in_the_table() -> None:
    operations = {
        op for c in service.capabilities(service.CapabilityConfig()) for op in c.operations
    }
    assert operations == set(service.PERMISSIONS)
    for roles in service.PERMISSIONS.values():
        assert "admin" in roles and roles <= set(service.ROLES)


def test_the_role_by_operation_matrix(serve: Serve, store: Store, records: Records) -> None:
    tokens = {role: token(store, f"user:{role}", (role,), ("*",)) for role in service.ROLES}
    server = serve_with_tokens(serve)
    table = routes(server)
    assert set(service.PERMISSIONS) <= set(table)
    seen: dict[tuple[str, str], int] = {}
    with ExitStack() as stack:
        clients = {role: stack.enter_context(server.client(s)) for role, s in tokens.items()}
        for operation in sorted(service.PERMISSIONS, key=lambda op: table[op][0] != "GET"):
            method, template = table[operation]
            path = records.path(operation, template)
            for role, client in clients.items():
                response = call(client, method, path, operation)
                seen[(operation, role)] = response.status_code
                if role in service.roles_for(operation):
                    assert response.status_code not in (401, 403), (operation, role, response.text)
                else:
                    error = assert_error(response, 403, "forbidden")
                    assert operation in error["message"]
                    assert error["details"]["operation"] == operation
    assert len(seen) == len(service.PERMISSIONS) * len(service.ROLES)
    with server.client(tokens["viewer"]) as viewer:
        me = viewer.get("/me").json()
    assert me["roles"] == ["viewer"] and me["scopes"] == ["*"]
    for operation, answer in me["operations"].items():
        if answer["allowed"]:
            assert "viewer" in service.roles_for(operation), operation


def test_another_scope_finds_nothing(serve: Serve, store: Store, records: Records) -> None:
    stranger = token(store, "user:stranger", ("admin",), ("elsewhere",))
    neighbour = token(store, "user:neighbour", ("viewer",), ("default",))
    server = serve_with_tokens(serve)
    table = routes(server)
    with server.client(stranger) as client, server.client(neighbour) as allowed:
        for operation in sorted(service.PERMISSIONS):
            method, template = table[operation]
            path = records.path(operation, template)
            response = call(client, method, path, operation)
            if operation in SHARED:
                assert response.status_code != 404, (operation, response.text)
            elif operation in EVERY_SCOPE:
                assert_error(response, 403, "forbidden")
            elif "{" in template:
                error = assert_error(response, 404, "not_found")
                assert "scope" not in error["message"], error  # nothing says it exists
            elif method == "GET":
                assert response.status_code == 200, (operation, response.text)
                [items] = [v for v in response.json().values() if isinstance(v, list)]
                # only what the stranger made in its own scope (its rollback files its own
                # change proposal there), nothing of the default scope's
                foreign = [item for item in items if item.get("author") != "user:stranger"]
                assert foreign == [], (operation, items)
            if method == "GET" and operation not in SHARED | EVERY_SCOPE:
                # the same request from the record's own scope finds it
                shown = call(allowed, method, path, operation)
                assert shown.status_code == 200, (operation, shown.text)


def test_a_scoped_operator_creates_in_its_scope_and_sees_only_it(
    serve: Serve, store: Store
) -> None:
    ops = token(store, "user:olga", ("operator",), ("ops",))
    viewer = token(store, "user:vic", ("viewer",), ("default",))
    server = serve_with_tokens(serve)
    body = {"workflow": "small", "inputs": {"n": 1}}
    with server.client(ops) as olga, server.client(viewer) as vic:
        created = olga.post("/objectives", json=body)
        assert created.status_code == 201, created.text
        objective, run = created.json()["objective"], created.json()["run"]
        assert objective["scope"] == "ops" and run["scope"] == "ops"
        assert objective["created_by"] == "user:olga"
        refused = olga.post("/objectives", json={**body, "scope": "default"})
        assert_error(refused, 403, "forbidden")
        assert [r["id"] for r in olga.get("/runs").json()["runs"]] == [run["id"]]
        assert vic.get("/runs").json()["runs"] == []
        assert_error(vic.get(f"/runs/{run['id']}"), 404, "not_found")
        assert_error(vic.get(f"/objectives/{objective['id']}"), 404, "not_found")
        assert_error(vic.get(f"/runs/{run['id']}/events"), 404, "not_found")
        canceled = olga.post(f"/runs/{run['id']}/cancel", json={})
        assert canceled.status_code == 200 and canceled.json()["run"]["status"] == "canceled"


def test_tokens_expire_and_are_revoked(serve: Serve, store: Store) -> None:
    request = service.NewToken("user:erin", ("viewer",), ("*",), expires_in=3600)
    issued = service.tokens.create_token(store, request, service.CLI)
    server = serve_with_tokens(serve)
    with server.client(issued.secret) as erin:
        assert erin.get("/runs").status_code == 200
        later = store.now() + timedelta(hours=2)
        original = store.clock
        store.clock = lambda: later
        try:
            error = assert_error(erin.get("/runs"), 401, "unauthorized")
            assert "expired" in error["message"]
        finally:
            store.clock = original
        assert erin.get("/runs").status_code == 200
        service.tokens.revoke_token(store, issued.token.id, service.CLI)
        error = assert_error(erin.get("/runs"), 401, "unauthorized")
        assert "revoked" in error["message"]
    listed = service.tokens.list_tokens(store, service.CLI, principal="user:erin")
    assert [t.revoked_by for t in listed] == ["user:local"]
    assert issued.secret not in str(listed)  # only the hash is kept


def test_idempotency_keys_are_per_principal(serve: Serve, store: Store) -> None:
    alice = token(store, "user:alice", ("operator",), ("*",))
    bob = token(store, "user:bob", ("operator",), ("*",))
    server = serve_with_tokens(serve)
    body = {"workflow": "small", "inputs": {"n": 1}}
    key = {"Idempotency-Key": "order-1"}
    with server.client(alice) as a, server.client(bob) as b:
        first = a.post("/objectives", json=body, headers=key)
        assert first.status_code == 201, first.text
        theirs = b.post("/objectives", json=body, headers=key)
        assert theirs.status_code == 201, theirs.text  # bob's own objective, not alice's
        assert theirs.json()["objective"]["id"] != first.json()["objective"]["id"]
        assert theirs.json()["objective"]["created_by"] == "user:bob"
        other = b.post("/objectives", json={**body, "inputs": {"n": 2}}, headers=key)
        assert_error(other, 409, "idempotency_conflict")  # bob's key, bob's other body
        again = a.post("/objectives", json=body, headers=key)
        assert again.headers.get("idempotent-replayed") == "true"
        assert again.json() == first.json()
    # the service deduplicates by the principal's request key too, below the API's replay
    retried = service.create_objective(
        store, service.StartObjective("small", {"n": 1}, request_key="order-1"), service.CLI
    )
    assert retried.created and retried.objective.created_by == "user:local"


@pytest.mark.parametrize(
    "header",
    [
        {"X-Forwarded-For": "127.0.0.1"},
        {"Forwarded": "for=127.0.0.1"},
        {"X-Real-IP": "127.0.0.1"},
        {"X-Forwarded-For": "203.0.113.9"},
    ],
)
def test_forwarded_headers_never_make_a_local_operator(
    serve: Serve, header: dict[str, str]
) -> None:
    server = serve()
    with server.client() as client:
        assert client.get("/runs").status_code == 200  # loopback, no header: the local operator
        error = assert_error(client.get("/runs", headers=header), 403, "local_operator_refused")
        assert "forwarding header" in error["message"]


def test_behind_a_proxy_the_local_operator_is_off(serve: Serve) -> None:
    server = serve(trusted_proxies=("127.0.0.1",))
    with server.client() as client:
        assert_error(client.get("/runs"), 401, "unauthorized")
        assert_error(client.get("/me"), 401, "unauthorized")


def test_serve_refuses_to_expose_the_local_operator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENSEAL_APPROVAL_AUTHORITY", raising=False)
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    code = main(["serve", "--trusted-proxy", "127.0.0.1", "--home", str(tmp_path), "--port", "0"])
    err = capsys.readouterr().err
    assert code == 2 and "refusing to listen behind a proxy without tokens" in err
    code = main(["serve", "--trusted-proxy", "not-an-address", "--home", str(tmp_path)])
    assert code == 2 and "not an address or network" in capsys.readouterr().err


def test_the_tokens_cli_shows_a_secret_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    home = ["--home", str(tmp_path)]
    made = ["tokens", "create", "service:ci", "--role", "author", "--scope", "*", *home]
    assert main([*made, "--expires-in", "90d", "-o", "json"]) == 0
    import json

    created: dict[str, Any] = json.loads(capsys.readouterr().out)
    secret, shown = created["secret"], created["token"]
    assert secret.startswith("oseal_") and shown["state"] == "active" and shown["expires_at"]
    assert main(["tokens", "list", *home]) == 0
    listed = capsys.readouterr().out
    assert service.handle(shown["id"]) in listed and "service:ci" in listed and secret not in listed
    assert main(["tokens", "revoke", shown["id"][:8], *home, "-o", "yaml"]) == 0
    assert "revoked_at:" in capsys.readouterr().out
    assert main(["tokens", "list", *home, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"][0]["state"] == "revoked"
    assert main(["tokens", "create", "alice", "--role", "viewer", *home]) == 2
    assert "not a principal" in capsys.readouterr().err
    assert main(["tokens", "create", "user:al", "--role", "boss", *home]) == 2
    assert main(["tokens", "revoke", "ffffffff", *home]) == 1


def test_a_change_proposal_lives_in_its_authors_scope(serve: Serve, store: Store) -> None:
    author = token(store, "user:ann", ("author",), ("ops",))
    viewer = token(store, "user:vic", ("viewer",), ("default",))
    server = serve_with_tokens(serve)
    documents = [d.document for d in compile_files(*sorted(PROCUREMENT.glob("*.hcl")))]
    with server.client(author) as ann, server.client(viewer) as vic:
        filed = ann.post("/proposals", json={"documents": documents})
        assert filed.status_code == 201, filed.text
        proposal = filed.json()["proposal"]
        assert proposal["scope"] == "ops" and proposal["author"] == "user:ann"
        assert [p["id"] for p in ann.get("/proposals").json()["proposals"]] == [proposal["id"]]
        assert vic.get("/proposals").json()["proposals"] == []
        assert_error(vic.get(f"/proposals/{proposal['id']}"), 404, "not_found")
        # the catalogue is shared: the versions it stored are readable from every scope
        digest = proposal["targets"][0]["digest"]
        assert vic.get(f"/definitions/{digest}").status_code == 200
        # the same change filed from another scope is that scope's own proposal, not ann's
        # (which its author could neither see nor act on)
        bea = token(store, "user:bea", ("author",), ("default",))
        with server.client(bea) as other:
            again = other.post("/proposals", json={"documents": documents})
            assert again.status_code == 201, again.text
            theirs = again.json()["proposal"]
            assert theirs["id"] != proposal["id"] and theirs["scope"] == "default"
            assert (
                other.post("/proposals", json={"documents": documents}).json()["proposal"]["id"]
                == theirs["id"]
            )  # within a scope, the open one is answered again
        assert (
            ann.post("/proposals", json={"documents": documents}).json()["proposal"]["id"]
            == proposal["id"]
        )


def test_insecure_no_auth_is_loud(capsys: pytest.CaptureFixture[str]) -> None:
    from openseal.api import ApiSettings
    from openseal.cli.serve import _check_exposure

    _check_exposure(ApiSettings(host="0.0.0.0", insecure_no_auth=True), stored_tokens=False)
    warning = capsys.readouterr().err
    assert warning.startswith("WARNING: --insecure-no-auth") and "WITHOUT AUTHENTICATION" in warning
    _check_exposure(ApiSettings(host="0.0.0.0"), stored_tokens=True)  # the store's tokens count
    assert capsys.readouterr().err == ""


def test_tokens_are_administered_over_http(
    serve: Serve, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    root = token(store, "user:root", ("admin",), ("*",))
    local_admin = token(store, "user:ops-admin", ("admin",), ("ops",))
    server = serve_with_tokens(serve)
    body = {"principal": "user:dana", "roles": ["operator"], "scopes": ["ops"], "expiresIn": 3600}
    with caplog.at_level("DEBUG"), server.client(root) as admin:
        created = admin.post("/tokens", json={**body, "note": "on call"})
        assert created.status_code == 201, created.text
        made, secret = created.json()["token"], created.json()["secret"]
        assert secret.startswith("oseal_") and set(created.json()) == {"token", "secret"}
        assert made["principal"] == "user:dana" and made["created_by"] == "user:root"
        assert (made["roles"], made["scopes"], made["state"]) == (["operator"], ["ops"], "active")
        assert made["expires_at"] and made["note"] == "on call"
        with server.client(secret) as dana:  # it works at once, with what it was made for
            me = dana.get("/me").json()
            assert (me["principal"], me["roles"], me["scopes"]) == (
                "user:dana",
                ["operator"],
                ["ops"],
            )
            assert_error(dana.get("/tokens"), 403, "forbidden")  # an operator administers none
        listed = admin.get("/tokens", params={"principal": "user:dana"}).json()["tokens"]
        assert listed == [made]
        everything = admin.get("/tokens").text
        assert secret not in everything and "sha256" not in everything
        revoked = admin.post(f"/tokens/{made['id'][:24]}/revoke")  # a prefix will do
        assert revoked.status_code == 200, revoked.text
        assert revoked.json()["token"]["state"] == "revoked"
        assert revoked.json()["token"]["revoked_by"] == "user:root"
        with server.client(secret) as dana:
            assert "revoked" in assert_error(dana.get("/me"), 401, "unauthorized")["message"]
        assert_error(admin.post("/tokens/ffffffffff/revoke"), 404, "not_found")
        bad = admin.post("/tokens", json={**body, "principal": "dana"})
        assert "not a principal" in assert_error(bad, 422, "invalid_request")["message"]
        bad = admin.post("/tokens", json={**body, "roles": ["boss"]})
        assert "unknown role" in assert_error(bad, 422, "invalid_request")["message"]
        assert_error(admin.post("/tokens", json={**body, "expiresIn": 0}), 422, "invalid_request")
    assert secret not in caplog.text
    # an admin limited to a scope could mint a token for every scope: it administers none
    with server.client(local_admin) as scoped_admin:
        for refused in (
            scoped_admin.get("/tokens"),
            scoped_admin.post("/tokens", json={**body, "scopes": ["*"]}),
            scoped_admin.post(f"/tokens/{made['id']}/revoke"),
        ):
            error = assert_error(refused, 403, "forbidden")
            assert "every scope" in error["message"]
    assert len(service.tokens.list_tokens(store, service.CLI)) == 3
