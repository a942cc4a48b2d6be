"""Change proposals over HTTP: file from posted compiled documents, show with the diff, review,
decide, activate (with expected revisions), deployments and their history, definitions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openseal.api.auth import TokenTable, parse_tokens
from openseal.runtime import service
from openseal.runtime.store import Store
from tests.api.conftest import ALICE_TOKEN, BOB_TOKEN, CAROL_TOKEN, Serve, sha
from tests.api.support import assert_error
from tests.runtime.engine_support import PROCUREMENT, compile_files, register
from tests.runtime.governance_support import WORKFLOW, compile_set, key, without_lookup

TOKENS: TokenTable = parse_tokens(
    {sha(ALICE_TOKEN): "user:alice", sha(BOB_TOKEN): "user:bob", sha(CAROL_TOKEN): "user:carol"}
)


def documents() -> list[dict[str, Any]]:
    return [d.document for d in compile_files(*sorted(PROCUREMENT.glob("*.hcl")))]


def test_a_posted_bundle_goes_through_review_decision_and_activation(serve: Serve) -> None:
    server = serve(tokens=TOKENS)
    posted = {"documents": documents(), "message": "first procurement workflow"}
    with (
        server.client(ALICE_TOKEN) as alice,
        server.client(BOB_TOKEN) as bob,
        server.client(CAROL_TOKEN) as carol,
    ):
        filed = alice.post("/proposals", json=posted)
        assert filed.status_code == 201, filed.text
        proposal = filed.json()["proposal"]
        assert filed.json()["created"] is True
        assert proposal["status"] == "proposed" and proposal["author"] == "user:alice"
        assert [t["name"] for t in proposal["targets"]] == ["procure_laptops"]
        again = alice.post("/proposals", json=posted)
        assert again.status_code == 200 and again.json()["created"] is False
        assert again.json()["proposal"]["id"] == proposal["id"]
        pid = proposal["id"]

        shown = bob.get(f"/proposals/{pid}").json()
        assert shown["proposal"]["diff"]["changes"], "the semantic diff is shown"
        assert [e["type"] for e in shown["events"]] == ["change_proposal.filed"]
        # a proposal reads the same in a list as shown alone
        assert bob.get("/proposals").json()["proposals"][0] == shown["proposal"]

        own = alice.post(f"/proposals/{pid}/review", json={"verdict": "approve"})
        assert_error(own, 403, "self_review")
        reviewed = bob.post(
            f"/proposals/{pid}/review", json={"verdict": "approve", "comment": "checked"}
        )
        assert reviewed.status_code == 200, reviewed.text
        revision = reviewed.json()["proposal"]["revision"]
        stale = carol.post(
            f"/proposals/{pid}/decide",
            json={"decision": "approve", "expectedRevision": revision - 1},
        )
        assert_error(stale, 409, "conflict")
        decided = carol.post(
            f"/proposals/{pid}/decide", json={"decision": "approve", "expectedRevision": revision}
        )
        assert decided.json()["proposal"]["status"] == "approved"
        assert alice.get("/deployments").json()["deployments"][0]["name"] != "procure_laptops"
        activated = carol.post(f"/proposals/{pid}/activate", json={})
        assert activated.status_code == 200, activated.text
        assert activated.json()["proposal"]["status"] == "activated"

        deployments = {d["name"]: d for d in alice.get("/deployments").json()["deployments"]}
        digest = deployments["procure_laptops"]["active_digest"]
        assert deployments["procure_laptops"]["change_proposal_id"] == pid
        history = alice.get("/deployments/procure_laptops/history").json()["activations"]
        assert [(h["digest"], h["actor"]) for h in history] == [(digest, "user:carol")]
        version = alice.get(f"/definitions/sha256:{digest}").json()
        assert version["kind"] == "workflow" and version["name"] == "procure_laptops"
        assert_error(
            alice.post("/deployments/procure_laptops/rollback", json={}),
            409,
            "no_previous_version",
        )
        unchanged = alice.post("/proposals", json=posted)
        assert unchanged.status_code == 200 and unchanged.json()["proposal"] is None
        assert "nothing changed" in unchanged.json()["note"]


def test_posted_documents_are_checked_before_anything_is_stored(serve: Serve) -> None:
    docs = documents()
    workflow = next(d for d in docs if d["kind"] == "workflow")
    with serve().client() as client:
        alone = client.post("/proposals", json={"documents": [workflow]})
        error = assert_error(alone, 422, "bundle_error")
        assert "neither posted nor stored" in error["message"]
        broken = dict(workflow, spec={"states": "nope"})
        assert_error(client.post("/proposals", json={"documents": [broken]}), 422, "bundle_error")
        unknown = client.post("/proposals", json={"documents": [{"kind": "wizard"}]})
        assert_error(unknown, 422, "bundle_error")
        assert_error(client.post("/proposals", json={"documents": []}), 422, "invalid_request")
        assert client.get("/proposals").json()["proposals"] == []


def test_a_change_says_what_live_runs_still_pin_and_a_deployment_its_live_versions(
    serve: Serve, store: Store, tmp_path: Path
) -> None:
    v1 = compile_set(tmp_path / "v1")
    register(store, list(v1.values()))
    request = service.StartObjective(WORKFLOW, {"question": "why"})
    for _ in range(2):
        service.create_objective(store, request, service.CLI)
    pinned = key(v1, f"workflow.{WORKFLOW}")
    posted = [d.document for d in without_lookup(tmp_path / "v2").values()]
    with serve().client() as client:
        shown = client.get(f"/deployments/{WORKFLOW}")
        assert shown.status_code == 200, shown.text
        assert shown.json()["deployment"]["active_digest"] == pinned
        assert shown.json()["live"] == [{"digest": pinned, "runs": 2}]
        assert shown.json()["live_runs"] == 2
        assert_error(client.get("/deployments/nothing"), 404, "not_found")

        filed = client.post("/proposals", json={"documents": posted})
        assert filed.status_code == 201, filed.text
        in_use = {item["capability"]: item for item in filed.json()["in_use"]}
        assert set(in_use) == {"skill.lookup", "binding.helper_looks_up", "model.m"}
        assert in_use["skill.lookup"] == {
            "workflow": WORKFLOW, "capability": "skill.lookup", "kind": "skill", "runs": 2,
            "versions": [{"digest": pinned, "runs": 2}],
        }  # fmt: skip
        pid = filed.json()["proposal"]["id"]
        again = client.get(f"/proposals/{pid}").json()["in_use"]
        assert sorted(item["capability"] for item in again) == sorted(in_use)


def test_the_api_takes_a_handle_wherever_it_takes_an_id(
    serve: Serve, store: Store, tmp_path: Path
) -> None:
    register(store, list(compile_set(tmp_path / "v1").values()))
    request = service.StartObjective(WORKFLOW, {"question": "why"})
    run = service.create_objective(store, request, service.CLI).run
    assert run is not None
    filed = gov_deploy(store, tmp_path)
    with serve().client() as client:
        shown = client.get(f"/runs/{service.handle(run.id)}")
        assert shown.status_code == 200, shown.text
        assert shown.json()["run"]["id"] == run.id  # JSON keeps the full id
        objective = client.get(f"/objectives/{service.handle(run.objective_id)}")
        assert objective.json()["objective"]["id"] == run.objective_id
        paused = client.post(f"/runs/{service.handle(run.id).upper()}/pause", json={})
        assert paused.json()["run"]["status"] == "paused", paused.text
        proposal = client.get(f"/proposals/{service.handle(filed)}")
        assert proposal.json()["proposal"]["id"] == filed
        assert_error(client.get("/runs/zzzzzzzz"), 404, "not_found")


def gov_deploy(store: Store, tmp_path: Path) -> str:
    """File a change (the workflow without its skill); the proposal's id."""
    from openseal.runtime.service import governance as gov

    result = gov.deploy(store, gov.Deployment(without_lookup(tmp_path / "v2"), None), service.CLI)
    assert result.proposal is not None
    return result.proposal.id
