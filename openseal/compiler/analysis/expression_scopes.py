"""What an expression may refer to, and where every expression of a definition sits.

A :class:`Scope` lists the roots an expression may start with. Some roots are
*namespaces* whose first step names something declared (``input.request``,
``state.research.output``, ``proposal.order``, ``step.fetch.output``); others
are *values* (``args``, ``config``, ``action``, a ``for_each`` item).
``resolve`` uses scopes to report unknown names; ``typecheck`` uses the same
scopes, and the :class:`Site` of each expression, to infer and check types.

Secrets are never a root: ``credential`` is not in any scope.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from openseal.compiler.definitions.decode import Definition
from openseal.compiler.definitions.specs import (
    Adapter,
    BindingSpec,
    BranchWork,
    RunbookSpec,
    SkillSpec,
    State,
    Step,
    TriggerSpec,
    WorkflowSpec,
)
from openseal.compiler.diagnostics import Diagnostic, did_you_mean, error
from openseal.compiler.lang import expr as ex
from openseal.compiler.lang import types as ty
from openseal.compiler.syntax.spans import Span

#: ``action`` in a skill adapter: the stable action key and who it belongs to.
ACTION_TYPE = ty.object_type(
    [ty.Field("key", ty.STRING), ty.Field("run", ty.STRING), ty.Field("proposal", ty.STRING)]
)


@dataclass(frozen=True, slots=True)
class Namespace:
    """A root whose first step names something declared, e.g. ``state.<name>``."""

    noun: str
    names: tuple[str, ...]
    #: the step that must follow the name (``state.research.output``), if any
    then: str | None = None
    #: unknown names are reported by another check (the graph checks for ``step``)
    report_unknown: bool = True


@dataclass(frozen=True, slots=True)
class Value:
    """A root that is a value: of ``type``, of ``skill``'s input type, or an item of ``items``."""

    type: ty.TypeExpr = ty.ANY
    skill: ex.Ref | None = None
    #: a ``for_each`` item: an element of this expression, evaluated in the parent scope
    items: ex.Expression | None = None


@dataclass(frozen=True, slots=True)
class Scope:
    #: for messages: "a workflow expression", "a skill adapter"...
    where: str
    #: key of the definition the expression belongs to (``workflow.procure_laptops``)
    owner: str
    namespaces: Mapping[str, Namespace] = field(default_factory=dict)
    values: Mapping[str, Value] = field(default_factory=dict)
    parent: Scope | None = None

    @property
    def roots(self) -> list[str]:
        return sorted({*self.namespaces, *self.values})

    def with_value(self, name: str, value: Value) -> Scope:
        return Scope(self.where, self.owner, self.namespaces, {**self.values, name: value}, self)


@dataclass(frozen=True, slots=True)
class Site:
    """One expression, the scope it is evaluated in and what it must be.

    ``target`` names what the value is for, in messages (``"`quantity`"``,
    ``"the guard"``). ``expect`` is a fixed expected type; ``argument`` is
    ``(skill reference, argument name)`` when the expected type is that field
    of the skill's input type.
    """

    expr: ex.Expression
    scope: Scope
    target: str
    expect: ty.TypeExpr | None = None
    argument: tuple[ex.Ref, str] | None = None
    #: ``(workflow reference, input name)`` when the expected type is that workflow input's
    workflow_input: tuple[ex.Ref, str] | None = None

    @property
    def span(self) -> Span:
        """Where a mismatch is reported: the expression (a plain value too, see decode)."""
        return self.expr.span


