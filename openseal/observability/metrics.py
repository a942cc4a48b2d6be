"""Prometheus metrics recorded in this process, and the text exposition.

The counters and histograms here are recorded where the work happens (a worker's engine, a
model or tool call, an action's dispatch) and live as long as the process: a server with
``--workers`` and every ``openseal worker --metrics-port`` expose their own. What the store
knows (runs by status, the ready queue, open approvals, spend) is read at scrape time by a
collector the runtime adds (:func:`exposition`'s ``collectors``), so it is right whichever
process did the work.

Example::

    metrics.MODEL_CALLS.labels(model="gpt-4o-mini", outcome="ok").inc()
    body, content_type = metrics.exposition()
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
    start_http_server,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

#: the instruments of this process (not the library's global registry: embedding code and
#: tests create many servers in one process, each with its own store collector)
REGISTRY = CollectorRegistry(auto_describe=True)

#: seconds: quick turns and calls at the bottom, slow model calls and actions at the top
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

CLAIMS = Counter("openseal_claims", "Runs claimed by this process's workers.", registry=REGISTRY)
CLAIMS_LOST = Counter(
    "openseal_claims_lost",
    "Claims this process lost while working: stale_epoch (a write was fenced off) or "
    "lease_lost (a heartbeat found the claim gone).",
    ["reason"],
    registry=REGISTRY,
)
TURNS = Counter(
    "openseal_turns", "Turns executed by this process, by outcome.", ["outcome"],
    registry=REGISTRY,
)  # fmt: skip
TURN_SECONDS = Histogram(
    "openseal_turn_duration_seconds", "How long a turn took, from its start to its outcome.",
    buckets=LATENCY_BUCKETS, registry=REGISTRY,
)  # fmt: skip
TURN_FAULTS = Counter(
    "openseal_turn_faults",
    "Turns dropped by an ordinary fault (the database away) and retried later.",
    registry=REGISTRY,
)
MODEL_CALLS = Counter(
    "openseal_model_calls", "Model calls made by this process, by model and outcome.",
    ["model", "outcome"], registry=REGISTRY,
)  # fmt: skip
MODEL_TOKENS = Counter(
    "openseal_model_tokens", "Tokens the model endpoints reported, by model and kind.",
    ["model", "kind"], registry=REGISTRY,
)  # fmt: skip
MODEL_SECONDS = Histogram(
    "openseal_model_call_duration_seconds", "How long a model call took.", ["model"],
    buckets=LATENCY_BUCKETS, registry=REGISTRY,
)  # fmt: skip
MODEL_COST = Counter(
    "openseal_model_cost",
    "What model calls cost by the model profile's prices, by model, team, workflow and currency.",
    ["model", "team", "workflow", "currency"],
    registry=REGISTRY,
)
TOOL_CALLS = Counter(
    "openseal_tool_calls", "Tool calls made by this process's turns, by tool and outcome.",
    ["tool", "outcome"], registry=REGISTRY,
)  # fmt: skip
ACTIONS = Counter(
    "openseal_actions_dispatched", "Actions sent by this process, by skill and outcome.",
    ["skill", "outcome"], registry=REGISTRY,
)  # fmt: skip
ACTION_SECONDS = Histogram(
    "openseal_action_duration_seconds", "How long an action's skill call took.", ["skill"],
    buckets=LATENCY_BUCKETS, registry=REGISTRY,
)  # fmt: skip
DUPLICATE_GUARD = Counter(
    "openseal_duplicate_effect_guard_hits",
    "Times an action was not sent again because it may already have taken effect: "
    "found_dispatched (saved as sent with no outcome) or lookup_found (the destination has it).",
    ["guard"],
    registry=REGISTRY,
)
ARCHIVE_PASSES = Counter(
    "openseal_archive_passes",
    "Passes of the scheduled archive (--archive-every), by outcome: archived (it ran, whether "
    "or not runs were due), skipped_recovery (the store is in recovery mode) or failed.",
    ["outcome"],
    registry=REGISTRY,
)
HEARTBEATS = Counter(
    "openseal_worker_heartbeats", "Lease heartbeats sent by this process's workers.",
    ["worker"], registry=REGISTRY,
)  # fmt: skip
WORKER_SEEN = Gauge(
    "openseal_worker_last_seen_timestamp_seconds",
    "When each worker of this process last looked for work or renewed a lease (Unix time).",
    ["worker"],
    registry=REGISTRY,
)

HTTP_REQUESTS = Counter(
    "openseal_http_requests",
    "HTTP requests this server answered, by route template (`/api/v1/runs/{run_id}`; "
    "`unmatched` for a path no route serves), method and status.",
    ["route", "method", "status"],
    registry=REGISTRY,
)
HTTP_SECONDS = Histogram(
    "openseal_http_request_duration_seconds",
    "How long this server took to answer a request, by route template, method and status.",
    ["route", "method", "status"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
#: the process's CPU, memory, open files and start time (``process_*``), where the platform
#: tells them (Linux's /proc; elsewhere it reports nothing)
ProcessCollector(registry=REGISTRY)

_seen_lock = threading.Lock()
#: monotonic time each worker of this process was last seen (for readiness)
_seen: dict[str, float] = {}


def worker_seen(worker: str) -> None:
    """The worker ``worker`` is alive: looking for work, or renewing a lease."""
    with _seen_lock:
        _seen[worker] = time.monotonic()
    WORKER_SEEN.labels(worker=worker).set(time.time())


def seen_within(worker: str, seconds: float) -> bool:
    """Whether ``worker`` was seen in the last ``seconds``."""
    with _seen_lock:
        last = _seen.get(worker)
    return last is not None and time.monotonic() - last <= seconds


class _Combined:
    """One scrape: this process's instruments plus the collectors given (store gauges)."""

    def __init__(self, collectors: Iterable[Collector], *, process: bool = True) -> None:
        self.collectors = (REGISTRY, *collectors) if process else tuple(collectors)

    def collect(self) -> Iterable[Metric]:
        for collector in self.collectors:
            yield from collector.collect()


class MetricsServer:
    """``/metrics`` on its own port (``openseal worker --metrics-port``), on a daemon thread."""

    def __init__(self, port: int, host: str, collectors: Iterable[Collector] = ()) -> None:
        self.server, self.thread = start_http_server(port, host, registry=_Combined(collectors))

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def exposition(collectors: Iterable[Collector] = (), *, process: bool = True) -> tuple[bytes, str]:
    """The Prometheus text exposition of this process's metrics (unless ``process`` is False)
    and ``collectors``, and its content type."""
    return generate_latest(_Combined(collectors, process=process)), CONTENT_TYPE_LATEST
