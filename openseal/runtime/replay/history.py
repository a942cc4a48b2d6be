"""A recorded run's history, read once: what replay feeds back and what it compares against.

:func:`load_history` reads a run's events, recorded activities, proposals, approvals, actions
and delivered inbound events (reads only: replay writes nothing). :func:`recorded_marks`
turns the events into the run's path as a list of :class:`Mark` — every transition, drafted
payload, approval asked, admission verdict, refused tool call and ending — the same marks
the re-drive (:mod:`openseal.runtime.replay.drive`) produces, so the two can be compared one
by one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from openseal.canonical import canonical_bytes
from openseal.runtime.store import (
    Action,
    Activity,
    AgentRequest,
    Approval,
    DependencyGroup,
    Event,
    Proposal,
    Run,
    Store,
)

#: ``run.<outcome>`` events of an end state (they name it as ``end_state``)
ENDINGS = ("run.completed", "run.failed", "run.canceled")


@dataclass(frozen=True)
class Mark:
    """One step of a run's path: in ``state``, ``what`` happened, with ``detail``.

    ``what`` is one of ``advanced`` (``event``, ``to``), ``drafted`` (``name``, ``payload``:
    the content hash), ``asked`` (an approval; ``name``, ``payload``), ``admitted`` /
    ``denied`` (an action; ``name``, ``payload``), ``tool_refused`` (``skill``), ``ended``
    (``outcome``), ``attention`` and ``budget_exhausted``. Reasons are kept out of the
    comparison (``why``): only what the run did counts.
    """

    state: str
    what: str
    detail: tuple[tuple[str, str], ...] = ()
    why: str = field(default="", compare=False)

    @classmethod
    def of(cls, state: str, what: str, why: str = "", **detail: object) -> Mark:
        return cls(state, what, tuple(sorted((k, str(v)) for k, v in detail.items())), why)

    def get(self, key: str) -> str:
        return dict(self.detail).get(key, "")

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "what": self.what, **dict(self.detail)}


def content_hash(document: Mapping[str, Any]) -> str:
    """The hash of a proposal's action-relevant content: its name, skill (and the skill's
    pinned digest), actor, arguments and spend.

    The run and the workflow version that drafted it are left out: every new version drafts
    under its own digest, so the stored hash (which binds approvals) always changes, while
    what the action would *do* may not. Replay compares what it would do."""
    skill = document.get("skill") or {}
    content = {
        "name": document.get("name"),
        "skill": {"name": skill.get("name"), "digest": skill.get("digest")},
        "actor": document.get("actor"),
        "args": document.get("args"),
        "spend": document.get("spend"),
    }
    return hashlib.sha256(canonical_bytes(content)).hexdigest()


@dataclass(frozen=True)
class History:
    """What a run recorded, as replay needs it."""

    run: Run
    events: tuple[Event, ...]
    #: activity id → recorded activity
    activities: Mapping[str, Activity]
    #: proposal id → proposal
    proposals: Mapping[str, Proposal]
    #: in the order they were asked
    approvals: tuple[Approval, ...]
    #: action key (``<run>:<hash>``) → action
    actions: Mapping[str, Action]
    #: inbound event id → its payload, for the events the run's waits were delivered
    deliveries: Mapping[str, Any]
    #: state → its kind, in the version the run is pinned to (how its events are read)
    kinds: Mapping[str, str] = field(default_factory=dict)
    #: state → the agent requests its visits made, in the order they were made
    requests: Mapping[str, tuple[AgentRequest, ...]] = field(default_factory=dict)
    #: (state, visit) → the dependency group that visit of a ``spawn`` state started
    groups: Mapping[tuple[str, int], DependencyGroup] = field(default_factory=dict)
    #: child run id → its inputs, for the children of the groups
    child_inputs: Mapping[str, Any] = field(default_factory=dict)
    #: the operator's repairs, in order: ``(at, from_state, to_state, value)``, ``at`` being
    #: how many marks of the recorded path come before it
    interventions: tuple[Intervention, ...] = ()

    @property
    def inputs(self) -> dict[str, Any]:
        return dict(self.run.context.get("inputs") or {})

    def proposal_by_hash(self, digest: str) -> Proposal | None:
        for proposal in self.proposals.values():
            if proposal.hash == digest:
                return proposal
        return None

    def proposal_content(self, digest: str) -> str:
        """The content hash of the run's stored proposal with hash ``digest`` ('' if none)."""
        proposal = self.proposal_by_hash(digest)
        return content_hash(proposal.document) if proposal is not None else ""

    def approvals_of(self, content: str) -> list[Approval]:
        """The approvals asked for proposals with this content, oldest first."""
        return [a for a in self.approvals if self.proposal_content(a.proposal_hash) == content]

    def action_of(self, content: str) -> Action | None:
        """The run's newest action of a proposal with this content."""
        found = [
            a for a in self.actions.values() if self.proposal_content(a.proposal_hash) == content
        ]
        return max(found, key=lambda a: a.id) if found else None

    def leaving(self, state: str) -> list[str]:
        """The events the run left ``state`` by, one per visit, in order."""
        return [
            str(e.payload.get("event"))
            for e in self.events
            if e.type == "state.advanced" and e.payload.get("from") == state
        ]

    def failure(self, activity_id: str) -> str | None:
        """Why activity ``activity_id`` failed when it was tried, if it did (its last try)."""
        found = None
        for event in self.events:
            if event.type == "activity.failed" and event.payload.get("activity_id") == activity_id:
                found = str(event.payload.get("message") or event.payload.get("code") or "")
        return found

    def retrying(self, state: str) -> bool:
        """Whether the run sleeps now to try ``state``'s work again (a transient failure)."""
        waiting: Mapping[str, Any] = self.run.waiting or {}
        return waiting.get("kind") == "retry" and waiting.get("state") == state

    def delivered(self, state: str) -> list[Any]:
        """The payloads of the inbound events delivered to ``state``'s waits, in order."""
        found: list[Any] = []
        current = ""
        for event in self.events:
            if event.type == "turn.started":
                current = str(event.payload.get("state"))
            elif event.type == "wait.event_delivered" and current == state:
                found.append(self.deliveries.get(str(event.payload.get("inbound_event_id"))))
        return found


