"""What a process's idle worker threads wait on: one wake-up per run that became runnable.

A commit that makes runs runnable (here, in another process through ``NOTIFY`` or a datagram)
*offers* their ids. Each id goes to one idle thread of this process, as a hint to claim that
run by id; the other idle threads sleep on. Ids beyond the idle threads are dropped: the busy
threads look for work when they finish anyway. Every offer also advances a *generation*, and a
wait returns at once when the generation moved since the caller's mark, so a thread that was
looking for work when an offer came (and might have missed the run) looks again. A
:meth:`WorkSignal.broadcast` (a lost ``LISTEN`` session, stopping) wakes every thread.

A commit may also offer :data:`TRIGGERS` in place of a run id: the trigger schedulers should
look at the store now (an objective a trigger started ended, and firings of it wait in its
queue). It advances :attr:`WorkSignal.triggers_mark`, which each scheduler compares with the
mark of its last look, and wakes one idle thread to look for work (and so poll the scheduler).

Why no run is left runnable with every thread asleep: docs/decisions/0008-one-wake-up-per-run.md.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

#: offered in place of a run id: the trigger schedulers should look at the store now
TRIGGERS: Final = "triggers"


@dataclass(frozen=True)
class Wake:
    """How a wait ended. ``run_id``: the run to claim by id (a hint: it may be gone), None to
    look for any work. ``mark``: what to pass as ``since`` to the next wait, so that offers made
    after this one reached the thread count even if they came before that wait."""

    woken: bool
    run_id: str | None
    mark: int


class WorkSignal:
    """One process's idle threads and the run ids handed to them (thread-safe)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._generation = 0
        #: run ids handed out and not yet taken, each with the generation its offer reached
        self._hints: deque[tuple[str, int]] = deque()
        #: threads inside :meth:`wait`
        self._waiting = 0
        #: offers of :data:`TRIGGERS` so far
        self._triggers = 0
        #: run ids handed to an idle thread so far (what tests and benchmarks count)
        self.handed = 0

    @property
    def waiting(self) -> int:
        with self._cond:
            return self._waiting

    @property
    def triggers_mark(self) -> int:
        """Moves each time :data:`TRIGGERS` is offered."""
        with self._cond:
            return self._triggers

    def mark(self) -> int:
        """Take before looking for work and pass to :meth:`wait`: offers made after it end
        the wait at once."""
        with self._cond:
            return self._generation

    def offer(self, run_ids: Iterable[str]) -> int:
        """These runs became runnable: wake one idle thread for each, as far as there are idle
        threads not already woken. Returns how many were woken."""
        with self._cond:
            self._generation += 1
            run_ids = list(run_ids)
            if TRIGGERS in run_ids:
                self._triggers += 1
            handed = {run_id for run_id, _ in self._hints}
            room = self._waiting - len(self._hints)
            woken = 0
            for run_id in run_ids:
                if woken >= room:
                    break
                if run_id in handed:
                    continue
                handed.add(run_id)
                self._hints.append((run_id, self._generation))
                woken += 1
            if woken:
                self.handed += woken
                self._cond.notify(woken)
            return woken

    def offer_run(self, run_id: str) -> bool:
        """:meth:`offer` one run: whether an idle thread here will claim it (woken now, or
        already handed it and not woken yet)."""
        with self._cond:
            if any(handed == run_id for handed, _ in self._hints):
                self._generation += 1
                return True
            return bool(self.offer([run_id]))

    def broadcast(self) -> None:
        """Wake every waiting thread (each looks for any work, or stops)."""
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    def wait(self, timeout: float, since: int | None = None) -> Wake:
        """Block up to ``timeout`` seconds for an offer (one after ``since``, a :meth:`mark`,
        when given) or a broadcast."""
        with self._cond:
            seen = self._generation if since is None else since
            self._waiting += 1
            try:
                woken = self._cond.wait_for(
                    lambda: bool(self._hints) or self._generation != seen, max(0.0, timeout)
                )
            finally:
                self._waiting -= 1
            if self._hints:
                run_id, generation = self._hints.popleft()
                return Wake(True, None if run_id == TRIGGERS else run_id, generation)
            return Wake(woken, None, self._generation)
