"""The scheduled archive: ``openseal worker --archive-every PERIOD`` archives in a thread of
its own while the worker's threads go on with their runs (a batch's delete is one short
transaction on ended runs, which no worker claims).

A pass while the store is in recovery mode is skipped, with one line saying so and the
``openseal_archive_passes_total{outcome="skipped_recovery"}`` counter: the archive begins again
at the first pass after recovery is finished."""

from __future__ import annotations

import threading
from collections.abc import Callable

from openseal.errors import OpenSealError
from openseal.observability import metrics
from openseal.runtime.lifecycle.archive import (
    ArchiveReport,
    ArchiveRequest,
    InRecovery,
    archive,
)
from openseal.runtime.store import Store, describe_fault, transient


def summary(report: ArchiveReport) -> str:
    kept = sum(report.kept.values())
    return (
        f"archive: {report.runs} run(s) in {len(report.batches)} batch(es), {kept} run "
        f"tree(s) kept live, {report.idempotency_keys_expired} idempotency and "
        f"{report.delivery_keys_expired} delivery key(s) forgotten"
    )


class ArchiveSchedule:
    """Archive at once (or first after ``every`` seconds), then every ``every`` seconds, until
    :meth:`stop`; one line per pass (or per failure, retried at the next pass) through ``log``.
    :meth:`last_pass` stops it and archives once more: what a worker that exits when idle
    does before it exits."""

    def __init__(
        self, store: Store, request: ArchiveRequest, every: float, log: Callable[[str], None]
    ) -> None:
        self.store, self.request, self.every, self.log = store, request, every, log
        self._stop = threading.Event()
        self._at_once = True
        self._thread = threading.Thread(target=self._loop, name="archive", daemon=True)
        self.passes = 0

    def start(self, *, at_once: bool = True) -> None:
        self._at_once = at_once
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the batch going on (if any)."""
        self._stop.set()
        self._thread.join(timeout)

    def last_pass(self, timeout: float = 30.0, stop: Callable[[], bool] = lambda: False) -> None:
        """:meth:`stop`, then one more pass in this thread (unless a pass of the schedule's
        is still going after ``timeout``); ``stop`` ends it after the batch going on."""
        self.stop(timeout)
        if not self._thread.is_alive():
            self._count(self._pass(stop, "not trying again: the worker exits"))

    def _loop(self) -> None:
        if not self._at_once and self._stop.wait(self.every):
            return
        while not self._stop.is_set():
            self._count(self._pass(self._stop.is_set, f"trying again in {self.every:g}s"))
            self._stop.wait(self.every)

    def _count(self, outcome: str) -> None:
        metrics.ARCHIVE_PASSES.labels(outcome=outcome).inc()
        self.passes += 1

    def _pass(self, stop: Callable[[], bool], again: str) -> str:
        """One pass; its outcome: ``archived``, ``skipped_recovery`` or ``failed``."""
        try:
            report = archive(self.store, self.request, stop=stop)
        except InRecovery:
            self.log(
                "archive: skipped: the store is in recovery mode after a restore; nothing is "
                f"archived until `openseal db recovery finish` ({again})"
            )
            return "skipped_recovery"
        except (OpenSealError, OSError) as exc:
            self.log(f"archive failed: {exc}; {again}")
            return "failed"
        except Exception as exc:
            if not transient(exc):
                raise
            self.log(f"archive: {describe_fault(exc)}; {again}")
            return "failed"
        self.log(summary(report))
        return "archived"
