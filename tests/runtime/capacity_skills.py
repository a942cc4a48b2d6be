"""Python skills for the tests of a skill's concurrency cap: each call notes when it began and
ended at the "destination" (``$CAPACITY_SKILL_LOG``, one line per event, written with one
``write`` on an ``O_APPEND`` file so lines of several processes never interleave), so a test
can count the calls in flight there, independently of the store."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

LOG_ENV = "CAPACITY_SKILL_LOG"
#: how long a call stays at the destination (seconds)
SECONDS_ENV = "CAPACITY_SKILL_SECONDS"
#: a file whose lines name the arguments ``fragile`` loses the reply of (it raises)
LOSE_ENV = "CAPACITY_SKILL_LOSE"
#: when set, every ``look`` (a read: it runs on the caller's thread) waits here first
GATE: threading.Event | None = None


def _note(event: str, q: str) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    line = json.dumps({"event": event, "q": q, "at": time.time(), "pid": os.getpid()}) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def submit(q: str) -> dict[str, str]:
    _note("begin", q)
    time.sleep(float(os.environ.get(SECONDS_ENV, "0.05")))
    _note("end", q)
    return {"answer": q}


def fragile(q: str) -> dict[str, str]:
    """As :func:`submit`, but a call for an argument listed in ``$CAPACITY_SKILL_LOSE`` raises
    after its effect: its outcome is unknown."""
    answer = submit(q)
    lose = os.environ.get(LOSE_ENV)
    if lose and q in Path(lose).read_text(encoding="utf-8").split():
        raise ConnectionResetError("the reply was lost")
    return answer


def look(q: str) -> dict[str, str]:
    """A read: waits for :data:`GATE` when it is set, then answers."""
    _note("begin", q)
    if GATE is not None:
        GATE.wait(timeout=60)
    _note("end", q)
    return {"answer": q}


def calls(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The noted events, in the order written (none if the log does not exist yet)."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as log:
        return [json.loads(line) for line in log if line.strip()]


def most_at_once(path: str | os.PathLike[str]) -> int:
    """The most calls that were at the destination at once, by the log's order of events."""
    most = current = 0
    for event in calls(path):
        current += 1 if event["event"] == "begin" else -1
        most = max(most, current)
    return most
