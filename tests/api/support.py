"""A real HTTP server on loopback for the API tests: uvicorn in a thread, httpx as the client."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from openseal.api import ApiSettings, create_app
from openseal.local_operator import LocalOperator, write_secret
from openseal.runtime.store import Store

#: the TLS context of every client of a test server (they speak plain HTTP): without it httpx
#: builds one per client, loading the CA bundle, a tenth of a second on a loaded machine
PLAIN_HTTP = ssl.create_default_context()


class LiveServer:
    """``create_app(settings, store=store)`` served on 127.0.0.1 at a free port."""

    def __init__(self, settings: ApiSettings, store: Store) -> None:
        self.settings = settings
        self.operator = settings.local_operator
        self.app = create_app(settings, store=store)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(
            self.app, log_level="warning", timeout_graceful_shutdown=2, lifespan="on"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise AssertionError("the API server did not start")
            time.sleep(0.01)
        if self.operator is not None:  # as `openseal serve --local-operator` does
            write_secret(self.settings.home, self.port, self.operator.secret)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
        self.sock.close()
        assert not self.thread.is_alive(), "the API server did not stop"

    def client(self, token: str | None = None, **options: Any) -> httpx.Client:
        """A client with ``token``; without one, the local operator's when the server serves
        one (its per-start secret), else anonymous."""
        if token is None and self.operator is not None:
            token = self.operator.secret
        return self.anonymous(token, **options)

    def anonymous(self, token: str | None = None, **options: Any) -> httpx.Client:
        """A client with ``token`` or none at all."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        options.setdefault("verify", PLAIN_HTTP)
        return httpx.Client(base_url=f"{self.url}/api/v1", headers=headers, timeout=30.0, **options)


def operated(home: str | Path, **options: Any) -> ApiSettings:
    """Settings of a server started for the local operator over ``home`` (as
    ``openseal serve --local-operator --home HOME``): the CLI there finds its secret."""
    return ApiSettings(home=Path(home), local_operator=LocalOperator.new(), **options)


@contextmanager
def serving(settings: ApiSettings, store: Store) -> Iterator[LiveServer]:
    server = LiveServer(settings, store)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The one error shape, with ``code``; returns the ``error`` object."""
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "message", "details"}, error
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"]
    assert "\n" not in error["message"] and "Traceback" not in response.text
    assert isinstance(error["details"], dict)
    return dict(error)
