"""Every adapter call is bounded: a skill's ``timeout`` holds whatever the adapter does.

Adapters are synchronous and a python skill has no timeout of its own, so the call runs on a
daemon thread and the caller stops waiting at the bound. The thread cannot be stopped; when it
finishes late, its result is handed to ``on_late`` — for an action that reply is evidence and
is recorded (invariant 14), for a read it is simply dropped.
"""

from __future__ import annotations

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
    name: str = "openseal-skill",
) -> SkillResult | None:
    """``work()`` on a daemon thread; None when it has not finished within ``timeout``
    seconds, in which case ``on_late`` gets its result whenever it does finish."""
    lock = threading.Lock()
    box: list[SkillResult] = []
    gave_up = False

    def target() -> None:
        try:
            result = work()
        except Exception as exc:  # adapters should not raise; if one does, it is this call's
            result = SkillResult("failed", error=f"adapter error: {type(exc).__name__}: {exc}")
        with lock:
            late = gave_up
            if not late:
                box.append(result)
        if late and on_late is not None:
            on_late(result)

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    thread.join(timeout)
    with lock:
        if box:
            return box[0]
        gave_up = True
    return None
