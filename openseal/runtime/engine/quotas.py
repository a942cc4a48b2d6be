"""Quotas per scope: runs started, model tokens, tool calls and money per day or per month.

An operator sets a quota on a scope (``openseal scopes quota``); it is kept with the other
flow-control settings under the key ``quota:<scope>:<measure>:<period>``, with what work over
it does (``when_over``): ``wait`` — new objectives are created and their runs wait in
``waiting_for_capacity``, the quota named in what they wait for — or ``refuse`` — creating one
is refused with ``429 quota_exceeded`` and ``Retry-After`` until the window resets.

Counting is exact across processes: usage rows (``store.quotas``) are added to in the
transactions that consume —

- ``runs``: the claim that starts a run's first turn (a run waiting for a quota is counted
  when it starts, not when it is created);
- ``tokens``, ``tool_calls``, ``money.<CURRENCY>``: the transactions that reserve and settle a
  model or tool call's budget (:mod:`.budgets`; money is what model calls cost by their
  profile's prices) add the change to the run's counters, so a reservation counts at once
  and a settlement corrects it to what the call really used;
- ``money.<CURRENCY>`` again: the transaction that admits an action counts its spend
  (:func:`take_spend`), kept with the action's reservations and settled with them
  (:mod:`openseal.runtime.actions.spend`): given back when it certainly had no effect.

A quota is checked when work is admitted — when a run starts (the claim of its first turn):
it needs a place in its scope's ``runs`` quotas and its scope's other quotas not to be used
up. A run that has started goes on: a quota of tokens, tool calls or money may be passed by
what the runs under way spend on models (a run's own budgets bound that), but never by an
action's spend: an action that would pass a money quota is not admitted, and its run waits
for the quota (the amount it needs named) whatever the quota's policy. Only quotas that are
set are counted. Windows are the store's clock in UTC; a run
waiting for a quota is woken by every worker's periodic look once its window has rolled over
(or the quota was raised or removed).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from openseal.errors import RuntimeFailure
from openseal.runtime.clock import iso
from openseal.runtime.engine import door
from openseal.runtime.pricing import COST_KEY
from openseal.runtime.store import FencedTx, Run, Setting, Store

PERIODS: Final = ("day", "month")
#: measures other than money (``money.<CURRENCY>``, e.g. ``money.USD``)
MEASURES: Final = ("runs", "tokens", "tool_calls")
WHEN_OVER: Final = ("wait", "refuse")
#: a money quota's amount is kept in millionths of the currency, as model costs are
MICROS: Final = 1_000_000


@dataclass(frozen=True)
class Quota:
    """One quota of a scope: at most ``max`` of ``measure`` per ``period``."""

    scope: str
    measure: str
    period: str
    max: int
    when_over: str

    @property
    def key(self) -> str:
        return key_of(self.scope, self.measure, self.period)

    @property
    def budget_key(self) -> str | None:
        """The run budget counter this quota adds up (None: ``runs``)."""
        if self.measure.startswith("money."):
            return COST_KEY + self.measure.removeprefix("money.")
        return None if self.measure == "runs" else self.measure


def key_of(scope: str, measure: str, period: str) -> str:
    return f"quota:{scope}:{measure}:{period}"


def parse_key(key: str) -> tuple[str, str, str]:
    """``(scope, measure, period)`` of a quota's key."""
    rest, measure, period = key.removeprefix("quota:").rsplit(":", 2)
    return rest, measure, period


def valid_measure(measure: str) -> bool:
    if measure.startswith("money."):
        currency = measure.removeprefix("money.")
        return 1 <= len(currency) <= 8 and currency.isalnum()
    return measure in MEASURES


def window(period: str, now: datetime) -> tuple[str, datetime]:
    """The window of ``period`` that ``now`` is in, and when the next one starts (UTC)."""
    now = now.astimezone(UTC)
    if period == "day":
        start = datetime(now.year, now.month, now.day, tzinfo=UTC)
        return start.strftime("%Y-%m-%d"), start + timedelta(days=1)
    first = datetime(now.year, now.month, 1, tzinfo=UTC)
    following = datetime(now.year + (now.month == 12), now.month % 12 + 1, 1, tzinfo=UTC)
    return first.strftime("%Y-%m"), following


def retry_after(period: str, now: datetime) -> int:
    """Whole seconds until the window of ``period`` that ``now`` is in resets (at least 1)."""
    _, resets = window(period, now)
    return max(1, int((resets - now).total_seconds() + 0.999))


