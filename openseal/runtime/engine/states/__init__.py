"""The state handlers, one per state kind: the one place to add a kind.

A handler takes a :class:`~openseal.runtime.engine.states.base.StepContext` and returns an outcome
(advance by an event, finish, wait, or needs attention); :func:`register` installs or
replaces one.
"""

from __future__ import annotations

from openseal.runtime.engine.states import (
    action,
    approval,
    delegate,
    fanout,
    proposal,
    simple,
    spawn,
    turn,
    wait,
)
from openseal.runtime.engine.states.base import Handler, Preparer

HANDLERS: dict[str, Handler] = {
    "turn": turn.execute,
    "decision": simple.decision,
    "transform": simple.transform,
    "wait": wait.execute,
    "delegate": delegate.execute,
    "parallel": fanout.parallel,
    "for_each": fanout.for_each,
    "spawn": spawn.execute,
    "end": simple.end,
    "proposal": proposal.execute,
    "approval": approval.execute,
    "action": action.execute,
}


#: kinds whose built-in handler reads the run's context and the workflow and nothing else, so
#: the executor runs them in the commit that saves their turn (docs/decisions/0006)
PURE: dict[str, Handler] = {
    "decision": simple.decision,
    "transform": simple.transform,
    "end": simple.end,
}


#: kinds whose built-in handler has part of its turn prepared in the transaction that saves
#: the turn (docs/decisions/0013): an action's draft, admission and ``dispatched`` mark
PREPARED: dict[str, tuple[Handler, Preparer]] = {
    "action": (action.execute, action.prepare_in),
}


def handler_for(kind: str) -> Handler:
    return HANDLERS.get(kind, simple.not_supported)


def is_pure(kind: str) -> bool:
    """Whether ``kind`` is pure: one of :data:`PURE` with its built-in handler still installed
    (a handler installed by :func:`register` is never assumed pure)."""
    return kind in PURE and HANDLERS.get(kind) is PURE[kind]


def preparer_for(kind: str) -> Preparer | None:
    """What prepares a turn of ``kind`` in the transaction that saves it, if anything: only
    for the built-in handler (one installed by :func:`register` prepares its own turns)."""
    entry = PREPARED.get(kind)
    if entry is None or HANDLERS.get(kind) is not entry[0]:
        return None
    return entry[1]


def register(kind: str, handler: Handler) -> None:
    """Install (or replace) the handler of a state kind."""
    HANDLERS[kind] = handler
