"""A TCP proxy the tests control, between a store and its PostgreSQL server.

Faults are caused for real: :meth:`TcpProxy.sever` closes every open connection in both
directions (what a network blip, a failover or a killed backend looks like to the client),
:meth:`TcpProxy.refuse` makes new connections fail until switched off, and
:meth:`TcpProxy.mute` drops what the server sends (a reply lost on the way: a client that sent
``COMMIT`` waits for an answer, though the server committed), and :meth:`TcpProxy.blackhole`
is a silent partition: every connection, open or new, is kept open and nothing is forwarded
either way (a NAT that forgot the connection, a primary that vanished without a reset). The
server itself is never stopped.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from types import TracebackType

import sqlalchemy as sa


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._server.getsockname()[1])
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._refusing = False
        self._muted = False
        self._blackholed = False
        #: connections accepted while blackholed: held open, never forwarded
        self._swallowed: list[socket.socket] = []
        self._closed = False
        #: connections accepted so far (each new database session is one)
        self.accepted = 0
        #: connections closed at once because the proxy was refusing
        self.refused = 0
        #: bytes a client sent that were never forwarded (blackholed); a statement sent into
        #: the blackhole makes this grow
        self.dropped_up = 0
        self._thread = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)
        self._thread.start()

    @classmethod
    def for_url(cls, url: str) -> tuple[TcpProxy, str]:
        """A proxy in front of ``url``'s server, and the URL that goes through it."""
        parsed = sa.make_url(url)
        proxy = cls(parsed.host or "127.0.0.1", parsed.port or 5432)
        through = parsed.set(host="127.0.0.1", port=proxy.port)
        return proxy, through.render_as_string(hide_password=False)

    def sever(self) -> int:
        """Close every open connection now; returns how many were cut."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for client, upstream in pairs:
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()
        return len(pairs)

    def refuse(self, refusing: bool = True) -> None:
        """While refusing, new connections are closed as soon as they are accepted."""
        with self._lock:
            self._refusing = refusing

    def mute(self, muted: bool = True) -> None:
        """While muted, what the server sends on any connection is read and dropped."""
        with self._lock:
            self._muted = muted

    def blackhole(self, on: bool = True) -> None:
        """While on, nothing is forwarded either way on any connection, and a new connection is
        accepted and never answered; none is closed. Connections accepted meanwhile stay dead
        when it ends (their client never got an answer)."""
        with self._lock:
            self._blackholed = on

    def _passes(self) -> bool:
        with self._lock:
            return not self._muted and not self._blackholed

    def _passes_up(self) -> bool:
        with self._lock:
            return not self._blackholed

    def _drop_up(self, size: int) -> None:
        with self._lock:
            self.dropped_up += size

    def open_connections(self) -> int:
        with self._lock:
            return len(self._pairs)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._server.close()
        self.sever()
        with self._lock:
            swallowed, self._swallowed = self._swallowed, []
        for sock in swallowed:
            with contextlib.suppress(OSError):
                sock.close()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            with self._lock:
                refusing, swallowing = self._refusing, self._blackholed
                self.refused += refusing
                if swallowing and not refusing:
                    self._swallowed.append(client)
            if refusing:
                client.close()
                continue
            if swallowing:
                threading.Thread(
                    target=_pump, args=(client, None, _never, self._drop_up), daemon=True
                ).start()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, upstream))
                self.accepted += 1
            for source, sink, passes, dropped in (
                (client, upstream, self._passes_up, self._drop_up),
                (upstream, client, self._passes, _ignore),
            ):
                threading.Thread(
                    target=_pump, args=(source, sink, passes, dropped), daemon=True
                ).start()


def _never() -> bool:
    return False


def _ignore(_size: int) -> None:
    pass


def _pump(
    source: socket.socket,
    sink: socket.socket | None,
    passes: Callable[[], bool],
    dropped: Callable[[int], None],
) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            if sink is not None and passes():
                sink.sendall(data)
            else:
                dropped(len(data))
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
