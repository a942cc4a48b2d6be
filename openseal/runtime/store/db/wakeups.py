"""SQLite wake-ups between processes: one datagram per commit that made work.

PostgreSQL tells every worker process about new work with ``NOTIFY``; SQLite has nothing
like it, so a worker in another process used to find work only at its next poll. Here each
process that waits for work binds a Unix datagram socket in ``<home>/wake/``, and a commit
that made runs runnable sends their ids to every other socket there, and each receiving process
wakes one idle thread per run (as ``NOTIFY`` does); a datagram naming no run (too many to fit)
wakes them all. A datagram is only a hint — the woken worker claims the run if it is still
runnable, else sleeps on — so a lost or extra one changes nothing but latency, and polling
stays as the fallback (a socket path too long for ``AF_UNIX``, a platform without Unix
sockets, a process that crashed and left its socket file behind: the next sender removes that
file).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

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
        """Tell every other process waiting on this store that ``run_ids`` became runnable
        (best effort, never raises)."""
        try:
            entries = list(os.scandir(self.directory))
        except OSError:
            return  # nobody has waited here yet
        sender = self._sender_socket()
        if sender is None:
            return
        message = ",".join(run_ids).encode()
        if len(message) > _MAX_DATAGRAM:
            message = b""  # too many to name: every receiver looks for work
        for entry in entries:
            if not entry.name.endswith(".sock") or (self._own and entry.path == str(self._own)):
                continue
            try:
                sender.sendto(message, entry.path)
            except (ConnectionRefusedError, FileNotFoundError):
                with contextlib.suppress(OSError):  # its process is gone
                    os.unlink(entry.path)
            except OSError:
                pass  # a full queue already holds a wake-up; anything else: it polls

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
