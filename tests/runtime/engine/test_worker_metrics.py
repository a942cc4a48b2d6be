"""``openseal worker --metrics-port``: a worker process exposes its own metrics."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from openseal.runtime import service
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.runtime.engine.test_worker_process import finish, small, spawn  # noqa: F401  (fixture)
from tests.runtime.support import Backend, eventually

pytestmark = pytest.mark.slow


def samples(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = httpx.get(url, timeout=30).text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_a_worker_process_serves_its_metrics(
    small: Store,  # noqa: F811
    backend: Backend,
    tmp_path: Path,
) -> None:
    run = service.create_objective(
        small, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    worker = spawn(
        backend, tmp_path, "--metrics-port", "0", "--poll-interval", "0.05",
        "--worker-id", "metered",
    )  # fmt: skip
    try:
        log = tmp_path / "w.log"
        found: list[str] = []

        def announced() -> bool:
            found[:] = re.findall(r"metrics on (http://\S+/metrics)", log.read_text())
            return bool(found)

        eventually(announced, timeout=60)
        eventually(lambda: small.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT, timeout=60)
        now = samples(found[0])
        assert now[("openseal_claims_total", frozenset())] == 1
        called = frozenset({("model", "test-model"), ("outcome", "ok")})
        assert now[("openseal_model_calls_total", called)] == 1
        assert now[("openseal_runs", frozenset({("status", "waiting_for_event")}))] == 1
        seen = ("openseal_worker_last_seen_timestamp_seconds", frozenset({("worker", "metered")}))
        assert now[seen] > 0
    finally:
        worker.send_signal(signal.SIGTERM)
        assert finish(worker) == 0
