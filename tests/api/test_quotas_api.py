"""A scope's quotas and ready-queue depth over real HTTP on both backends: set and listed
through the API; a used-up quota whose policy is ``refuse`` refuses new objectives with ``429
quota_exceeded`` and a ``Retry-After`` until its window resets, creating nothing; a scope's
full ready queue refuses objectives and events with ``429 queue_full``; the CLI says each in
one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from openseal.runtime import service
from openseal.runtime.engine import door, quotas
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.api.conftest import Serve
from tests.api.support import assert_error
from tests.runtime.engine_support import DEFS, compile_files, engine, register
from tests.runtime.engine_support import scripted as scripted_provider
from tests.runtime.support import Backend
from tests.runtime.trigger_support import deploy_triggers, objectives

DONE = {"output": {"done": True}}
FREE = {"workflow": "free", "inputs": {}}
TRIGGER = """
trigger "restock" {
  workflow = workflow.free
  event {
    name = "stock.low"
  }
  overlap = "allow"
}
"""


def _flows(store: Store, tmp: Path) -> None:
    folder = tmp / "flows"
    folder.mkdir()
    (folder / "capacity.hcl").write_text((DEFS / "capacity.hcl").read_text(), encoding="utf-8")
    (folder / "triggers.hcl").write_text(TRIGGER, encoding="utf-8")
    deploy_triggers(store, compile_files(folder))


def test_a_used_up_quota_refuses_with_429_until_its_window_resets(
    serve: Serve, store: Store, tmp_path: Path
) -> None:
    register(store, compile_files(DEFS / "capacity.hcl"))
    worker = engine(store, scripted_provider(tmp_path, {"work": [DONE] * 10})[0])
    with serve(external_workers=True).client() as client:
        set_to = client.put(
            "/scopes/default/quotas/runs/day", json={"max": 1, "when_over": "refuse"}
        )
        assert set_to.status_code == 200, set_to.text
        assert {k: set_to.json()["quota"][k] for k in ("max", "used", "when_over")} == {
            "max": 1, "used": 0, "when_over": "refuse",
        }  # fmt: skip
        assert client.post("/objectives", json=FREE).status_code == 201
        worker.run_until_idle()  # the run starts: it is counted
        refused = client.post("/objectives", json=FREE)
        assert_error(refused, 429, "quota_exceeded")
        wait = int(refused.headers["Retry-After"])
        assert 1 <= wait <= 86_400
        assert refused.json()["error"]["details"]["retry_after"] == wait
        assert "quota of 1 runs a day" in refused.json()["error"]["message"]
        assert len(objectives(store)) == 1  # nothing was created
        listed = client.get("/scopes/quotas").json()["quotas"]
        assert [(q["scope"], q["measure"], q["per"], q["used"]) for q in listed] == [
            ("default", "runs", "day", 1)
        ]
        # a draft starts no run: it is not held back
        assert client.post("/objectives", json={**FREE, "draft": True}).status_code == 201
        bad = client.put("/scopes/default/quotas/bananas/day", json={"max": 1})
        assert_error(bad, 422, "invalid_request")
        removed = client.put("/scopes/default/quotas/runs/day", json={"max": None})
        assert removed.status_code == 200 and removed.json()["quota"] is None
        assert client.post("/objectives", json=FREE).status_code == 201


def test_the_wait_policy_creates_the_objective_and_its_run_waits(
    serve: Serve, store: Store, tmp_path: Path
) -> None:
    register(store, compile_files(DEFS / "capacity.hcl"))
    worker = engine(store, scripted_provider(tmp_path, {"work": [DONE] * 10})[0])
    service.set_scope_quota(store, "default", "runs", "month", 1)
    with serve(external_workers=True).client() as client:
        made = [client.post("/objectives", json=FREE) for _ in range(2)]
        assert [m.status_code for m in made] == [201, 201]
        worker.run_until_idle()
        runs = [store.runs.get(m.json()["run"]["id"]) for m in made]
        assert [r.status for r in runs] == [RunStatus.COMPLETED, RunStatus.WAITING_FOR_CAPACITY]
        shown = client.get(f"/runs/{runs[1].id}").json()["run"]
        assert shown["waiting"]["waits_for"]["limit"] == "quota:default:runs:month"


def test_a_full_scope_queue_refuses_objectives_and_events_with_429(
    serve: Serve, store: Store, tmp_path: Path
) -> None:
    _flows(store, tmp_path)
    event = {"name": "stock.low", "eventId": "evt-1", "payload": {"qty": 2}}
    with serve(external_workers=True).client() as client:
        set_to = client.put("/scopes/default/queue", json={"max_queued": 1})
        assert set_to.status_code == 200, set_to.text
        assert set_to.json()["queue"] == {**set_to.json()["queue"], "max_queued": 1, "queued": 0}
        assert client.post("/objectives", json=FREE).status_code == 201
        refused = client.post("/objectives", json=FREE)
        assert_error(refused, 429, "queue_full")
        assert refused.headers["Retry-After"] == str(door.RETRY_AFTER)
        assert "ready queue of scope 'default'" in refused.json()["error"]["message"]
        assert_error(client.post("/events", json=event), 429, "queue_full")
        assert len(objectives(store)) == 1
        # another scope's queue is its own
        other = client.post("/objectives", json={**FREE, "scope": "globex"})
        assert other.status_code == 201, other.text
        assert client.put("/scopes/default/queue", json={"max_queued": None}).status_code == 200
        assert client.post("/objectives", json=FREE).status_code == 201


def test_the_cli_says_a_quota_is_used_up_in_one_line(
    store: Store, backend: Backend, tmp_path: Path
) -> None:
    if backend.url is not None:
        return  # the local command reads the SQLite store of its home; HTTP is tested above
    register(store, compile_files(DEFS / "capacity.hcl"))
    service.set_scope_quota(store, "default", "runs", "day", 0, "refuse")
    base = [sys.executable, "-m", "openseal"]
    home = ["--home", str(backend.home)]
    command = [*base, "objectives", "create", *home, "--workflow", "free"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "has used its quota of 0 runs a day" in lines[0], lines
    as_json = subprocess.run(
        [*command, "--output", "json"], capture_output=True, text=True, timeout=300, check=False
    )
    assert json.loads(as_json.stdout or as_json.stderr)["error"]["code"] == "quota_exceeded"
    queue = [*base, "scopes", "queue", "default", "--max", "3", *home]
    said = subprocess.run(queue, capture_output=True, text=True, timeout=300, check=True)
    assert said.stdout.strip() == "scope default: at most 3 waiting for a worker (0 now)"
    listed = subprocess.run(
        [*base, "scopes", "quotas", *home, "--output", "json"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    [quota] = json.loads(listed.stdout)["quotas"]
    assert (quota["measure"], quota["max"], quota["when_over"]) == ("runs", 0, "refuse")
    assert quotas.retry_after("day", store.now()) >= 1
