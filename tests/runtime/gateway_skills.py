"""Python skills for the gateway tests. Each call appends one line to ``$GATEWAY_SKILL_LOG``,
so a test can prove (across threads and engines) how often a skill really ran."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from typing import Any

LOG_ENV = "GATEWAY_SKILL_LOG"
PRICES = {"laptop": 1149.0, "monitor": 239.0}
#: when set, every ``quote`` waits here first (until the barrier breaks, when fewer callers
#: come): concurrent quotes all start before any returns (parallel branches racing for the
#: last tool call)
BARRIER: threading.Barrier | None = None


def _log(skill: str, **arguments: object) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps({"skill": skill, "arguments": arguments}) + "\n")


def quote(item: str, quantity: float) -> dict[str, object]:
    if BARRIER is not None:
        with contextlib.suppress(threading.BrokenBarrierError):
            BARRIER.wait()
    _log("quote", item=item, quantity=quantity)
    return {"item": item, "unit_price": PRICES.get(item, 10.0)}


def stock(item: str) -> dict[str, object]:
    _log("stock", item=item)
    return {"item": item, "in_stock": 5}


def ship(item: str, quantity: float, note: str | None = None) -> dict[str, object]:
    """An external effect: the gateway must never let a tool call reach it."""
    _log("ship", item=item, quantity=quantity, note=note)
    return {"shipment": "S-1"}


def calls(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The logged calls, oldest first (none if the log does not exist yet)."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as log:
        return [json.loads(line) for line in log if line.strip()]
