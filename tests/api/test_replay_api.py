"""``POST /proposals/{id}/replay`` over real HTTP: the declared document, the same report as
the runtime's, errors in the one shape, and runs of other scopes left out."""

from __future__ import annotations

import json
from pathlib import Path

from openseal.runtime.replay import Selection, replay_proposal
from openseal.runtime.store import Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.api.conftest import Serve
from tests.api.support import assert_error
from tests.api.test_documents import Declared
from tests.runtime.action_support import simulator_fixture  # noqa: F401  (fixture)
from tests.runtime.replay_support import CONSTRAINT, changed_example, file_change, record_runs


def test_a_proposal_is_replayed_over_http(
    serve: Serve, store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    recorded = record_runs(store, simulator, tmp_path)
    folder = changed_example(tmp_path, "tighter", {"team.hcl": (CONSTRAINT, "args.total <= 10000")})
    proposal = file_change(store, folder)
    with serve().client() as client:
        api = Declared(client.get("/openapi.json").json())
        path = "/proposals/{proposal_id}/replay"
        answer = api.check(
            "post", path, client.post(f"/proposals/{proposal.id[:8]}/replay", json={})
        )
        expected = replay_proposal(store, proposal.id, Selection()).to_json()
        assert json.dumps(answer, sort_keys=True) == json.dumps(expected, sort_keys=True)
        assert answer["summary"]["diverges"] == 1 and answer["summary"]["runs"] == 5

        large = recorded.runs["large"].id
        one = client.post(f"/proposals/{proposal.id}/replay", json={"run": [large]}).json()
        assert [r["run"] for r in one["runs"]] == [large] and one["runs"][0]["state"] == "submit"

        missing = client.post("/proposals/01ffffffffffffff/replay", json={})
        api.check("post", path, missing)
        assert_error(missing, 404, "not_found")
        both = client.post(f"/proposals/{proposal.id}/replay", json={"runs": 3, "since": "1d"})
        api.check("post", path, both)
        assert_error(both, 422, "invalid_request")
        unknown_run = client.post(f"/proposals/{proposal.id}/replay", json={"run": ["01nope"]})
        assert_error(unknown_run, 404, "not_found")
