"""Triggers for the CLI and the API: list them with their next occurrence and last firing;
pause, resume and retire them.

Triggers are deployed like workflows (``openseal deploy``, a change proposal, an activation);
what is here is what an operator does with a deployed one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from openseal.runtime.access import check_everywhere
from openseal.runtime.caller import Caller
from openseal.runtime.engine.triggers import TriggerPlan, next_occurrence
from openseal.runtime.requests import TriggerCommand
from openseal.runtime.store import NotFound, Store, TriggerDeployment, TriggerFiring


@dataclass(frozen=True)
class TriggerView:
    name: str
    digest: str
    status: str
    workflow: str
    #: ``cron "0 9 * * *" in Europe/Berlin``, ``every 3600s`` or ``event inventory.low``
    fires_on: str
    overlap: str
    catch_up: str
    next_occurrence: datetime | None
    last_firing: TriggerFiring | None


def list_triggers(store: Store) -> list[TriggerView]:
    """Every deployed trigger, by name."""
    deployed = store.triggers.deployments()
    last = store.triggers.last_firings([t.name for t in deployed])
    now = store.now()
    return [_view(t, last.get(t.name), now) for t in deployed]


def show_trigger(
    store: Store, name: str, *, limit: int = 20
) -> tuple[TriggerView, list[TriggerFiring]]:
    """One trigger and its newest firings."""
    views = [v for v in list_triggers(store) if v.name == name]
    if not views:
        raise NotFound(f"no trigger {name!r} is deployed")
    return views[0], store.triggers.firings(name, limit=limit)


def set_trigger_status(store: Store, request: TriggerCommand, caller: Caller) -> TriggerView:
    """Pause, resume or retire a trigger; a trigger starts objectives in every scope, so only
    a caller that reaches every scope may."""
    check_everywhere(caller.grant, f"changing trigger {request.name}")
    updated = store.triggers.set_status(
        request.name, request.status, caller.actor, reason=request.reason
    )
    last = store.triggers.last_firings([updated.name]).get(updated.name)
    return _view(updated, last, store.now())


def _view(trigger: TriggerDeployment, last: TriggerFiring | None, now: datetime) -> TriggerView:
    plan = TriggerPlan.from_document(trigger.document)
    if plan.event is not None:
        fires_on = f"event {plan.event}"
    elif plan.cron is not None:
        fires_on = f'cron "{plan.cron}" in {plan.time_zone}'
    else:
        fires_on = f"every {plan.every:g}s"
    return TriggerView(
        name=trigger.name,
        digest=trigger.digest,
        status=trigger.status,
        workflow=plan.workflow,
        fires_on=fires_on,
        overlap=plan.overlap,
        catch_up=plan.catch_up if plan.event is None else "-",
        next_occurrence=next_occurrence(trigger, now),
        last_firing=last,
    )
