"""The state handlers, one per state kind: the one place to add a kind.

A handler takes a :class:`~openseal.runtime.states.base.StepContext` and returns an outcome
(advance by an event, finish, wait, or needs attention); :func:`register` installs or
replaces one.
"""

from __future__ import annotations

from openseal.runtime.states import (
    action,
    approval,
    delegate,
    fanout,
    proposal,
    simple,
    turn,
    wait,
)
from openseal.runtime.states.base import Handler

HANDLERS: dict[str, Handler] = {
    "turn": turn.execute,
    "decision": simple.decision,
    "transform": simple.transform,
    "wait": wait.execute,
    "delegate": delegate.execute,
    "parallel": fanout.parallel,
    "for_each": fanout.for_each,
    "end": simple.end,
    "proposal": proposal.execute,
    "approval": approval.execute,
    "action": action.execute,
}


def handler_for(kind: str) -> Handler:
    return HANDLERS.get(kind, simple.not_supported)


def register(kind: str, handler: Handler) -> None:
    """Install (or replace) the handler of a state kind."""
    HANDLERS[kind] = handler
