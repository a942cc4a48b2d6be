"""Run blocking calls (HTTP, user Python) off the event loop on daemon threads.

A timed-out or canceled step cannot stop a thread that is inside user code or
a socket; it is abandoned instead. Daemon threads matter here: the default
executor's threads are joined when the process exits, so one stuck call
would hold ``openseal run`` open long after it reported the timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def in_thread(function: Callable[[], T], name: str) -> T:
    """Await ``function()`` run on its own daemon thread."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def deliver(result: T | None, error: BaseException | None) -> None:
        if future.done():  # canceled or timed out meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def target() -> None:
        try:
            result = function()
        except BaseException as exc:  # handed to the awaiting task, not lost on this thread
            _post(loop, deliver, None, exc)
        else:
            _post(loop, deliver, result, None)

    threading.Thread(target=target, name=f"openseal-step-{name}", daemon=True).start()
    return await future


def _post(
    loop: asyncio.AbstractEventLoop,
    deliver: Callable[[T | None, BaseException | None], None],
    result: T | None,
    error: BaseException | None,
) -> None:
    # RuntimeError: the loop has closed, so the run is over and nobody is waiting.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(deliver, result, error)
