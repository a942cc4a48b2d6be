"""The shape every "steer by id" command shares: ``openseal runs pause ID``, ``openseal
objectives retire ID`` and the like.

Each takes the store or server options, one id (with shell completion), ``--reason`` and
``--expected-revision``; :func:`steer_by_id` declares them once and hands the command body a
:class:`Steer` that says what to steer, where and why.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from openseal.cli.client import Connection, connected, server_options
from openseal.cli.runtime import complete_ids, store_options

if TYPE_CHECKING:
    from openseal.runtime.store import Store

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def expected_revision_option(kind: str) -> Decorator:
    """Refuse the command if the ``kind`` changed since the caller read it (its ``show``
    has the revision)."""
    return click.option(
        "--expected-revision",
        type=click.IntRange(0),
        default=None,
        help=f"Refuse (stale_revision) unless the {kind} is still at this revision.",
    )


#: ``--reason`` when giving one is optional
reason_option = click.option("--reason", default=None, help="Why, for the record.")


@dataclass(frozen=True)
class Steer:
    """What one steer-by-id command was asked: the id, why, and where to send it."""

    home: Path
    output: str
    server: str | None
    token_file: Path | None
    id: str
    reason: str | None
    expected_revision: int | None

    @contextmanager
    def connected(self) -> Iterator[Connection[Store]]:
        """The store under ``home``, or the server when one is named."""
        with connected(self.home, self.server, self.token_file) as at:
            yield at

    def body(self) -> dict[str, Any]:
        """The API's request body for the command (``reason``, ``expectedRevision``)."""
        return {"reason": self.reason, "expectedRevision": self.expected_revision}


def steer_by_id(
    kind: str, *, reason: Decorator = reason_option, options: Sequence[Decorator] = ()
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Declare a command that steers one ``kind`` (``run``, ``objective``) by id.

    The command's body takes a :class:`Steer` first and then, by name, the values of
    ``options`` (declared after ``--reason``, before ``--expected-revision``).

    Example::

        @runs.command("pause")
        @steer_by_id("run")
        def pause(steer: Steer) -> None: ...
    """
    id_name = f"{kind}_id"

    def decorate(body: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(body)
        def command(
            home: Path, output: str, server: str | None, token_file: Path | None,
            reason: str | None, expected_revision: int | None, **rest: Any,
        ) -> None:  # fmt: skip
            steer_id = rest.pop(id_name)
            body(
                Steer(home, output, server, token_file, steer_id, reason, expected_revision),
                **rest,
            )

        declared: Callable[..., Any] = expected_revision_option(kind)(command)
        for option in reversed(options):
            declared = option(declared)
        declared = reason(declared)
        declared = click.argument(id_name, shell_complete=complete_ids(kind))(declared)
        return store_options(server_options(declared))

    return decorate
