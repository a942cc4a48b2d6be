"""A scope's retention for the CLI and the API: how long its ended runs stay in the live store
before an archive may take them (``openseal scopes retention`` / ``set-retention``).

Like a scope's concurrency cap it is an operator setting kept in the store, governed the way
widening is elsewhere: keeping runs longer narrows what an archive may take and an operator of
the scope may set it; shortening or removing a setting lets runs leave the live store sooner
and needs an admin. A workflow's own period (its definition's ``retention`` block, changed by a
governed deployment) still applies: the longest period that speaks for a run wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from openseal.errors import UsageError
from openseal.runtime.access import ADMIN, Forbidden, check_scope
from openseal.runtime.caller import CLI, Caller
from openseal.runtime.lifecycle.retention import MIN_KEEP_ENDED_RUNS, describe, parse_period
from openseal.runtime.store import RetentionSetting, Store


@dataclass(frozen=True)
class ScopeRetention:
    """A scope's retention: ``keep_ended_runs`` as a period (``90d``) and in seconds; both None
    once it was removed."""

    scope: str
    keep_ended_runs: str | None
    seconds: float | None
    updated_by: str
    updated_at: datetime


def _view(setting: RetentionSetting) -> ScopeRetention:
    return ScopeRetention(
        setting.scope, describe(setting.keep_ended_runs), setting.keep_ended_runs,
        setting.updated_by, setting.updated_at,
    )  # fmt: skip


def scope_retentions(store: Store, caller: Caller = CLI) -> list[ScopeRetention]:
    """Every scope's retention setting the caller sees."""
    with store.read() as conn:
        found = store.retention.all(conn)
    return [_view(s) for scope, s in sorted(found.items()) if caller.grant.sees(scope)]


def set_scope_retention(
    store: Store, scope: str, period: str | None, caller: Caller = CLI
) -> ScopeRetention:
    """Keep scope ``scope``'s ended runs live for ``period`` (``90d``), or remove its setting
    (None). Setting or lengthening is an operator's; shortening or removing needs an admin."""
    check_scope(caller.grant, scope, "retention")
    seconds = None if period is None else parse_period(period, "keep_ended_runs")
    if seconds is not None and seconds < MIN_KEEP_ENDED_RUNS:
        raise UsageError(
            f"keep_ended_runs {period} is shorter than {describe(MIN_KEEP_ENDED_RUNS)}, the "
            "shortest retention a scope may have"
        )
    now = store.now()
    with store.write() as conn:
        before = store.retention.all(conn).get(scope)
        shortening = before is not None and (seconds is None or seconds < before.keep_ended_runs)
        if shortening and ADMIN not in caller.grant.roles:
            raise Forbidden(
                f"shortening or removing scope {scope}'s retention lets its runs leave the "
                "live store sooner: it needs an admin"
            )
        if seconds is None:
            store.retention.remove(conn, scope)
            return ScopeRetention(scope, None, None, caller.actor, now)
        return _view(store.retention.set(conn, scope, seconds, by=caller.actor, now=now))
