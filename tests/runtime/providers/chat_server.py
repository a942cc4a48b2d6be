"""A local HTTP server that speaks enough of the chat-completions protocol to test a client.

Each test scripts the replies (a normal completion, tool calls, a ``429`` with ``Retry-After``,
a ``500``, a malformed body, a slow answer, a streamed answer, and the faults of a real network:
a connection dropped after the request was read, a stream cut in the middle) and then asserts
on :attr:`ChatServer.requests`, every request the server received, in order::

    with ChatServer() as server:
        server.reply(Reply.status(429, headers={"Retry-After": "1"}), Reply.ok(completion("hi")))
        ...  # point the client at server.base_url
        assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2

Replies are served in order; the last one repeats once the script runs out, so
``server.reply(Reply.status(429))`` means "rate limited forever".
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer: status, headers, raw body and an optional delay before answering."""

    code: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    #: close the connection after reading the request, without answering
    drop: bool = False
    #: server-sent events, each sent as one chunk of a chunked ``text/event-stream`` body
    events: tuple[bytes, ...] | None = None
    #: with ``events``: close the connection after this many events, mid-body
    cut_after: int | None = None

    @classmethod
    def ok(cls, document: dict[str, Any], *, delay: float = 0.0) -> Reply:
        return cls(200, json.dumps(document).encode(), {"Content-Type": "application/json"}, delay)

    @classmethod
    def status(
        cls, code: int, message: str = "scripted failure", *, headers: dict[str, str] | None = None
    ) -> Reply:
        body = json.dumps({"error": {"message": message, "type": "scripted", "code": None}})
        return cls(code, body.encode(), {"Content-Type": "application/json", **(headers or {})})

    @classmethod
    def raw(cls, body: bytes, *, content_type: str = "application/json") -> Reply:
        return cls(200, body, {"Content-Type": content_type})

    @classmethod
    def dropped(cls) -> Reply:
        """Read the request, then close the connection: the reply is lost."""
        return cls(drop=True)

    @classmethod
    def stream(cls, chunks: list[dict[str, Any]], *, cut_after: int | None = None) -> Reply:
        """``chunks`` as server-sent events, then ``data: [DONE]``; with ``cut_after`` the
        connection is closed after that many chunks, in the middle of the body."""
        events = tuple(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
        if cut_after is None:
            events += (b"data: [DONE]\n\n",)
        return cls(200, headers={"Content-Type": "text/event-stream"}, events=events,
                   cut_after=cut_after)  # fmt: skip


@dataclass(frozen=True)
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    #: when it arrived (``time.monotonic()``), for tests that count calls over time
    at: float = field(default_factory=time.monotonic)

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), None)


def completion(
    content: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: tuple[int, int] = (10, 5),
    model: str = "scripted-model",
) -> dict[str, Any]:
    """A chat-completion body; ``tool_calls`` entries are ``{"id", "name", "arguments"}``
    where ``arguments`` is the raw JSON text the model produced."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments"]},
            }
            for call in tool_calls
        ]
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        },
    }


def stream_chunks(
    content: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: tuple[int, int] | None = (10, 5),
    piece: int = 8,
) -> list[dict[str, Any]]:
    """A streamed completion as chat-completion chunks: the content or each tool call's
    arguments in pieces of ``piece`` characters, a chunk with the finish reason, and (when
    ``usage`` is given) the usage chunk that ``stream_options.include_usage`` asks for."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-stream",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "scripted-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": None if tool_calls else ""})]
    for i in range(0, len(content or ""), piece):
        chunks.append(chunk({"content": (content or "")[i : i + piece]}))
    for index, call in enumerate(tool_calls or ()):
        opening = {"index": index, "id": call["id"], "type": "function",
                   "function": {"name": call["name"], "arguments": ""}}  # fmt: skip
        chunks.append(chunk({"tool_calls": [opening]}))
        text = call["arguments"]
        for i in range(0, len(text), piece):
            part = {"index": index, "function": {"arguments": text[i : i + piece]}}
            chunks.append(chunk({"tool_calls": [part]}))
    chunks.append(chunk({}, "tool_calls" if tool_calls else "stop"))
    if usage is not None:
        chunks.append(
            {
                "id": "chatcmpl-stream",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "scripted-model",
                "choices": [],
                "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                          "total_tokens": sum(usage)},
            }
        )  # fmt: skip
    return chunks


class ChatServer:
    """A threaded server on 127.0.0.1 with an ephemeral port; use it as a context manager."""

    def __init__(self, *, require_key: str | None = None) -> None:
        #: with a key, a request without ``Authorization: Bearer <key>`` is answered 401, as a
        #: hosted endpoint does, and does not use up a scripted reply
        self.require_key = require_key
        self.requests: list[Received] = []
        self._script: list[Reply] = [Reply.status(500, "no reply scripted")]
        self._lock = threading.Lock()
        # Set on stop so a slow reply stops waiting instead of holding a thread.
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def reply(self, *replies: Reply) -> None:
        """Script the next replies (the last repeats)."""
        with self._lock:
            self._script = list(replies)

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def _next(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            if (
                self.require_key
                and received.header("Authorization") != f"Bearer {self.require_key}"
            ):
                return Reply.status(401, "Incorrect API key provided")
            return self._script.pop(0) if len(self._script) > 1 else self._script[0]


def _handler_for(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            reply = server._next(Received("POST", self.path, dict(self.headers.items()), body))
            if reply.delay and server._stopping.wait(reply.delay):
                return
            if reply.drop:
                self._close()
                return
            if reply.events is not None:
                self._stream(reply)
                return
            try:
                self.send_response(reply.code)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
            except OSError:
                pass  # the client gave up (a timeout test): nothing left to answer

        def _stream(self, reply: Reply) -> None:
            assert reply.events is not None
            try:
                self.send_response(reply.code)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for sent, event in enumerate(reply.events):
                    if reply.cut_after is not None and sent == reply.cut_after:
                        self.wfile.flush()
                        self._close()
                        return
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass

        def _close(self) -> None:
            """Close the connection at once: the client sees it end mid-exchange."""
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests assert on ``requests``, not on a log."""

    return Handler
