"""/healthz, /readyz and /metrics over real HTTP, after a known run, on both backends."""

from __future__ import annotations

from pathlib import Path

import httpx
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from openseal.api import ApiSettings
from openseal.api.auth import parse_tokens
from openseal.runtime import service
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store, open_store
from tests.api.conftest import ALICE_TOKEN, Serve, sha
from tests.api.support import assert_error, serving
from tests.runtime.engine_support import PICK_7, engine, scripted

TESTER = service.Caller("user:test", local=True)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str, token: str | None = None) -> Samples:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.get(f"{url}/metrics", headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_health_and_readiness(serve: Serve) -> None:
    server = serve()
    assert httpx.get(f"{server.url}/healthz").json() == {"status": "ok"}
    ready = httpx.get(f"{server.url}/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json() == {
        "status": "ready",
        "checks": {"database": "ok", "migrations": "ok"},
    }


def test_readiness_counts_the_servers_own_workers(serve: Serve) -> None:
    server = serve(workers=1)
    ready = httpx.get(f"{server.url}/readyz", timeout=30)
    # the worker thread looks for work as soon as it starts; wait for its first look
    for _ in range(200):
        if ready.status_code == 200:
            break
        ready = httpx.get(f"{server.url}/readyz", timeout=30)
    assert ready.status_code == 200, ready.text
    assert ready.json()["checks"]["workers"] == "ok"


def test_readiness_names_what_is_not_ready(tmp_path: Path) -> None:
    store = open_store(home=tmp_path / "home")
    try:
        with serving(ApiSettings(home=tmp_path), store) as server:
            # the schema is behind this openseal: readiness says so
            with store.write() as conn:
                conn.execute(sa.text("UPDATE alembic_version SET version_num = '0001'"))
            error = assert_error(httpx.get(f"{server.url}/readyz"), 503, "unavailable")
            assert error["details"]["checks"]["database"] == "ok"
            assert error["details"]["checks"]["migrations"].startswith("at 0001, need ")
            # the database file is no longer a database
            store.engine.dispose()
            (tmp_path / "home" / "openseal.db").write_bytes(b"not a database " * 500)
            for suffix in ("-wal", "-shm"):
                (tmp_path / "home" / f"openseal.db{suffix}").unlink(missing_ok=True)
            error = assert_error(httpx.get(f"{server.url}/readyz"), 503, "unavailable")
            assert error["details"]["checks"]["database"].startswith("unreachable")
            assert httpx.get(f"{server.url}/healthz").status_code == 200
    finally:
        store.close()


def test_metrics_after_a_known_run(serve: Serve, store: Store, tmp_path: Path) -> None:
    server = serve(external_workers=True)
    local = server.operator.secret if server.operator else None
    before = scrape(server.url, local)
    provider, _calls = scripted(tmp_path, PICK_7)
    worker = engine(store, provider)
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    reports = worker.run_until_idle()
    store.inbound_events.deliver("ok", {"n": 5}, {"by": "tester"})
    reports += worker.run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.COMPLETED
    turns = [turn for report in reports for turn in report.turns]
    # a second run that no worker has claimed yet, and a third paused then repaired
    service.create_objective(store, service.StartObjective("small", {"n": 6}), service.CLI)
    repaired = service.create_objective(
        store, service.StartObjective("small", {"n": 7}), service.CLI
    ).run
    service.pause_run(store, service.RunCommand(repaired.id, reason="look"), TESTER)
    service.intervene(store, service.Intervention(repaired.id, reason="retry it"), TESTER)

    after = scrape(server.url, local)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    # from the store, at scrape time
    assert value(after, "openseal_runs", status="completed") == 1
    assert value(after, "openseal_runs", status="queued") >= 1
    assert value(after, "openseal_ready_runs") >= 1
    assert value(after, "openseal_ready_oldest_age_seconds") >= 0
    assert value(after, "openseal_pending_approvals") == 0
    assert value(after, "openseal_unknown_actions") == 0
    assert value(after, "openseal_interventions_total") == 1
    assert value(after, "openseal_stale_epoch_rejections_total") == 0
    # recorded in this process while the engine worked
    assert delta("openseal_claims_total") == len(reports)
    outcomes = {turn.outcome for turn in turns}
    assert sum(delta("openseal_turns_total", outcome=o) for o in outcomes) == len(turns)
    assert delta("openseal_turn_duration_seconds_count") == len(turns)
    assert delta("openseal_model_calls_total", model="test-model", outcome="ok") == 1
    assert delta("openseal_model_tokens_total", model="test-model", kind="input") == 10
    assert delta("openseal_model_tokens_total", model="test-model", kind="output") == 2
    assert delta("openseal_model_call_duration_seconds_count", model="test-model") == 1

    # a token for another scope sees none of these runs, and none of this process's counters
    # (they add up every scope's work); a token for every scope sees what the operator saw
    ops = service.tokens.create_token(
        store, service.NewToken("user:olga", ("viewer",), ("ops",)), TESTER
    )
    root = service.tokens.create_token(
        store, service.NewToken("user:root", ("viewer",), ("*",)), TESTER
    )
    scoped = scrape(server.url, ops.secret)
    assert not any(value > 0 for (name, _), value in scoped.items() if name != "openseal_up"), (
        scoped
    )
    assert ("openseal_ready_runs", frozenset()) in scoped  # the store's gauges, at zero
    assert not any(name.startswith("openseal_claims") for name, _ in scoped)
    everywhere = scrape(server.url, root.secret)
    assert value(everywhere, "openseal_runs", status="completed") == 1
    assert value(everywhere, "openseal_interventions_total") == 1
    assert value(everywhere, "openseal_claims_total") == value(after, "openseal_claims_total")


def test_metrics_need_the_api_token_when_tokens_are_configured(serve: Serve) -> None:
    server = serve(tokens=parse_tokens({f"sha256:{sha(ALICE_TOKEN)}": "user:alice"}))
    response = httpx.get(f"{server.url}/metrics", timeout=30)
    assert_error(response, 401, "unauthorized")
    assert value(scrape(server.url, ALICE_TOKEN), "openseal_ready_runs") == 0
    # health and readiness stay open to probes
    assert httpx.get(f"{server.url}/healthz").status_code == 200
    assert httpx.get(f"{server.url}/readyz").status_code == 200
