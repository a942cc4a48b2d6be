"""Flow control for the CLI and the API: pause and resume an agent or a team, show what one is
doing now, and set a scope's concurrency cap.

Pausing an agent (a team) makes its cap 0: turns it would act in wait in
``waiting_for_capacity`` (what they wait for: the agent, ``paused``), turns under way finish,
and other work goes on. Resuming wakes the waiting runs, higher priority first. Pausing reaches
runs in every scope, so it needs a token for scope ``*``.

A scope's cap is an operator setting, not a definition: scopes are the runtime's (tokens grant
them), not a project's. It is governed the way widening is elsewhere: an operator of the scope
may lower or set a cap (narrowing), and only an admin may raise or remove one (widening).
A scope's quotas (:mod:`openseal.runtime.engine.quotas`) and its ready-queue depth are
operator settings governed the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from openseal.errors import InvalidInput
from openseal.runtime.access import ADMIN, Forbidden, check_everywhere, check_scope
from openseal.runtime.caller import CLI, Caller
from openseal.runtime.engine import quotas
from openseal.runtime.engine.capacity import capped_skills, wake_free
from openseal.runtime.store import CallSlot, NotFound, Run, Setting, Slot, Store

ActorKind = Literal["agent", "team"]
#: runs listed at most by ``agents show`` and ``teams show``
SHOWN_RUNS = 100


@dataclass(frozen=True)
class RunNow:
    """A run an agent or team is doing now: its status, state, and what it waits for."""

    run_id: str
    workflow_digest: str
    status: str
    current_state: str | None
    scope: str
    waiting: str | None


@dataclass(frozen=True)
class ActorView:
    """An agent or a team now: paused or not, its runs not ended, its open agent requests, the
    concurrency slots its key holds and the runs waiting for one, and the calls its runs have
    in flight to capped skills (each a slot of ``skill:<name>``)."""

    kind: str
    name: str
    paused: bool
    paused_by: str | None
    paused_at: datetime | None
    runs: list[RunNow]
    requests: list[str]
    slots: list[Slot]
    waiting_for_capacity: list[str]
    #: empty from a server that does not list them
    calls: list[CallSlot] = field(default_factory=list)


@dataclass(frozen=True)
class ScopeLimit:
    scope: str
    max_slots: int | None
    in_use: int
    updated_by: str
    updated_at: datetime


def _known(store: Store, kind: ActorKind, name: str) -> None:
    with store.read() as conn:
        if not store.definitions.versions_named(conn, kind, name):
            raise NotFound(f"no {kind} {name!r} is stored (deploy its definition first)")


def show_actor(store: Store, kind: ActorKind, name: str, caller: Caller = CLI) -> ActorView:
    """What agent (team) ``name`` is doing now, in the caller's scopes."""
    from openseal.runtime.service.runs import waiting_reason

    _known(store, kind, name)
    key = f"{kind}:{name}"
    setting = store.capacity.settings(max_age=0).get(key)
    skills = capped_skills(store)
    visible = caller.grant.visible()
    with store.read() as conn:
        runs = [
            r
            for r in store.capacity.live_runs_of(conn, f"{kind}.{name}", SHOWN_RUNS)
            if caller.grant.sees(r.scope)
        ]
        slots = [s for s in store.capacity.held(conn, scopes=visible) if s.key == key]
        waiters = store.capacity.waiting_for(conn, key, SHOWN_RUNS, scopes=visible)
        calls = store.capacity.calls_held(conn, keys=skills, owner=f"{kind}.{name}")
    requests = store.agent_requests.newest(
        callee=f"{kind}.{name}", scopes=visible, limit=SHOWN_RUNS
    )
    return ActorView(
        kind=kind,
        name=name,
        paused=bool(setting and setting.paused),
        paused_by=setting.updated_by if setting and setting.paused else None,
        paused_at=setting.updated_at if setting and setting.paused else None,
        runs=[_now(r, waiting_reason(r)) for r in runs],
        requests=[r.id for r in requests if r.status not in _ENDED_REQUESTS],
        slots=slots,
        waiting_for_capacity=waiters,
        calls=[c for c in calls if caller.grant.sees(c.scope)][:SHOWN_RUNS],
    )