def of_setting(setting: Setting) -> Quota | None:
    if not setting.key.startswith("quota:") or setting.quota is None:
        return None
    scope, measure, period = parse_key(setting.key)
    return Quota(scope, measure, period, int(setting.quota), setting.when_over or "wait")


_index_lock = threading.Lock()
#: by store: the settings it read last (the same dict until they are read again) and the
#: quotas in them by scope
_index: weakref.WeakKeyDictionary[Store, tuple[dict[str, Setting], dict[str, list[Quota]]]] = (
    weakref.WeakKeyDictionary()
)


def of_scope(store: Store, scope: str, *, fresh: bool = False) -> list[Quota]:
    """The quotas set on ``scope``, from the settings this process read last (every worker
    reads them afresh once a second); ``fresh``: read them now."""
    settings = store.capacity.settings(max_age=0 if fresh else float("inf"))
    with _index_lock:
        known = _index.get(store)
        if known is not None and known[0] is settings:
            by_scope = known[1]
        else:
            by_scope = {}
            for setting in settings.values():
                quota = of_setting(setting)
                if quota is not None:
                    by_scope.setdefault(quota.scope, []).append(quota)
            for found in by_scope.values():
                found.sort(key=lambda q: q.key)
            _index[store] = (settings, by_scope)
    return by_scope.get(scope, [])


@dataclass(frozen=True)
class Over:
    """A quota used up: what a run over it waits for, or why an objective is refused."""

    quota: Quota
    used: int
    resets_at: datetime
    #: what the work over it needs of the quota (an action's spend, in millionths); None: any
    #: room at all (a run starting)
    needs: int | None = None

    def detail(self) -> dict[str, Any]:
        found = {"max": self.quota.max, "used": self.used, "resets_at": iso(self.resets_at)}
        if self.needs is not None:
            found["needs"] = self.needs
        return found


def _shown(quota: Quota, amount: int) -> str:
    if quota.measure.startswith("money."):
        return f"{amount / MICROS:g} {quota.measure.removeprefix('money.')}"
    return f"{amount} {quota.measure.replace('_', ' ')}"


class QuotaExceeded(RuntimeFailure):
    """A quota of the scope whose policy is ``refuse`` is used up: send again after
    ``retry_after`` (when its window resets)."""

    code = "quota_exceeded"

    def __init__(self, over: Over, now: datetime) -> None:
        quota = over.quota
        self.retry_after = retry_after(quota.period, now)
        super().__init__(
            f"scope {quota.scope!r} has used its quota of {_shown(quota, quota.max)} a "
            f"{quota.period} ({_shown(quota, over.used)} used): nothing was created; it resets "
            f"at {iso(over.resets_at)}, in {self.retry_after}s",
            code="quota_exceeded",
        )
        self.quota = quota.key


def used_up(store: Store, conn: Any, quotas: list[Quota], now: datetime) -> Over | None:
    """The first of ``quotas`` whose window's usage, read in ``conn``, has reached its size."""
    if not quotas:
        return None
    windows = {q.key: window(q.period, now) for q in quotas}
    used = store.quotas.used(conn, [(q.key, windows[q.key][0]) for q in quotas])
    for quota in quotas:
        if used[quota.key] >= quota.max:
            return Over(quota, used[quota.key], windows[quota.key][1])
    return None


def admit(store: Store, tx: FencedTx, run: Run, now: datetime) -> Over | None:
    """When ``run`` starts (its first turn, claimed in ``tx``): check its scope's quotas and
    count it against the ``runs`` ones; the quota it is over (nothing counted then), or None.
    A run that has started goes on whatever its scope used since."""
    if run.current_state is not None:
        return None
    quotas = of_scope(store, run.scope)
    if not quotas:
        return None
    conn = tx.row_conn
    over = used_up(store, conn, [q for q in quotas if q.measure != "runs"], now)
    if over is not None:
        return over
    counted: list[tuple[str, str]] = []
    for quota in quotas:
        if quota.measure != "runs":
            continue
        name, resets = window(quota.period, now)
        used = store.quotas.add(conn, quota.key, name, 1)
        counted.append((quota.key, name))
        if used > quota.max:
            for key, name in counted:  # the run does not start: nothing of it is counted
                store.quotas.add(conn, key, name, -1)
            return Over(quota, used - 1, resets)
    return None


