"""A worker process: N threads stepping one shared :class:`Engine`, one log line per turn.

SIGTERM or SIGINT asks it to drain: each thread finishes its current turn, releases its lease
if the run is still runnable, and exits. The drain lasts at most ``drain_seconds``: a turn still
going then (a model call that takes long, a database that does not answer) is left to its lease,
which another worker takes over once it expires, as after a crash. Idle threads sleep on the
store's wake-up (PostgreSQL ``LISTEN``; SQLite polls).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from datetime import UTC, datetime
from types import FrameType
from typing import Literal, TextIO

from openseal.runtime.engine.engine import Engine
from openseal.runtime.engine.turns import TurnReport
from openseal.skills.credentials import RuntimeContext

Mode = Literal["forever", "once", "until_idle"]

#: how long a drain may last by default, in seconds (less than the 30 s an orchestrator
#: usually waits between SIGTERM and SIGKILL)
DRAIN_SECONDS = 20.0


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
        drain_seconds: float = DRAIN_SECONDS,
    ) -> None:
        self.engine = engine
        self.concurrency = max(1, concurrency)
        self.poll_interval = poll_interval
        self.mode = mode
        self.drain_seconds = drain_seconds
        #: ``time.monotonic()`` by which a drain asked for must be over (None: none asked)
        self._drain_by: float | None = None

    @property
    def draining(self) -> bool:
        """Whether a drain was asked for (a signal)."""
        return self._drain_by is not None

    @property
    def context(self) -> RuntimeContext | None:
        """The runtime context (credentials, adapter configuration) the engine works with."""
        return self.engine.context

    def run(self) -> int:
        """Run until drained (signal), idle (``until_idle``) or one claim done (``once``);
        returns how many threads were still working when the drain's time ran out (their
        turns are left to their leases)."""
        if self.mode == "once":
            self.engine.step()
            return 0
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
                if self._drain_by is not None and time.monotonic() >= self._drain_by:
                    return sum(thread.is_alive() for thread in threads)
        return 0

    def drain(self) -> None:
        """Stop taking work, finish the current turns, and return from :meth:`run` within
        ``drain_seconds``."""
        if self._drain_by is None:
            self._drain_by = time.monotonic() + self.drain_seconds
        self.engine.stop()

    def _loop(self) -> None:
        self.engine.run_forever(
            poll_interval=self.poll_interval, idle_exit=self.mode == "until_idle"
        )

    def install_signal_handlers(self, log: TurnLog | None = None) -> None:
        def drain(signum: int, _frame: FrameType | None) -> None:
            if log is not None:
                log.message(f"{signal.Signals(signum).name}: draining")
            self.drain()

        signal.signal(signal.SIGTERM, drain)
        signal.signal(signal.SIGINT, drain)
