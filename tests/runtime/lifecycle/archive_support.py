"""Helpers for the archive tests: ended runs to archive, which of them are live, and the
store's clock moved ahead."""

from __future__ import annotations

from datetime import timedelta

from openseal.runtime import service
from openseal.runtime.clock import utcnow
from openseal.runtime.store import Store
from tests.runtime.support import new_run


def ended_runs(store: Store, count: int) -> list[str]:
    """``count`` runs, canceled: ended, and archived by a retention of 0s."""
    runs = [new_run(store).id for _ in range(count)]
    for run_id in runs:
        service.cancel_run(store, service.RunCommand(run_id, reason="ended"), service.CLI)
    return runs


def live(store: Store, run_ids: list[str]) -> set[str]:
    """Those of ``run_ids`` still in the live store."""
    return {run.id for run in service.list_runs(store, limit=1000)} & set(run_ids)


def later(store: Store, days: float) -> None:
    """The store's clock ``days`` ahead: what archiving sees as now."""
    store.clock = lambda: utcnow() + timedelta(days=days)
