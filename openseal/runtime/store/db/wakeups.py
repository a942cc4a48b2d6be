"""SQLite wake-ups between processes: a datagram per commit that made work.

PostgreSQL tells a worker process about new work with ``NOTIFY``; SQLite has nothing like it,
so a worker in another process used to find work only at its next poll. Here each process that
waits for work binds a Unix datagram socket in ``<home>/wake/``, and a commit that made runs
runnable sends each run's id to one other socket there, as PostgreSQL's announcement reaches
one process (wake_choice.py): the sockets ordered by a hash of their name and the run, the
first one. The receiving process wakes one idle thread for it; one with no idle thread passes
it on to the next socket in the run's order (past the last, it is dropped: every process was
offered it while busy, and a busy process looks for work when it finishes). A datagram naming
no run (too many to fit, or the trigger schedulers' :data:`.work_signal.TRIGGERS`) goes to
every socket and wakes them all. A datagram is only a hint — the woken worker claims the run if
it is still runnable, else sleeps on — so a lost or extra one changes nothing but latency, and
polling stays as the fallback (a socket path too long for ``AF_UNIX``, a platform without Unix
sockets, a process that crashed and left its socket file behind: the next sender removes that
file and sends to the next one).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

from openseal.runtime.store.db.work_signal import TRIGGERS

log = logging.getLogger("openseal.wakeups")

#: the longest path a Unix socket address holds on Linux, less the terminating byte
_MAX_PATH = 107
#: the longest datagram sent: run ids beyond it are not named (the receivers then all look)
_MAX_DATAGRAM = 2048
#: how often the receiving thread checks whether to stop
_RECEIVE_SECONDS = 1.0


class WakeSockets:
    """The wake-up sockets of one store directory: this process's own, and sending to the
    others'. ``on_wake(run_ids)`` runs on the receiving thread for every datagram (an empty
    list: it named no run)."""

    def __init__(self, directory: Path, on_wake: Callable[[list[str]], None]) -> None:
        self.directory = directory
        self._on_wake = on_wake
        self._lock = threading.Lock()
        self._own: Path | None = None
        self._socket: socket.socket | None = None
        self._sender: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def listening(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        """Bind this process's socket and receive on a daemon thread (once; a no-op where
        Unix sockets or a short enough path are not available: polling covers it)."""
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            path = self.directory / f"{os.getpid()}-{uuid.uuid4().hex[:12]}.sock"
            if not hasattr(socket, "AF_UNIX") or len(os.fsencode(path)) > _MAX_PATH:
                return
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                sock.bind(str(path))
            except OSError as exc:
                log.debug("no wake-up socket in %s: %s", self.directory, exc)
                return
            sock.settimeout(_RECEIVE_SECONDS)
            self._own, self._socket = path, sock
            self._thread = threading.Thread(
                target=self._receive, name="openseal-wakeups", daemon=True
            )
            self._thread.start()

    def broadcast(self, run_ids: Iterable[str] = ()) -> None:
        """Tell other processes waiting on this store that ``run_ids`` became runnable: each
        run to the first socket in its order, anything else to every socket (best effort,
        never raises)."""
        sockets = self._others()
        run_ids = list(run_ids)
        message = ",".join(run_ids).encode()
        if not run_ids or TRIGGERS in run_ids or len(message) > _MAX_DATAGRAM:
            for path in sockets:  # too many to name, or for every process: all look
                self._send(b"" if len(message) > _MAX_DATAGRAM else message, path)
            return
        for run_id in run_ids:
            self._send_in_order(run_id, _in_order(sockets, run_id))

    def pass_on(self, run_id: str) -> None:
        """This process has no idle thread for ``run_id``: to the next socket in its order."""
        own = self._own
        if own is None:
            return
        sockets = self._others()
        after = _rank(own.name, run_id)
        later = [p for p in sockets if _rank(os.path.basename(p), run_id) > after]
        self._send_in_order(run_id, _in_order(later, run_id))

    def _others(self) -> list[str]:
        """The paths of the other processes' sockets (none when nobody waited here yet)."""
        try:
            entries = list(os.scandir(self.directory))
        except OSError:
            return []
        own = str(self._own) if self._own else None
        return [e.path for e in entries if e.name.endswith(".sock") and e.path != own]

    def _send_in_order(self, run_id: str, paths: list[str]) -> None:
        """Send ``run_id`` to the first of ``paths`` still there."""
        message = run_id.encode()
        for path in paths:
            if self._send(message, path):
                return

    def _send(self, message: bytes, path: str) -> bool:
        """Whether a process receives at ``path`` (a file left by a dead one is removed)."""
        sender = self._sender_socket()
        if sender is None:
            return False
        try:
            sender.sendto(message, path)
        except (ConnectionRefusedError, FileNotFoundError):
            with contextlib.suppress(OSError):  # its process is gone
                os.unlink(path)
            return False
        except OSError:
            pass  # a full queue already holds wake-ups; anything else: it polls
        return True

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=_RECEIVE_SECONDS * 3)
        for sock in (self._socket, self._sender):
            if sock is not None:
                sock.close()
        if self._own is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._own)

    def _sender_socket(self) -> socket.socket | None:
        with self._lock:
            if self._sender is None and hasattr(socket, "AF_UNIX"):
                sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                sender.setblocking(False)
                self._sender = sender
            return self._sender

    def _receive(self) -> None:
        sock = self._socket
        assert sock is not None
        while not self._stop.is_set():
            try:
                message = sock.recv(_MAX_DATAGRAM)
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            self._on_wake([part for part in message.decode(errors="replace").split(",") if part])


def _rank(name: str, run_id: str) -> str:
    """Where the socket ``name`` comes in ``run_id``'s order."""
    return hashlib.md5(f"{name}{run_id}".encode(), usedforsecurity=False).hexdigest()


def _in_order(paths: list[str], run_id: str) -> list[str]:
    return sorted(paths, key=lambda path: _rank(os.path.basename(path), run_id))
