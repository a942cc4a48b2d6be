"""The listening session's thread: a listener closed while it is still connecting says
nothing more (a worker's log ends with its ``stopped`` line)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from openseal.runtime.store.db import listener

#: a bound that only catches a hang
GUARD = 60.0


class Connecting(listener.NotificationListener):
    """A listener whose connection attempt hangs until released, then fails (a server
    that stopped answering)."""

    def __init__(self) -> None:
        super().__init__(
            None,  # type: ignore[arg-type]  # never used: _connect is replaced
            lambda: listener.ListenSession(("openseal_runs_test",), "openseal_runs_test"),
            lambda payload: None,
        )
        self.entered = threading.Event()
        self.released = threading.Event()

    def _connect(self) -> Any:
        self.entered.set()
        self.released.wait(GUARD)
        raise OSError("connection timeout expired")


def test_a_listener_closed_while_connecting_logs_nothing_after(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(listener, "START_SECONDS", 0.0)
    monkeypatch.setattr(listener, "POLL_SECONDS", 0.01)
    connecting = Connecting()
    connecting.start()
    assert connecting.entered.wait(GUARD)
    connecting.close()  # gives up waiting for the thread, which is still connecting
    with caplog.at_level(logging.WARNING, logger=listener.log.name):
        connecting.released.set()
        thread = connecting._thread
        assert thread is not None
        thread.join(GUARD)
        assert not thread.is_alive()
    assert [r.getMessage() for r in caplog.records] == []
