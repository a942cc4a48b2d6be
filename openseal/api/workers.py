"""In-process engine workers for ``openseal serve --workers N``.

They are the same engine as ``openseal worker`` (leases, fencing, replay), in threads of the
server process; stopping the server drains them: each finishes its turn and gives back its
lease.
"""

from __future__ import annotations

import threading

from openseal.api.settings import ApiSettings
from openseal.observability import metrics
from openseal.runtime.service.workers import Engine, default_worker_id
from openseal.runtime.store import Store


class InProcessWorkers:
    def __init__(self, store: Store, settings: ApiSettings) -> None:
        self.count = settings.workers
        self.engine = Engine(
            store,
            settings.provider_factory(),
            worker_id=f"{default_worker_id()}:serve",
            context=settings.context,
        )
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for index in range(self.count):
            thread = threading.Thread(
                target=self.engine.run_forever,
                kwargs={"poll_interval": 1.0},
                name=f"openseal-serve-worker-{index}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)

    def alive(self) -> bool:
        """Whether a worker thread runs and the engine looked for work or renewed a lease
        within a lease's length."""
        running = any(thread.is_alive() for thread in self._threads)
        return running and metrics.seen_within(self.engine.worker_id, self.engine.lease_seconds)

    def stop(self, timeout: float = 30.0) -> None:
        self.engine.stop()
        for thread in self._threads:
            thread.join(timeout)
