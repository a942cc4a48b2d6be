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
from openseal.compiler.definitions.specs import ApprovalPolicy, BindingSpec, Effect, State, Step
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
    # ``rejected`` is the older name of ``declined``, kept so deployed workflows still compile
    "delegate": ("done", "declined", "failed", "expired", "rejected"),
    "parallel": ("done", "failed"),
    "for_each": ("done", "failed"),
    "spawn": ("done", "failed", "expired"),
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
    """Every definition, addressable by ``kind.name``, plus the grants between them.

    The later stages ask for the definitions of one kind, the grants of one skill to one
    grantee and the bindings written for one skill and grantee once per state or per skill
    use; all three are indexed when the analysis is made, so a project of many
    definitions is not scanned for each.
    """

    definitions: Mapping[str, Definition]
    grants: tuple[Grant, ...] = ()
    _kinds: Mapping[str, tuple[Definition, ...]] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )
    _grants: Mapping[tuple[str, str], tuple[Grant, ...]] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )
    _bindings: Mapping[tuple[str, str], tuple[Definition, ...]] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        kinds: dict[str, list[Definition]] = {}
        for definition in self.definitions.values():
            kinds.setdefault(definition.kind, []).append(definition)
        grants: dict[tuple[str, str], list[Grant]] = {}
        for grant in self.grants:
            grants.setdefault((grant.grantee, grant.skill), []).append(grant)
        bindings: dict[tuple[str, str], list[Definition]] = {}
        for binding in sorted(kinds.get("binding", ()), key=lambda d: d.name):
            if isinstance(binding.spec, BindingSpec):
                written = (binding.spec.skill.dotted, binding.spec.to.dotted)
                bindings.setdefault(written, []).append(binding)
        object.__setattr__(self, "_kinds", {k: tuple(v) for k, v in kinds.items()})
        object.__setattr__(self, "_grants", {k: tuple(v) for k, v in grants.items()})
        object.__setattr__(self, "_bindings", {k: tuple(v) for k, v in bindings.items()})

    def get(self, key: str) -> Definition | None:
        return self.definitions.get(key)

    def of_kind(self, kind: str) -> list[Definition]:
        """The definitions of ``kind``, in the order of :attr:`definitions`."""
        return list(self._kinds.get(kind, ()))

    def grants_for(self, grantee: str, skill: str) -> list[Grant]:
        """The grants of ``skill`` to exactly ``grantee``, in the order of :attr:`grants`."""
        return list(self._grants.get((grantee, skill), ()))

    def bindings_written(self, skill: str, to: str) -> list[Definition]:
        """Binding definitions whose ``skill`` and ``to`` are written as these references
        (whether or not those exist), by name."""
        return list(self._bindings.get((skill, to), ()))


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
