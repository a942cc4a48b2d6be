"""The executable form of a runbook: steps, their dependencies, and the order they may run in.

Both surface forms end here — a ``runbook`` definition (:func:`plan_runbook`)
and the peer system's node/edge ``workflow`` (:mod:`~openseal.compiler.analysis.node_edge_plan`)
— so the executor knows one shape. Dependencies come in three sorts, because
they behave differently when a step is skipped:

* ``needs``: the step reads the other's output (``step.x.output...``); a
  skipped ``x`` skips this step too.
* ``after``: order only (``depends_on``, ``step.x.status``); this step still
  runs when ``x`` was skipped.
* ``edges``: node/edge form; the step runs when *any* incoming edge fires
  (its source succeeded and its condition holds over the source's output).

A failed, canceled or skipped-by-failure dependency of any sort skips the step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import networkx as nx

from openseal.compiler.analysis.build import step_span
from openseal.compiler.analysis.builtin_steps import STEP_TYPES
from openseal.compiler.analysis.ir import Analysis
from openseal.compiler.definitions.decode import Definition
from openseal.compiler.definitions.specs import Input, Output, RunbookSpec, SkillSpec, Step
from openseal.compiler.diagnostics import Diagnostic, did_you_mean, error
from openseal.compiler.lang import expr as ex
from openseal.compiler.syntax.spans import Span

FailurePolicy = Literal["fail_fast", "continue"]


@dataclass(frozen=True, slots=True)
class EdgeGuard:
    """An incoming edge (node/edge form); ``condition`` sees the source's output as ``output``."""

    source: str
    condition: ex.Expression | None
    span: Span


@dataclass(frozen=True, slots=True)
class PlanStep:
    id: str
    #: a built-in step type (see :mod:`~openseal.compiler.analysis.builtin_steps`), or ``None``
    #: for a skill
    uses: str | None
    #: ``skill.<name>`` key for skill steps
    skill: str | None
    args: Mapping[str, ex.Expression]
    needs: tuple[str, ...]
    after: tuple[str, ...]
    when: ex.Expression | None
    timeout: float
    span: Span
    edges: tuple[EdgeGuard, ...] = ()

    @property
    def depends_on(self) -> tuple[str, ...]:
        return tuple(sorted({*self.needs, *self.after, *(e.source for e in self.edges)}))

    @property
    def label(self) -> str:
        return self.uses if self.uses is not None else str(self.skill)


@dataclass(frozen=True, slots=True)
class Plan:
    name: str
    description: str | None
    #: declared inputs; ``None`` for the node/edge form, whose input is untyped
    inputs: Mapping[str, Input] | None
    #: declared outputs; ``None``: the outputs of the steps nothing depends on
    outputs: Mapping[str, Output] | None
    on_failure: FailurePolicy
    concurrency: int
    steps: Mapping[str, PlanStep]
    skills: Mapping[str, SkillSpec]
    span: Span
    #: nested runbooks called through ``adapter "runbook"`` skills, by ``runbook.<name>``
    runbooks: Mapping[str, Plan] = field(default_factory=dict)
    #: node/edge form: node ids are roots of the expression scope (``fetch.output``)
    node_roots: bool = False

    def graph(self) -> nx.DiGraph:
        dag = nx.DiGraph()
        dag.add_nodes_from(sorted(self.steps))
        for step in self.steps.values():
            dag.add_edges_from((dep, step.id) for dep in step.depends_on)
        return dag

    def levels(self) -> list[list[str]]:
        """Steps grouped by the earliest round they can run in; each group may run in parallel."""
        return [sorted(level) for level in nx.topological_generations(self.graph())]

    def order(self) -> list[str]:
        """One execution order: level by level, alphabetical within a level."""
        return [step for level in self.levels() for step in level]

    def sinks(self) -> list[str]:
        dag = self.graph()
        return sorted(n for n in dag.nodes if dag.out_degree(n) == 0)


# --------------------------------------------------------------------------- runbook definitions


