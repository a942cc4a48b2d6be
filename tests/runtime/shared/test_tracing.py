"""OpenTelemetry spans per turn, model call, tool call and action, in the SDK's in-memory
exporter; W3C trace context on outgoing HTTP skill calls; nothing when not configured."""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from openseal.observability import tracing
from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import ScriptedProvider, fixed
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.simulator.procurement import ProcurementSimulator
from openseal.skills.credentials import RuntimeContext
from openseal.skills.http import send
from tests.runtime.action_support import (  # noqa: F401  (fixture)
    LOCAL,
    PICK,
    context_file,
    flow,
    simulator_fixture,
)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracing.configure(exporter=exporter)
    try:
        yield exporter
    finally:
        tracing.shutdown()


def named(finished: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in finished if s.name == name]


def test_spans_per_turn_model_call_tool_call_and_action(
    spans: InMemorySpanExporter, store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    search = {"name": "search_vendors", "arguments": {"item": "laptop", "quantity": 10}}
    script = {"research#1": [{"tool_calls": [search]}, {"output": PICK}]}
    context = RuntimeContext.load(context_file(tmp_path, simulator))
    engine = Engine(store, fixed(ScriptedProvider(script)), context=context, worker_id="traced")
    run = f.start()
    engine.run_until_idle()
    [approval] = service.list_approvals(store, run_id=run.id)
    service.decide_approval(
        store,
        LOCAL,
        service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
        service.CLI,
    )
    engine.run_until_idle()
    assert f.status(run) == RunStatus.COMPLETED

    finished = spans.get_finished_spans()
    turns = named(finished, "openseal.turn")
    assert turns and all(s.attributes["openseal.run_id"] == run.id for s in turns)
    assert sorted(s.attributes["openseal.turn_seq"] for s in turns) == list(
        range(1, len(turns) + 1)
    )
    by_id = {s.context.span_id: s for s in turns}

    model_calls = named(finished, "openseal.model_call")
    assert len(model_calls) == 2  # the tool call, then the output
    for call in model_calls:
        parent = by_id[call.parent.span_id]  # a child of its turn
        assert parent.attributes["openseal.state"] == "research"
        assert call.attributes["openseal.run_id"] == run.id

    [tool_call] = named(finished, "openseal.tool_call")
    assert tool_call.attributes["openseal.tool"] == "search_vendors"
    assert tool_call.attributes["openseal.outcome"] == "ok"
    assert tool_call.attributes["openseal.run_id"] == run.id
    assert by_id[tool_call.parent.span_id].attributes["openseal.state"] == "research"

    [action] = named(finished, "openseal.action")
    [stored] = service.list_actions(store, run_id=run.id)
    assert action.attributes["openseal.action_key"] == stored.key
    assert action.attributes["openseal.run_id"] == run.id
    assert action.attributes["openseal.skill"] == "submit_purchase_order"
    assert action.attributes["openseal.outcome"] == "succeeded"
    assert by_id[action.parent.span_id].attributes["openseal.state"] == "submit"


class Headers(http.server.BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        Headers.received.append({k.lower(): v for k, v in self.headers.items()})
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def echo_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Headers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Headers.received.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_http_skill_calls_carry_the_w3c_trace_context(
    spans: InMemorySpanExporter, echo_server: str
) -> None:
    with tracing.span("openseal.action", {"openseal.action_key": "k1"}) as current:
        send("GET", f"{echo_server}/x", timeout=10)
    [headers] = Headers.received
    trace_id = format(current.get_span_context().trace_id, "032x")
    span_id = format(current.get_span_context().span_id, "016x")
    version, traced, parent, flags = headers["traceparent"].split("-")
    assert (version, traced, parent) == ("00", trace_id, span_id)
    assert int(flags, 16) & 1  # sampled


def test_without_configuration_no_trace_header_and_no_opentelemetry_import(
    echo_server: str,
) -> None:
    assert not tracing.enabled()
    with tracing.span("openseal.action"):
        send("GET", f"{echo_server}/x", timeout=10)
    assert "traceparent" not in Headers.received[0]
    # a fresh process with a worker's start-up imports no OpenTelemetry module (the API is
    # left out: FastAPI itself imports the OpenTelemetry API when it is installed)
    probe = (
        "import sys; from openseal.cli.main import main; main(['worker', '--help']); "
        "from openseal.runtime import engine, telemetry; from openseal.skills import http; "
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"
