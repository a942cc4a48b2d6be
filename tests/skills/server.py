"""A local HTTP server for adapter and runbook tests: 127.0.0.1, a free port, threaded."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: object


@dataclass
class Server:
    url: str
    requests: list[Seen] = field(default_factory=list)
    #: how each trickled reply (``/drip``, ``/drip-once``) ended: ``cut`` (the client hung up)
    #: or ``finished``
    drips: list[str] = field(default_factory=list)
    #: paths of requests that came while another was still being answered
    overlapped: list[str] = field(default_factory=list)
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        pass

    def _reply(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _drip(self, seconds: float) -> None:
        """Answer 200 with a body that comes one byte every 0.1 s for ``seconds``."""
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(10 * int(seconds) + 100))
        self.end_headers()
        ends = time.monotonic() + seconds
        try:
            while time.monotonic() < ends:
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:
            self.server.record.drips.append("cut")
            return
        self.server.record.drips.append("finished")

    def _handle(self) -> None:
        record = self.server.record
        with record.lock:
            if record.in_flight:
                record.overlapped.append(self.path)
            record.in_flight += 1
        try:
            self._answer()
        finally:
            with record.lock:
                record.in_flight -= 1

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: object = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode()
        url = urlsplit(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.record.requests.append(Seen(self.command, url.path, headers, body))
        parts = url.path.strip("/").split("/")
        query = parse_qs(url.query)
        if parts[0] == "status":
            self._reply(int(parts[1]), {"status": int(parts[1])})
        elif parts[0] == "slow":
            time.sleep(min(float(query.get("seconds", ["1"])[0]), 5.0))
            self._reply(200, {"slept": True})
        elif parts[0] == "drip" or (parts[0] == "drip-once" and not self.server.record.drips):
            self._drip(float(query.get("seconds", ["30"])[0]))
        elif parts[0] == "drip-once":
            self._reply(200, {"id": "O-1", "priority": 1, "items": []})
        elif parts[0] == "orders":
            order_id = parts[1]
            priority = 5 if order_id.startswith("urgent") else 1
            self._reply(200, {"id": order_id, "priority": priority, "items": [3, 1, 2]})
        elif parts[0] == "echo":
            self._reply(200, {"method": self.command, "body": body, "headers": headers})
        else:
            self._reply(404, {"error": "not found"})

    do_GET = _handle
    do_POST = _handle
    do_PUT = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    record: Server

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that timed out and hung up is expected in these tests


@contextmanager
def serve() -> Iterator[Server]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    host, port = httpd.server_address[:2]
    httpd.record = Server(f"http://{host}:{port}")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.record
    finally:
        httpd.shutdown()
        httpd.server_close()
