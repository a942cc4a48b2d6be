"""A read skill a turn calls as a tool is called again as its ``retry { attempts, backoff }``
says (capped exponential pauses with jitter); only the last attempt is recorded. Both
backends, through the engine and the gateway."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from openseal.runtime import service
from openseal.runtime.providers import ScriptedProvider
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.runtime.engine.test_tool_calls import call, engine
from tests.runtime.engine_support import compile_files, register
from tests.runtime.gateway_support import DEFS, activities

#: the engine's logic, end to end: its PostgreSQL half runs with the slow set (the
#: store's own tests cover both backends in make test)
pytestmark = pytest.mark.slow_on_postgresql

QUOTE_ADAPTER = 'entry_point = "tests.runtime.gateway_skills:quote"\n  }\n'
#: calls of flaky_quote so far, and how many of the first ones fail
CALLS: list[str] = []
FAILURES = [0]
_lock = threading.Lock()


def flaky_quote(item: str, quantity: float) -> dict[str, object]:
    with _lock:
        CALLS.append(item)
        if len(CALLS) <= FAILURES[0]:
            raise RuntimeError(f"the price service is restarting (call {len(CALLS)})")
    return {"item": item, "unit_price": 1149.0}


@pytest.fixture(autouse=True)
def _fresh() -> None:
    CALLS.clear()


def _workflow(tmp: Path, retry: str) -> list[Any]:
    text = (DEFS / "tools.hcl.in").read_text(encoding="utf-8").replace("TOOL_CALLS", "5")
    assert QUOTE_ADAPTER in text
    flaky = f'entry_point = "{__name__}:flaky_quote"\n  }}\n  {retry}\n'
    folder = tmp / "retries"
    folder.mkdir(exist_ok=True)
    (folder / "tools.hcl").write_text(text.replace(QUOTE_ADAPTER, flaky), encoding="utf-8")
    return compile_files(folder / "tools.hcl")


def _run(store: Store, tmp: Path, retry: str, failures: int) -> tuple[str, dict[str, Any]]:
    FAILURES[0] = failures
    register(store, _workflow(tmp, retry))
    ask = [
        {"tool_calls": [call("quote", item="laptop", quantity=10)]},
        {"output": {"unit_price": 1149}},
    ]
    provider = ScriptedProvider({"ask": ask, "check": [{"output": {"ok": True}}]})
    run = service.create_objective(
        store, service.StartObjective("tools", {"item": "laptop"}), service.CLI
    ).run
    engine(store, provider).run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.COMPLETED
    return run.id, activities(store, run.id)["ask:1:tool:1:0"]


RETRY = 'retry {\n    attempts = 3\n    backoff  = "10ms"\n  }'


def test_a_failing_read_is_tried_again_and_the_success_recorded(
    store: Store, tmp_path: Path
) -> None:
    _, recorded = _run(store, tmp_path, RETRY, failures=2)
    assert recorded == {"result": {"item": "laptop", "unit_price": 1149.0}}
    assert CALLS == ["laptop"] * 3


def test_a_read_that_keeps_failing_stops_at_its_attempts(store: Store, tmp_path: Path) -> None:
    _, recorded = _run(store, tmp_path, RETRY, failures=10)
    assert recorded["error"]["code"] == "skill_failed"
    assert "(3 attempts)" in recorded["error"]["message"]
    assert "call 3" in recorded["error"]["message"]  # the last attempt's answer
    assert CALLS == ["laptop"] * 3


def test_a_read_without_retry_is_called_once(store: Store, tmp_path: Path) -> None:
    _, recorded = _run(store, tmp_path, "", failures=1)
    assert recorded["error"]["code"] == "skill_failed"
    assert CALLS == ["laptop"]
