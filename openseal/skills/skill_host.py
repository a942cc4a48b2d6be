"""Loading a python skill's entry point, and the program a child skill process runs.

:func:`load_entry_point` is shared by the in-process calls of the python adapter and by this
module's :func:`main`, the loop of a child process that runs python skills with an effect
(see :mod:`openseal.skills.child`). The child runs this file as a script, so it imports the
standard library only: never ``openseal`` (whose start-up would count against a skill's
timeout) and never a module of the worker it does not need.

The protocol is one JSON line each way per call, on pipes of the child's own (its standard
input and output are moved aside, so a skill that prints or reads does not disturb it):

* request: ``{"entry_point": "m:f", "args": {...}, "deadline": 81234.5}``, the deadline on
  the host's monotonic clock (``time.monotonic()`` reads the system's monotonic clock, the same
  in every process of the host, so a child slow to start does not push the deadline back)
* reply: ``{"output": ...}``, ``{"raised": "..."}`` (the function raised), or
  ``{"not_called": "..."}`` (the entry point could not be loaded).

Each call is bounded inside the child too: when the deadline passes before the function returns,
the child kills its own process group (itself, and whatever the skill started in it), so a
call ends by its deadline even when the worker that asked for it is gone.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any


class EntryPointError(Exception):
    pass


def load_entry_point(entry_point: str) -> Callable[..., Any]:
    """``"package.module:function"`` → the function; :class:`EntryPointError` says what is wrong."""
    module_name, _, attribute = entry_point.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure of user code is the skill's failure
        raise EntryPointError(
            f"cannot import `{module_name}` for `{entry_point}`: {exc.__class__.__name__}: {exc}"
        ) from None
    function = getattr(module, attribute, None)
    if not callable(function):
        message = f"`{module_name}` has no function `{attribute}` (entry point `{entry_point}`)"
        raise EntryPointError(message)
    return function  # type: ignore[no-any-return]


def serve(request: dict[str, Any]) -> dict[str, Any]:
    """Call one request's function by its deadline; the reply to send back."""
    seconds = max(float(request["deadline"]) - time.monotonic(), 0.0)
    watchdog = threading.Timer(seconds, _stop_process_group)
    watchdog.daemon = True
    watchdog.start()
    try:
        try:
            function = load_entry_point(str(request["entry_point"]))
        except EntryPointError as exc:
            return {"not_called": str(exc)}
        try:
            output = function(**request["args"])
        except BaseException as exc:  # user code: even SystemExit is this call's failure
            return {"raised": f"{exc.__class__.__name__}: {exc}"}
        try:
            json.dumps(output)
        except (TypeError, ValueError) as exc:
            return {"raised": f"returned a value that is not JSON ({exc})"}
        return {"output": output}
    finally:
        watchdog.cancel()


def _stop_process_group() -> None:
    os.killpg(os.getpgrp(), signal.SIGKILL)


def _protocol_pipes() -> tuple[IO[bytes], IO[bytes]]:
    """The pipes to the worker, moved off file descriptors 0 and 1: the skill's standard
    input reads nothing and its standard output goes to the worker's standard error."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    os.dup2(2, 1)
    return requests, replies


def main(path: list[str]) -> None:
    """Serve requests until the worker closes the pipe; ``path`` is the worker's ``sys.path``."""
    requests, replies = _protocol_pipes()
    sys.path[:] = path
    for line in requests:
        reply = serve(json.loads(line))
        replies.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        replies.flush()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
