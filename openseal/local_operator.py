"""The local operator's per-start secret: made by ``openseal serve --local-operator``, kept in a
file only its owner can read, presented by the CLI, scripts and the console.

The local operator (``user:local``) is the person at the machine that runs the server. A server
serves it only when started for it, and only to a request that presents this start's secret
(see :mod:`openseal.api.local` for the other conditions). ``serve`` writes the secret to
``<home>/local-operator-<port>.token`` (mode 0600, removed when the server stops) and prints a
console URL carrying it once, in its fragment (``/#local-operator=<secret>``), which the
browser never sends; the console exchanges it for an HttpOnly, SameSite=Strict cookie. A relay
in front of the server, or a web page, does not hold the file, so it obtains nothing.

Example::

    operator = LocalOperator.new()
    path = write_secret(Path(".openseal"), 8400, operator.secret)
    assert read_secret(Path(".openseal"), 8400) == operator.secret
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

from openseal.errors import UsageError

#: the fragment the console URL carries the secret in
URL_FRAGMENT = "local-operator="


@dataclass(frozen=True)
class LocalOperator:
    """This start's secret: whoever presents it from this machine acts as ``user:local``."""

    secret: str = field(repr=False)

    @classmethod
    def new(cls) -> LocalOperator:
        return cls(secrets.token_urlsafe(32))

    def matches(self, presented: str | None) -> bool:
        """Whether ``presented`` is this secret (compared in constant time)."""
        if not presented:
            return False
        return hmac.compare_digest(presented.strip().encode(), self.secret.encode())


def secret_file(home: Path, port: int) -> Path:
    """Where ``openseal serve --local-operator --port PORT`` keeps its secret."""
    return home / f"local-operator-{port}.token"


def cookie_name(port: int) -> str:
    """The console's cookie for the server on ``port`` (cookies do not tell ports apart)."""
    return f"openseal_local_{port}"


def console_url(host: str, port: int, secret: str) -> str:
    """The console's address with the secret in the fragment (never sent to the server)."""
    authority = f"[{host}]" if ":" in host else host
    return f"http://{authority}:{port}/#{URL_FRAGMENT}{secret}"


def write_secret(home: Path, port: int, secret: str) -> Path:
    """Write the secret readable by its owner only, replacing a stale one; the path."""
    path = secret_file(home, port)
    home.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(descriptor, 0o600)  # a partial file left by a killed start keeps its mode
        os.write(descriptor, f"{secret}\n".encode())
    finally:
        os.close(descriptor)
    os.replace(partial, path)
    return path


def remove_secret(path: Path) -> None:
    """Forget the secret when the server stops."""
    path.unlink(missing_ok=True)


def read_secret(home: Path, port: int) -> str | None:
    """The secret of the server on ``port`` started over ``home``; None when there is none. A
    file others may read is refused: its secret is nobody's own any more."""
    path = secret_file(home, port)
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(
            f"cannot read the local operator's secret {path}: {exc.strerror}"
        ) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UsageError(f"{path} is readable by others; `chmod 600 {path}` (or restart serve)")
    return text or None
