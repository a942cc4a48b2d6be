"""Intermediate representations passed between the compiler's later stages.

``resolve`` turns decoded definitions into an :class:`Analysis` (one symbol
table across all files, every grant, every actor); ``build`` turns each
workflow and runbook into a graph (:class:`WorkflowGraph`, :class:`RunbookGraph`);
the checks read both; ``emit`` writes compiled documents from both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openseal.compiler.definitions.decode import Definition
from openseal.compiler.definitions.specs import ApprovalPolicy, Effect, State, Step
from openseal.compiler.lang import expr as ex
from openseal.compiler.syntax.spans import Span

#: Events each kind of state can produce. ``next = state.x`` is ``on "done"``.
STATE_EVENTS: dict[str, tuple[str, ...]] = {
    "turn": ("done",),
    "action": ("done", "failed"),
    "proposal": ("done",),
    "approval": ("approved", "rejected", "changes_requested", "expired"),
    "decision": ("done",),
    "transform": ("done",),
    "wait": ("done", "timeout"),
    "delegate": ("done", "rejected"),
    "parallel": ("done", "failed"),
    "for_each": ("done", "failed"),
    "end": (),
}


@dataclass(frozen=True, slots=True)
class Grant:
    """A binding granting ``skill`` to ``grantee``.

    ``grantee`` is ``agent.<name>``, ``team.<name>`` (a team-level grant) or
    ``team.<name>.role.<role>`` (a member-level grant); the two team forms are
    separate — neither implies the other.
    """

    binding: str
    skill: str
    grantee: str
    max_risk: Effect | None
    constraints: tuple[ex.Expression, ...]
    approval: ApprovalPolicy | None
    span: Span


@dataclass(frozen=True, slots=True)
class Analysis:
    """Every definition, addressable by ``kind.name``, plus the grants between them."""

    definitions: Mapping[str, Definition]
    grants: tuple[Grant, ...] = ()

    def get(self, key: str) -> Definition | None:
        return self.definitions.get(key)

    def of_kind(self, kind: str) -> list[Definition]:
        return [d for d in self.definitions.values() if d.kind == kind]

    def grants_for(self, grantee: str, skill: str) -> list[Grant]:
        return [g for g in self.grants if g.grantee == grantee and g.skill == skill]


@dataclass(frozen=True, slots=True)
class Transition:
    source: str
    target: str
    event: str
    guard: ex.Expression | None
    #: position among guarded choices of one state (``branch`` order); 0 otherwise
    order: int
    span: Span


@dataclass(frozen=True, slots=True)
class WorkflowGraph:
    """A workflow's states and transitions, and the same as a networkx ``DiGraph``.

    Nodes are state names with attribute ``kind``; edges carry ``transitions``
    (a list, as two events may lead to the same state).
    """

    name: str
    start: str | None
    states: Mapping[str, State]
    transitions: tuple[Transition, ...]
    ends: Mapping[str, str]
    graph: Any = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class RunbookGraph:
    """A runbook's steps as a DAG; an edge ``a → b`` means ``b`` needs ``a``'s output."""

    name: str
    steps: Mapping[str, Step]
    graph: Any = field(compare=False, repr=False)