_ENDED_REQUESTS = frozenset(
    {"completed", "completion_reviewed", "declined", "failed", "expired", "canceled"}
)


def _now(run: Run, waiting: str | None) -> RunNow:
    return RunNow(
        run.id, run.workflow_digest, str(run.status), run.current_state, run.scope, waiting
    )


def set_actor_paused(
    store: Store, kind: ActorKind, name: str, paused: bool, caller: Caller = CLI
) -> ActorView:
    """Pause or resume agent (team) ``name``; resuming wakes the runs waiting for it."""
    check_everywhere(caller.grant, f"{'pausing' if paused else 'resuming'} {kind} {name}")
    _known(store, kind, name)
    key = f"{kind}:{name}"
    store.capacity.set(key, by=caller.actor, paused=paused)
    if not paused:
        wake_free(store, [key])
    return show_actor(store, kind, name, caller)


def scope_limits(store: Store, caller: Caller = CLI) -> list[ScopeLimit]:
    """Every scope's cap the caller sees, with the slots in use now."""
    settings = [
        s
        for s in store.capacity.settings(max_age=0).values()
        if s.key.startswith("scope:") and s.max_slots is not None
    ]
    with store.read() as conn:
        in_use = store.capacity.in_use(conn, [s.key for s in settings])
    return [
        _limit(s, in_use[s.key])
        for s in sorted(settings, key=lambda s: s.key)
        if caller.grant.sees(s.key.removeprefix("scope:"))
    ]


def _limit(setting: Setting, in_use: int) -> ScopeLimit:
    scope = setting.key.removeprefix("scope:")
    return ScopeLimit(scope, setting.max_slots, in_use, setting.updated_by, setting.updated_at)


def set_scope_limit(
    store: Store, scope: str, max_slots: int | None, caller: Caller = CLI
) -> ScopeLimit:
    """Set (``max_slots``) or remove (None) scope ``scope``'s concurrency cap. Lowering or
    setting one narrows and an operator of the scope may; raising or removing one widens and
    needs an admin."""
    check_scope(caller.grant, scope, "limit")
    key = f"scope:{scope}"
    current = store.capacity.settings(max_age=0).get(key)
    before = current.max_slots if current is not None else None
    widening = max_slots is None and before is not None
    widening = widening or (max_slots is not None and before is not None and max_slots > before)
    if widening and ADMIN not in caller.grant.roles:
        raise Forbidden(
            f"raising or removing scope {scope}'s concurrency cap widens it: it needs an admin"
        )
    setting = store.capacity.set(key, by=caller.actor, max_slots=max_slots,
                                 clear_max=max_slots is None)  # fmt: skip
    wake_free(store, [key])
    with store.read() as conn:
        in_use = store.capacity.in_use(conn, [key])[key]
    return _limit(setting, in_use)


@dataclass(frozen=True)
class ScopeQuota:
    """A scope's quota: at most ``max`` of ``measure`` (``runs``, ``tokens``, ``tool_calls``,
    ``money.<CURRENCY>`` in that currency) per ``per`` (``day``, ``month``, UTC); work over
    it waits or is refused (``when_over``); what the window now ``used``, and when it resets."""

    scope: str
    measure: str
    per: str
    max: float
    when_over: str
    used: float
    resets_at: datetime
    updated_by: str
    updated_at: datetime


@dataclass(frozen=True)
class ScopeQueue:
    """A scope's ready-queue depth: at most ``max_queued`` of its runs waiting for a worker
    (None: no bound); ``queued`` counts them now, up to the bound."""

    scope: str
    max_queued: int | None
    queued: int
    updated_by: str
    updated_at: datetime


def _amount(measure: str, stored: int) -> float:
    """A quota's amount as shown: money in its currency, the rest as counted."""
    return stored / quotas.MICROS if measure.startswith("money.") else stored


def _quota_view(store: Store, quota: quotas.Quota, setting: Setting) -> ScopeQuota:
    now = store.now()
    name, resets = quotas.window(quota.period, now)
    with store.read() as conn:
        used = store.quotas.used(conn, [(quota.key, name)])[quota.key]
    return ScopeQuota(
        quota.scope, quota.measure, quota.period, _amount(quota.measure, quota.max),
        quota.when_over, _amount(quota.measure, used), resets, setting.updated_by,
        setting.updated_at,
    )  # fmt: skip


