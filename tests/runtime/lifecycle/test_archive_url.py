"""Archives at a URL (fsspec's in-memory filesystem standing for an object store), on SQLite
and PostgreSQL: archive, show and restore through the URL; a writer failing between a batch's
files leaves no batch a reader sees and the next archive finishes the work; a corrupted object
is caught by its checksum; the lease that keeps a second archive out; bad URLs in one line."""

from __future__ import annotations

import importlib
import json
import secrets
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import fsspec
import pytest

from openseal.cli.main import main
from openseal.errors import OpenSealError
from openseal.runtime.lifecycle import archive as archive_module
from openseal.runtime.lifecycle import archive_format as fmt
from openseal.runtime.lifecycle import archive_location
from openseal.runtime.lifecycle.archive import ArchiveRequest, archive
from openseal.runtime.lifecycle.archive_location import (
    ArchiveUrlInvalid,
    UrlLocation,
    locate_archive,
)
from openseal.runtime.lifecycle.restore import find_archived_run, restore_archive
from openseal.runtime.lifecycle.retention import Retention
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import NotFound, Store, open_store
from tests.runtime.lifecycle.archive_support import ended_runs, later, live

NOW_ONLY = Retention(keep_ended_runs=0.0)
MEMORY = fsspec.filesystem("memory")


@pytest.fixture
def url() -> Iterator[str]:
    """An archive URL of its own in fsspec's in-memory filesystem, emptied afterwards."""
    bucket = f"openseal-test-{secrets.token_hex(4)}"
    yield f"memory://{bucket}/archive"
    if MEMORY.exists(f"/{bucket}"):
        MEMORY.rm(f"/{bucket}", recursive=True)


def objects(url: str) -> list[str]:
    """Every object under ``url``, relative to it."""
    root = url.removeprefix("memory://")
    return sorted(p.removeprefix(f"/{root}/") for p in MEMORY.find(f"/{root}"))


def test_runs_go_to_a_url_and_come_back_from_it(store: Store, url: str) -> None:
    runs = ended_runs(store, 3)
    report = archive(store, ArchiveRequest(to=url, retention=NOW_ONLY, batch_size=2))
    assert report.runs == 3 and len(report.batches) == 2
    assert live(store, runs) == set()
    first = report.batches[0]
    assert f"{first}/manifest.json" in objects(url) and f"{first}/committed.json" in objects(url)
    assert ".lock" not in objects(url)  # released
    manifest = json.loads(MEMORY.cat_file(f"{url.removeprefix('memory://')}/{first}/manifest.json"))
    assert manifest["format"] == "openseal-archive" and len(manifest["runs"]) == 2

    assert find_archived_run(url, runs[2])["run"]["status"] == "canceled"
    assert find_archived_run(f"{url}/{first}", runs[0])["batch"] == first  # one batch's URL
    restored = restore_archive(store, url, runs[0])
    assert restored.runs == [runs[0]] and restored.rows_inserted > 0
    assert store.runs.get(runs[0]).status == RunStatus.CANCELED
    assert sorted(restore_archive(store, url).runs) == sorted(runs)
    assert live(store, runs) == set(runs)
    assert restore_archive(store, url).rows_inserted == 0  # restoring twice restores once


