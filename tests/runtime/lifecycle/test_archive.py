"""Retention and the archive (invariant 19): ended run trees move out whole, in verified
batches, evidence stays until it may go, and runs come back from the archive; on SQLite and
PostgreSQL, against the procurement simulator over real HTTP."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from openseal.cli.main import main
from openseal.errors import OpenSealError, UsageError
from openseal.runtime import service
from openseal.runtime.clock import utcnow
from openseal.runtime.lifecycle import archive_format as fmt
from openseal.runtime.lifecycle.archive import ArchiveRequest, archive
from openseal.runtime.lifecycle.restore import find_archived_run, restore_archive
from openseal.runtime.lifecycle.retention import DAY, Retention
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import NotFound, Store, open_store
from openseal.runtime.store.tables.records import Run
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import (  # noqa: F401
    LOCAL,
    PICK,
    Flow,
    definitions,
    flow,
    simulator_fixture,
)
from tests.runtime.engine_support import compile_files, register
from tests.runtime.lifecycle.archive_support import later
from tests.runtime.support import DOCUMENT, deploy, new_run

NOW_ONLY = Retention(keep_ended_runs=0.0)


def ordered(f: Flow) -> Run:
    """A run whose order was approved, placed and confirmed: completed."""
    run = f.start()
    f.run_until_idle()
    [approval] = service.list_approvals(f.store, run_id=run.id)
    service.decide_approval(
        f.store, LOCAL,
        service.ApprovalDecision(approval.id, "approve", approval.proposal_hash), service.CLI,
    )  # fmt: skip
    f.run_until_idle()
    assert f.status(run) == RunStatus.COMPLETED
    return run


def read_without_openseal(batch_dir: Path) -> dict[str, list[dict[str, object]]]:
    """A batch read with gzip, hashlib and json only, checked against its manifest."""
    manifest = json.loads((batch_dir / "manifest.json").read_text())
    tables = {}
    for table, entry in manifest["tables"].items():
        data = (batch_dir / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        rows = [json.loads(line) for line in gzip.decompress(data).splitlines()]
        assert len(rows) == entry["rows"]
        tables[table] = rows
    return tables


def test_an_ended_run_moves_out_whole_and_comes_back(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    done = ordered(f)
    waiting = f.start()  # waits for its approval: never archived
    f.run_until_idle()
    events = [e.seq for e in store.runs.events(done.id)]
    later(store, 40)  # past the 7d action window and the team's 30d spend period
    to = tmp_path / "archive"
    report = archive(store, ArchiveRequest(to=to, retention=NOW_ONLY))
    assert report.runs == 1 and len(report.batches) == 1 and not report.kept
    with pytest.raises(NotFound):
        store.runs.get(done.id)
    assert store.runs.get(waiting.id).status == RunStatus.WAITING_FOR_APPROVAL
    assert service.list_actions(store, run_id=done.id) == []
    tables = read_without_openseal(to / report.batches[0])
    assert [r["id"] for r in tables["runs"]] == [done.id]
    assert [e["seq"] for e in tables["events"]] == events
    assert [a["status"] for a in tables["actions"]] == ["succeeded"]
    assert len(tables["approvals"]) == len(tables["proposals"]) == 1
    assert tables["artifacts"][0]["digest"] == tables["proposals"][0]["artifact_digest"]
    assert find_archived_run(to, done.id)["run"]["status"] == "completed"

    restored = restore_archive(store, to, done.id)
    assert restored.runs == [done.id] and restored.rows_inserted > len(events)
    assert store.runs.get(done.id).status == RunStatus.COMPLETED
    assert [e.seq for e in store.runs.events(done.id)] == events
    [action] = service.list_actions(store, run_id=done.id)
    assert action.status == "succeeded"
    assert restore_archive(store, to, done.id).rows_inserted == 0  # idempotent


def test_evidence_stays_live_until_it_may_go(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    done = ordered(f)
    to = tmp_path / "archive"
    later(store, 1)  # the order settled a day ago: its destination may still see a retry
    report = archive(store, ArchiveRequest(to=to, retention=NOW_ONLY))
    assert report.runs == 0
    assert report.kept == {"an action settled within the action window": 1}
    later(store, 10)  # past the action window, but the team's 30d budget still counts it
    report = archive(store, ArchiveRequest(to=to, retention=NOW_ONLY))
    assert report.kept == {"its spend still counts in an owner's budget": 1}
    later(store, 31)
    kept_by_policy = Retention(keep_ended_runs=0.0, scopes={"default": 60 * DAY})
    assert archive(store, ArchiveRequest(to=to, retention=kept_by_policy)).runs == 0
    dry = archive(store, ArchiveRequest(to=to, retention=NOW_ONLY, dry_run=True))
    assert dry.runs == 1 and store.runs.get(done.id).status == RunStatus.COMPLETED
    assert archive(store, ArchiveRequest(to=to, retention=NOW_ONLY)).runs == 1


def test_keys_are_forgotten_after_their_period_and_never_sooner_than_a_day(
    store: Store, tmp_path: Path
) -> None:
    store.idempotency.remember("k-1", "POST /objectives", "h" * 64, 201, {}, "user:a")
    first = store.inbound_events.receive("paid", {"order": 1}, {}, key="d-1")
    assert not first.duplicate
    later(store, 3)
    report = archive(store, ArchiveRequest(to=tmp_path / "a", retention=Retention()))
    assert (report.idempotency_keys_expired, report.delivery_keys_expired) == (0, 0)
    assert store.idempotency.get("user:a", "k-1") is not None
    assert store.inbound_events.receive("paid", {"order": 1}, {}, key="d-1").duplicate
    later(store, 8)
    report = archive(store, ArchiveRequest(to=tmp_path / "a", retention=Retention()))
    assert (report.idempotency_keys_expired, report.delivery_keys_expired) == (1, 1)
    assert store.idempotency.get("user:a", "k-1") is None
    assert not store.inbound_events.receive("paid", {"order": 1}, {}, key="d-1").duplicate
    with pytest.raises(UsageError, match="shorter than the 1d clients are promised"):
        Retention(idempotency_keys=12 * 3600)
    with pytest.raises(UsageError, match="--keep-delivery-keys 1h"):
        Retention(delivery_keys=3600)


def test_an_inbound_event_of_an_archived_run_leaves_the_live_store_once_its_key_expires(
    store: Store, tmp_path: Path
) -> None:
    import sqlalchemy as sa

    from openseal.runtime.store.tables import schema

    deploy(store)
    archived, live = new_run(store), new_run(store)
    events = {}
    for name, run in (("archived", archived), ("live", live), ("waiting", None)):
        event = store.inbound_events.receive(name, {}, {}, key=f"d-{name}").event
        events[name] = event.id
        if run is not None:  # consumed by the run, as a delivery to its wait leaves it
            with store.write() as conn:
                conn.execute(
                    sa.update(schema.inbound_events)
                    .where(schema.inbound_events.c.id == event.id)
                    .values(consumed_by_run_id=run.id, consumed_at=store.now())
                )
    service.cancel_run(store, service.RunCommand(archived.id, reason="ended"), service.CLI)
    to = tmp_path / "archive"
    report = archive(store, ArchiveRequest(to=to, retention=NOW_ONLY))
    assert (report.runs, report.inbound_events_removed) == (1, 0)
    kept = store.inbound_events.get(events["archived"])
    assert kept is not None and kept.consumed_by_run_id is None  # its key still refuses
    assert store.inbound_events.receive("archived", {}, {}, key="d-archived").duplicate
    [batch] = fmt.batches(to)
    assert [row["id"] for row in fmt.read_batch(batch)["inbound_events"]] == [events["archived"]]

    later(store, 8)  # the delivery keys' 7 days are over
    report = archive(store, ArchiveRequest(to=to, retention=Retention()))
    assert (report.delivery_keys_expired, report.inbound_events_removed) == (3, 1)
    assert store.inbound_events.get(events["archived"]) is None  # its batch holds it
    assert store.inbound_events.get(events["live"]) is not None  # its run is live
    assert store.inbound_events.get(events["waiting"]) is not None  # not consumed yet
    found = find_archived_run(to, archived.id)
    assert [row["id"] for row in found["inbound_events"]] == [events["archived"]]


def test_a_batch_written_but_not_deleted_is_finished_by_the_next_archive(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    done = ordered(f)
    later(store, 40)
    to = tmp_path / "archive"
    # What a process killed between writing a batch and deleting its rows leaves: the batch
    # whole on disk, the rows still live, and a half-written batch beside it.
    with store.read() as conn:
        rows = store.archive.rows(conn, [done.id])
    batch = fmt.write_batch(to, "batch-20261207T000000Z-00000000", [done.id], rows, utcnow())
    (to / ".partial-batch-20261207T000001Z-00000001").mkdir()
    assert store.runs.get(done.id).status == RunStatus.COMPLETED  # live and archived
    report = archive(store, ArchiveRequest(to=to, retention=NOW_ONLY))
    assert report.resumed == [batch.name] and report.runs == 0
    assert not (to / ".partial-batch-20261207T000001Z-00000001").exists()
    with pytest.raises(NotFound):
        store.runs.get(done.id)
    assert fmt.load_manifest(to, batch.name).committed
    assert [b.name for b in fmt.batches(to)] == [batch.name]  # archived once
    # a run changed since its batch was read keeps the whole batch live
    restore_archive(store, to)
    with store.read() as conn:
        again = store.archive.rows(conn, [done.id])
    again["runs"][0]["revision"] -= 1
    stale = fmt.write_batch(to, "batch-20261207T000002Z-00000002", [done.id], again, utcnow())
    archive(store, ArchiveRequest(to=to, retention=Retention(keep_ended_runs=400 * DAY)))
    assert store.runs.get(done.id).status == RunStatus.COMPLETED
    committed = json.loads((to / stale.name / fmt.COMMITTED).read_text())
    assert committed == {"deleted": {}, "kept": [done.id]}


def test_a_batch_that_does_not_match_its_manifest_is_refused(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    done = ordered(f)
    later(store, 40)
    to = tmp_path / "archive"
    [name] = archive(store, ArchiveRequest(to=to, retention=NOW_ONLY)).batches
    events = to / name / "events.jsonl.gz"
    data = bytearray(events.read_bytes())
    data[-1] ^= 0xFF
    events.write_bytes(bytes(data))
    with pytest.raises(OpenSealError, match="sha256") as refused:
        restore_archive(store, to, done.id)
    assert refused.value.code == "archive_corrupt"
    with pytest.raises(NotFound):
        store.runs.get(done.id)


def test_the_commands_archive_show_and_restore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    home, to = tmp_path / "home", str(tmp_path / "archive")
    store = open_store(home=home)
    try:
        run = new_run(store)
        service.cancel_run(store, service.RunCommand(run.id, reason="test"), service.CLI)
    finally:
        store.close()
    at = ["--home", str(home)]
    assert main(["db", "archive", *at, "--to", to, "--dry-run"]) == 0
    assert "would archive 0 run(s)" in capsys.readouterr().out  # kept 30d by default
    assert main(["db", "archive", *at, "--to", to, "--keep-idempotency-keys", "2h"]) == 2
    assert "shorter than the 1d" in capsys.readouterr().err
    assert main(["db", "archive", *at, "--to", to, "--keep-ended-runs", "0s", "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runs"] == 1 and report["rows"]["events"] >= 2
    assert main(["runs", "show", run.id, *at]) == 1  # not live any more
    assert "not found" in capsys.readouterr().err.lower()
    assert main(["runs", "show", run.id, "--archive", to]) == 0
    shown = capsys.readouterr().out
    assert f"run {run.id}  canceled" in shown and "run.canceled" in shown
    assert main(["runs", "show", run.id, "--archive", to, "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["run"]["id"] == run.id
    assert main(["runs", "show", "0" * 32, "--archive", to]) == 1
    assert "no run 00000000" in capsys.readouterr().err
    assert main(["db", "restore-archive", *at, to, "--run", run.id]) == 0
    assert "restored 1 run(s)" in capsys.readouterr().out
    assert main(["db", "restore-archive", *at, to, "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows_inserted"] == 0
    store = open_store(home=home)
    try:
        assert store.runs.get(run.id).status == RunStatus.CANCELED
    finally:
        store.close()


def test_a_workflow_and_a_scope_keep_their_ended_runs_the_longer_of_their_periods(
    store: Store, tmp_path: Path
) -> None:
    document = {**DOCUMENT, "spec": {"retention": {"keep_ended_runs": 10 * DAY}}}
    deploy(store, document)
    run = new_run(store)
    service.cancel_run(store, service.RunCommand(run.id, reason="ended"), service.CLI)
    to = tmp_path / "archive"
    later(store, 5)
    assert archive(store, ArchiveRequest(to=to, retention=NOW_ONLY)).runs == 0
    later(store, 11)
    by_scope = Retention(keep_ended_runs=0.0, scopes={run.scope: 20 * DAY})
    assert archive(store, ArchiveRequest(to=to, retention=by_scope)).runs == 0
    assert archive(store, ArchiveRequest(to=to, retention=NOW_ONLY)).runs == 1


def test_one_archive_writes_into_a_directory_at_a_time(store: Store, tmp_path: Path) -> None:
    to = tmp_path / "archive"
    busy_message = "another process is archiving"
    with fmt.writing(to), pytest.raises(OpenSealError, match=busy_message) as busy:
        archive(store, ArchiveRequest(to=to))
    assert busy.value.code == "archive_busy"
    assert archive(store, ArchiveRequest(to=to)).runs == 0


def test_a_destination_s_declared_idempotency_window_keeps_its_runs_longer(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    folder = definitions(tmp_path)
    skills = folder / "skills.hcl"
    skills.write_text(
        skills.read_text().replace(
            "same_key_retry = true", 'same_key_retry = true\n    window         = "40d"', 1
        )
    )
    register(store, compile_files(*sorted(folder.glob("*.hcl"))))
    f = Flow(store, simulator, tmp_path, [PICK])
    done = ordered(f)
    to = tmp_path / "archive"
    later(store, 35)  # past the 7d default window and the team's 30d spend period
    report = archive(store, ArchiveRequest(to=to, retention=NOW_ONLY))
    assert report.kept == {"an action settled within the action window": 1}
    later(store, 41)
    assert archive(store, ArchiveRequest(to=to, retention=NOW_ONLY)).runs == 1
    with pytest.raises(NotFound):
        store.runs.get(done.id)


def test_a_run_tree_moves_whole_however_its_runs_fall_into_statements(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlalchemy as sa

    from openseal.runtime.store.repos import archive as archive_repo
    from openseal.runtime.store.tables.schema import runs as runs_table

    root, child, grandchild = (new_run(store) for _ in range(3))
    with store.engine.begin() as conn:  # a tree: root → child → grandchild
        for run, parent in ((child, root), (grandchild, child)):
            conn.execute(
                sa.update(runs_table)
                .where(runs_table.c.id == run.id)
                .values(parent_run_id=parent.id)
            )
    for run in (grandchild, child, root):
        service.cancel_run(store, service.RunCommand(run.id, reason="ended"), service.CLI)
    monkeypatch.setattr(archive_repo, "CHUNK", 1)  # one run per statement
    to = tmp_path / "archive"
    report = archive(store, ArchiveRequest(to=to, retention=NOW_ONLY))
    assert report.runs == 3 and len(report.batches) == 1
    for run in (root, child, grandchild):
        with pytest.raises(NotFound):
            store.runs.get(run.id)
    assert sorted(restore_archive(store, to, grandchild.id).runs) == sorted(
        [root.id, child.id, grandchild.id]
    )
    assert store.runs.get(grandchild.id).parent_run_id == child.id


def test_a_child_that_ended_after_its_root_keeps_the_tree_for_its_own_retention(
    store: Store, tmp_path: Path
) -> None:
    import sqlalchemy as sa

    from openseal.runtime.store.tables.schema import runs as runs_table

    root, child = new_run(store), new_run(store)
    with store.engine.begin() as conn:
        conn.execute(
            sa.update(runs_table).where(runs_table.c.id == child.id).values(parent_run_id=root.id)
        )
    service.cancel_run(store, service.RunCommand(root.id, reason="ended"), service.CLI)
    later(store, 20)  # the child (one that detached) ends 20 days after its root
    service.cancel_run(store, service.RunCommand(child.id, reason="ended"), service.CLI)
    to = tmp_path / "archive"
    later(store, 35)  # the root ended 35 days ago, the child 15
    report = archive(store, ArchiveRequest(to=to, retention=Retention()))
    assert report.runs == 0
    assert report.kept == {"a run below it ended within its retention": 1}
    later(store, 51)
    assert archive(store, ArchiveRequest(to=to, retention=Retention())).runs == 2
