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
    """Archive at once, then every ``every`` seconds, until :meth:`stop`; one line per pass
    (or per failure, retried at the next pass) through ``log``."""

    def __init__(
        self, store: Store, request: ArchiveRequest, every: float, log: Callable[[str], None]
    ) -> None:
        self.store, self.request, self.every, self.log = store, request, every, log
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="archive", daemon=True)
        self.passes = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the batch going on (if any)."""
        self._stop.set()
        self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            outcome = self._pass()
            metrics.ARCHIVE_PASSES.labels(outcome=outcome).inc()
            self.passes += 1
            self._stop.wait(self.every)

    def _pass(self) -> str:
        """One pass; its outcome: ``archived``, ``skipped_recovery`` or ``failed``."""
        again = f"trying again in {self.every:g}s"
        try:
            report = archive(self.store, self.request, stop=self._stop.is_set)
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
