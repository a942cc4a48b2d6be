"""Back-pressure at the door, over real HTTP on both backends: while a workflow's ready queue
holds its ``max_queued`` runs, a new objective and an event that would fire its trigger are
refused with ``429 queue_full`` and ``Retry-After`` (nothing is created or stored), the CLI
says so in one line, and a scheduled firing is queued until the queue has room."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from openseal.runtime import service
from openseal.runtime.engine import door
from openseal.runtime.engine.triggers import Scheduler, TriggerPlan, record
from openseal.runtime.requests import RunCommand
from openseal.runtime.store import Occurrence, Store
from tests.api.conftest import Serve
from tests.api.support import assert_error
from tests.runtime.engine_support import DEFS, compile_files
from tests.runtime.support import Backend
from tests.runtime.trigger_support import EVENT_TRIGGER, deploy_triggers, objectives, schedule

BODY = {"workflow": "small", "inputs": {"n": 5}}


def _small_with_depth(store: Store, tmp: Path, depth: int, triggers: str) -> None:
    text = (DEFS / "small.hcl.in").read_text(encoding="utf-8")
    text = text.replace("FACTOR", "1").replace("MODEL_CALLS", "5")
    text = text.replace("ON_EXHAUSTED", "needs_attention")
    text = text.replace("  start = state.ask\n", f"  start = state.ask\n  max_queued = {depth}\n")
    folder = tmp / "deep"
    folder.mkdir()
    (folder / "small.hcl").write_text(text, encoding="utf-8")
    (folder / "triggers.hcl").write_text(triggers, encoding="utf-8")
    deploy_triggers(store, compile_files(folder))


def test_a_full_ready_queue_refuses_new_objectives_and_events_with_429(
    serve: Serve, store: Store, tmp_path: Path
) -> None:
    _small_with_depth(store, tmp_path, 2, EVENT_TRIGGER)
    event = {"name": "stock.low", "eventId": "evt-1", "payload": {"qty": 2}}
    with serve(external_workers=True).client() as client:
        assert [client.post("/objectives", json=BODY).status_code for _ in range(2)] == [201, 201]
        refused = client.post("/objectives", json=BODY)
        assert_error(refused, 429, "queue_full")
        assert refused.headers["Retry-After"] == str(door.RETRY_AFTER)
        assert refused.json()["error"]["details"]["retry_after"] == door.RETRY_AFTER
        assert "max_queued" in refused.json()["error"]["message"]
        assert_error(client.post("/events", json=event), 429, "queue_full")
        # a draft starts no run: it is not held back
        draft = client.post("/objectives", json={**BODY, "draft": True})
        assert draft.status_code == 201, draft.text
        assert len(objectives(store)) == 3  # nothing was created for the refusals
        # a run that leaves the queue makes room
        _cancel_oldest(store)
        fired = client.post("/events", json=event)
        assert fired.status_code == 202, fired.text
        # the refused delivery was not stored: this one is new, and fires
        assert fired.json()["duplicate"] is False
        assert [f["outcome"] for f in fired.json()["triggered"]] == ["started"]
        assert_error(client.post("/objectives", json=BODY), 429, "queue_full")


def test_the_cli_says_the_queue_is_full_in_one_line(
    store: Store, backend: Backend, tmp_path: Path
) -> None:
    _small_with_depth(store, tmp_path, 1, "")
    service.create_objective(store, service.StartObjective("small", {"n": 1}), service.CLI)
    if backend.url is not None:
        return  # the local command reads the SQLite store of its home; HTTP is tested above
    command = [sys.executable, "-m", "openseal", "objectives", "create", "--home",
               str(backend.home), "--workflow", "small", "--input", "n=2"]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "ready queue" in lines[0] and "try again in 5s" in lines[0], lines
    as_json = subprocess.run(
        [*command, "--output", "json"], capture_output=True, text=True, timeout=300, check=False
    )
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout or as_json.stderr)["error"]["code"] == "queue_full"


def test_a_scheduled_firing_waits_in_the_queue_until_there_is_room(
    store: Store, tmp_path: Path
) -> None:
    _small_with_depth(store, tmp_path, 1, schedule())
    service.create_objective(store, service.StartObjective("small", {"n": 1}), service.CLI)
    [trigger] = store.triggers.deployments()
    plan = TriggerPlan.from_document(trigger.document)
    due = Occurrence("2026-12-07T06:00", "schedule", datetime(2026, 12, 7, 6, tzinfo=UTC), {"n": 1})
    [firing] = record(store, trigger, plan, [due])
    assert firing.outcome == "queued" and firing.objective_id is None
    assert not door.has_room(store, "small")
    Scheduler(store).poll()  # a worker's scheduler leaves it queued while there is no room
    [still] = store.triggers.firings("hourly")
    assert still.outcome == "queued" and still.objective_id is None
    _cancel_oldest(store)
    assert door.has_room(store, "small")
    Scheduler(store).poll()
    [started] = store.triggers.firings("hourly")
    assert started.objective_id is not None


def _cancel_oldest(store: Store) -> None:
    oldest = [o for o in objectives(store) if o.status == "active"][-1]
    _, runs = service.show_objective(store, oldest.id)
    service.cancel_run(store, RunCommand(runs[0].id, reason="make room"), service.CLI)
