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

    def _handle(self) -> None:
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
