"""``--log-format json``: one JSON object per line, secrets redacted, from a real server."""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from openseal.observability import logs
from openseal.skills.secrets import Secret, SecretFilter
from tests.runtime.support import eventually

LAUNCH = "import sys; from openseal.cli.main import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def test_records_are_json_lines_with_secrets_masked(restore_logging: None) -> None:
    out = io.StringIO()
    scrub = SecretFilter([Secret("s3cr3t-value-42")])
    logs.configure("json", "info", filters=[scrub], stream=out)
    log = logging.getLogger("openseal.test")
    log.warning("calling %s with Authorization: Bearer abc.def.ghi", "https://x.example")
    log.info("the context's key is s3cr3t-value-42 and api_key=zzz999")
    try:
        raise ValueError("token=t0k3n-in-an-exception")
    except ValueError:
        log.exception("it failed")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["level"] for line in lines] == ["warning", "info", "error"]
    assert {line["logger"] for line in lines} == {"openseal.test"}
    text = out.getvalue()
    for secret in ("abc.def.ghi", "s3cr3t-value-42", "zzz999", "t0k3n-in-an-exception"):
        assert secret not in text
    assert lines[0]["message"] == "calling https://x.example with Authorization: Bearer ***"
    assert "ValueError" in lines[2]["exception"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_serve_logs_json_lines(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    command = [
        sys.executable, "-c", LAUNCH, "serve", "--home", str(tmp_path / "home"),
        "--port", str(port), "--log-format", "json",
    ]  # fmt: skip
    stderr = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:

        def healthy() -> httpx.Response | None:
            if server.poll() is not None:
                raise AssertionError((tmp_path / "serve.log").read_text())
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
            except httpx.TransportError:
                return None

        answer = eventually(healthy, timeout=60)
        assert answer.status_code == 200
        httpx.get(
            f"http://127.0.0.1:{port}/api/v1/runs",
            headers={"Authorization": "Bearer not-a-real-token-123"},
            timeout=5,
        )
    finally:
        server.terminate()
        server.wait(timeout=60)
    lines = [line for line in (tmp_path / "serve.log").read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert records, lines
    assert all(set(r) >= {"at", "level", "logger", "message"} for r in records)
    assert any("GET /healthz" in r["message"] for r in records)
    assert "not-a-real-token-123" not in "\n".join(lines)
    # only the start-up banner is not JSON
    assert [line for line in lines if not line.startswith("{")] == [
        f"openseal API on http://127.0.0.1:{port}/api/v1 (no TLS)"
    ]