@pytest.mark.parametrize("where", ["url", "directory"])
def test_a_writer_failing_between_a_batch_s_files_leaves_no_batch_and_the_next_finishes(
    store: Store, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    runs = ended_runs(store, 4)
    to: str | Path = url if where == "url" else tmp_path / "archive"
    writes = {"n": 0}

    def failing(real: Callable[..., Any]) -> Callable[..., Any]:
        def write(*args: Any, **kwargs: Any) -> Any:
            writes["n"] += 1
            if writes["n"] == 3:  # the third file of the first batch
                raise OSError(28, "No space left on device")
            return real(*args, **kwargs)

        return write

    if where == "url":
        monkeypatch.setattr(MEMORY, "pipe_file", failing(MEMORY.pipe_file))
    else:
        monkeypatch.setattr(archive_location, "_sync_write", failing(archive_location._sync_write))
    with pytest.raises((OpenSealError, OSError)):
        archive(store, ArchiveRequest(to=to, retention=NOW_ONLY, batch_size=4))
    monkeypatch.undo()
    assert live(store, runs) == set(runs)  # nothing left the live store
    assert list(fmt.batches(to)) == []  # a reader sees no batch: the written files are not one
    if where == "url":  # files of the batch are there, its manifest is not
        assert any(o.startswith("batch-") for o in objects(url))
        assert not any(o.endswith("/manifest.json") for o in objects(url))

    report = archive(store, ArchiveRequest(to=to, retention=NOW_ONLY, batch_size=4))
    assert report.runs == 4 and live(store, runs) == set()
    every = list(fmt.batches(to))
    assert [b.name for b in every] == report.batches and all(b.committed for b in every)
    assert sorted(run for b in every for run in b.runs) == sorted(runs)  # each once
    if where == "url":  # the half-written batch is skipped, and removed an hour later
        left = {o.split("/")[0] for o in objects(url)} - set(report.batches)
        assert len(left) == 1
        later(store, 1 / 24 - 1 / 1440)  # 59 minutes: it may still be another's, being written
        archive(store, ArchiveRequest(to=to, retention=NOW_ONLY))
        assert {o.split("/")[0] for o in objects(url)} >= left
        later(store, 1 / 24 + 1 / 1440)
        archive(store, ArchiveRequest(to=to, retention=NOW_ONLY))
        assert {o.split("/")[0] for o in objects(url)} == set(report.batches)


def test_a_batch_written_to_a_url_but_not_deleted_is_finished_by_the_next_archive(
    store: Store, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = ended_runs(store, 2)

    def crash(point: str, batch: str) -> None:
        if point == "archive.written":
            raise OSError(5, "killed")

    monkeypatch.setattr(archive_module, "archive_hook_from_env", lambda: crash)
    with pytest.raises(OSError, match="killed"):
        archive(store, ArchiveRequest(to=url, retention=NOW_ONLY))
    [written] = fmt.batches(url)
    assert not written.committed and live(store, runs) == set(runs)  # in both places
    monkeypatch.undo()
    report = archive(store, ArchiveRequest(to=url, retention=NOW_ONLY))
    assert report.resumed == [written.name] and report.runs == 0
    assert live(store, runs) == set()
    [finished] = fmt.batches(url)
    assert finished.committed and sorted(finished.runs) == sorted(runs)


def test_a_corrupted_object_is_caught_by_its_checksum(
    store: Store, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    [run] = ended_runs(store, 1)
    [name] = archive(store, ArchiveRequest(to=url, retention=NOW_ONLY)).batches
    events = f"{url.removeprefix('memory://')}/{name}/events.jsonl.gz"
    data = bytearray(MEMORY.cat_file(events))
    data[-1] ^= 0xFF
    MEMORY.pipe_file(events, bytes(data))
    with pytest.raises(OpenSealError, match="sha256") as refused:
        restore_archive(store, url, run)
    assert refused.value.code == "archive_corrupt" and f"{url}/{name}/events" in str(refused.value)
    with pytest.raises(NotFound):
        store.runs.get(run)
    assert main(["runs", "show", run, "--archive", url]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "its sha256 is not the one manifest.json records" in err


def test_the_commands_take_a_url(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    home = tmp_path / "home"
    store = open_store(home=home)
    try:
        [run] = ended_runs(store, 1)
    finally:
        store.close()
    at = ["--home", str(home)]
    assert main(["db", "archive", *at, "--to", url, "--keep-ended-runs", "0s"]) == 0
    assert "archived 1 run(s) in 1 batch(es)" in capsys.readouterr().out
    assert main(["runs", "show", run, "--archive", url]) == 0
    assert f"run {run}  canceled" in capsys.readouterr().out
    assert main(["db", "restore-archive", *at, url, "--run", run]) == 0
    assert "restored 1 run(s)" in capsys.readouterr().out
    # a file:// URL is a directory: the same crash-safe form as a path
    to = tmp_path / "by-url"
    assert main(["db", "archive", *at, "--to", f"file://{to}", "--keep-ended-runs", "0s"]) == 0
    capsys.readouterr()
    assert [p.name for p in to.iterdir() if p.name.startswith("batch-")]
    assert main(["runs", "show", run, "--archive", str(to)]) == 0


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("nosuch://bucket/archive", "nosuch:// is not an archive location (no filesystem"),
        ("memory://", "name a bucket (and a prefix)"),
        ("fakestore://bucket/archive", "needs a package that is not installed"),
        ("s3://bucket/archive", "pip install 'openseal[s3]'"),
    ],
)
def test_a_url_openseal_cannot_use_is_one_line_with_its_code(
    target: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    registry = importlib.import_module("fsspec.registry")  # the module (fsspec.registry is a map)
    missing = {"class": "openseal_no_such_module.FileSystem", "err": "Install it to use it"}
    monkeypatch.setitem(registry.known_implementations, "fakestore", missing)
    monkeypatch.setitem(registry.known_implementations, "s3", {**missing, "err": "Install s3fs"})
    monkeypatch.delitem(registry._registry, "s3", raising=False)
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    with pytest.raises(ArchiveUrlInvalid) as refused:
        locate_archive(target)
    assert refused.value.code == "archive_url_invalid" and said in str(refused.value)
    home = ["--home", str(tmp_path / "home")]
    for command in (
        ["db", "archive", *home, "--to", target],
        ["db", "restore-archive", *home, target],
        ["runs", "show", "0" * 32, "--archive", target],
        ["worker", *home, "--until-idle", "--archive-every", "1h", "--archive-to", target],
    ):
        assert main([*command, "--output", "json"]) == 2, command
        captured = capsys.readouterr()
        assert json.loads(captured.out)["error"]["code"] == "archive_url_invalid"
        assert captured.err.count("\n") == 1 and said in captured.err, captured.err


def test_an_object_store_that_fails_is_one_line_with_its_code(
    url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("An error occurred (AccessDenied)\nwhen calling ListObjectsV2")

    monkeypatch.setattr(MEMORY, "find", refuse)
    assert main(["runs", "show", "0" * 32, "--archive", url, "--output", "json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["error"]["code"] == "archive_unavailable"
    assert captured.err == (
        f"error: {url}: cannot list it: An error occurred (AccessDenied) when calling "
        "ListObjectsV2\n"
    )


def test_a_second_archive_into_a_url_waits_for_the_first_s_lease(url: str) -> None:
    location = locate_archive(url)
    assert isinstance(location, UrlLocation)
    lock = f"{url.removeprefix('memory://')}/.lock"
    with fmt.writing(url):
        held = json.loads(MEMORY.cat_file(lock))
        with pytest.raises(OpenSealError, match="is archiving into") as busy, fmt.writing(url):
            pass
        assert busy.value.code == "archive_busy" and held["holder"] in str(busy.value)
    assert not MEMORY.exists(lock)
    # a lease a killed process left: refused until it expires, then taken
    soon = datetime.now(UTC) + timedelta(minutes=2)
    MEMORY.pipe_file(lock, json.dumps({"holder": "h:1:x", "expires_at": soon.isoformat()}).encode())
    with pytest.raises(OpenSealError, match="its lock expires at"), fmt.writing(url):
        pass
    gone = datetime.now(UTC) - timedelta(seconds=1)
    MEMORY.pipe_file(lock, json.dumps({"holder": "h:1:x", "expires_at": gone.isoformat()}).encode())
    with fmt.writing(url):
        assert json.loads(MEMORY.cat_file(lock))["holder"] != "h:1:x"
    assert not MEMORY.exists(lock)


def test_a_batch_that_fails_its_read_back_is_removed_and_its_rows_stay_live(
    store: Store, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = ended_runs(store, 2)
    real = MEMORY.cat_file

    def garbled(path: str, *args: Any, **kwargs: Any) -> Any:
        data = real(path, *args, **kwargs)
        return data[:-1] + bytes([data[-1] ^ 0xFF]) if path.endswith("runs.jsonl.gz") else data

    monkeypatch.setattr(MEMORY, "cat_file", garbled)
    with pytest.raises(OpenSealError, match="sha256") as refused:
        archive(store, ArchiveRequest(to=url, retention=NOW_ONLY))
    assert refused.value.code == "archive_corrupt"
    monkeypatch.undo()
    assert live(store, runs) == set(runs)
    assert not any(o.startswith("batch-") for o in objects(url))  # not left to stop the next
    assert archive(store, ArchiveRequest(to=url, retention=NOW_ONLY)).runs == 2


def test_the_lease_is_renewed_while_the_archive_writes(url: str) -> None:
    location = locate_archive(url)
    assert isinstance(location, UrlLocation)
    lock = f"{url.removeprefix('memory://')}/.lock"
    with location.lock():
        first = json.loads(MEMORY.cat_file(lock))
        location.put("batch-x/runs.jsonl.gz", b"")  # within a third of the lease: kept
        assert json.loads(MEMORY.cat_file(lock)) == first
        location._renew_at = 0.0  # a third of the lease has passed
        location.put("batch-x/events.jsonl.gz", b"")
        renewed = json.loads(MEMORY.cat_file(lock))
        assert renewed["holder"] == first["holder"]
        assert renewed["expires_at"] > first["expires_at"]
