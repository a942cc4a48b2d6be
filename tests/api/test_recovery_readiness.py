"""A server over a store in recovery mode: ``/readyz`` says so, and its workers claim nothing
until recovery is finished; both backends."""

from __future__ import annotations

import logging

import httpx
import pytest

from openseal.runtime import service
from openseal.runtime.lifecycle import recovery
from openseal.runtime.store import Store
from tests.api.conftest import Serve
from tests.api.support import assert_error
from tests.runtime.support import eventually

ACTOR = "user:test"


def test_a_server_in_recovery_mode_is_not_ready_and_its_workers_wait(
    serve: Serve, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    recovery.start(store, reason="operator", actor=ACTOR)
    caplog.set_level(logging.WARNING, logger="openseal.engine")
    server = serve(workers=1)

    eventually(lambda: "in recovery mode after a restore" in caplog.text, timeout=300)
    error = assert_error(httpx.get(f"{server.url}/readyz", timeout=30), 503, "unavailable")
    assert error["details"]["checks"]["recovery"].startswith("recovery mode after a restore")
    assert [event.type for event in store.runs.events(run.id)] == ["run.created"]

    recovery.reconcile(store, None, ACTOR)
    recovery.finish(store, ACTOR)
    claimed = lambda: "lease.claimed" in [e.type for e in store.runs.events(run.id)]  # noqa: E731
    eventually(claimed, timeout=300)
    ready = httpx.get(f"{server.url}/readyz", timeout=30)
    body = ready.json()
    checks = body["checks"] if "checks" in body else body["error"]["details"]["checks"]
    assert "recovery" not in checks
