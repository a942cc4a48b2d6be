"""The store's gauges as Prometheus metrics, read at every scrape of ``/metrics``.

The numbers come from ``store.health.snapshot()``; they are right whichever process did the
work. Readiness is ``store.health.readiness()``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from openseal.runtime.store import Store


class StoreCollector:
    """The store-derived gauges of ``/metrics``, read from ``store`` at every scrape."""

    def __init__(self, store: Store, scopes: Collection[str] | None = None) -> None:
        self.store = store
        #: the access scopes whose runs count (None: every scope)
        self.scopes = scopes

    def collect(self) -> Iterable[Metric]:
        now = self.store.health.snapshot(self.scopes)
        runs = GaugeMetricFamily("openseal_runs", "Runs by status.", labels=["status"])
        for status, count in sorted(now.runs_by_status.items()):
            runs.add_metric([status], count)
        yield runs
        yield _gauge("openseal_ready_runs", "Runs a worker may claim now.", now.ready.count)
        yield _gauge(
            "openseal_ready_oldest_age_seconds",
            "How long the longest-waiting claimable run has waited for a worker.",
            now.ready.oldest_seconds,
        )
        yield _gauge(
            "openseal_unknown_actions",
            "Actions whose outcome is unknown (being reconciled or waiting for an operator).",
            now.unknown_actions.count,
        )
        yield _gauge(
            "openseal_unknown_action_oldest_age_seconds",
            "How long the oldest unknown action has been unknown.",
            now.unknown_actions.oldest_seconds,
        )
        yield _gauge(
            "openseal_pending_approvals", "Approvals waiting for a person's decision.",
            now.pending_approvals.count,
        )  # fmt: skip
        yield _gauge(
            "openseal_pending_approval_oldest_age_seconds",
            "How long the oldest pending approval has waited for a person.",
            now.pending_approvals.oldest_seconds,
        )
        approvals = CounterMetricFamily(
            "openseal_approvals_closed", "Approvals no longer pending, by outcome.",
            labels=["outcome"],
        )  # fmt: skip
        for outcome, count in sorted(now.approvals_by_status.items()):
            approvals.add_metric([outcome], count)
        yield approvals
        yield CounterMetricFamily(
            "openseal_stale_epoch_rejections",
            "Worker writes fenced off because another claim or an operator took the run over.",
            value=now.stale_writes,
        )
        yield CounterMetricFamily(
            "openseal_interventions", "Operator interventions on runs.", value=now.interventions
        )
        spend = GaugeMetricFamily(
            "openseal_spend",
            "Spend reserved or committed against a budget scope (a team or agent, or run:<id>).",
            labels=["scope", "currency", "status"],
        )
        for (scope, currency, status), amount in sorted(now.spend.items()):
            spend.add_metric([scope, currency, status], amount)
        yield spend


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)
