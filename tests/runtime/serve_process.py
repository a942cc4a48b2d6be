"""``openseal serve`` as a real process for the process tests: started on a free loopback port
with the local operator and external workers, its API address and secret read from what it
prints, killed afterwards."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: bound on the server stopping
GUARD = 120.0


@dataclass(frozen=True)
class Served:
    process: subprocess.Popen[bytes]
    #: the API's base URL (``…/api/v1``)
    api: str
    #: the local operator's bearer secret
    secret: str

    @property
    def root(self) -> str:
        """Where ``/healthz`` and ``/readyz`` are."""
        return self.api.removesuffix("/api/v1")


@contextmanager
def serve_process(
    spawn: Callable[..., subprocess.Popen[bytes]], home: Path, logs: Callable[[], str]
) -> Iterator[Served]:
    """``spawn(*args, log=name)`` starts ``openseal *args`` with stdout piped (the store's
    environment is the caller's); ``logs()`` is shown if the server stops before its address."""
    server = spawn("serve", "--home", str(home), "--port", "0", "--output", "json",
                   "--log-level", "warning", "--local-operator", "--external-workers",
                   log="serve")  # fmt: skip
    try:
        assert server.stdout is not None
        printed = b""
        while not printed.startswith(b"{") or not printed.rstrip().endswith(b"}"):
            line = server.stdout.readline()
            assert line, logs()  # the server stopped before printing its address
            printed += line
        address = json.loads(printed)
        secret = Path(address["local_operator_secret"]).read_text(encoding="utf-8").strip()
        yield Served(server, str(address["url"]).rstrip("/"), secret)
    finally:
        server.kill()
        server.wait(timeout=GUARD)