@dataclass(frozen=True)
class Intervention:
    """An operator's repair of the run (``runs intervene``): after ``at`` marks of the
    recorded path, in ``from_state``, the state's output set to ``value`` (None: kept) and
    the run moved to ``to_state`` (the same state: it runs again, a retry)."""

    at: int
    from_state: str
    to_state: str
    value: Any


def load_history(store: Store, run: Run, kinds: Mapping[str, str]) -> History:
    """Everything ``run`` recorded, read in one transaction (reads only); ``kinds``: the kind
    of each state of the version it is pinned to."""
    with store.read() as conn:
        events, activities = store.runs.history_in(conn, run.id)
        drafted = [str(e.payload["proposal_id"]) for e in events if e.type == "proposal.drafted"]
        proposals = {pid: store.proposals.get(conn, pid) for pid in dict.fromkeys(drafted)}
        approvals = store.approvals.of_run(conn, run.id)
        actions = {a.key: a for a in store.actions.of_run(conn, run.id)}
        requests = _requests(store, conn, events)
        groups = {
            (g.state, g.visit): g
            for g in (
                store.dependencies.get_in(conn, str(e.payload["dependency_group_id"]))
                for e in events
                if e.type == "dependency.started"
            )
        }
        child_inputs = {
            m.run_id: store.runs.load(conn, m.run_id).context.get("inputs")
            for g in groups.values()
            for m in g.members
        }
    deliveries: dict[str, Any] = {}
    for event in events:
        if event.type == "wait.event_delivered":
            inbound = store.inbound_events.get(str(event.payload.get("inbound_event_id")))
            if inbound is not None:
                deliveries[inbound.id] = inbound.payload
    history = History(
        run=run,
        events=events,
        activities={a.activity_id: a for a in activities},
        proposals=proposals,
        approvals=tuple(approvals),
        actions=actions,
        deliveries=deliveries,
        kinds=kinds,
        requests=requests,
        groups=groups,
        child_inputs=child_inputs,
    )
    return replace(history, interventions=tuple(_path(history)[1]))


