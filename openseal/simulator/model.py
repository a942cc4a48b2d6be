"""A scripted chat-completions endpoint: the model stand-in for trying authoring locally.

``openseal simulator model --script answers.yaml`` answers ``POST /v1/chat/completions`` with
the script's answers, one per request, in order, as a real OpenAI-compatible server would
answer (a ``chat.completion`` document with usage). It is deterministic, so a page of docs
or a test can show exactly what the model drafts; it decides nothing and reads nothing of the
request but its size (the usage it reports is estimated at four characters a token).

The script is YAML or JSON: a list (or ``answers:`` holding a list) whose entries are each
answer's content — a string as it is, anything else as JSON (a structured output)::

    answers:
      - files:
          - {path: auditor.hcl, syntax: hcl, content: "agent \\"auditor\\" { ... }"}

A request past the last answer is ``500`` with a message saying the script ran out. With a
credential, every request must carry ``Authorization: Bearer <credential>`` (else ``401``).
"""

from __future__ import annotations

import hmac
import json
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from openseal.simulator.background import Background, SimulatorError

#: the largest request body read (a model request carries the whole prompt)
MAX_BODY = 16 * 1024 * 1024


def load_answers(path: Path) -> list[Any]:
    """The answers of a script file; :class:`SimulatorError` names what is wrong with it."""
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SimulatorError(f"cannot read the script {path}: {exc.strerror}") from None
    except (yaml.YAMLError, UnicodeDecodeError):
        raise SimulatorError(f"the script {path} is not YAML or JSON") from None
    answers = loaded.get("answers") if isinstance(loaded, dict) else loaded
    if not isinstance(answers, list) or not answers:
        raise SimulatorError(f"the script {path} holds no answers (a list, or `answers:` a list)")
    return answers


class ModelSimulator:
    """The endpoint on a background thread; a context manager that starts and stops it."""

    def __init__(
        self,
        answers: Sequence[Any],
        host: str = "127.0.0.1",
        port: int = 0,
        credential: str | None = None,
        *,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self._answers = list(answers)
        self._credential = credential
        self._log = log
        self._lock = threading.Lock()
        self._served = 0
        self._background = Background("model simulator", (host, port), lambda a: _Server(a, self))

    @property
    def url(self) -> str:
        """The base URL a model profile names: ``http://127.0.0.1:<port>/v1``."""
        host, port = self._background.address
        return f"http://{host}:{port}/v1"

    @property
    def served(self) -> int:
        """How many answers have been given."""
        with self._lock:
            return self._served

    def start(self) -> ModelSimulator:
        self._background.start()
        return self

    def stop(self) -> None:
        self._background.stop()

    def __enter__(self) -> ModelSimulator:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.stop()

    def answer(self, authorization: str | None, body: bytes) -> tuple[int, dict[str, Any]]:
        """The status and document for one request."""
        if self._credential is not None and not hmac.compare_digest(
            (authorization or "").encode(), f"Bearer {self._credential}".encode()
        ):
            return 401, _error("invalid_api_key", "a valid bearer token is required")
        with self._lock:
            if self._served >= len(self._answers):
                n = len(self._answers)
                return 500, _error("script_exhausted", f"the script's {n} answers are all given")
            answer = self._answers[self._served]
            self._served += 1
        content = answer if isinstance(answer, str) else json.dumps(answer)
        return 200, _completion(content, prompt_chars=len(body))

    def log(self, message: str) -> None:
        if self._log is not None:
            self._log(message)


def _completion(content: str, *, prompt_chars: int) -> dict[str, Any]:
    prompt, completion = -(-prompt_chars // 4), -(-len(content) // 4)
    return {
        "id": "chatcmpl-simulated",
        "object": "chat.completion",
        "created": 0,
        "model": "openseal-simulator",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "simulator", "code": code}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], simulator: ModelSimulator) -> None:
        self.simulator = simulator
        super().__init__(address, _Handler)

    def handle_error(self, request: object, client_address: object) -> None:
        self.simulator.log("a request ended with an error (the client probably disconnected)")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "openseal-model-simulator"
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, _error("not_found", "only POST /v1/chat/completions is served"))
            return
        if length > MAX_BODY:
            self._send(413, _error("too_large", "the request body is too large"))
            return
        body = self.rfile.read(length)
        self._send(*self.server.simulator.answer(self.headers.get("Authorization"), body))

    def do_GET(self) -> None:
        self._send(404, _error("not_found", "only POST /v1/chat/completions is served"))

    def _send(self, status: int, document: dict[str, Any]) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        # the request line and status only; headers (and so keys) are never logged
        self.server.simulator.log(format % args)
