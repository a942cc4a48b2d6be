"""The CLI as a client of an ``openseal serve`` server (``--server URL`` / ``OPENSEAL_SERVER``).

Without a server an operational command opens the embedded store and acts as the local
operator, as it always has. With one, it sends the same request to the server's HTTP API with
a bearer token, and the server decides — the caller's roles, scopes and approval authority
are the server's, not the CLI's. The answers are read back into the same records the
embedded path returns, so what a command prints is the same either way.

The token comes from ``OPENSEAL_TOKEN``, or from ``--token-file`` (default
``~/.config/openseal/token`` when it exists), which must be readable by its owner only.
Without one, a server on this machine started with ``--local-operator`` over the same
``--home`` is called as the local operator, with the secret it wrote there.
Before the first operation the client reads the server's capabilities, so an operation the
server does not serve is explained (what is missing and why) instead of failing late.

A command says once what it does on either side: :meth:`Connection.ask` takes the service
call for the store and the API operation for a server, and returns the same record.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import quote

import click

from openseal.cli.runtime import opened, opened_for_reading
from openseal.errors import OpenSealError, UsageError

if TYPE_CHECKING:
    import httpx

    from openseal.runtime import service
    from openseal.runtime.store import Reads, Store

SERVER_ENV = "OPENSEAL_SERVER"
TOKEN_ENV = "OPENSEAL_TOKEN"
DEFAULT_TOKEN_FILE = Path("~/.config/openseal/token")
#: how long one request may take before the client gives up (the server keeps its own limits)
TIMEOUT = 60.0
#: the most items one page of a list route holds
MAX_PAGE = 1000

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")
#: what a connection's store is: the store itself, or what a list reads (``Reads``)
S = TypeVar("S")


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

        from openseal.skills.http import tls_context

        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=f"{self.url}/api/v1", headers=headers, timeout=TIMEOUT, verify=tls_context()
        )
        self._served: dict[str, str | None] | None = None

    def close(self) -> None:
        self._http.close()

    def call(
        self,
        method: str,
        path: Sequence[str],
        *,
        operation: str,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """The JSON answer of ``method`` on ``path`` (segments, each quoted, so an id holding
        ``/``, ``?`` or ``..`` stays one segment), after checking the server serves
        ``operation``."""
        self.require(operation)
        query = {k: v for k, v in (params or {}).items() if v is not None}
        response = self._send(
            method, url_path(path), params=query, json=body, headers=dict(headers or {})
        )
        if response.status_code >= 400:
            raise _refusal(response)
        answer = response.json()
        if response.headers.get("Idempotent-Replayed") == "true" and "created" in answer:
            # the first answer to this key again: this request created nothing, as on the store
            answer["created"] = False
        return answer

    def stream(
        self, path: Sequence[str], *, operation: str, params: Mapping[str, Any] | None = None
    ) -> Iterator[tuple[str, Any]]:
        """The Server-Sent Events of ``GET path`` as (event type, JSON data), until the server
        closes the stream (a read may wait as long as the stream stays quiet)."""
        import httpx

        self.require(operation)
        try:
            with self._http.stream(
                "GET", url_path(path), params=dict(params or {}),
                timeout=httpx.Timeout(TIMEOUT, read=None),
            ) as response:  # fmt: skip
                if response.status_code >= 400:
                    response.read()
                    raise _refusal(response)
                kind, data = "message", ""
                for line in response.iter_lines():
                    if line.startswith("event:"):
                        kind = line[6:].strip()
                    elif line.startswith("data:"):
                        data += line[5:].strip()
                    elif not line and data:
                        yield kind, json.loads(data)
                        kind, data = "message", ""
        except httpx.HTTPError as exc:
            raise ServerUnreachable(
                f"lost the server at {self.url} ({exc.__class__.__name__}: {exc})"
            ) from None

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


def url_path(segments: Sequence[str]) -> str:
    """``/a/b`` from segments, each percent-quoted whole (``?``, ``#``, ``%``, ``.`` and ``..``
    too), so what a caller typed never names another route."""
    return "".join(f"/{_segment(s)}" for s in segments)


def _segment(text: str) -> str:
    if "/" in text:
        # servers decode %2F before routing: refused here rather than sent as another path
        raise UsageError(f"{text!r} holds '/': no id or name does")
    quoted = quote(text, safe="")
    return quoted.replace(".", "%2E") if quoted.strip(".") == "" else quoted


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
class Connection(Generic[S]):
    """Where an operational command acts: the embedded store, or a server."""

    store: S | None = None
    remote: Remote | None = None

    @property
    def local(self) -> S:
        assert self.store is not None
        return self.store

    def ask(
        self,
        local: Callable[[S], R],
        operation: str,
        *path: str,
        method: str = "GET",
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        read: Callable[[Any], R] = lambda answer: answer,
    ) -> R:
        """``local(store)`` on the store; on a server, ``read`` of the answer to ``operation``
        (``method`` on ``path``, with ``params`` or a JSON ``body``)."""
        if self.remote is None:
            return local(self.local)
        answer = self.remote.call(
            method, path, operation=operation, params=params, body=body, headers=headers
        )
        return read(answer)

    def id(self: Connection[Store], kind: str, reference: str) -> str:
        """``reference`` completed to the one ``kind`` id it prefixes, among the store's or,
        on a server, among those the caller may see."""
        if self.remote is not None:
            return complete_remote_id(self.remote, kind, reference)
        from openseal.runtime.service import complete_id

        return complete_id(self.local, kind, reference)

    def acting(self, actor: str) -> service.Caller:
        """Who acts on the store: ``actor``, on this machine. On a server the token's principal
        acts, so naming another actor there is refused rather than ignored."""
        from openseal.runtime.service import LOCAL_OPERATOR, Caller

        if self.remote is not None and actor != LOCAL_OPERATOR:
            raise UsageError(
                f"--actor {actor} acts only on the store; with --server the token's principal "
                "acts (unset OPENSEAL_ACTOR)"
            )
        return Caller(actor, local=True)


@contextmanager
def connected(
    home: Path,
    server: str | None,
    token_file: Path | None,
    *,
    create: bool = False,
    read_only: bool = False,
) -> Iterator[Connection[Store]]:
    """A :class:`Connection` to ``server`` when one is named, else to the store under ``home``
    (made there first when ``create`` says the command may set one up; opened read-only for a
    command that only reads, ``read_only``)."""
    if not server:
        with opened(home, create=create, read_only=read_only) as store:
            yield Connection(store=store)
        return
    with _remote(server, token_file, home) as remote:
        yield Connection(remote=remote)


@contextmanager
def reading(home: Path, server: str | None, token_file: Path | None) -> Iterator[Connection[Reads]]:
    """As :func:`connected`, for a command that lists runs and names their workflows: on the
    embedded SQLite store it reads without SQLAlchemy (:func:`opened_for_reading`)."""
    if not server:
        with opened_for_reading(home) as reads:
            yield Connection(store=reads)
        return
    with _remote(server, token_file, home) as remote:
        yield Connection(remote=remote)


@contextmanager
def _remote(server: str, token_file: Path | None, home: Path) -> Iterator[Remote]:
    if not server.startswith(("http://", "https://")):
        raise UsageError(f"--server takes an http:// or https:// URL, got {server!r}")
    remote = Remote(server, _token(token_file) or local_operator_secret(server, home))
    try:
        yield remote
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


def local_operator_secret(server: str, home: Path) -> str | None:
    """The secret of a server on this machine started with ``--local-operator`` over ``home``
    (``<home>/local-operator-<port>.token``), for a loopback ``server`` URL; else None."""
    from urllib.parse import urlsplit

    from openseal.local_operator import read_secret

    parts = urlsplit(server)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UsageError(f"--server {server!r} has no valid port") from None
    if parts.hostname not in ("127.0.0.1", "::1", "localhost"):
        return None
    return read_secret(home, port)


#: a list's filters as the service names them → as the API's query names them
_QUERY_NAMES = {"run_id": "run", "statuses": "status"}


def listed(
    at: Connection[Any], kind: type[R], plural: str, local: Callable[..., Sequence[R]], **query: Any
) -> Sequence[R]:
    """The ``plural`` list (``runs``, ``approvals``, ...) filtered by ``query``: ``local(store,
    **query)`` on the store, ``GET /{plural}`` with the same filters on a server."""
    from openseal.runtime.service import since_for_api

    params = {_QUERY_NAMES.get(name, name): value for name, value in query.items()}
    if params.get("since") is not None:  # a time without an offset is not one the API takes
        params["since"] = since_for_api(params["since"])
    return at.ask(
        lambda store: local(store, **query), f"{plural}.list", plural, params=params,
        read=many(kind, plural),
    )  # fmt: skip


def one(kind: type[R], key: str) -> Callable[[Any], R]:
    """A reader of the ``kind`` record under ``key`` of an answer."""
    return lambda answer: record(kind, answer[key])


def many(kind: type[R], key: str) -> Callable[[Any], tuple[R, ...]]:
    """A reader of the ``kind`` records listed under ``key`` of an answer."""
    return lambda answer: records(kind, answer[key])


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
    from openseal.runtime.service import choose_id, handle_suffix, id_prefix, matching

    if id_prefix(reference) is None and handle_suffix(reference) is None:
        return reference
    plural = f"{kind}s"
    listed = remote.call("GET", (plural,), operation=f"{plural}.list", params={"limit": 1000})
    ids = [str(item["id"]) for item in listed.get(plural, [])]
    return choose_id(kind, reference, matching(ids, reference)[:3])
