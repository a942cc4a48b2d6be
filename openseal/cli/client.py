"""The CLI as a client of an ``openseal serve`` server (``--server URL`` / ``OPENSEAL_SERVER``).

Without a server an operational command opens the embedded store and acts as the local
operator, as it always has. With one, it sends the same request to the server's HTTP API with
a bearer token, and the server decides — the caller's roles, scopes and approval authority
are the server's, not the CLI's. The answers are read back into the same records the
embedded path returns, so what a command prints is the same either way.

The token comes from ``OPENSEAL_TOKEN``, or from ``--token-file`` (default
``~/.config/openseal/token`` when it exists), which must be readable by its owner only.
Before the first operation the client reads the server's capabilities, so an operation the
server does not serve is explained (what is missing and why) instead of failing late.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from openseal.cli.runtime import opened
from openseal.errors import OpenSealError, UsageError

if TYPE_CHECKING:
    import httpx

    from openseal.runtime.store import Store

SERVER_ENV = "OPENSEAL_SERVER"
TOKEN_ENV = "OPENSEAL_TOKEN"
DEFAULT_TOKEN_FILE = Path("~/.config/openseal/token")
#: how long one request may take before the client gives up (the server keeps its own limits)
TIMEOUT = 60.0

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")


class ServerError(OpenSealError):
    """The server refused the request; ``code`` is the API's stable error code."""

    def __init__(self, message: str, *, code: str, details: Mapping[str, Any] | None = None):
        super().__init__(message, code=code)
        self.details = dict(details or {})


class ServerUnreachable(OpenSealError):
    code = "unavailable"


def server_options(command: F) -> F:
    """``--server`` and ``--token-file`` for a command that can run against a server."""
    command = click.option(
        "--token-file", type=click.Path(path_type=Path, dir_okay=False), default=None,
        help=f"A file holding the bearer token, readable by its owner only (default: "
        f"${TOKEN_ENV}, else {DEFAULT_TOKEN_FILE} when it exists).",
    )(command)  # fmt: skip
    return click.option(
        "--server", default=None, envvar=SERVER_ENV, metavar="URL",
        help=f"Send the request to this openseal server instead of opening the embedded "
        f"store (default: ${SERVER_ENV}; without one the command acts on the store under "
        "--home as the local operator).",
    )(command)  # fmt: skip


class Remote:
    """An ``openseal serve`` API at ``url``, called with ``token``."""

    def __init__(self, url: str, token: str | None) -> None:
        import httpx

        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=f"{self.url}/api/v1", headers=headers, timeout=TIMEOUT)
        self._served: dict[str, str | None] | None = None

    def close(self) -> None:
        self._http.close()

    def call(
        self,
        method: str,
        path: str,
        *,
        operation: str,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
    ) -> Any:
        """The JSON answer of ``method path``, after checking the server serves ``operation``."""
        self.require(operation)
        query = {k: v for k, v in (params or {}).items() if v is not None}
        response = self._send(method, path, params=query, json=body)
        if response.status_code >= 400:
            raise _refusal(response)
        return response.json()

    def require(self, operation: str) -> None:
        """Refuse, saying why, an operation the server's capabilities do not serve."""
        served = self._operations()
        if operation not in served:
            raise UsageError(
                f"the server at {self.url} does not offer {operation} (a newer or older "
                "openseal?); `openseal capabilities` lists what it serves"
            )
        reason = served[operation]
        if reason is not None:
            raise ServerError(
                f"the server at {self.url} does not serve {operation}: {reason}",
                code="not_served",
            )

    def _operations(self) -> dict[str, str | None]:
        """Each operation the server knows → None when served, else why not."""
        if self._served is None:
            response = self._send("GET", "/capabilities")
            if response.status_code >= 400:
                raise _refusal(response)
            self._served = {
                operation: None if item.get("available") else str(item.get("reason") or "")
                for item in response.json().get("capabilities", [])
                for operation in item.get("operations", [])
            }
        return self._served

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        import httpx

        try:
            return self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ServerUnreachable(
                f"cannot reach the server at {self.url} ({exc.__class__.__name__}: {exc})"
            ) from None


def _refusal(response: httpx.Response) -> OpenSealError:
    try:
        error = response.json()["error"]
        return ServerError(str(error["message"]), code=str(error["code"]),
                           details=error.get("details"))  # fmt: skip
    except (ValueError, KeyError, TypeError):
        return ServerError(
            f"the server answered HTTP {response.status_code} without an error object",
            code="internal_error",
        )


@dataclass(frozen=True)
class Connection:
    """Where an operational command acts: the embedded store, or a server."""

    store: Store | None = None
    remote: Remote | None = None

    @property
    def local(self) -> Store:
        assert self.store is not None
        return self.store


@contextmanager
def connected(
    home: Path, server: str | None, token_file: Path | None, *, create: bool = False
) -> Iterator[Connection]:
    """A :class:`Connection` to ``server`` when one is named, else to the store under ``home``
    (made there first when ``create`` says the command may set one up)."""
    if not server:
        with opened(home, create=create) as store:
            yield Connection(store=store)
        return
    if not server.startswith(("http://", "https://")):
        raise UsageError(f"--server takes an http:// or https:// URL, got {server!r}")
    remote = Remote(server, _token(token_file))
    try:
        yield Connection(remote=remote)
    finally:
        remote.close()


def _token(token_file: Path | None) -> str | None:
    if token_file is None:
        if os.environ.get(TOKEN_ENV):
            return os.environ[TOKEN_ENV].strip()
        default = DEFAULT_TOKEN_FILE.expanduser()
        if not default.exists():
            return None
        token_file = default
    try:
        mode = token_file.stat().st_mode
        text = token_file.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise UsageError(f"cannot read the token file {token_file}: {exc.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UsageError(
            f"the token file {token_file} is readable by others; `chmod 600 {token_file}`"
        )
    if not text:
        raise UsageError(f"the token file {token_file} is empty")
    return text


def records(kind: type[R], document: Any) -> tuple[R, ...]:
    """``document`` (a JSON list) read back into ``kind`` records."""
    return _adapter(tuple[kind, ...]).validate_python(document)  # type: ignore[valid-type, no-any-return]


def record(kind: type[R], document: Any) -> R:
    """``document`` (a JSON object) read back into a ``kind`` record."""
    return _adapter(kind).validate_python(document)  # type: ignore[arg-type, no-any-return]


@cache
def _adapter(kind: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(kind)


def complete_remote_id(remote: Remote, kind: str, reference: str) -> str:
    """``reference`` completed as :func:`openseal.runtime.service.complete_id` does, among the
    newest ``kind`` records the caller may see on the server."""
    from openseal.runtime.service import choose_id, id_prefix

    prefix = id_prefix(reference)
    if prefix is None:
        return reference
    plural = f"{kind}s"
    listed = remote.call("GET", f"/{plural}", operation=f"{plural}.list", params={"limit": 1000})
    ids = [str(item["id"]) for item in listed.get(plural, [])]
    return choose_id(kind, reference, [i for i in ids if i.startswith(prefix)][:3])
