"""Typecheck stage: every expression has a static type that fits where it is used.

Types come from declarations: workflow and runbook inputs, each turn's
``output``, skills' ``input`` and ``output``; a transform's output is
inferred. Checked here:

* guards (``when``, binding constraints) are bool, templates hold only
  printable values, operators and functions get the types they need;
* arguments of proposals, actions and runbook steps fit the skill's ``input``
  type: each value fits its field, required fields are present, unknown
  arguments are reported (``OS302``, with a close match);
* declared outputs and input defaults fit their declared types.

Codes: ``OS301`` type mismatch, ``OS302`` unknown attribute, ``OS303`` unknown
function or wrong number of arguments. References that do not resolve are
``any`` here (resolve reports them), so nothing is reported twice.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import networkx as nx

from openseal.compiler.analysis.expression_scopes import (
    Scope,
    Site,
    Value,
    expression_sites,
    workflow_scope,
)
from openseal.compiler.analysis.grants import skill_spec, works_of
from openseal.compiler.analysis.infer import Inferrer, show, source
from openseal.compiler.analysis.ir import Analysis
from openseal.compiler.definitions.decode import Definition
from openseal.compiler.definitions.specs import (
    BranchWork,
    Input,
    RunbookSpec,
    State,
    TriggerSpec,
    WorkflowSpec,
)
from openseal.compiler.diagnostics import Diagnostic, did_you_mean
from openseal.compiler.lang import expr as ex
from openseal.compiler.lang import types as ty
from openseal.compiler.syntax.gc_pause import let_go


def typecheck(analysis: Analysis) -> list[Diagnostic]:
    """Check the types of every expression and argument mapping in ``analysis``."""
    roots = _Roots(analysis)
    checker = Inferrer(roots)
    for key in sorted(analysis.definitions):
        definition = analysis.definitions[key]
        for site in expression_sites(definition):
            _check_site(checker, roots, site)
        for skill, args in _argument_sets(definition):
            _check_required(checker, roots, skill, args)
        _check_defaults(checker, definition)
        if isinstance(definition.spec, TriggerSpec):
            _check_trigger_inputs(checker, roots, definition.spec)
    return checker.diagnostics


def _check_site(checker: Inferrer, roots: _Roots, site: Site) -> None:
    got = checker.infer(site.expr, site.scope)
    expected = site.expect
    if site.argument is not None:
        expected = _argument_type(checker, roots, site)
    if site.workflow_input is not None:
        expected = _workflow_input_type(checker, roots, site)
    if expected is not None and not ty.is_assignable(got, expected):
        message = (
            f"`{source(site.expr)}` is {show(got)}, but {site.target} expects {show(expected)}"
        )
        checker.fail("OS301", message, site.span)


def _argument_type(checker: Inferrer, roots: _Roots, site: Site) -> ty.TypeExpr | None:
    assert site.argument is not None
    skill, name = site.argument
    declared = roots.skill_input(skill)
    if isinstance(declared, ty.MapType):
        return declared.element
    if not isinstance(declared, ty.ObjectType):
        return None
    found = declared.field(name)
    if found is not None:
        return found.type
    names = [f.name for f in declared.fields]
    listing = ", ".join(f"`{n}`" for n in names) or "none"
    message = f"`{skill.dotted}` takes no argument `{name}`; its arguments are {listing}"
    checker.fail("OS302", message, site.expr.span, did_you_mean(name, names))
    return None


def _workflow_input_type(checker: Inferrer, roots: _Roots, site: Site) -> ty.TypeExpr | None:
    assert site.workflow_input is not None
    workflow, name = site.workflow_input
    spec = roots.workflow(workflow)
    if spec is None:
        return None
    if name in spec.input:
        return spec.input[name].type
    names = sorted(spec.input)
    listing = ", ".join(f"`{n}`" for n in names) or "none"
    message = f"`{workflow.dotted}` has no input `{name}`; its inputs are {listing}"
    checker.fail("OS302", message, site.span, did_you_mean(name, names))
    return None


def _check_trigger_inputs(checker: Inferrer, roots: _Roots, spec: TriggerSpec) -> None:
    """Every input the workflow requires (no default) is mapped by the trigger."""
    workflow = roots.workflow(spec.workflow)
    if workflow is None:
        return
    missing = [n for n in sorted(workflow.input) if workflow.input[n].default is None]
    missing = [n for n in missing if n not in spec.input]
    if missing:
        listing = ", ".join(f"`{n}`" for n in missing)
        plural = "s" if len(missing) > 1 else ""
        message = (
            f"`{spec.workflow.dotted}` needs input{plural} {listing}, which the trigger does "
            "not map"
        )
        checker.fail("OS301", message, spec.workflow.span, f"add {listing} to `input`")


def _check_required(
    checker: Inferrer, roots: _Roots, skill: ex.Ref, args: Mapping[str, ex.Expression]
) -> None:
    declared = roots.skill_input(skill)
    if not isinstance(declared, ty.ObjectType):
        return
    missing = [f.name for f in declared.fields if not f.optional and f.name not in args]
    if missing:
        listing = ", ".join(f"`{n}`" for n in missing)
        plural = "s" if len(missing) > 1 else ""
        message = f"`{skill.dotted}` needs argument{plural} {listing}, which the call does not give"
        checker.fail("OS301", message, skill.span, f"add {listing} to `args`")


def _check_defaults(checker: Inferrer, definition: Definition) -> None:
    spec = definition.spec
    inputs: Mapping[str, Input] = {}
    if isinstance(spec, WorkflowSpec | RunbookSpec):
        inputs = spec.input
    for name in sorted(inputs):
        declared = inputs[name]
        if declared.default is None:
            continue
        problems = ty.conforms(declared.default, declared.type)
        if problems:
            span = (
                definition.key_spans.get(("input", name, "default"))
                or definition.key_spans.get(("input", name))
                or definition.name_span
            )
            message = (
                f"the default of input `{name}` does not fit {show(declared.type)}: {problems[0]}"
            )
            checker.fail("OS301", message, span)


def _argument_sets(definition: Definition) -> Iterator[tuple[ex.Ref, Mapping[str, ex.Expression]]]:
    """Every skill call with its arguments: proposals, direct actions, runbook steps."""
    spec = definition.spec
    if isinstance(spec, RunbookSpec):
        for name in sorted(spec.step):
            step = spec.step[name]
            if step.skill is not None:
                yield step.skill, step.args
    elif isinstance(spec, WorkflowSpec):
        for name in sorted(spec.state):
            state = spec.state[name]
            for proposal in (state.proposal or {}).values():
                yield proposal.skill, proposal.args
            for work in works_of(state):
                if work.action is not None and work.action.skill is not None:
                    yield work.action.skill, work.action.args


# --------------------------------------------------------------------------- root types


class _Roots:
    """Types of ``input.<name>``, ``state.<name>.output``, ``step.<name>.output``, ``args``."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        #: workflow key → state name → output type
        self.workflows: dict[str, dict[str, ty.TypeExpr]] = {}

    def skill_input(self, skill: ex.Ref) -> ty.TypeExpr:
        spec = skill_spec(skill, self.analysis)
        return spec.input if spec is not None and spec.input is not None else ty.ANY

    def workflow(self, ref: ex.Ref) -> WorkflowSpec | None:
        if ref.root != "workflow" or len(ref.path) != 1:
            return None
        found = self.analysis.get(f"workflow.{ref.path[0]}")
        return found.spec if found is not None and isinstance(found.spec, WorkflowSpec) else None

    def skill_output(self, skill: ex.Ref | None) -> ty.TypeExpr:
        spec = skill_spec(skill, self.analysis)
        return spec.output if spec is not None and spec.output is not None else ty.ANY

    def namespace_type(self, scope: Scope, root: str, name: str) -> ty.TypeExpr:
        owner = self.analysis.get(scope.owner)
        spec = owner.spec if owner is not None else None
        if isinstance(spec, WorkflowSpec | RunbookSpec) and root == "input":
            declared = spec.input.get(name)
            return declared.type if declared is not None else ty.ANY
        if isinstance(spec, RunbookSpec) and root == "step" and name in spec.step:
            return self.skill_output(spec.step[name].skill)
        if isinstance(spec, WorkflowSpec) and root == "state" and name in spec.state:
            return self.state_output(scope.owner, spec, name)
        if isinstance(spec, WorkflowSpec) and root == "output" and name in spec.output:
            output_type = spec.output[name].type
            return output_type if output_type is not None else ty.ANY
        return ty.ANY  # proposals: read by the runtime, not typed here

    def state_output(self, owner: str, spec: WorkflowSpec, name: str) -> ty.TypeExpr:
        if owner not in self.workflows:
            self._all_outputs(owner, spec)
        return self.workflows[owner].get(name, ty.ANY)

    def _all_outputs(self, owner: str, spec: WorkflowSpec) -> None:
        """Every state's output type; inferred ones after the states they read, so no
        recursion runs deep. States that read their own output, directly or not, are any."""
        outputs: dict[str, ty.TypeExpr] = {}
        self.workflows[owner] = outputs
        graph = nx.DiGraph()
        graph.add_nodes_from(sorted(spec.state))
        for name in sorted(spec.state):
            for read in _states_read(spec.state[name]):
                if read in spec.state:
                    graph.add_edge(read, name)
        condensed = nx.condensation(graph)
        scope = workflow_scope(owner.split(".", 1)[1], spec)
        for component in nx.topological_sort(condensed):
            members = sorted(condensed.nodes[component]["members"])
            cyclic = len(members) > 1 or graph.has_edge(members[0], members[0])
            for name in members:
                outputs[name] = (
                    ty.ANY if cyclic else self._state_output(spec, spec.state[name], scope)
                )
        let_go(graph, condensed)

    def _state_output(self, spec: WorkflowSpec, state: State, scope: Scope) -> ty.TypeExpr:
        if state.parallel is not None:
            branches = state.parallel.branch
            fields = [ty.Field(b, self._work_output(spec, branches[b], scope)) for b in branches]
            return ty.object_type(fields)
        if state.for_each is not None:
            loop = state.for_each
            inner = scope.with_value(loop.item, Value(items=loop.items))
            return ty.ListType(self._work_output(spec, loop.do, inner))
        if state.spawn is not None:
            return spawn_output_type(sorted(state.spawn.child))
        return self._work_output(spec, state, scope)

    def _work_output(
        self, spec: WorkflowSpec, work: BranchWork | State, scope: Scope
    ) -> ty.TypeExpr:
        if work.turn is not None and work.turn.output is not None:
            return work.turn.output
        if work.delegate is not None and work.delegate.output is not None:
            return work.delegate.output
        if work.transform is not None:
            quiet = Inferrer(self)  # the transform's own site reports its errors
            return quiet.infer(work.transform.output, scope)
        if work.action is not None:
            return self.skill_output(
                work.action.skill or self._proposal_skill(spec, work.action.proposal)
            )
        return ty.ANY

    def _proposal_skill(self, spec: WorkflowSpec, ref: ex.Ref | None) -> ex.Ref | None:
        if ref is None or len(ref.path) != 1:
            return None
        for state in spec.state.values():
            proposal = (state.proposal or {}).get(str(ref.path[0]))
            if proposal is not None:
                return proposal.skill
        return None


def spawn_output_type(labels: list[str]) -> ty.TypeExpr:
    """What a ``spawn`` state leaves with: each child by label (its run, workflow, status and
    outputs, which are null until it completes) and how many completed and failed."""
    child = ty.object_type(
        [ty.Field("run_id", ty.STRING), ty.Field("workflow", ty.STRING),
         ty.Field("status", ty.STRING), ty.Field("outputs", ty.ANY)]
    )  # fmt: skip
    children = ty.object_type([ty.Field(label, child) for label in labels])
    return ty.object_type(
        [ty.Field("children", children), ty.Field("completed", ty.NUMBER),
         ty.Field("failed", ty.NUMBER)]
    )  # fmt: skip


def _states_read(state: State) -> set[str]:
    """The states whose outputs an inferred output of ``state`` depends on."""
    expressions = [w.transform.output for w in works_of(state) if w.transform is not None]
    if state.for_each is not None:
        expressions.append(state.for_each.items)
    return {
        str(ref.path[0])
        for expression in expressions
        for ref in ex.references(expression)
        if ref.root == "state" and ref.path
    }
