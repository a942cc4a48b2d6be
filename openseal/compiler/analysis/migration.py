"""The ``migrate`` block of a workflow, checked against the compiled graphs of both versions.

A migration moves runs waiting in a state of an earlier version to a state of this one. It is
checked over the two compiled documents, because the earlier version exists only as one (it
was compiled, deployed and run long ago; see docs/decisions/0018):

* ``OS601`` the earlier version it names is not a stored version of this workflow (or the
  prefix names several);
* ``OS602`` a state where the earlier version's runs can wait is neither mapped nor left
  behind, or both;
* ``OS603`` a state it names does not exist (in the earlier version, or in this one);
* ``OS604`` a carried value does not fit the output type of the state it fills, or a state's
  output kept by name changed type;
* ``OS605`` runs would be moved past an effect: an action this version performs before the
  target state that the earlier version had not performed before the source state;
* ``OS606`` runs waiting in a state of this kind cannot move (their wait is shared with child
  runs or may hold an effect), or not to a state of that kind.

Diagnostics point at the ``migrate`` block in the source when the definition is given, else at
the compiled workflow (``workflow <name> (compiled)``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from openseal.compiler.analysis.expression_scopes import Namespace, Scope, check_reference
from openseal.compiler.analysis.infer import Inferrer, show, source
from openseal.compiler.definitions.decode import Definition
from openseal.compiler.definitions.specs import WorkflowSpec
from openseal.compiler.diagnostics import Diagnostic, did_you_mean, error
from openseal.compiler.lang import expr as ex
from openseal.compiler.lang import types as ty
from openseal.compiler.syntax.spans import Span

Document = Mapping[str, Any]

#: state kinds a run can wait in (holding no worker), with the run status it waits in
WAITING_KINDS: dict[str, str] = {
    "approval": "waiting_for_approval",
    "wait": "sleeping or waiting_for_event",
    "delegate": "waiting_for_agent",
    "spawn": "waiting_for_dependency",
    "parallel": "waiting_for_dependency",
    "for_each": "waiting_for_dependency",
    "action": "sleeping until its action is reconciled",
}
#: kinds whose waiting runs can move: their wait is the run's alone (no child run, no effect),
#: or, for a ``delegate``, a request the new state would make the same (the runtime checks it)
MOVABLE_KINDS = frozenset({"approval", "wait", "delegate"})
#: kinds where a run waits only for capacity, before its visit begins: it may move to a state
#: of the same kind, which it then begins instead (a visit begun stays)
CAPACITY_KINDS = frozenset({"turn", "decision", "transform", "proposal"})
MIN_PREFIX = 6


def find_earlier(reference: str, earlier: Mapping[str, Document]) -> tuple[str | None, str]:
    """The digest of the earlier version ``reference`` names (a digest or a prefix of at least
    six hex digits) among ``earlier`` (digest → document), or None and why not."""
    wanted = reference.strip().lower().removeprefix("sha256:")
    matches = sorted(d for d in earlier if d.removeprefix("sha256:").startswith(wanted))
    if len(wanted) < MIN_PREFIX:
        return None, f"a version is named by at least {MIN_PREFIX} hex digits of its digest"
    if len(matches) == 1:
        return matches[0], ""
    if matches:
        return None, f"`{reference}` names {len(matches)} versions; give more digits"
    return None, f"`{reference}` is not a stored version of this workflow"


def check_migrations(
    document: Document, earlier: Mapping[str, Document], definition: Definition | None = None
) -> list[Diagnostic]:
    """Every ``migrate`` block of compiled workflow ``document`` against the earlier version
    it names, found in ``earlier`` (digest → compiled document of the same workflow).

    ``definition`` is the workflow as written, for diagnostics at its source."""
    found: list[Diagnostic] = []
    for index, block in enumerate(document.get("spec", {}).get("migrate") or []):
        where = _Where(document, definition, index)
        digest, problem = find_earlier(str(block["version"]), earlier)
        if digest is None:
            found.append(error("OS601", problem, where.key("version"), suggestion=_known(earlier)))
            continue
        found += check_block(block, document, earlier[digest], where)
    return found


def _known(earlier: Mapping[str, Document]) -> str | None:
    if not earlier:
        return "no earlier version of this workflow is stored"
    digests = ", ".join(d.removeprefix("sha256:")[:12] for d in sorted(earlier))
    return f"stored versions: {digests}"


def check_block(
    block: Mapping[str, Any], new: Document, old: Document, where: _Where
) -> list[Diagnostic]:
    """One ``migrate`` block: its states, the waiting states it covers, its carried values."""
    old_states, new_states = _states(old), _states(new)
    found = list(_unknown_states(block, old_states, new_states, where))
    found += _uncovered(block, old_states, where)
    for name, mapping in sorted((block.get("state") or {}).items()):
        target = _target(mapping)
        if name not in old_states or target not in new_states:
            continue
        found += _kinds(name, target, old_states, new_states, where)
        found += _past_effects(name, target, old, new, where)
        found += _carried(name, mapping, old, new, where)
    return found


def _states(document: Document) -> Mapping[str, Mapping[str, Any]]:
    return dict(document.get("graph", {}).get("states") or {})


def _target(mapping: Mapping[str, Any]) -> str:
    return str(mapping.get("to", "")).removeprefix("state.")


def _unknown_states(
    block: Mapping[str, Any],
    old_states: Mapping[str, Any],
    new_states: Mapping[str, Any],
    where: _Where,
) -> Iterator[Diagnostic]:
    for name in sorted(block.get("state") or {}):
        if name not in old_states:
            yield _no_state(name, old_states, "the earlier version", where.key("state", name))
        target = _target(block["state"][name])
        if target not in new_states:
            yield _no_state(target, new_states, "this version", where.key("state", name, "to"))
        for key in sorted(block["state"][name].get("carry") or {}):
            if key not in new_states:
                span = where.key("state", name, "carry", key)
                yield _no_state(key, new_states, "this version (to carry into)", span)
    for name in block.get("leave") or []:
        if name not in old_states:
            yield _no_state(name, old_states, "the earlier version", where.key("leave"))


def _no_state(name: str, states: Mapping[str, Any], of: str, span: Span) -> Diagnostic:
    return error(
        "OS603", f"`{name}` is not a state of {of}", span, suggestion=did_you_mean(name, states)
    )


def _uncovered(
    block: Mapping[str, Any], old_states: Mapping[str, Mapping[str, Any]], where: _Where
) -> Iterator[Diagnostic]:
    mapped, left = set(block.get("state") or {}), set(block.get("leave") or [])
    for name in sorted(mapped & left):
        message = f"state `{name}` is both mapped and left behind; say one"
        yield error("OS602", message, where.key("state", name))
    for name, state in sorted(old_states.items()):
        kind = str(state.get("kind"))
        if kind in WAITING_KINDS and name not in mapped | left:
            message = (
                f"runs of the earlier version can wait in state `{name}` ({kind}: "
                f'{WAITING_KINDS[kind]}); map it with `state "{name}" {{ to = ... }}` or '
                "leave its runs where they are with `leave`"
            )
            yield error("OS602", message, where.key("version"), suggestion=f'leave = ["{name}"]')


def _kinds(
    name: str,
    target: str,
    old_states: Mapping[str, Mapping[str, Any]],
    new_states: Mapping[str, Mapping[str, Any]],
    where: _Where,
) -> Iterator[Diagnostic]:
    kind, to_kind = str(old_states[name].get("kind")), str(new_states[target].get("kind"))
    if kind not in MOVABLE_KINDS | CAPACITY_KINDS:
        why = "its wait is not the run's alone" if kind != "action" else "it may hold an effect"
        if kind == "end":
            why = "its runs have ended"
        message = (
            f"runs waiting in state `{name}` ({kind}) cannot move: {why}; runs move from "
            "approval, wait and delegate states, and from turn, decision, transform and "
            "proposal states while they wait for capacity"
        )
        yield error("OS606", message, where.key("state", name), suggestion=f'leave = ["{name}"]')
    elif to_kind != kind:
        message = (
            f"runs waiting in `{name}` ({kind}) can only move to a {kind} state; "
            f"`{target}` is a {to_kind} state"
        )
        yield error("OS606", message, where.key("state", name, "to"))


def _past_effects(
    name: str, target: str, old: Document, new: Document, where: _Where
) -> Iterator[Diagnostic]:
    done = _effects_before(old, name)
    for state, skill in sorted(_effects_before(new, target) - done):
        message = (
            f"moving runs from `{name}` to `{target}` would move them past an effect: this "
            f"version acts in state `{state}` (skill `{skill}`) before `{target}`, and runs "
            f"waiting in `{name}` have not"
        )
        hint = "map the runs to a state before that action, or leave them behind"
        yield error("OS605", message, where.key("state", name, "to"), suggestion=hint)


def _effects_before(document: Document, state: str) -> set[tuple[str, str]]:
    """``(action state, skill)`` of every action with an effect on some path to ``state``."""
    states = _states(document)
    graph = document.get("graph", {})
    into: dict[str, set[str]] = {}
    for t in graph.get("transitions") or []:
        into.setdefault(str(t["to"]), set()).add(str(t["from"]))
    before: set[str] = set()
    frontier = [state]
    while frontier:
        for source_state in into.get(frontier.pop(), ()):
            if source_state not in before:
                before.add(source_state)
                frontier.append(source_state)
    effects = set()
    for name in before - {state}:
        skill = _action_skill(document, states, name)
        if skill is not None:
            effects.add((name, skill))
    return effects


def _action_skill(
    document: Document, states: Mapping[str, Mapping[str, Any]], name: str
) -> str | None:
    """The skill an ``action`` state acts with, if its effect is more than a read."""
    if states[name].get("kind") != "action":
        return None
    config = states[name].get("config") or {}
    skill = config.get("skill")
    if skill is None:
        proposal = str(config.get("proposal") or "").removeprefix("proposal.")
        for state in states.values():
            steps = state.get("config") if state.get("kind") == "proposal" else None
            if isinstance(steps, Mapping) and proposal in steps:
                skill = steps[proposal].get("skill")
    skill = str(skill or "").removeprefix("skill.")
    effect = ((document.get("skills") or {}).get(skill) or {}).get("effect")
    return skill if effect != "read" else None


def _carried(
    name: str, mapping: Mapping[str, Any], old: Document, new: Document, where: _Where
) -> Iterator[Diagnostic]:
    roots = _OldRoots(old)
    scope = roots.scope()
    carry = mapping.get("carry") or {}
    new_states = _states(new)
    for key in sorted(carry):
        if key not in new_states:
            continue
        expr = where.expression(name, key, carry[key])
        problems = [d for r in ex.references(expr) if (d := check_reference(r, scope))]
        if problems:
            yield from problems
            continue
        checker = Inferrer(roots)
        got = checker.infer(expr, scope)
        yield from checker.diagnostics
        wanted = output_type(new_states[key])
        if not ty.is_assignable(got, wanted):
            message = (
                f"`{source(expr)}` is {show(got)}, but the output of state `{key}` in this "
                f"version is {show(wanted)}"
            )
            yield error("OS604", message, expr.span)
    yield from _kept_outputs(name, carry, old, new, where)


def _kept_outputs(
    name: str, carry: Mapping[str, Any], old: Document, new: Document, where: _Where
) -> Iterator[Diagnostic]:
    """Outputs a moved run keeps by state name must still have their state's type."""
    old_states, new_states = _states(old), _states(new)
    for state in sorted(_before(old, name)):
        if state in carry or state not in new_states:
            continue
        had, wants = output_type(old_states[state]), output_type(new_states[state])
        if not ty.is_assignable(had, wants):
            message = (
                f"runs waiting in `{name}` carry the output of state `{state}` as "
                f"{show(had)}, but this version's `{state}` outputs {show(wants)}"
            )
            hint = f"carry it explicitly: `carry = {{ {state} = ... }}`"
            yield error("OS604", message, where.key("state", name), suggestion=hint)