def _requests(store: Store, conn: Any, events: tuple[Event, ...]) -> dict[str, tuple[Any, ...]]:
    """State → the agent requests its visits made, oldest first (from the events that
    recorded each request being made)."""
    found: dict[str, dict[str, None]] = {}
    state = ""
    for event in events:
        if event.type == "turn.started":
            state = str(event.payload.get("state"))
        elif event.type in ("agent_request.accepted", "agent_request.failed"):
            request_id = event.payload.get("agent_request_id")
            if request_id and event.payload.get("status") is not None:
                found.setdefault(state, {})[str(request_id)] = None
    return {
        state: tuple(store.agent_requests.get_in(conn, rid) for rid in ids)
        for state, ids in found.items()
    }


def recorded_marks(history: History) -> list[Mark]:
    """The run's path as it was recorded, from its events."""
    return _path(history)[0]


def _path(history: History) -> tuple[list[Mark], list[Intervention]]:
    """The recorded path, and the operator's repairs placed in it."""
    marks: list[Mark] = []
    repairs: list[Intervention] = []
    state = ""
    asked: set[str] = set()
    for event in history.events:
        payload = event.payload
        if event.type == "turn.started":
            state = str(payload.get("state"))
        if event.type == "run.intervened":
            source = str(payload.get("from_state") or "")
            target = str(payload.get("to_state") or source)
            repairs.append(Intervention(len(marks), source, target, payload.get("value")))
            continue
        mark = _mark_of(history, event.type, payload, state, asked)
        if mark is not None:
            marks.append(mark)
    return marks, repairs


def _mark_of(
    history: History, kind: str, payload: Mapping[str, Any], state: str, asked: set[str]
) -> Mark | None:
    if kind == "state.advanced":
        return Mark.of(str(payload["from"]), "advanced", event=payload["event"], to=payload["to"])
    if kind == "proposal.drafted":
        proposal = history.proposals[str(payload["proposal_id"])]
        return Mark.of(
            state, "drafted", name=proposal.name, payload=content_hash(proposal.document)
        )
    if kind == "wait.approval":
        waiting = payload.get("waiting") or {}
        approval_id = str(waiting.get("approval_id"))
        if approval_id in asked:
            return None  # waiting again for the same approval
        asked.add(approval_id)
        content = history.proposal_content(str(waiting.get("hash")))
        return Mark.of(state, "asked", name=waiting.get("proposal"), payload=content)
    if kind in ("action.admitted", "action.denied") and history.kinds.get(state) == "action":
        # an admission's verdict (an approval's rejection or expiry denies the action too,
        # in the approval's state: that is the approval's outcome, marked by its transition)
        content = history.proposal_content(str(payload.get("hash")))
        what = "admitted" if kind == "action.admitted" else "denied"
        return Mark.of(state, what, name=payload.get("proposal"), payload=content)
    if kind == "tool_call.refused" and payload.get("reason_code") != "budget_exhausted":
        return Mark.of(state, "tool_refused", skill=payload.get("skill"))
    if kind in ENDINGS and payload.get("end_state"):
        return Mark.of(str(payload["end_state"]), "ended", outcome=kind.removeprefix("run."))
    if kind == "run.needs_attention":
        return Mark.of(state, "attention", why=str(payload.get("reason") or ""))
    if kind == "run.budget_exhausted":
        return Mark.of(state, "budget_exhausted", why=str(payload.get("reason") or ""))
    return None
