"""PostgreSQL wake-ups: one ``LISTEN`` session per store, on a connection outside the pool.

A LISTEN session needs autocommit and lives as long as the process waits for work, so it
must never be a pooled connection, which the pool could hand to a transaction, reset or
close while notifications arrive on it. The
listener therefore takes a connection from the engine and *detaches* it (the pool forgets
it), owns it on one thread, and passes each notification's payload (the run that became
runnable) to a callback, which wakes one idle worker thread for it. When the session is lost
(server restart, failover, a dropped connection, an idle-session timeout) the thread reconnects
with capped backoff and calls the callback once with no payload, which wakes everyone:
notifications sent while it was away are gone. A session that stays quiet is asked a
``SELECT 1`` every :data:`PING_SECONDS`: a session lost without a word (a silent partition)
answers nothing, and the reply deadline (deadlines.py) ends it like any other loss.

The session listens on the channels :class:`ListenSession` names and, once it listens, takes
the session's name as its ``application_name``: that is how the notifying side finds the
sessions listening (wake_choice.py). Statements the callback asks for with :meth:`send` (a run
passed on to another process) go out on the same session between two waits.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from openseal.runtime.store.db import poolers

log = logging.getLogger("openseal.listener")

#: how long one wait for notifications lasts before the thread checks whether to stop
POLL_SECONDS = 1.0
#: backoff between reconnection attempts, doubling up to the cap
RETRY_FIRST, RETRY_CAP = 0.2, 5.0
#: how long the first caller waits for the session to be listening
START_SECONDS = 5.0
#: a session that heard nothing for this long is pinged (with the reply deadline)
PING_SECONDS = 30.0


@dataclass(frozen=True)
class ListenSession:
    """What one listening session listens on (``channels``) and is called (``name``, its
    ``application_name``, which may be one of the channels)."""

    channels: tuple[str, ...]
    name: str

    def __post_init__(self) -> None:
        for channel in (*self.channels, self.name):
            if not channel.isidentifier():
                raise ValueError(f"invalid channel name {channel!r}")


class NotificationListener:
    """Listens on the channels ``session()`` names (asked at every (re)connection) and calls
    ``on_notify(payload)`` for each notification (and ``on_notify(None)`` once after every
    (re)connection). Start it lazily with :meth:`start`; :meth:`close` stops it."""

    def __init__(
        self,
        engine: sa.Engine,
        session: Callable[[], ListenSession],
        on_notify: Callable[[str | None], None],
    ) -> None:
        self.engine = engine
        self.session = session
        self.on_notify = on_notify
        #: statements (text, parameters) to send on the session between two waits
        self._outbox: deque[tuple[str, dict[str, Any]]] = deque()
        #: the session's name while it listens (None: not listening)
        self.listening_as: str | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._first_attempt = threading.Event()
        #: times the session was (re)established, and its connection while it lasts; tests
        #: read them
        self.sessions = 0
        self.connection: Any = None

    def start(self) -> None:
        """Start the listening thread if it is not running; the first call waits (briefly)
        until the session listens, so work committed after it returns is never missed."""
        with self._lock:
            if self._thread is None and not self._stopping.is_set():
                self._thread = threading.Thread(
                    target=self._run, name="openseal-listener", daemon=True
                )
                self._thread.start()
        self._first_attempt.wait(START_SECONDS)

    def send(self, statement: str, params: dict[str, Any]) -> None:
        """Send ``statement`` on the listening session between two waits (best effort: lost
        with the session)."""
        self._outbox.append((statement, params))

    def close(self) -> None:
        self._stopping.set()
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(POLL_SECONDS * 3)

    def _run(self) -> None:
        delay = RETRY_FIRST
        while not self._stopping.is_set():
            try:
                conn = self._connect()
            except Exception as exc:  # unreachable for now: try again later
                if self._stopping.is_set():  # closed while connecting: nothing to say
                    self._first_attempt.set()
                    break
                log.warning("cannot listen for work: %s", _one_line(exc))
                self._first_attempt.set()
                self._stopping.wait(delay)
                delay = min(delay * 2, RETRY_CAP)
                continue
            delay = RETRY_FIRST
            self.sessions += 1
            self._first_attempt.set()
            self.connection = conn
            try:
                # Whatever was notified while no session listened is lost: look once.
                self.on_notify(None)
                self._listen(conn)
            except Exception as exc:
                if not self._stopping.is_set():
                    log.warning("listening for work stopped: %s; reconnecting", _one_line(exc))
            finally:
                self.connection = self.listening_as = None
                self._outbox.clear()
                _close_quietly(conn)

    def _connect(self) -> Any:
        raw = self.engine.raw_connection()
        conn = raw.driver_connection
        # From here on the pool no longer knows this connection: closing it really closes
        # it, and it can never be handed to a transaction.
        raw.detach()
        if conn is None:  # pragma: no cover - a psycopg connection always has one
            raise RuntimeError("the database driver gave no connection")
        try:
            session = self.session()
            conn.autocommit = True
            poolers.listen_for_notifications(conn)
            for channel in session.channels:
                conn.execute(f"LISTEN {channel}")
            # Named only once it listens: a sender that finds the name reaches the session.
            conn.execute("SELECT set_config('application_name', %s, false)", (session.name,))
        except BaseException:
            _close_quietly(conn)
            raise
        self.listening_as = session.name
        return conn

    def _listen(self, conn: Any) -> None:
        heard = time.monotonic()
        while not self._stopping.is_set():
            # Back after the first packet of notifications, to send what they asked for.
            for notification in conn.notifies(timeout=POLL_SECONDS, stop_after=1):
                heard = time.monotonic()
                self.on_notify(notification.payload or None)
            while self._outbox:
                statement, params = self._outbox.popleft()
                conn.execute(statement, params)
            if conn.closed:
                raise ConnectionError("the listening connection closed")
            if time.monotonic() - heard >= PING_SECONDS:
                conn.execute("SELECT 1")  # raises once the reply deadline passes unanswered
                heard = time.monotonic()


def _close_quietly(conn: Any) -> None:
    try:
        conn.close()
    except Exception as exc:  # already broken: nothing left to release
        log.debug("closing the listening connection: %s", exc)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