def _before(document: Document, state: str) -> set[str]:
    into: dict[str, set[str]] = {}
    for t in document.get("graph", {}).get("transitions") or []:
        into.setdefault(str(t["to"]), set()).add(str(t["from"]))
    seen: set[str] = set()
    frontier = [state]
    while frontier:
        for s in into.get(frontier.pop(), ()):
            if s not in seen:
                seen.add(s)
                frontier.append(s)
    return seen - {state}


def output_type(state: Mapping[str, Any]) -> ty.TypeExpr:
    """A compiled state's output type, from its ``output_schema`` (``any`` without one)."""
    schema = state.get("output_schema")
    return from_schema(schema) if isinstance(schema, Mapping) else ty.ANY


def from_schema(schema: Mapping[str, Any]) -> ty.TypeExpr:
    """The type whose JSON Schema (as ``to_json_schema`` writes it) is ``schema``."""
    if "anyOf" in schema:
        return from_schema(schema["anyOf"][0])
    kind = schema.get("type")
    primitives = {"string": ty.STRING, "number": ty.NUMBER, "boolean": ty.BOOL}
    if kind in primitives:
        return primitives[kind]
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        element = from_schema(schema["items"])
        return ty.SetType(element) if schema.get("uniqueItems") else ty.ListType(element)
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        return ty.MapType(from_schema(schema["additionalProperties"]))
    if kind == "object" and isinstance(schema.get("properties"), Mapping):
        required = set(schema.get("required") or ())
        fields = [
            ty.Field(k, from_schema(v), optional=k not in required)
            for k, v in schema["properties"].items()
        ]
        return ty.object_type(fields)
    return ty.ANY


