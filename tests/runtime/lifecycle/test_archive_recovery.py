"""Nothing is archived while the store is in recovery mode, on SQLite and PostgreSQL: ``db
archive`` is refused (exit 1, ``recovery_mode``) with nothing moved and no key forgotten; the
scheduled archive skips its passes, says so and counts them; recovery begun in the middle of a
pass leaves its batch written and its rows live; all of it archives once recovery is finished."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.cli.main import main
from openseal.errors import OpenSealError
from openseal.observability import metrics
from openseal.runtime.lifecycle import archive as archive_module
from openseal.runtime.lifecycle import archive_format as fmt
from openseal.runtime.lifecycle import recovery
from openseal.runtime.lifecycle.archive import ArchiveRequest, archive
from openseal.runtime.lifecycle.retention import Retention
from openseal.runtime.lifecycle.schedule import ArchiveSchedule
from openseal.runtime.store import Store, open_store
from tests.runtime.lifecycle.archive_support import ended_runs, later, live
from tests.runtime.lifecycle.recovery_support import ACTOR, begin
from tests.runtime.support import eventually

NOW_ONLY = Retention(keep_ended_runs=0.0)


def finish(store: Store) -> None:
    recovery.reconcile(store, None, ACTOR)
    recovery.finish(store, ACTOR)


def refused(store: Store, request: ArchiveRequest) -> OpenSealError:
    with pytest.raises(OpenSealError) as refusal:
        archive(store, request)
    assert refusal.value.code == "recovery_mode"
    assert "`openseal db recovery finish`" in str(refusal.value)
    return refusal.value


def test_an_archive_in_recovery_mode_is_refused_and_moves_nothing(
    store: Store, tmp_path: Path
) -> None:
    runs = ended_runs(store, 2)
    store.idempotency.remember("k-1", "POST /objectives", "h" * 64, 201, {}, "user:a")
    begin(store)
    later(store, 10)  # past the idempotency keys' 7 days
    to = tmp_path / "archive"
    refused(store, ArchiveRequest(to=to, retention=NOW_ONLY))
    refused(store, ArchiveRequest(to=to, retention=NOW_ONLY, dry_run=True))
    assert live(store, runs) == set(runs) and not to.exists()
    assert store.idempotency.get("user:a", "k-1") is not None  # a key recovery may need

    finish(store)
    report = archive(store, ArchiveRequest(to=to, retention=NOW_ONLY))
    assert report.runs == 2 and report.idempotency_keys_expired == 1
    assert live(store, runs) == set()


def test_recovery_begun_during_a_pass_leaves_the_batch_written_and_its_rows_live(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = ended_runs(store, 2)
    to = tmp_path / "archive"

    def restore_now(point: str, batch: str) -> None:
        if point == "archive.written":  # a restore's marker, between write and delete
            begin(store)

    monkeypatch.setattr(archive_module, "archive_hook_from_env", lambda: restore_now)
    refused(store, ArchiveRequest(to=to, retention=NOW_ONLY))
    monkeypatch.undo()
    [written] = fmt.batches(to)
    assert not written.committed and live(store, runs) == set(runs)
    refused(store, ArchiveRequest(to=to, retention=NOW_ONLY))  # not finished either
    assert live(store, runs) == set(runs)

    finish(store)
    report = archive(store, ArchiveRequest(to=to, retention=NOW_ONLY))
    assert report.resumed == [written.name] and live(store, runs) == set()


def passes(outcome: str) -> float:
    found = metrics.REGISTRY.get_sample_value("openseal_archive_passes_total", {"outcome": outcome})
    return found or 0.0


def test_the_scheduled_archive_skips_its_passes_in_recovery_mode(
    store: Store, tmp_path: Path
) -> None:
    runs, lines = ended_runs(store, 2), list[str]()
    begin(store)
    skipped, archived = passes("skipped_recovery"), passes("archived")
    request = ArchiveRequest(to=tmp_path / "archive", retention=NOW_ONLY)
    schedule = ArchiveSchedule(store, request, 0.05, lines.append)
    schedule.start()
    try:
        eventually(lambda: schedule.passes >= 2, timeout=60)
        assert live(store, runs) == set(runs)
        assert passes("skipped_recovery") >= skipped + 2 and passes("archived") == archived
        assert lines[0] == (
            "archive: skipped: the store is in recovery mode after a restore; nothing is "
            "archived until `openseal db recovery finish` (trying again in 0.05s)"
        )
        finish(store)
        eventually(lambda: not live(store, runs), timeout=60)
        eventually(lambda: passes("archived") > archived, timeout=60)
    finally:
        schedule.stop()
    assert any(line.startswith("archive: 2 run(s) in 1 batch(es)") for line in lines)


def test_db_archive_in_recovery_mode_exits_1_naming_recovery(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    home = tmp_path / "home"
    store = open_store(home=home)
    try:
        [run] = ended_runs(store, 1)
        begin(store)
    finally:
        store.close()
    at = ["--home", str(home), "--to", str(tmp_path / "archive"), "--keep-ended-runs", "0s"]
    assert main(["db", "archive", *at]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: the store is in recovery mode after a restore: nothing is ")
    assert err.count("\n") == 1
    assert main(["db", "archive", *at, "--output", "json"]) == 1
    assert '"code": "recovery_mode"' in capsys.readouterr().out
    store = open_store(home=home)
    try:
        assert live(store, [run]) == {run}
    finally:
        store.close()
