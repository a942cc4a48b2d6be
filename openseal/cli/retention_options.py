"""The retention settings ``openseal db archive`` and ``openseal worker --archive-every``
share (docs/operations.md, "Retention and archive")."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from openseal.runtime.service import Retention

F = TypeVar("F", bound=Callable[..., Any])


def retention_options(command: F) -> F:
    """``--keep-ended-runs``, ``--keep-ended-runs-in``, ``--keep-idempotency-keys``,
    ``--keep-delivery-keys`` and ``--action-window``."""
    for option in reversed([
        click.option(
            "--keep-ended-runs", default="30d", show_default=True, metavar="PERIOD",
            help="How long an ended run stays live when neither its workflow's retention "
            "nor its scope's says.",
        ),
        click.option(
            "--keep-ended-runs-in", "scope_keep", multiple=True, metavar="SCOPE=PERIOD",
            help="How long ended runs of SCOPE stay live (repeatable); a workflow's own "
            "retention, when longer, wins.",
        ),
        click.option(
            "--keep-idempotency-keys", default="7d", show_default=True, metavar="PERIOD",
            help="How long the API remembers an Idempotency-Key (at least 1d).",
        ),
        click.option(
            "--keep-delivery-keys", default="7d", show_default=True, metavar="PERIOD",
            help="How long an inbound event's delivery key is remembered (at least 1d).",
        ),
        click.option(
            "--action-window", default="7d", show_default=True, metavar="PERIOD",
            help="How long after an action settled its destination may still see a retry of "
            "its key: its run stays live until then.",
        ),
    ]):  # fmt: skip
        command = option(command)
    return command


def retention_from(options: dict[str, Any]) -> Retention:
    """The policy the options of :func:`retention_options` describe (taken out of
    ``options``)."""
    from openseal.runtime import service

    period = service.parse_period
    return service.Retention(
        keep_ended_runs=period(options.pop("keep_ended_runs"), "--keep-ended-runs"),
        scopes=service.scope_periods(options.pop("scope_keep")),
        idempotency_keys=period(options.pop("keep_idempotency_keys"), "--keep-idempotency-keys"),
        delivery_keys=period(options.pop("keep_delivery_keys"), "--keep-delivery-keys"),
        action_window=period(options.pop("action_window"), "--action-window"),
    )
