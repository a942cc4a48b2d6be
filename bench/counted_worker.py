"""``python -m bench.counted_worker ARGS``: ``openseal ARGS`` in a process that counts the SQL
statements it sends (each a round trip to the server) and writes the count, at exit, to the
file named by ``OPENSEAL_BENCH_STATEMENTS``; with ``OPENSEAL_BENCH_CLAIMS`` it also times each
claim that took a run (the claim's transaction, with the first turn it saves) and writes the
seconds, one a line, to that file at exit; with ``OPENSEAL_BENCH_WAKES`` it counts the waits
for work that a wake-up naming a run ended (each one an idle thread woken to claim that run)
and writes the count to that file at exit. It stops if the store's cursor path turns itself
off. Whichever ``openseal`` package comes first on the path is run, so a benchmark can run an
earlier version of it the same way."""

from __future__ import annotations

import atexit
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

STATEMENTS_ENV = "OPENSEAL_BENCH_STATEMENTS"
CLAIMS_ENV = "OPENSEAL_BENCH_CLAIMS"
WAKES_ENV = "OPENSEAL_BENCH_WAKES"
_sent = [0]
#: waits for work ended by a wake-up naming a run
_wakes = [0]
#: seconds of each claim that took a run
_claims: list[float] = []


def _count(*_args: Any) -> None:
    _sent[0] += 1


def _write() -> None:
    Path(os.environ[STATEMENTS_ENV]).write_text(str(_sent[0]), encoding="utf-8")


def time_claims(leases: Any) -> None:
    """Time every call of ``leases.claim_and_start`` (a class) that took a run into
    :data:`_claims` (threads append; a list's append is atomic)."""
    claim = leases.claim_and_start

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        found = claim(*args, **kwargs)
        if found is not None:
            _claims.append(time.perf_counter() - started)
        return found

    leases.claim_and_start = timed


def count_wakes(signal: Any) -> None:
    """Count every return of ``signal.wait`` (a class) that names a run into :data:`_wakes`."""
    wait = signal.wait

    def counted(*args: Any, **kwargs: Any) -> Any:
        wake = wait(*args, **kwargs)
        if wake.run_id is not None:
            _wakes[0] += 1  # under the GIL, one thread at a time; a count, not a figure to race
        return wake

    signal.wait = counted


def _write_wakes() -> None:
    Path(os.environ[WAKES_ENV]).write_text(str(_wakes[0]), encoding="utf-8")


def _write_claims() -> None:
    text = "".join(f"{seconds:.6f}\n" for seconds in _claims)
    Path(os.environ[CLAIMS_ENV]).write_text(text, encoding="utf-8")


#: the start of the warning the store gives when its cursor path turns itself off
FALLBACK_WARNING = "openseal.runtime.store.db.fastsql is off"


def stop_on_fallback() -> None:
    """Make the store's fallback warning an error: a worker on the slower path would be
    measured on a path users do not run (an earlier version without the warning runs on)."""
    warnings.filterwarnings("error", message=FALLBACK_WARNING, category=RuntimeWarning)


def main() -> int:
    event.listen(sa.engine.Engine, "before_cursor_execute", _count)
    stop_on_fallback()
    if os.environ.get(STATEMENTS_ENV):
        atexit.register(_write)
    if os.environ.get(CLAIMS_ENV):
        from openseal.runtime.store.repos.leases import Leases

        time_claims(Leases)
        atexit.register(_write_claims)
    if os.environ.get(WAKES_ENV):
        from openseal.runtime.store.db.work_signal import WorkSignal

        count_wakes(WorkSignal)
        atexit.register(_write_wakes)
    from openseal.cli.main import main as openseal

    return int(openseal(sys.argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
