"""SQLite wake-ups between processes: a commit that makes work wakes workers of other
processes at once, not at their next poll."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import open_store
from openseal.runtime.store.db.wakeups import WakeSockets
from tests.runtime.engine.test_worker_process import finish, spawn
from tests.runtime.engine_support import PICK_7, register, small_workflow, write_script
from tests.runtime.support import Backend, eventually

HANG_GUARD = 60.0


def test_a_broadcast_wakes_the_other_sockets_of_the_directory(tmp_path: Path) -> None:
    woken = threading.Event()
    waiting = WakeSockets(tmp_path / "wake", lambda _ids: woken.set())
    sender = WakeSockets(tmp_path / "wake", lambda _ids: None)
    try:
        waiting.start()
        assert waiting.listening
        sender.broadcast()
        assert woken.wait(HANG_GUARD)
    finally:
        waiting.close()
        sender.close()
    assert list((tmp_path / "wake").iterdir()) == []  # its socket file is removed on close


def test_a_socket_left_by_a_dead_process_is_removed_by_the_next_sender(tmp_path: Path) -> None:
    directory = tmp_path / "wake"
    directory.mkdir()
    stale = directory / "4242-deadbeef.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as gone:
        gone.bind(str(stale))  # bound, then closed: the file stays, nobody receives
    sender = WakeSockets(directory, lambda _ids: None)
    try:
        sender.broadcast()
    finally:
        sender.close()
    assert not stale.exists()


def test_without_a_usable_socket_path_it_stays_silent_and_the_store_polls(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)  # longer than a Unix socket address holds
    sockets = WakeSockets(deep, lambda _ids: None)
    sockets.start()
    sockets.broadcast()
    sockets.close()
    assert not sockets.listening


def test_sending_to_no_one_is_harmless(tmp_path: Path) -> None:
    sockets = WakeSockets(tmp_path / "never-created", lambda _ids: None)
    sockets.broadcast()
    sockets.close()


def test_a_store_in_this_process_wakes_a_store_waiting_on_the_same_file(tmp_path: Path) -> None:
    waiter, writer = open_store(home=tmp_path), open_store(home=tmp_path)
    try:
        register(writer, small_workflow(tmp_path))
        mark = waiter.work_mark()
        done = threading.Event()
        woke: list[bool] = []

        def wait() -> None:
            woke.append(waiter.wait_for_work(HANG_GUARD, since=mark).woken)
            done.set()

        thread = threading.Thread(target=wait)
        thread.start()
        eventually(lambda: any((tmp_path / "wake").glob("*.sock")), timeout=HANG_GUARD)
        service.create_objective(writer, service.StartObjective("small", {"n": 5}), service.CLI)
        assert done.wait(HANG_GUARD) and woke == [True]
        thread.join()
    finally:
        waiter.close()
        writer.close()


@pytest.mark.slow
def test_a_worker_process_polling_once_a_minute_starts_new_work_at_once(tmp_path: Path) -> None:
    backend = Backend("sqlite", None, tmp_path / "home", None)
    store = backend.open()
    register(store, small_workflow(tmp_path))
    write_script(tmp_path / "responses.yaml", PICK_7)
    worker = spawn(backend, tmp_path, "--poll-interval", "600")
    try:
        # the worker is idle and waiting: its socket is there
        eventually(lambda: any((backend.home / "wake").glob("*.sock")), timeout=HANG_GUARD)
        run = service.create_objective(
            store, service.StartObjective("small", {"n": 5}), service.CLI
        ).run
        # a poll would come only after 600 s: only the datagram can have woken it
        eventually(
            lambda: store.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT,
            timeout=HANG_GUARD,
        )
    finally:
        worker.terminate()
        assert finish(worker) == 0
        backend.close_all()