def _listing(names: list[str] | tuple[str, ...]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


def check_reference(ref: ex.Ref, scope: Scope) -> Diagnostic | None:
    """``OS201`` when ``ref`` starts with a root or a name ``scope`` does not have."""
    if ref.root in scope.values:
        return None
    namespace = scope.namespaces.get(ref.root)
    if namespace is None:
        return _unknown_root(ref, scope)
    first = ref.path[0] if ref.path else None
    if not isinstance(first, str) or first not in namespace.names:
        if not namespace.report_unknown:
            return None
        return _unknown_name(ref, namespace, first)
    if namespace.then is not None and (len(ref.path) < 2 or ref.path[1] != namespace.then):
        message = (
            f"`{ref.dotted}` is not a value; read the result of {namespace.noun} `{first}` "
            f"as `{ref.root}.{first}.{namespace.then}`"
        )
        return error("OS201", message, ref.span)
    return None


def _unknown_root(ref: ex.Ref, scope: Scope) -> Diagnostic:
    roots = scope.roots
    message = (
        f"`{ref.root}` is not available in {scope.where}; the roots here are {_listing(roots)}"
    )
    suggestion = did_you_mean(ref.root, roots)
    if ref.root == "credential":
        message = f"credentials are never read in expressions; the roots here are {_listing(roots)}"
        suggestion = (
            'name the credential on the skill (`credential = "<name>"`); the adapter adds it'
        )
    return error("OS201", message, ref.span, suggestion=suggestion)


def _unknown_name(ref: ex.Ref, namespace: Namespace, first: ex.PathPart | None) -> Diagnostic:
    declared = _listing(namespace.names)
    if first is None:
        message = f"`{ref.root}` needs the name of {namespace.noun}: {declared}"
        return error("OS201", message, ref.span)
    message = f"`{ref.root}.{first}` is not a declared {namespace.noun}; declared: {declared}"
    candidates = [f"{ref.root}.{n}" for n in namespace.names]
    suggestion = did_you_mean(f"{ref.root}.{first}", candidates)
    return error("OS201", message, ref.span, suggestion=suggestion)


# --------------------------------------------------------------------------- scopes


def skill_scope(name: str) -> Scope:
    values = {
        "args": Value(skill=ex.Ref("skill", (name,))),
        "config": Value(),
        "action": Value(ACTION_TYPE),
    }
    return Scope("a skill adapter", f"skill.{name}", {}, values)


def binding_scope(name: str, spec: BindingSpec) -> Scope:
    return Scope("a binding constraint", f"binding.{name}", {}, {"args": Value(skill=spec.skill)})


#: ``event`` in an event trigger: the inbound event's id, name and delivery key
EVENT_TYPE = ty.object_type(
    [
        ty.Field("id", ty.STRING),
        ty.Field("name", ty.STRING),
        ty.Field("key", ty.STRING, optional=True),
        ty.Field("received_at", ty.STRING),
    ]
)
#: ``trigger`` in any trigger: its name and the occurrence (RFC 3339) that fired it
TRIGGER_TYPE = ty.object_type([ty.Field("name", ty.STRING), ty.Field("occurrence", ty.STRING)])


def trigger_scope(name: str, spec: TriggerSpec) -> Scope:
    values = {"trigger": Value(TRIGGER_TYPE)}
    if spec.event is not None:
        values.update(payload=Value(), event=Value(EVENT_TYPE))
    where = "an event trigger" if spec.event is not None else "a schedule trigger"
    return Scope(where, f"trigger.{name}", {}, values)


def proposal_names(spec: WorkflowSpec) -> dict[str, str]:
    """Proposal name → the state that drafts it."""
    names: dict[str, str] = {}
    for state_name in sorted(spec.state):
        for proposal in spec.state[state_name].proposal or {}:
            names.setdefault(proposal, state_name)
    return names


def workflow_scope(name: str, spec: WorkflowSpec) -> Scope:
    namespaces = {
        "input": Namespace("input", tuple(spec.input)),
        "state": Namespace("state", tuple(spec.state), then="output"),
        "proposal": Namespace("proposal", tuple(proposal_names(spec))),
    }
    return Scope("a workflow expression", f"workflow.{name}", namespaces)


def objective_scope(name: str, spec: WorkflowSpec) -> Scope:
    """What an objective's success criterion reads: the run's inputs and declared outputs."""
    namespaces = {
        "input": Namespace("input", tuple(spec.input)),
        "output": Namespace("output", tuple(spec.output)),
    }
    return Scope("an objective's success criterion", f"workflow.{name}", namespaces)


def runbook_scope(name: str, spec: RunbookSpec, *, in_step: bool) -> Scope:
    # Inside steps the graph checks report unknown step names (OS407); in the
    # runbook's outputs nobody else looks, so this scope reports them.
    namespaces = {
        "input": Namespace("input", tuple(spec.input)),
        "step": Namespace("step", tuple(spec.step), then="output", report_unknown=not in_step),
    }
    return Scope("a runbook expression", f"runbook.{name}", namespaces)


# --------------------------------------------------------------------------- sites


def expression_sites(definition: Definition) -> Iterator[Site]:
    """Every expression of ``definition`` with its scope, in a stable order."""
    spec = definition.spec
    if isinstance(spec, SkillSpec):
        scope = skill_scope(definition.name)
        yield from _adapter_sites(spec.adapter, scope)
        if spec.idempotency is not None and spec.idempotency.lookup is not None:
            yield from _adapter_sites(spec.idempotency.lookup, scope)
    elif isinstance(spec, BindingSpec):
        scope = binding_scope(definition.name, spec)
        for guard in spec.constraints:
            yield Site(guard, scope, "a binding constraint", ty.BOOL)
    elif isinstance(spec, WorkflowSpec):
        yield from _workflow_sites(definition, spec)
    elif isinstance(spec, RunbookSpec):
        yield from _runbook_sites(definition.name, spec)
    elif isinstance(spec, TriggerSpec):
        yield from _trigger_sites(definition, spec)


def _trigger_sites(definition: Definition, spec: TriggerSpec) -> Iterator[Site]:
    scope = trigger_scope(definition.name, spec)
    if spec.event is not None and spec.event.filter is not None:
        yield Site(spec.event.filter, scope, "the filter", ty.BOOL)
    for key in sorted(spec.input):
        value = spec.input[key]
        yield Site(value, scope, f"input `{key}`", workflow_input=(spec.workflow, key))


def _adapter_sites(adapter: Adapter, scope: Scope) -> Iterator[Site]:
    if adapter.http is None:
        return
    yield Site(adapter.http.url, scope, "the url", ty.STRING)
    for header in sorted(adapter.http.headers):
        yield Site(adapter.http.headers[header], scope, f"header `{header}`", ty.STRING)
    if adapter.http.body is not None:
        yield Site(adapter.http.body, scope, "the body")


def _workflow_sites(definition: Definition, spec: WorkflowSpec) -> Iterator[Site]:
    scope = workflow_scope(definition.name, spec)
    for output in sorted(spec.output):
        declared = spec.output[output]
        yield Site(declared.value, scope, f"output `{output}`", declared.type)
    for state_name in sorted(spec.state):
        yield from state_sites(spec.state[state_name], scope)
        yield from _spawn_sites(spec.state[state_name], scope)
    if spec.objective is not None and spec.objective.success is not None:
        yield Site(
            spec.objective.success,
            objective_scope(definition.name, spec),
            "the success criterion",
            ty.BOOL,
        )


def _spawn_sites(state: State, scope: Scope) -> Iterator[Site]:
    """A ``spawn`` state's child inputs, checked against the child's workflow when it is
    compiled alongside (else only in the parent's scope)."""
    if state.spawn is None:
        return
    for label, child in sorted(state.spawn.child.items()):
        workflow = ex.Ref("workflow", (child.workflow,))
        for key in sorted(child.input):
            value = child.input[key]
            yield Site(value, scope, f"child `{label}` input `{key}`",
                       workflow_input=(workflow, key))  # fmt: skip


def state_sites(state: State, scope: Scope) -> Iterator[Site]:
    """The expressions of one workflow state (its kind block and its guards)."""
    for proposal in (state.proposal or {}).values():
        yield from _argument_sites(proposal.skill, proposal.args, scope)
        if proposal.spend is not None:
            yield Site(proposal.spend.amount, scope, "the spend amount", ty.NUMBER)
            yield Site(proposal.spend.currency, scope, "the spend currency", ty.STRING)
    yield from _work_sites(state, scope)
    if state.wait is not None:
        for key in sorted(state.wait.correlation):
            yield Site(state.wait.correlation[key], scope, f"correlation `{key}`")
    if state.parallel is not None:
        for branch in sorted(state.parallel.branch):
            yield from _work_sites(state.parallel.branch[branch], scope)
    if state.for_each is not None:
        loop = state.for_each
        yield Site(loop.items, scope, "`items`", ty.ListType(ty.ANY))
        yield from _work_sites(loop.do, scope.with_value(loop.item, Value(items=loop.items)))
    for event in sorted(state.on):
        guard = state.on[event].when
        if guard is not None:
            yield Site(guard, scope, f'the guard of `on "{event}"`', ty.BOOL)
    for choice in state.branch:
        if choice.when is not None:
            yield Site(choice.when, scope, "the guard of a branch", ty.BOOL)


def _work_sites(work: BranchWork | State, scope: Scope) -> Iterator[Site]:
    """The unit of work of a state, a parallel branch or a for_each item (the same four kinds)."""
    if work.turn is not None:
        yield Site(work.turn.goal, scope, "the goal", ty.STRING)
    if work.action is not None and work.action.skill is not None:
        yield from _argument_sites(work.action.skill, work.action.args, scope)
    if work.transform is not None:
        yield Site(work.transform.output, scope, "the transform output")
    if work.delegate is not None:
        yield Site(work.delegate.goal, scope, "the goal", ty.STRING)
        for key in sorted(work.delegate.input):
            yield Site(work.delegate.input[key], scope, f"delegate input `{key}`")


def _argument_sites(
    skill: ex.Ref, args: Mapping[str, ex.Expression], scope: Scope
) -> Iterator[Site]:
    for key in sorted(args):
        yield Site(args[key], scope, f"`{key}`", argument=(skill, key))


def _runbook_sites(name: str, spec: RunbookSpec) -> Iterator[Site]:
    in_step = runbook_scope(name, spec, in_step=True)
    for step_name in sorted(spec.step):
        step = spec.step[step_name]
        if step.skill is not None:
            yield from _argument_sites(step.skill, step.args, in_step)
        else:
            for key in sorted(step.args):
                yield Site(step.args[key], _builtin_arg_scope(step, key, in_step), f"`{key}`")
        if step.when is not None:
            yield Site(step.when, in_step, "the guard of a step", ty.BOOL)
    outputs = runbook_scope(name, spec, in_step=False)
    for output in sorted(spec.output):
        declared = spec.output[output]
        yield Site(declared.value, outputs, f"output `{output}`", declared.type)


def _builtin_arg_scope(step: Step, key: str, scope: Scope) -> Scope:
    """A ``filter`` predicate is evaluated per element of ``items``, bound to ``item``."""
    if step.uses == "filter" and key == "predicate" and "items" in step.args:
        return scope.with_value("item", Value(items=step.args["items"]))
    return scope