def step_dependencies(step: Step) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(needs, after)`` of a runbook step: reading ``step.x.output`` (or all of ``step.x``)
    needs ``x``; ``depends_on`` and other ``step.x.*`` reads only order."""
    needs: set[str] = set()
    after: set[str] = set()
    for ref in step.depends_on:
        if ref.root == "step" and len(ref.path) == 1 and isinstance(ref.path[0], str):
            after.add(ref.path[0])
    expressions = [*step.args.values(), *([step.when] if step.when is not None else [])]
    for expression in expressions:
        for ref in ex.references(expression):
            if ref.root != "step" or not ref.path or not isinstance(ref.path[0], str):
                continue
            reads_output = len(ref.path) == 1 or ref.path[1] == "output"
            (needs if reads_output else after).add(ref.path[0])
    return tuple(sorted(needs)), tuple(sorted(after - needs))


def plan_runbook(
    definition: Definition, analysis: Analysis, *, _seen: tuple[str, ...] = ()
) -> tuple[Plan | None, list[Diagnostic]]:
    """The plan of one runbook definition, with the diagnostics that stop it from running here.

    The compiler's checks already ran; these are the in-process executor's own
    refusals (unknown built-in arguments, approval-requiring skills) and the
    guards it keeps even if a check is missing (unknown steps, cycles).
    """
    spec = definition.spec
    assert isinstance(spec, RunbookSpec)
    diagnostics: list[Diagnostic] = []
    steps: dict[str, PlanStep] = {}
    skills: dict[str, SkillSpec] = {}
    nested: dict[str, Plan] = {}
    for step_id in sorted(spec.step):
        step = spec.step[step_id]
        span = step_span(definition, step_id)
        needs, after = step_dependencies(step)
        diagnostics += _unknown_dependencies(step_id, (*needs, *after), spec, step, span)
        if step.uses is not None:
            diagnostics += check_builtin_args(step.uses, step.args, span, definition, step_id)
            skill_key = None
        else:
            assert step.skill is not None
            skill_key = step.skill.dotted
            found = _skill(step.skill, analysis, diagnostics)
            if found is not None:
                skills[skill_key] = found
                diagnostics += _refuse_approval(skill_key, found, step.skill.span, step_id)
                diagnostics += _nested(
                    found, analysis, nested, step.skill.span, (*_seen, definition.key)
                )
        steps[step_id] = PlanStep(
            step_id,
            step.uses,
            skill_key,
            dict(step.args),
            needs,
            after,
            step.when,
            step.timeout,
            span,
        )
    plan = Plan(
        definition.name,
        spec.description,
        dict(spec.input),
        dict(spec.output),
        spec.on_failure,
        spec.concurrency,
        steps,
        skills,
        definition.name_span,
        nested,
    )
    diagnostics += cycle_diagnostics(plan)
    return (None if any(d.is_error for d in diagnostics) else plan), diagnostics


def _unknown_dependencies(
    step_id: str, names: tuple[str, ...], spec: RunbookSpec, step: Step, span: Span
) -> list[Diagnostic]:
    return [
        error(
            "OS407",
            f"step `{step_id}` needs `{name}`, which is not a step of this runbook",
            span,
            suggestion=did_you_mean(name, spec.step, fmt="`step.{}`"),
        )
        for name in names
        if name not in spec.step
    ]


def check_builtin_args(
    uses: str,
    args: Mapping[str, ex.Expression],
    span: Span,
    definition: Definition | None = None,
    step_id: str = "",
    *,
    arg_spans: Mapping[str, Span] | None = None,
) -> list[Diagnostic]:
    """Unknown (OS101) and missing (OS102) arguments of a built-in step."""
    builtin = STEP_TYPES[uses]
    out: list[Diagnostic] = []
    for name in sorted(args):
        if builtin.open or name in builtin.accepted:
            continue
        where = (
            (arg_spans or {}).get(name) or _arg_span(definition, step_id, name) or args[name].span
        )
        accepted = ", ".join(f"`{a}`" for a in builtin.accepted) or "none"
        out.append(
            error(
                "OS101",
                f"`{uses}` steps take no argument `{name}`; they take {accepted}",
                where,
                suggestion=did_you_mean(name, builtin.accepted),
            )
        )
    for name in builtin.required:
        if name not in args:
            out.append(
                error("OS102", f"`{uses}` step `{step_id}` needs the argument `{name}`", span)
            )
    return out


def _arg_span(definition: Definition | None, step_id: str, name: str) -> Span | None:
    if definition is None:
        return None
    return definition.key_spans.get(("step", step_id, "args", name))


def _skill(ref: ex.Ref, analysis: Analysis, diagnostics: list[Diagnostic]) -> SkillSpec | None:
    found = analysis.get(ref.dotted)
    if found is not None and isinstance(found.spec, SkillSpec):
        return found.spec
    skills = [d.name for d in analysis.of_kind("skill")]
    diagnostics.append(
        error(
            "OS201",
            f"`{ref.dotted}` is not a skill of this project",
            ref.span,
            suggestion=did_you_mean(
                str(ref.path[-1]) if ref.path else ref.root, skills, fmt="`skill.{}`"
            ),
        )
    )
    return None


def requires_approval(skill: SkillSpec) -> bool:
    return skill.approval is not None and skill.approval.required


def _refuse_approval(key: str, skill: SkillSpec, span: Span, step_id: str) -> list[Diagnostic]:
    if not requires_approval(skill):
        return []
    message = (
        f"step `{step_id}` calls `{key}`, which requires approval; runbooks cannot wait "
        "for an approval"
    )
    return [
        error("OS508", message, span, suggestion="call it from a workflow with an approval state")
    ]


def _nested(
    skill: SkillSpec,
    analysis: Analysis,
    nested: dict[str, Plan],
    span: Span,
    seen: tuple[str, ...],
) -> list[Diagnostic]:
    """Plan the runbook behind an ``adapter "runbook"`` skill (once; refusing recursion)."""
    if skill.adapter.runbook is None:
        return []
    key = skill.adapter.runbook.runbook.dotted
    definition = analysis.get(key)
    if definition is None or not isinstance(definition.spec, RunbookSpec):
        return [error("OS201", f"`{key}` is not a runbook of this project", span)]
    if key in seen:
        chain = " → ".join([*seen, key])
        return [error("OS406", f"runbooks call each other in a cycle: {chain}", span)]
    if key in nested:
        return []
    plan, diagnostics = plan_runbook(definition, analysis, _seen=seen)
    if plan is not None:
        nested[key] = plan
    return diagnostics


def cycle_diagnostics(plan: Plan) -> list[Diagnostic]:
    """OS406 for each dependency cycle, at its first step (the executor's own guard)."""
    dag = plan.graph()
    out: list[Diagnostic] = []
    for component in sorted(sorted(c) for c in nx.strongly_connected_components(dag)):
        first = component[0]
        if len(component) == 1 and not dag.has_edge(first, first):
            continue
        cycle = [str(a) for a, _ in nx.find_cycle(dag.subgraph(component), source=first)]
        names = " → ".join([*cycle, cycle[0]])
        out.append(
            error(
                "OS406",
                f"steps of `{plan.name}` depend on each other in a cycle: {names}",
                plan.steps[first].span,
                suggestion="remove one of these dependencies so the steps can run in order",
            )
        )
    return out