class _OldRoots:
    """Types of ``input.<name>`` and ``state.<name>.output`` in the earlier version."""

    def __init__(self, old: Document) -> None:
        self.states = _states(old)
        inputs = (old.get("inputs") or {}).get("properties") or {}
        self.inputs = {k: from_schema(v) for k, v in inputs.items()}

    def scope(self) -> Scope:
        namespaces = {
            "input": Namespace("input", tuple(sorted(self.inputs))),
            "state": Namespace("state", tuple(sorted(self.states)), then="output"),
        }
        return Scope("a carried value (the earlier version's run)", "migrate", namespaces)

    def namespace_type(self, scope: Scope, root: str, name: str) -> ty.TypeExpr:
        if root == "input":
            return self.inputs.get(name, ty.ANY)
        return output_type(self.states[name]) if name in self.states else ty.ANY

    def skill_input(self, skill: ex.Ref) -> ty.TypeExpr:
        return ty.ANY


@dataclass(frozen=True)
class _Where:
    """Where a part of ``migrate`` block ``index`` was written (or the compiled workflow)."""

    document: Document
    definition: Definition | None
    index: int

    @property
    def fallback(self) -> Span:
        if self.definition is not None:
            return self.definition.span
        return Span.point(f"workflow {self.document.get('name')} (compiled)")

    def key(self, *path: str) -> Span:
        if self.definition is None:
            return self.fallback
        spans = self.definition.key_spans
        for length in range(len(path), -1, -1):
            for prefix in (("migrate", self.index), ("migrate", str(self.index)), ("migrate",)):
                span = spans.get((*prefix, *path[:length]))
                if span is not None:
                    return span
        return self.fallback

    def expression(self, state: str, key: str, written: object) -> ex.Expression:
        """The carried expression, with its source spans when the definition is given."""
        spec = self.definition.spec if self.definition is not None else None
        if isinstance(spec, WorkflowSpec) and self.index < len(spec.migrate):
            mapping = spec.migrate[self.index].state.get(state)
            if mapping is not None and key in mapping.carry:
                return mapping.carry[key]
        return ex.from_json(written)
