"""Python skills with an effect run in a child process that is killed at the skill's timeout.

A thread inside user code cannot be stopped, so a python skill called on one could go on for
as long as it likes after its caller stopped waiting — and a same-key retry would then run next
to it. A child process can be stopped: at the deadline its whole process group is killed and
reaped, and from then on the call has certainly ended (it may have had an effect, so an action
stays ``unknown`` until reconciled, but nothing of it is still running). The child also kills
itself at the deadline (:mod:`openseal.skills.skill_host`), so the bound holds when the worker
dies mid-call.

Children are kept warm for the next call (start-up and the skill module's import are paid
once) and are started again when the worker's environment, working directory or import path
changed since. A child that timed out, died or broke the protocol is never reused.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from openseal.skills import skill_host

#: the host program, run as a script so the child never imports ``openseal`` itself
_HOST = str(Path(skill_host.__file__).resolve())
_LAUNCH = "import runpy, sys; del sys.argv[0]; runpy.run_path(sys.argv[0], run_name='__main__')"

#: how a call in a child ended:
#: ``output``   the function returned ``output``;
#: ``raised``   the function raised (``message``);
#: ``not_called``  the entry point could not be loaded: the function never ran;
#: ``not_sent`` no child took the request (it could not be started): nothing ran;
#: ``stopped``  no answer by the deadline: the child was killed and reaped;
#: ``died``     the child ended without answering (the skill exited or crashed).
ChildOutcome = Literal["output", "raised", "not_called", "not_sent", "stopped", "died"]


@dataclass(frozen=True, slots=True)
class ChildReply:
    outcome: ChildOutcome
    output: object = None
    message: str = ""


def call_in_child(entry_point: str, args: Mapping[str, object], timeout: float) -> ChildReply:
    """Call ``entry_point(**args)`` in a child process; it has ended when this returns.

    ``timeout`` seconds count from now, the child's start included: at the deadline the child's
    process group is killed and reaped (``stopped``).
    """
    deadline = time.monotonic() + timeout
    request = {"entry_point": entry_point, "args": dict(args), "deadline": deadline}
    try:
        line = json.dumps(request, separators=(",", ":")).encode() + b"\n"
    except (TypeError, ValueError) as exc:
        return ChildReply("not_sent", message=f"the arguments are not JSON ({exc})")
    # A kept child may have died while idle (killed from outside): the request then reaches
    # no one, and a fresh child takes it.
    for kept in (True, False):
        try:
            child = _POOL.take(kept=kept)
        except (OSError, subprocess.SubprocessError) as exc:
            return ChildReply("not_sent", message=f"cannot start a process for the skill: {exc}")
        reply = child.call(line, deadline)
        if reply.outcome in ("output", "raised", "not_called"):
            _POOL.give_back(child)
        if reply.outcome != "not_sent" or child.fresh:
            return reply
    return reply


class _Child:
    """One child process running :mod:`openseal.skills.skill_host`, in a process group of its
    own (so killing it kills what the skill started too)."""

    def __init__(self) -> None:
        self.settings = _settings()
        #: not yet given a call (a kept child has served one)
        self.fresh = True
        self.process = subprocess.Popen(
            [sys.executable, "-c", _LAUNCH, _HOST, json.dumps(sys.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )

    def call(self, line: bytes, deadline: float) -> ChildReply:
        """Send one request line and read its reply by ``deadline``."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(line)
            self.process.stdin.flush()
        except OSError as exc:  # it died before taking the request: nothing of the call ran
            self.stop()
            return ChildReply("not_sent", message=f"the skill's process is gone ({exc})")
        answer = self._read_reply(deadline)
        if answer is None:
            self.stop()
            return ChildReply("stopped")
        if not answer.endswith(b"\n"):
            code = self.stop()
            if time.monotonic() >= deadline:
                # its own watchdog stopped it at the deadline, a moment before this process
                # looked (a loaded host): the same end as a kill from here
                return ChildReply("stopped")
            return ChildReply("died", message=f"its process ended without an answer ({code})")
        try:
            reply = json.loads(answer)
        except ValueError:
            code = self.stop()
            return ChildReply("died", message=f"its process answered out of protocol ({code})")
        if "output" in reply:
            return ChildReply("output", reply["output"])
        if "raised" in reply:
            return ChildReply("raised", message=str(reply["raised"]))
        return ChildReply("not_called", message=str(reply.get("not_called")))

    def _read_reply(self, deadline: float) -> bytes | None:
        """The reply line (without a final newline when the child died first); None when
        none came by the deadline."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        answer = bytearray()
        # one poll object for the call (a selector costs a dozen calls more, and two system
        # calls, for the same single descriptor)
        readable = select.poll()
        readable.register(fd, select.POLLIN)
        while True:
            remaining = deadline - time.monotonic()
            # poll's timeout is in whole milliseconds: rounded up, so it never wakes early
            if remaining <= 0 or not readable.poll(math.ceil(remaining * 1000)):
                return None
            chunk = os.read(fd, 1 << 16)
            answer += chunk
            if not chunk or chunk.endswith(b"\n"):
                return bytes(answer)

    def stop(self) -> str:
        """Kill the child's process group and reap the child; how it ended, for people."""
        with contextlib.suppress(ProcessLookupError):  # the group is gone already
            os.killpg(self.process.pid, signal.SIGKILL)
        code = self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        return f"signal {-code}" if code < 0 else f"exit code {code}"

    def close(self) -> None:
        """End an idle child: it leaves its loop when its input closes."""
        assert self.process.stdin is not None
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
            return
        self.stop()


_Settings = tuple[str, dict[Any, Any], list[str]]


def _settings() -> _Settings:
    """What a child inherits from the worker when it starts: working directory, environment,
    import path. A child started under other settings is not reused."""
    try:
        cwd = os.getcwd()
    except OSError:  # a working directory removed under the worker: the child inherits it as is
        cwd = ""
    return cwd, _environment(), list(sys.path)


def _environment() -> dict[Any, Any]:
    """The environment a child started now inherits, to compare with a kept child's: the
    mapping of encoded names and values ``os.environ`` keeps (CPython's ``_data``), copied
    without decoding each entry (a call takes it, and decoding the environment cost more
    than the rest of the call), else ``os.environ`` decoded."""
    data = getattr(os.environ, "_data", None)
    return dict(data) if isinstance(data, dict) else dict(os.environ)


class _Pool:
    """Idle children, at most :attr:`MAX_IDLE` of them; a child is busy with one call at a time."""

    MAX_IDLE = 8

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Child] = []

    def take(self, *, kept: bool = True) -> _Child:
        """An idle child started under the current settings, else (or when not ``kept``) a
        new one."""
        settings = _settings()
        stale: list[_Child] = []
        with self._lock:
            while kept and self._idle:
                child = self._idle.pop()
                if child.settings == settings and child.process.poll() is None:
                    break
                stale.append(child)
            else:
                child = None
        for old in stale:
            old.close()
        return child if child is not None else _Child()

    def give_back(self, child: _Child) -> None:
        child.fresh = False
        with self._lock:
            if len(self._idle) < self.MAX_IDLE:
                self._idle.append(child)
                return
        child.close()

    def close(self) -> None:
        """End the idle children (at exit: they would end on their own when the worker's end
        closes their input, but not before the interpreter complains of running children)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for child in idle:
            child.close()


_POOL = _Pool()
atexit.register(_POOL.close)
