"""A worker process: N threads stepping one shared :class:`Engine`, one log line per turn.

SIGTERM or SIGINT asks it to drain: each thread finishes its current turn, releases its lease
if the run is still runnable, and exits. Idle threads sleep on the store's wake-up
(PostgreSQL ``LISTEN``; SQLite polls).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from datetime import UTC, datetime
from types import FrameType
from typing import Literal, TextIO

from openseal.runtime.engine.engine import Engine
from openseal.runtime.engine.turns import TurnReport
from openseal.skills.credentials import RuntimeContext

Mode = Literal["forever", "once", "until_idle"]


class TurnLog:
    """Writes one line per turn, as text or JSON, to ``stream`` (thread-safe)."""

    def __init__(self, worker_id: str, fmt: str = "text", stream: TextIO | None = None) -> None:
        self.worker_id = worker_id
        self.fmt = fmt
        self.stream = stream or sys.stderr
        self._lock = threading.Lock()

    def __call__(self, turn: TurnReport) -> None:
        record = {
            "at": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "worker": self.worker_id,
            "run": turn.run_id,
            "state": turn.state,
            "turn": turn.turn_seq,
            "outcome": turn.outcome,
            "status": str(turn.status),
            "seconds": round(turn.seconds, 4),
            "detail": turn.detail,
        }
        if self.fmt == "json":
            line = json.dumps(record, sort_keys=True)
        else:
            line = (
                f"{record['at']} turn run={turn.run_id} state={turn.state} seq={turn.turn_seq} "
                f"outcome={turn.outcome} status={turn.status} {record['seconds']}s"
                + (f" {turn.detail}" if turn.detail else "")
            )
        with self._lock:
            print(line, file=self.stream, flush=True)

    def message(self, text: str) -> None:
        with self._lock:
            if self.fmt == "json":
                line = json.dumps({"worker": self.worker_id, "message": text})
            else:
                line = f"worker {self.worker_id}: {text}"
            print(line, file=self.stream, flush=True)


class Worker:
    def __init__(
        self,
        engine: Engine,
        *,
        concurrency: int = 1,
        poll_interval: float = 1.0,
        mode: Mode = "forever",
    ) -> None:
        self.engine = engine
        self.concurrency = max(1, concurrency)
        self.poll_interval = poll_interval
        self.mode = mode

    @property
    def context(self) -> RuntimeContext | None:
        """The runtime context (credentials, adapter configuration) the engine works with."""
        return self.engine.context

    def run(self) -> None:
        """Run until drained (signal), idle (``until_idle``) or one claim done (``once``)."""
        if self.mode == "once":
            self.engine.step()
            return
        threads = [
            threading.Thread(target=self._loop, name=f"openseal-worker-{i}", daemon=True)
            for i in range(self.concurrency)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            # Join in slices so the main thread keeps handling signals.
            while thread.is_alive():
                thread.join(timeout=0.2)

    def _loop(self) -> None:
        self.engine.run_forever(
            poll_interval=self.poll_interval, idle_exit=self.mode == "until_idle"
        )

    def install_signal_handlers(self, log: TurnLog | None = None) -> None:
        def drain(signum: int, _frame: FrameType | None) -> None:
            if log is not None:
                log.message(f"{signal.Signals(signum).name}: draining")
            self.engine.stop()

        signal.signal(signal.SIGTERM, drain)
        signal.signal(signal.SIGINT, drain)