def scope_quotas(store: Store, caller: Caller = CLI) -> list[ScopeQuota]:
    """Every scope's quota the caller sees, with what its window used so far."""
    found: list[ScopeQuota] = []
    for setting in sorted(store.capacity.settings(max_age=0).values(), key=lambda s: s.key):
        quota = quotas.of_setting(setting)
        if quota is not None and caller.grant.sees(quota.scope):
            found.append(_quota_view(store, quota, setting))
    return found


def set_scope_quota(
    store: Store,
    scope: str,
    measure: str,
    per: str,
    amount: float | None,
    when_over: str | None = None,
    caller: Caller = CLI,
) -> ScopeQuota | None:
    """Set scope ``scope``'s quota of ``measure`` per ``per`` to ``amount`` (None: remove it),
    with what work over it does (``when_over``; unchanged when None, ``wait`` when new).
    Setting or lowering one narrows and an operator of the scope may; raising or removing one
    widens and needs an admin. Runs waiting for it are woken if it now has room."""
    if not quotas.valid_measure(measure):
        raise InvalidInput(
            f"no quota measure {measure!r}: one of runs, tokens, tool_calls, money.<CURRENCY> "
            "(e.g. money.USD)"
        )
    if per not in quotas.PERIODS:
        raise InvalidInput(f"a quota is per day or per month, not per {per!r}")
    if when_over is not None and when_over not in quotas.WHEN_OVER:
        raise InvalidInput(f"work over a quota may wait or be refused, not {when_over!r}")
    if amount is not None and amount < 0:
        raise InvalidInput("a quota is 0 or more")
    check_scope(caller.grant, scope, "quota")
    key = quotas.key_of(scope, measure, per)
    current = store.capacity.settings(max_age=0).get(key)
    before = current.quota if current is not None else None
    stored = None
    if amount is not None:
        stored = round(amount * quotas.MICROS) if measure.startswith("money.") else int(amount)
        if not measure.startswith("money.") and stored != amount:
            raise InvalidInput(f"a quota of {measure} is a whole number")
    widening = before is not None and (stored is None or stored > before)
    if widening and ADMIN not in caller.grant.roles:
        raise Forbidden(
            f"raising or removing scope {scope}'s quota of {measure} per {per} widens it: it "
            "needs an admin"
        )
    policy = when_over or (current.when_over if current is not None else None) or "wait"
    setting = store.capacity.set(
        key, by=caller.actor, quota=stored, when_over=None if stored is None else policy
    )
    with store.read() as conn:  # its waiters: runs starting, and actions' spend by amount
        waiting = store.capacity.waiting_keys(conn)
    wake_free(store, [key, *(k for k in waiting if k.partition(quotas.NEEDS)[0] == key)])
    quota = quotas.of_setting(setting)
    return None if quota is None else _quota_view(store, quota, setting)


def set_scope_queue(
    store: Store, scope: str, max_queued: int | None, caller: Caller = CLI
) -> ScopeQueue:
    """Set (``max_queued``) or remove (None) scope ``scope``'s ready-queue depth: while that
    many of its runs wait for a worker, new objectives in it and events that would start one
    are refused with ``429 queue_full``. Setting or lowering it is an operator's; raising or
    removing it widens and needs an admin."""
    check_scope(caller.grant, scope, "queue")
    key = f"scope:{scope}"
    current = store.capacity.settings(max_age=0).get(key)
    before = current.max_queued if current is not None else None
    widening = before is not None and (max_queued is None or max_queued > before)
    if widening and ADMIN not in caller.grant.roles:
        raise Forbidden(
            f"raising or removing scope {scope}'s ready-queue depth widens it: it needs an admin"
        )
    setting = store.capacity.set(key, by=caller.actor, max_queued=max_queued)
    return _queue_view(store, scope, setting)


def _queue_view(store: Store, scope: str, setting: Setting) -> ScopeQueue:
    depth = setting.max_queued
    queued = store.runs.queued_in_scope(scope, up_to=depth if depth is not None else 10_000)
    return ScopeQueue(scope, depth, queued, setting.updated_by, setting.updated_at)
