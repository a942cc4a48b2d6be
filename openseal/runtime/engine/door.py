"""Back-pressure at the door: new work is refused while a workflow's ready queue is full.

A workflow may declare ``max_queued``: the most of its runs that may wait in the ready queue
(status ``queued``) for a worker. While that many wait, starting another objective of it
(``POST /api/v1/objectives``, ``openseal objectives create``) or delivering an event that would
fire a trigger of it is refused with ``429 queue_full`` and ``Retry-After``: the caller sends
again later, and nothing is created or stored. The depth is read when the request arrives, not
in the transaction that creates the run, so requests that arrive together may each pass one
short of the depth: the queue may exceed it by the number of requests in flight.

An operator may bound a scope's ready queue the same way (``openseal scopes queue``): its
runs waiting for a worker, whichever workflow they are of.

A trigger's scheduled firing is not refused (nobody could send it again): it is recorded and
waits, as a firing that overlaps a running objective waits (``overlap``), until the queue has
room.
"""

from __future__ import annotations

from collections.abc import Iterable

from openseal.errors import RuntimeFailure
from openseal.runtime.store import DEFAULT_SCOPE, DefinitionVersion, Store

#: what a refused caller is asked to wait before it sends again, in seconds
RETRY_AFTER = 5


class QueueFull(RuntimeFailure):
    """The workflow's ready queue is at its ``max_queued``: send again after ``retry_after``."""

    code = "queue_full"

    def __init__(self, workflow: str, depth: int, *, kind: str = "workflow") -> None:
        super().__init__(
            f"the ready queue of {kind} {workflow!r} is full ({depth} runs waiting for a "
            f"worker, its `max_queued`): try again in {RETRY_AFTER}s",
            code="queue_full",
        )
        self.retry_after = RETRY_AFTER
        self.workflow = workflow


def max_queued(store: Store, workflow: str) -> int | None:
    """The active version's ``max_queued``; None when it declares none (or is not deployed:
    the create itself says so)."""
    version = store.definitions.active_version(workflow)
    return None if version is None else declared(version)


def declared(version: DefinitionVersion) -> int | None:
    """The ``max_queued`` a workflow version declares (None: none)."""
    value = (version.document.get("spec") or {}).get("max_queued")
    return value if isinstance(value, int) else None


def check_version(store: Store, workflow: str, version: DefinitionVersion) -> None:
    """Refuse (:class:`QueueFull`) a new run of ``version`` when its ready queue is full; free
    for a version that declares no ``max_queued`` (creating an objective checks the version
    it pins, read in its own transaction)."""
    depth = declared(version)
    if depth is not None and store.runs.queued(workflow, up_to=depth) >= depth:
        raise QueueFull(workflow, depth)


def check(store: Store, workflows: Iterable[str]) -> None:
    """Refuse (:class:`QueueFull`) when any of ``workflows`` has a full ready queue."""
    for workflow in workflows:
        depth = max_queued(store, workflow)
        if depth is not None and store.runs.queued(workflow, up_to=depth) >= depth:
            raise QueueFull(workflow, depth)


def has_room(store: Store, workflow: str, scope: str = DEFAULT_SCOPE) -> bool:
    """Whether a new run of ``workflow`` in ``scope`` would fit its ready queues (the
    workflow's, the scope's)."""
    depth = max_queued(store, workflow)
    if depth is not None and store.runs.queued(workflow, up_to=depth) >= depth:
        return False
    return scope_has_room(store, scope)


def scope_max_queued(store: Store, scope: str) -> int | None:
    """The ready-queue depth an operator set on ``scope`` (None: none), from the settings
    this process read last (every worker reads them once a second)."""
    setting = store.capacity.settings(max_age=float("inf")).get(f"scope:{scope}")
    return None if setting is None else setting.max_queued


def scope_has_room(store: Store, scope: str) -> bool:
    depth = scope_max_queued(store, scope)
    return depth is None or store.runs.queued_in_scope(scope, up_to=depth) < depth


def check_scope(store: Store, scope: str) -> None:
    """Refuse (:class:`QueueFull`) a new run in ``scope`` when the scope's ready queue is
    full; free for a scope with no ``max_queued``."""
    depth = scope_max_queued(store, scope)
    if depth is not None and store.runs.queued_in_scope(scope, up_to=depth) >= depth:
        raise QueueFull(scope, depth, kind="scope")
