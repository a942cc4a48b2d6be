"""Inbound events received by a real ``openseal serve`` process killed (SIGKILL) at the event's
crash points: before the commit that stores the event with its triggers' firings, and after
it, before the answer. A committed event has every firing without being delivered again; an
uncommitted one left nothing, and the sender's redelivery fires each trigger once. Both
backends."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from openseal.runtime.faults import DIR_ENV, POINT_ENV
from openseal.runtime.store import Store, TriggerFiring
from tests.runtime.engine.test_worker_process import LAUNCH, store_env
from tests.runtime.support import Backend, eventually
from tests.runtime.trigger_support import (
    EVENT_TRIGGER,
    deploy_triggers,
    objectives,
    trigger_project,
)

pytestmark = pytest.mark.slow

#: two triggers on one event name: ``restock`` (filter qty < 5) and ``audit`` (every event)
TRIGGERS = (
    EVENT_TRIGGER
    + """
trigger "audit" {
  workflow = workflow.small
  event { name = "stock.low" }
  input    = { n = 1 }
  overlap  = "allow"
}
"""
)
EVENT = {"name": "stock.low", "eventId": "evt-1", "payload": {"qty": 2}, "correlation": {}}
HANG_GUARD = 60.0


@contextmanager
def serving(
    backend: Backend, tmp: Path, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``openseal serve`` on a free loopback port over the backend's store, and its API URL with
    the local operator's secret (the event's sender here)."""
    command = [
        sys.executable, "-c", LAUNCH, "serve", "--home", str(backend.home), "--port", "0",
        "--output", "json", "--log-level", "warning", "--local-operator",
    ]  # fmt: skip
    with (tmp / "serve.log").open("ab") as log:
        process = subprocess.Popen(
            command, env={**store_env(backend), **(env or {})}, stdout=subprocess.PIPE, stderr=log
        )
    try:
        assert process.stdout is not None
        printed = b""
        while not printed.startswith(b"{") or not printed.rstrip().endswith(b"}"):
            line = process.stdout.readline()
            assert line, (tmp / "serve.log").read_text()  # the server stopped before its address
            printed += line
        address = json.loads(printed)
        secret = Path(address["local_operator_secret"]).read_text(encoding="utf-8").strip()
        yield process, f"{str(address['url']).rstrip('/')}#{secret}"
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=HANG_GUARD)


def send(url: str) -> httpx.Response:
    """``POST /events`` to ``url`` (``<api>#<secret>``, as :func:`serving` gives it)."""
    api, _, secret = url.partition("#")
    headers = {"Authorization": f"Bearer {secret}"}
    return httpx.post(f"{api}/events", json=EVENT, headers=headers, timeout=HANG_GUARD)


def firings(store: Store) -> list[TriggerFiring]:
    return [f for name in ("audit", "restock") for f in store.triggers.firings(name)]


def killed_at(backend: Backend, tmp: Path, point: str) -> str:
    """Send the event to a server that stops at ``point`` and SIGKILL it there; the stored (or
    not) event's id. The sender gets no answer."""
    outcome: list[BaseException | httpx.Response] = []

    def post(url: str) -> None:
        try:
            outcome.append(send(url))
        except BaseException as exc:  # reported below
            outcome.append(exc)

    reached = tmp / f"{point}.reached"
    with serving(backend, tmp, {POINT_ENV: point, DIR_ENV: str(tmp)}) as (doomed, url):
        sender = threading.Thread(target=post, args=(url,))
        sender.start()
        # the file is created, then written: wait for its content before the kill
        eventually(
            lambda: reached.exists() and reached.read_text(encoding="utf-8"), timeout=HANG_GUARD
        )
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=HANG_GUARD)
        sender.join(timeout=HANG_GUARD)
    assert len(outcome) == 1 and isinstance(outcome[0], httpx.TransportError), outcome
    return reached.read_text(encoding="utf-8")


def test_a_server_killed_before_the_commit_leaves_the_event_to_its_redelivery(
    backend: Backend, tmp_path: Path
) -> None:
    store = backend.open()
    deploy_triggers(store, trigger_project(tmp_path, TRIGGERS))
    event_id = killed_at(backend, tmp_path, "event.received")
    # nothing of the delivery committed: no event, no firing, no objective
    assert store.inbound_events.get(event_id) is None
    assert firings(store) == [] and objectives(store) == []
    with serving(backend, tmp_path) as (_, url):
        first = send(url)  # the sender delivers again
        assert first.status_code == 202, first.text
        assert not first.json()["duplicate"]
        assert sorted(f["trigger_name"] for f in first.json()["triggered"]) == ["audit", "restock"]
        again = send(url)
        assert again.json()["duplicate"] and again.json()["triggered"] == []
    assert sorted(f.outcome for f in firings(store)) == ["started", "started"]
    assert len(objectives(store)) == 2


def test_a_server_killed_after_the_commit_has_fired_each_trigger_once(
    backend: Backend, tmp_path: Path
) -> None:
    store = backend.open()
    deploy_triggers(store, trigger_project(tmp_path, TRIGGERS))
    event_id = killed_at(backend, tmp_path, "event.received.committed")
    # without any redelivery: the stored event has one firing of each trigger, each with its
    # objective
    assert store.inbound_events.get(event_id) is not None
    found = firings(store)
    assert sorted((f.trigger_name, f.outcome) for f in found) == [
        ("audit", "started"),
        ("restock", "started"),
    ]
    assert {f.inbound_event_id for f in found} == {event_id}
    assert sorted(o.id for o in objectives(store)) == sorted(str(f.objective_id) for f in found)
    with serving(backend, tmp_path) as (_, url):
        again = send(url)  # the sender, which got no answer, delivers again: nothing new
        assert again.status_code == 202, again.text
        assert again.json()["duplicate"] and again.json()["triggered"] == []
        assert again.json()["event"]["id"] == event_id
    assert len(firings(store)) == 2 and len(objectives(store)) == 2
