"""One warning per beat while the database is away, not one per thread, run or retry.

When PostgreSQL is cut, every thread of a worker fails its next look for work, and the
heartbeat fails for every run the worker holds, again at every beat: a log that wrote each of
those would be a block of near-identical lines per second. :class:`OutageLog` writes the first
fault at once, then at most one line per interval (the heartbeat's beat) saying how many faults
it stands for, and one line when the database answers again.
"""

from __future__ import annotations

import logging
import threading
import time


class OutageLog:
    """The faults of one engine's threads, written to ``log`` at most once per ``interval``
    seconds (thread-safe)."""

    def __init__(self, log: logging.Logger, interval: float) -> None:
        self.log = log
        self.interval = interval
        self._lock = threading.Lock()
        #: when the first fault of the outage happened (None: no outage)
        self._since: float | None = None
        self._written = 0.0
        #: faults since the last line written
        self._unwritten = 0

    def fault(self, message: str) -> None:
        """A fault happened (``message`` names it, in one line): written unless a line was
        written within the interval (then it is counted in the next one)."""
        now = time.monotonic()
        with self._lock:
            if self._since is None:
                self._since = now
            elif now - self._written < self.interval:
                self._unwritten += 1
                return
            self._written, more, self._unwritten = now, self._unwritten, 0
        tail = f" ({more} more like it since the last line)" if more else ""
        self.log.warning("%s%s", message, tail)

    def recovered(self) -> None:
        """What failed works again: one line if faults were written, and the outage ends."""
        if self._since is None:  # the common case, without the lock
            return
        with self._lock:
            since, self._since, self._unwritten = self._since, None, 0
        if since is not None:
            self.log.warning("the database answers again (after %.1fs)", time.monotonic() - since)
