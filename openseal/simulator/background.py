"""What every simulator shares: its error, and an HTTP server answering on a background thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import ThreadingHTTPServer

from openseal.errors import OpenSealError


class SimulatorError(OpenSealError):
    """The simulator was misused (bad fault setting, port taken, not started)."""

    code = "simulator_error"


class Background:
    """``make(address)``'s server, serving on a daemon thread between :meth:`start` and
    :meth:`stop`; ``name`` names the thread and the simulator in messages."""

    def __init__(
        self,
        name: str,
        address: tuple[str, int],
        make: Callable[[tuple[str, int]], ThreadingHTTPServer],
    ) -> None:
        self.name = name
        self._address = address
        self._make = make
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def address(self) -> tuple[str, int]:
        """Where it listens; the port is known once started."""
        if self._server is None:
            raise SimulatorError(f"the {self.name} is not running")
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        if self._server is not None:
            return
        host, port = self._address
        try:
            self._server = self._make(self._address)
        except OSError as exc:
            raise SimulatorError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=self.name.replace(" ", "-"),
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=10)
        self._server, self._thread = None, None