def update_budget(store: Store, tx: FencedTx, used: Mapping[str, Any], **change: Any) -> None:
    """``tx.update_run(budget_used=used, **change)``, adding what the run's budget counters
    moved by to its scope's quotas of tokens, tool calls and money in the same transaction."""
    count_spend(store, tx, tx.run().budget_used, used)
    tx.update_run(budget_used=dict(used), **change)


def count_spend(
    store: Store, tx: FencedTx, before: Mapping[str, Any], after: Mapping[str, Any]
) -> None:
    """Add what a run's budget counters moved by (``before`` to ``after``, in ``tx``) to its
    scope's quotas of tokens, tool calls and money."""
    quotas = of_scope(store, tx.run().scope)
    if not quotas:
        return
    for quota in quotas:
        counter = quota.budget_key
        if counter is None:
            continue
        delta = int(after.get(counter, 0) or 0) - int(before.get(counter, 0) or 0)
        if delta:
            name, _ = window(quota.period, tx.now)
            store.quotas.add(tx.row_conn, quota.key, name, delta)


def check_door(store: Store, scope: str) -> None:
    """Refuse (:class:`QueueFull` or :class:`QuotaExceeded`) a new objective in ``scope``
    whose ready queue is full or whose quota with the ``refuse`` policy is used up; free for
    a scope with neither."""
    door.check_scope(store, scope)
    refusing = [q for q in of_scope(store, scope) if q.when_over == "refuse"]
    if not refusing:
        return
    now = store.now()
    with store.read() as conn:
        over = used_up(store, conn, refusing, now)
    if over is not None:
        raise QuotaExceeded(over, now)


def room(store: Store, key: str, now: datetime) -> int:
    """How many runs waiting for quota ``key`` may go on now: 0 while its window's usage is
    at its size; for a ``runs`` quota the places left, for the waiters of an action's spend
    (:func:`waiter_key`) as many as the amount they need fits into what is left, else ``-1``
    (any number)."""
    key, _, needs = key.partition(NEEDS)
    scope, measure, period = parse_key(key)
    quota = next((q for q in of_scope(store, scope) if q.key == key), None)
    if quota is None:
        return -1  # removed
    name, _ = window(period, now)
    with store.read() as conn:
        used = store.quotas.used(conn, [(key, name)])[key]
    left = quota.max - used
    if needs:
        return left // int(needs)
    if left <= 0:
        return 0
    return left if measure == "runs" else -1


#: separates a quota's key from the amount its waiters need, in the key they wait under
NEEDS: Final = "@"


def waiter_key(key: str, needs: int | None) -> str:
    """The key a run waits under for quota ``key``: the quota's own, or, for an action that
    needs ``needs`` of it, one per amount (``quota:acme:money.USD:day@2500000000``), so a look
    wakes such a run only when its amount fits, not each time the quota has any room left."""
    return key if needs is None else f"{key}{NEEDS}{needs}"


# -- an action's spend -------------------------------------------------------------------


def micros(amount: float) -> int:
    """``amount`` of a currency in millionths, as money quotas count it."""
    return round(amount * MICROS)


def hold_of(key: str, window_name: str) -> str:
    """What an action's reservation is kept under when its spend was counted against quota
    ``key`` in window ``window_name``: ``quota:acme:money.EUR:month:2026-12``, so settling it
    finds the window it was counted in (:mod:`openseal.runtime.actions.spend`)."""
    return f"{key}:{window_name}"


def take_spend(
    store: Store, conn: Any, scope: str, amount: float, currency: str, now: datetime
) -> Over | list[str]:
    """Count an action's spend against ``scope``'s quotas of money in ``currency``, in ``conn``
    (the transaction that admits it): the holds counted (:func:`hold_of`; their rows locked
    until ``conn`` commits), or the first quota it would pass (nothing counted then)."""
    needed = micros(amount)
    measure = f"money.{currency}"
    found = [q for q in of_scope(store, scope) if q.measure == measure]
    if needed <= 0 or not found:
        return []
    counted: list[str] = []
    for quota in found:  # in key order, as every writer of quota rows
        name, resets = window(quota.period, now)
        used = store.quotas.add(conn, quota.key, name, needed)
        counted.append(hold_of(quota.key, name))
        if used > quota.max:
            give_back(store, conn, counted, needed)
            return Over(quota, used - needed, resets, needs=needed)
    return counted


def give_back(store: Store, conn: Any, holds: list[str], amount: int) -> None:
    """Take ``amount`` (millionths) off the quota windows ``holds`` counted it in."""
    for hold in holds:
        key, name = hold.rsplit(":", 1)
        store.quotas.add(conn, key, name, -amount)
