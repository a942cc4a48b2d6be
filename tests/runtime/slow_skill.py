"""A python skill that takes longer than its declared timeout, and its lookup.

Orders are kept in the JSON file named by ``OPENSEAL_TEST_SLOW_LEDGER`` so a test (and the
lookup) can see what was done, whichever thread or process did it. Every call that starts is
noted in ``<ledger>.starts`` (one JSON line each) with whether an earlier call was still
running then: a call holds an exclusive lock on ``<ledger>.lock`` while it runs, and the lock
goes with the call's thread or process however that ends (a killed process releases it).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

LEDGER_ENV = "OPENSEAL_TEST_SLOW_LEDGER"


def _ledger() -> Path:
    return Path(os.environ[LEDGER_ENV])


def _entries() -> list[dict[str, object]]:
    path = _ledger()
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def starts(ledger: Path | None = None) -> list[dict[str, Any]]:
    """Every call that started, oldest first: ``ref``, ``pid`` and ``overlapped`` (another
    call was still running when it started)."""
    path = (ledger or _ledger()).with_suffix(".starts")
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def lock_held(path: Path) -> bool:
    """Whether a process (this one included) holds the exclusive lock on ``path``."""
    with path.open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False


@contextmanager
def _attempt(ref: str) -> Iterator[int]:
    """Note the call's start; yields how many calls for ``ref`` started before it."""
    ledger = _ledger()
    with ledger.with_suffix(".lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            overlapped = False
        except BlockingIOError:
            overlapped = True
        before = sum(1 for start in starts(ledger) if start["ref"] == ref)
        line = json.dumps({"ref": ref, "pid": os.getpid(), "overlapped": overlapped})
        fd = os.open(ledger.with_suffix(".starts"), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, f"{line}\n".encode())
        finally:
            os.close(fd)
        yield before


def _write(ref: str) -> dict[str, object]:
    entry = {"ref": ref, "entry": f"E-{len(_entries()) + 1}"}
    _ledger().write_text(json.dumps([*_entries(), entry]), encoding="utf-8")
    return entry


def submit(ref: str, seconds: float) -> dict[str, object]:
    """Wait ``seconds``, then write the entry."""
    with _attempt(ref):
        time.sleep(seconds)
        return _write(ref)


def submit_slow_once(ref: str, seconds: float) -> dict[str, object]:
    """Wait ``seconds`` on the first call for ``ref`` only, then write the entry."""
    with _attempt(ref) as before:
        if before == 0:
            time.sleep(seconds)
        return _write(ref)


def lookup(ref: str, seconds: float) -> dict[str, object]:
    for entry in _entries():
        if entry["ref"] == ref:
            return entry
    return {}
