"""A TCP proxy the tests control, between a store and its PostgreSQL server.

Faults are caused for real: :meth:`TcpProxy.sever` closes every open connection in both
directions (what a network blip, a failover or a killed backend looks like to the client),
:meth:`TcpProxy.refuse` makes new connections fail until switched off, and
:meth:`TcpProxy.mute` drops what the server sends (a reply lost on the way: a client that sent
``COMMIT`` waits for an answer, though the server committed). The server itself is never
stopped.
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
        self._closed = False
        #: connections accepted so far (each new database session is one)
        self.accepted = 0
        #: connections closed at once because the proxy was refusing
        self.refused = 0
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

    def _passes(self) -> bool:
        with self._lock:
            return not self._muted

    def open_connections(self) -> int:
        with self._lock:
            return len(self._pairs)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._server.close()
        self.sever()

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
                refusing = self._refusing
                self.refused += refusing
            if refusing:
                client.close()
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
            for source, sink, passes in (
                (client, upstream, _always),
                (upstream, client, self._passes),
            ):
                threading.Thread(target=_pump, args=(source, sink, passes), daemon=True).start()


def _always() -> bool:
    return True


def _pump(source: socket.socket, sink: socket.socket, passes: Callable[[], bool]) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            if passes():
                sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
