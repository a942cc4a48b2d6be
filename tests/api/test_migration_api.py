"""``POST /proposals/{id}/migrate`` over HTTP: the dry run of a proposal that migrates runs,
refused before activation, for a proposal without a migration, and a deploy whose migration
does not check against the stored version (each with its stable error code)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from openseal.api.auth import TokenTable, parse_tokens
from tests.api.conftest import ALICE_TOKEN, BOB_TOKEN, CAROL_TOKEN, Serve, sha
from tests.api.support import assert_error
from tests.runtime.engine_support import PROCUREMENT
from tests.runtime.migration_support import compiled, version_two

TOKENS: TokenTable = parse_tokens(
    {sha(ALICE_TOKEN): "user:alice", sha(BOB_TOKEN): "user:bob", sha(CAROL_TOKEN): "user:carol"}
)


def _documents(folder: Path) -> list[dict[str, Any]]:
    return [d.document for d in compiled(folder).values()]


def _v1(tmp: Path) -> Path:
    root = tmp / "procurement"
    shutil.copytree(PROCUREMENT.parent, root)
    (root / ".git").mkdir()
    return root / PROCUREMENT.name


def _through(server: Any, documents: list[dict[str, Any]], *, activate: bool) -> str:
    with (
        server.client(ALICE_TOKEN) as alice,
        server.client(BOB_TOKEN) as bob,
        server.client(CAROL_TOKEN) as carol,
    ):
        filed = alice.post("/proposals", json={"documents": documents})
        assert filed.status_code == 201, filed.text
        pid = str(filed.json()["proposal"]["id"])
        assert filed.json()["proposal"]["status"] == "proposed"
        assert bob.post(f"/proposals/{pid}/review", json={"verdict": "approve"}).status_code == 200
        assert (
            carol.post(f"/proposals/{pid}/decide", json={"decision": "approve"}).status_code == 200
        )
        if activate:
            assert carol.post(f"/proposals/{pid}/activate", json={}).status_code == 200
    return pid


def test_the_migration_route_plans_refuses_and_answers_its_codes(
    serve: Serve, tmp_path: Path
) -> None:
    server = serve(tokens=TOKENS)
    v1_folder = _v1(tmp_path)
    v1_docs = _documents(v1_folder)
    first = _through(server, v1_docs, activate=True)
    v1 = str(compiled(v1_folder)["workflow.procure_laptops"].digest).removeprefix("sha256:")
    second = _through(server, _documents(version_two(v1_folder, tmp_path, v1)), activate=False)
    with server.client(CAROL_TOKEN) as carol:
        planned = carol.post(f"/proposals/{second}/migrate", json={"dryRun": True})
        assert planned.status_code == 200, planned.text
        assert planned.json() == {
            "migration": {"proposal_id": second, "dry_run": True, "moves": []},
            "counts": {},
        }
        early = carol.post(f"/proposals/{second}/migrate", json={})
        assert_error(early, 409, "invalid_status")
        none = carol.post(f"/proposals/{first}/migrate", json={"dryRun": True})
        assert_error(none, 409, "no_migration")
        bad = carol.post(f"/proposals/{second}/migrate", json={"version": "xyz"})
        assert bad.status_code == 422
    unknown = version_two(v1_folder, tmp_path / "other", "0" * 12)
    with server.client(ALICE_TOKEN) as alice:
        refused = alice.post("/proposals", json={"documents": _documents(unknown)})
        assert_error(refused, 422, "migration_invalid")
        assert "OS601" in refused.json()["error"]["message"]
