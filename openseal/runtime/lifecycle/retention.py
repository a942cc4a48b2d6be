"""Retention policies: how long an ended run stays in the live store, how long the API's
idempotency keys and inbound events' delivery keys are remembered, and how long a settled
action's destination may still see a retry of its key.

An ended run stays live for the longest of the periods that apply to it — its workflow's
``retention { keep_ended_runs = … }`` (part of the definition, so changed only by a governed
deployment) and its scope's (an operator's setting kept in the store, ``openseal scopes
set-retention``, or ``--keep-ended-runs-in SCOPE=PERIOD``) — or, where none says, the
store-wide period (``--keep-ended-runs``). Keys are store-wide: each is remembered
at least :data:`KEY_RETRY_WINDOW`, the window docs/api.md promises clients to retry in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from openseal.errors import UsageError

DAY = 86400.0
#: the retry window the API documents for an ``Idempotency-Key`` or an event's delivery key
KEY_RETRY_WINDOW = DAY
#: the shortest retention a workflow or a scope may declare
MIN_KEEP_ENDED_RUNS = 3600.0
_PERIOD = re.compile(r"(\d+)([smhdw])")
_UNIT = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": DAY, "w": 7 * DAY}


def parse_period(text: str, what: str) -> float:
    """``30d``, ``12h``, ``1w2d``, ``90m`` → seconds; anything else is a usage error naming
    ``what``."""
    value = text.strip().lower()
    parts = _PERIOD.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        raise UsageError(f"{what}: expected a period such as 30d, 12h or 1w, got {text!r}")
    return sum(int(n) * _UNIT[u] for n, u in parts)


def describe(seconds: float) -> str:
    """A period as the shortest of ``7d``, ``36h``, ``90m``, ``45s``."""
    for unit in ("w", "d", "h", "m"):
        if seconds >= _UNIT[unit] and seconds % _UNIT[unit] == 0:
            return f"{int(seconds // _UNIT[unit])}{unit}"
    return f"{seconds:g}s"


@dataclass(frozen=True)
class Retention:
    """A deployment's retention settings (what ``db archive`` and ``worker --archive-every``
    are given). Refuses a key period shorter than :data:`KEY_RETRY_WINDOW`."""

    keep_ended_runs: float = 30 * DAY
    #: scope → how long its ended runs stay live
    scopes: Mapping[str, float] = field(default_factory=dict)
    idempotency_keys: float = 7 * DAY
    delivery_keys: float = 7 * DAY
    #: how long after a settled action its destination may still act on a retry of its key:
    #: a run whose action settled more recently stays live
    action_window: float = 7 * DAY

    def __post_init__(self) -> None:
        for name in ("idempotency_keys", "delivery_keys"):
            period = getattr(self, name)
            if period < KEY_RETRY_WINDOW:
                flag = "--keep-" + name.replace("_", "-")
                raise UsageError(
                    f"{flag} {describe(period)} is shorter than the {describe(KEY_RETRY_WINDOW)} "
                    "clients are promised to retry in; give at least "
                    f"{describe(KEY_RETRY_WINDOW)}"
                )

    def with_scopes(self, stored: Mapping[str, float]) -> Retention:
        """These settings with the scopes' stored periods (``openseal scopes set-retention``):
        where both this and the store speak for a scope, the longer wins."""
        scopes = dict(self.scopes)
        for scope, period in stored.items():
            scopes[scope] = max(scopes.get(scope, period), period)
        return replace(self, scopes=scopes)

    def keep_for(self, scope: str, workflow_keep: float | None) -> float:
        """How long an ended run of ``scope`` whose workflow says ``workflow_keep`` stays
        live."""
        declared = [p for p in (workflow_keep, self.scopes.get(scope)) if p is not None]
        return max(declared) if declared else self.keep_ended_runs


def workflow_keep(document: Mapping[str, Any]) -> float | None:
    """A compiled workflow's ``retention.keep_ended_runs`` (seconds), if it declares one."""
    spec = document.get("spec")
    retention = spec.get("retention") if isinstance(spec, Mapping) else None
    if isinstance(retention, Mapping) and retention.get("keep_ended_runs") is not None:
        return float(retention["keep_ended_runs"])
    return None


def scope_periods(pairs: tuple[str, ...]) -> dict[str, float]:
    """``SCOPE=PERIOD`` options as a mapping."""
    out: dict[str, float] = {}
    for pair in pairs:
        scope, sep, period = pair.partition("=")
        if not sep or not scope:
            raise UsageError(f"--keep-ended-runs-in: expected SCOPE=PERIOD, got {pair!r}")
        out[scope] = parse_period(period, f"--keep-ended-runs-in {scope}")
    return out
