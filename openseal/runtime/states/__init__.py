"""The state handlers, one per state kind: the one place to add a kind.

A handler takes a :class:`~openseal.runtime.states.base.StepContext` and returns an outcome
(advance by an event, finish, wait, or needs attention). ``proposal``, ``approval`` and
``action`` are placeholders until their handlers are registered here with
:func:`register`.
"""

from __future__ import annotations

from openseal.runtime.states import delegate, fanout, simple, turn, wait
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
    # Seams: the approvals and actions work registers real handlers for these.
    "proposal": simple.not_supported,
    "approval": simple.not_supported,
    "action": simple.not_supported,
}


def handler_for(kind: str) -> Handler:
    return HANDLERS.get(kind, simple.not_supported)


def register(kind: str, handler: Handler) -> None:
    """Install (or replace) the handler of a state kind."""
    HANDLERS[kind] = handler
