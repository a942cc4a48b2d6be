"""Every adapter call is bounded: a skill's ``timeout`` holds whatever the adapter does.

The adapters end their own calls at the timeout where they can: an HTTP exchange is cut, a
python skill with an effect runs in a child process that is killed (:mod:`openseal.skills.child`).
What remains — a python read, which runs on the caller's side, or an adapter stuck where its
own deadline does not reach (a name lookup) — is bounded here: the call runs on a daemon thread
and the caller stops waiting at the bound. The thread cannot be stopped; when it finishes late,
its result is handed to ``on_late`` — for an action that reply is evidence and is recorded
(invariant 14), for a read it is simply dropped.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable

from openseal.skills.base import SkillResult

#: added to a skill's timeout before the caller stops waiting, so an adapter that enforces the
#: timeout itself (HTTP) reports its own, more precise outcome first
GRACE_SECONDS = 2.0


def call_bounded(
    work: Callable[[], SkillResult],
    timeout: float,
    *,
    on_late: Callable[[SkillResult], None] | None = None,
) -> SkillResult | None:
    """``work()`` on a daemon thread; None when it has not finished within ``timeout``
    seconds, in which case ``on_late`` gets its result whenever it does finish."""
    lock = threading.Lock()
    # A queue rather than an event: waiting on it with a timeout is one call into C.
    replies: queue.SimpleQueue[SkillResult] = queue.SimpleQueue()
    gave_up = False

    def job() -> None:
        try:
            result = work()
        except Exception as exc:  # adapters should not raise; if one does, it is this call's
            result = SkillResult("failed", error=f"adapter error: {type(exc).__name__}: {exc}")
        with lock:
            late = gave_up
            if not late:
                replies.put(result)
        if late and on_late is not None:
            on_late(result)

    # The caller's context (its trace span) goes with the call, so an HTTP skill propagates it.
    context = contextvars.copy_context()
    _POOL.submit(lambda: context.run(job))
    try:
        return replies.get(timeout=timeout)
    except queue.Empty:
        pass
    with lock:
        gave_up = True
        try:  # put just as the wait ended
            return replies.get_nowait()
        except queue.Empty:
            return None


class _DaemonPool:
    """Daemon threads kept for the next call: starting a thread per call costs more than a
    quick skill. A thread stuck in a call is simply not idle, and another is started; idle
    threads end after a while. Daemon threads never hold the process open at exit."""

    IDLE_SECONDS = 60.0

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._serve, name="openseal-skill", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self.IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0 and self._jobs.empty():
                        self._idle -= 1
                        return
                continue
            job()
            with self._lock:
                self._idle += 1


_POOL = _DaemonPool()
