"""Triggers at run time: when a schedule is due, which occurrences fire, and with what inputs.

A compiled trigger (kind ``trigger``) is read into a :class:`TriggerPlan`. Workers call
:meth:`Scheduler.poll` once per loop: it keeps each schedule's next occurrence in memory, so
the check is a comparison with the clock; only when an occurrence is due, when a commit asked
the schedulers to look (it ended an objective that queued firings wait for:
``Store.triggers_mark``), or every ``refresh`` seconds (to see activations and pauses) does
it read the store.
The store decides who wins: :meth:`~openseal.runtime.store.repos.triggers.Triggers.record` writes
one row per occurrence, unique on the trigger and the occurrence, with the objective it starts.

Catch-up after a time no worker ran (or the trigger was paused): of the occurrences after the
cursor, ``latest`` fires the newest, ``all`` the newest ``catch_up_limit`` (oldest first),
``none`` only one no later than ``grace``; the newest occurrence is always recorded, so the
cursor moves past what was passed over.

An inbound event fires every active event trigger of its name whose filter holds
(:func:`fire_event`), in the transaction that stores the event: a committed event has its
firings, whatever stops the server after. Its occurrence is the stored event, so a redelivery
(same event id) starts nothing again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from cronsim import CronSim

from openseal.compiler import evaluate
from openseal.compiler import expr as ex
from openseal.errors import OpenSealError
from openseal.runtime.clock import iso
from openseal.runtime.engine import door
from openseal.runtime.engine.objectives import prepare_inputs
from openseal.runtime.store import (
    DEFAULT_SCOPE,
    Connection,
    DefinitionVersion,
    InboundEvent,
    Occurrence,
    StartObjective,
    Store,
    TriggerDeployment,
    TriggerFiring,
    request_hash,
)

log = logging.getLogger(__name__)

#: seconds between the scheduler's reads of the store when nothing is due
DEFAULT_REFRESH = 5.0
#: the project objectives started by triggers live in
PROJECT = "default"


@dataclass(frozen=True)
class TriggerPlan:
    """What the runtime reads from a compiled trigger document."""

    name: str
    workflow: str
    cron: str | None
    time_zone: str
    every: float | None
    event: str | None
    filter: ex.Expression | None
    inputs: Mapping[str, ex.Expression]
    overlap: str
    catch_up: str
    catch_up_limit: int
    grace: float

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> TriggerPlan:
        spec = document["spec"]
        schedule = spec.get("schedule") or {}
        event = spec.get("event") or {}
        raw_filter = event.get("filter")
        return cls(
            name=str(document["name"]),
            workflow=str(spec["workflow"]).removeprefix("workflow."),
            cron=schedule.get("cron"),
            time_zone=schedule.get("time_zone") or "UTC",
            every=schedule.get("every"),
            event=event.get("name"),
            filter=ex.from_json(raw_filter) if raw_filter is not None else None,
            inputs={k: ex.from_json(v) for k, v in (spec.get("input") or {}).items()},
            overlap=spec.get("overlap", "skip"),
            catch_up=spec.get("catch_up", "latest"),
            catch_up_limit=int(spec.get("catch_up_limit", 10)),
            grace=float(spec.get("grace", 60.0)),
        )

    @property
    def scheduled(self) -> bool:
        return self.event is None

    # -- occurrences -------------------------------------------------------------------

    def next_after(self, after: datetime, anchor: datetime) -> datetime:
        """The first occurrence strictly after ``after``."""
        if self.every is not None:
            step = timedelta(seconds=self.every)
            count = max(1, (after - anchor) // step + 1)
            return anchor + count * step
        assert self.cron is not None
        zone = ZoneInfo(self.time_zone)
        # cronsim goes forward strictly after the whole second it starts from
        local = after.astimezone(zone).replace(microsecond=0)
        return next(iter(CronSim(self.cron, local))).astimezone(UTC)

    def newest_until(
        self, after: datetime, until: datetime, anchor: datetime, limit: int
    ) -> list[datetime]:
        """Up to ``limit`` newest occurrences in ``(after, until]``, oldest first."""
        found: list[datetime] = []
        for at in self._backwards(until, anchor):
            if at <= after or len(found) == limit:
                break
            found.append(at)
        return found[::-1]

    def _backwards(self, until: datetime, anchor: datetime) -> Iterator[datetime]:
        if self.every is not None:
            step = timedelta(seconds=self.every)
            if until < anchor:
                return
            at = anchor + ((until - anchor) // step) * step
            while at > anchor:
                yield at
                at -= step
            return
        assert self.cron is not None
        # backwards, cronsim includes the second it starts from only when given a fraction
        local = until.astimezone(ZoneInfo(self.time_zone))
        local = local.replace(microsecond=local.microsecond or 1)
        for at in CronSim(self.cron, local, reverse=True):
            yield at.astimezone(UTC)

    def due(self, cursor: datetime, now: datetime, anchor: datetime) -> list[Occurrence]:
        """The occurrences to record now, per the catch-up policy (oldest first)."""
        limit = self.catch_up_limit if self.catch_up == "all" else 1
        newest = self.newest_until(cursor, now, anchor, limit)
        if not newest:
            return []
        late = self.catch_up == "none" and (now - newest[-1]).total_seconds() > self.grace
        out = []
        for at in newest:
            if late:
                why = f"missed: {(now - at).total_seconds():.0f}s late, more than the grace"
                out.append(Occurrence(f"at:{iso(at)}", "schedule", at, None, "missed", why))
                continue
            inputs, detail = self.inputs_for({"trigger": self._trigger_value(at)})
            outcome = None if detail is None else "failed"
            out.append(Occurrence(f"at:{iso(at)}", "schedule", at, inputs, outcome, detail))
        return out

    # -- expressions -------------------------------------------------------------------

    def _trigger_value(self, at: datetime) -> dict[str, Any]:
        return {"name": self.name, "occurrence": iso(at)}

    def inputs_for(self, scope: Mapping[str, object]) -> tuple[dict[str, Any] | None, str | None]:
        """The workflow inputs in ``scope``, or why they cannot be computed."""
        try:
            return {k: evaluate(v, scope) for k, v in sorted(self.inputs.items())}, None
        except OpenSealError as exc:
            return None, f"the inputs could not be computed: {exc}"

    def event_occurrence(self, event: InboundEvent) -> Occurrence | None:
        """The occurrence ``event`` is for this trigger, or None when its filter does not hold."""
        scope = {
            "payload": event.payload,
            "event": {
                "id": event.id,
                "name": event.name,
                "key": event.delivery_key,
                "received_at": iso(event.received_at),
            },
            "trigger": self._trigger_value(event.received_at),
        }
        key = f"event:{event.id}"
        if self.filter is not None:
            try:
                holds = evaluate(self.filter, scope) is True
            except OpenSealError:
                holds = False  # a payload without the fields the filter reads does not match
            if not holds:
                return None
        inputs, detail = self.inputs_for(scope)
        outcome = None if detail is None else "failed"
        return Occurrence(key, "event", event.received_at, inputs, outcome, detail, event.id)


def _starter(store: Store, workflow: str) -> StartObjective:
    """How a firing of a trigger starting ``workflow`` starts its objective: in the project
    triggers' objectives live in, in the default scope, with the inputs prepared for the
    version it pins (a refusal raises, and nothing of the objective is written)."""

    def start(conn: Connection, inputs: dict[str, Any], actor: str) -> str:
        def prepare(version: DefinitionVersion) -> dict[str, Any]:
            return prepare_inputs(workflow, inputs, version)

        created = store.objectives.insert_in(
            conn, PROJECT, workflow, inputs, None, request_hash(PROJECT, workflow, inputs),
            actor, DEFAULT_SCOPE, prepare,
        )  # fmt: skip
        return created.objective.id

    return start


def record(
    store: Store,
    trigger: TriggerDeployment,
    plan: TriggerPlan,
    occurrences: list[Occurrence],
    before_commit: Callable[[list[str]], None] | None = None,
) -> list[TriggerFiring]:
    """Record due ``occurrences``; while the workflow's ready queue is full
    (:mod:`~openseal.runtime.engine.door`) they are queued and wait for room."""
    return store.triggers.record(
        trigger, occurrences, overlap=plan.overlap, start=_starter(store, plan.workflow),
        before_commit=before_commit, room=door.has_room(store, plan.workflow),
    )  # fmt: skip


def event_workflows(store: Store, name: str) -> list[str]:
    """The workflows the active event triggers of ``name`` start (whose queues an event of
    that name must find room in)."""
    found = []
    for trigger in store.triggers.deployments():
        plan = TriggerPlan.from_document(trigger.document)
        if trigger.status == "active" and plan.event == name:
            found.append(plan.workflow)
    return sorted(set(found))


def fire_event(store: Store, conn: Connection, event: InboundEvent) -> list[TriggerFiring]:
    """Fire every active event trigger of ``event``'s name whose filter holds (once each), in
    ``conn``'s transaction: the one storing ``event`` (``InboundEvents.receive``'s ``fire``)."""
    fired: list[TriggerFiring] = []
    for trigger in store.triggers.deployments_in(conn):
        plan = TriggerPlan.from_document(trigger.document)
        if trigger.status != "active" or plan.event != event.name:
            continue
        occurrence = plan.event_occurrence(event)
        if occurrence is not None:
            fired += store.triggers.record_in(
                conn, trigger, [occurrence], overlap=plan.overlap,
                start=_starter(store, plan.workflow), room=door.has_room(store, plan.workflow),
            )  # fmt: skip
    return fired


def next_occurrence(trigger: TriggerDeployment, now: datetime) -> datetime | None:
    """The first occurrence after ``now`` of an active schedule trigger (None for event
    triggers and triggers not active). Occurrences already due fire at the next poll."""
    plan = TriggerPlan.from_document(trigger.document)
    if not plan.scheduled or trigger.status != "active":
        return None
    return plan.next_after(now, trigger.anchor)


@dataclass
class _Known:
    trigger: TriggerDeployment
    plan: TriggerPlan
    next_due: datetime | None


@dataclass
class Scheduler:
    """One per worker process: fires schedule triggers and starts queued firings."""

    store: Store
    refresh: float = DEFAULT_REFRESH
    #: a crash test's hook: the firings are written, the commit not issued
    before_commit: Callable[[list[str]], None] | None = None
    _known: list[_Known] = field(default_factory=list)
    _read_at: float | None = None
    #: the store's triggers mark when it last read
    _mark: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def poll(self) -> list[TriggerFiring]:
        """Fire what is due; cheap when nothing is (no store access between refreshes)."""
        if not self._lock.acquire(blocking=False):
            return []  # another thread of this worker is polling
        try:
            now = self.store.now()
            stale = (
                self._read_at is None
                or self._mark != self.store.triggers_mark()
                or time.monotonic() - self._read_at >= self.refresh
            )
            if not stale and not any(k.next_due and k.next_due <= now for k in self._known):
                return []
            self._read(now)
            fired: list[TriggerFiring] = []
            for known in self._known:
                fired += self._fire(known, now)
            if fired:
                self._read(now)
            return fired
        finally:
            self._lock.release()

    def _read(self, now: datetime) -> None:
        self._mark = self.store.triggers_mark()  # before reading: an ask during it reads again
        self._known = []
        for trigger in self.store.triggers.deployments():
            plan = TriggerPlan.from_document(trigger.document)
            active = trigger.status == "active"
            next_due = (
                plan.next_after(trigger.cursor, trigger.anchor)
                if active and plan.scheduled
                else None
            )
            self._known.append(_Known(trigger, plan, next_due))
        self._read_at = time.monotonic()

    def _fire(self, known: _Known, now: datetime) -> list[TriggerFiring]:
        trigger, plan = known.trigger, known.plan
        if trigger.status != "active":
            return []
        fired: list[TriggerFiring] = []
        if trigger.queued and door.has_room(self.store, plan.workflow):
            started = self.store.triggers.start_queued(
                trigger, start=_starter(self.store, plan.workflow)
            )
            fired += [started] if started is not None else []
        if known.next_due is not None and known.next_due <= now:
            occurrences = plan.due(trigger.cursor, now, trigger.anchor)
            fired += record(self.store, trigger, plan, occurrences, self.before_commit)
            for firing in fired:
                log.info(
                    "trigger %s: occurrence %s %s%s", trigger.name, iso(firing.occurred_at),
                    firing.outcome,
                    f" objective {firing.objective_id}" if firing.objective_id else "",
                )  # fmt: skip
        return fired
