"""Authority and policy checks: each a small named function ``(analysis, graphs) -> diagnostics``.

Who may call what (``OS501``), how risky (``OS502``), whether a mutation can be
reconciled (``OS503``), whether it waits for an approval of exactly what it
sends (``OS504``), whether bindings only narrow (``OS505``), no literal secrets
(``OS506``), no approval-requiring skill in a runbook (``OS508``), a warning
for a turn that offers the model a skill with effects (``OS509``), no ``retry`` on an
effect where nothing would apply it (``OS510``), and no unknown token role named in an
approver, reviewer or decider list (``OS511``), and no ``delegate`` carving more of a budget
than its caller has (``OS512``).

A reference that does not resolve is skipped here: resolve has reported it.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterator

import networkx as nx
from pydantic import BaseModel

from openseal.compiler.analysis.build import Graphs
from openseal.compiler.analysis.checks.graph import Check
from openseal.compiler.analysis.grants import (
    Call,
    acting_agent,
    action_calls,
    approval_states,
    is_role,
    needs_approval,
    principal,
    risk,
    skill_spec,
    team_of,
    workflow_calls,
    workflows,
)
from openseal.compiler.analysis.ir import Analysis, WorkflowGraph
from openseal.compiler.definitions.decode import Definition
from openseal.compiler.definitions.specs import (
    AgentSpec,
    BindingSpec,
    Budget,
    RunbookSpec,
    SkillSpec,
    WorkflowSpec,
)
from openseal.compiler.diagnostics import Diagnostic, Related, error, warning
from openseal.compiler.lang import expr as ex
from openseal.compiler.syntax.spans import Span
from openseal.contract import ROLE_PREFIX, TOKEN_ROLES

# --------------------------------------------------------------------------- OS501


def check_skills_are_bound(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """Every skill a turn, proposal or action uses is granted to the principal acting.

    A grant to a team covers the team acting as a whole, not its roles; a grant
    to a role covers that role only.
    """
    out: list[Diagnostic] = []
    for _, spec in workflows(analysis):
        for call in workflow_calls(spec, analysis):
            if analysis.grants_for(call.actor, call.skill):
                continue
            name = call.skill.removeprefix("skill.")
            message = (
                f"skill `{name}` is not granted to `{call.actor}`, "
                f"which acts for {call.what} in state `{call.state}`"
            )
            message += _separate_grants_note(analysis, call)
            suggestion = f"add a binding with `skill = {call.skill}` and `to = {call.actor}`"
            out.append(error("OS501", message, call.span, suggestion=suggestion))
    return out


def _separate_grants_note(analysis: Analysis, call: Call) -> str:
    if is_role(call.actor) and analysis.grants_for(team_of(call.actor), call.skill):
        return f"; the grant to `{team_of(call.actor)}` covers the team, not its roles"
    if call.actor.startswith("team.") and not is_role(call.actor):
        prefix = f"{call.actor}.role."
        if any(g.skill == call.skill and g.grantee.startswith(prefix) for g in analysis.grants):
            return "; grants to its roles do not cover the team acting as a whole"
    return ""


def check_turn_skills_only_read(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """A turn offers the model only read skills: the gateway refuses any effect proposed as a
    tool call, so listing one only wastes the model's calls (a warning, not an error)."""
    out: list[Diagnostic] = []
    for _, spec in workflows(analysis):
        for call in workflow_calls(spec, analysis):
            if call.what != "the turn" or call.spec.effect == "read":
                continue
            if _above_ceiling(analysis, call):
                continue  # OS502 already says this turn may not use it at all
            name = call.skill.removeprefix("skill.")
            out.append(
                warning(
                    "OS509",
                    f"turn in state `{call.state}` offers skill `{name}` (effect "
                    f"`{call.spec.effect}`); a model's tool call can never run an effect",
                    call.span,
                    suggestion="draft a `proposal` of it, approve it, and run it in an `action`",
                )
            )
    return out


# --------------------------------------------------------------------------- OS502


def check_risk_ceiling(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """A skill's effect is within the acting agent's ``max_risk`` and the granting binding's.

    A team acting as a whole has no agent ceiling; its policy governs.
    """
    out: list[Diagnostic] = []
    for _, spec in workflows(analysis):
        for call in workflow_calls(spec, analysis):
            out += _above_ceiling(analysis, call)
    return out


def _above_ceiling(analysis: Analysis, call: Call) -> list[Diagnostic]:
    skill = call.spec
    name = call.skill.removeprefix("skill.")
    out: list[Diagnostic] = []
    agent = acting_agent(call.actor, analysis)
    if agent is not None and isinstance(agent.spec, AgentSpec):
        ceiling = agent.spec.max_risk
        if risk(skill.effect) > risk(ceiling):
            acting = f" (acting as `{call.actor}`)" if is_role(call.actor) else ""
            message = (
                f"skill `{name}` has effect `{skill.effect}`, above the risk ceiling "
                f"`{ceiling}` of agent `{agent.name}`{acting}"
            )
            related = [Related(agent.key_spans.get(("max_risk",)) or agent.name_span, "set here")]
            out.append(error("OS502", message, call.span, related=related))
    grants = analysis.grants_for(call.actor, call.skill)
    capped = [g for g in grants if g.max_risk is not None]
    if grants and len(capped) == len(grants):
        highest = max(capped, key=lambda g: risk(g.max_risk or "read"))
        assert highest.max_risk is not None
        if risk(skill.effect) > risk(highest.max_risk):
            message = (
                f"skill `{name}` has effect `{skill.effect}`, above `max_risk = "
                f'"{highest.max_risk}"` of binding `{highest.binding}` that grants it'
            )
            related = [Related(highest.span, "the binding")]
            out.append(error("OS502", message, call.span, related=related))
    return out


# --------------------------------------------------------------------------- OS503


def check_effects_are_reconcilable(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """A skill that changes anything says how an ambiguous call is reconciled."""
    out: list[Diagnostic] = []
    for definition in sorted(analysis.of_kind("skill"), key=lambda d: d.name):
        spec = definition.spec
        if not isinstance(spec, SkillSpec) or spec.effect == "read":
            continue
        idem = spec.idempotency
        if idem is not None and (idem.key_header or idem.same_key_retry or idem.lookup):
            continue
        message = (
            f"skill `{definition.name}` has effect `{spec.effect}` but declares no way to "
            "reconcile a call whose outcome is unknown"
        )
        suggestion = (
            'add `idempotency { key_header = "Idempotency-Key" }`, `same_key_retry = true` '
            "or a `lookup` adapter"
        )
        span = definition.key_spans.get(("effect",)) or definition.name_span
        out.append(error("OS503", message, span, suggestion=suggestion))
    return out


# --------------------------------------------------------------------------- OS504


def check_external_actions_need_approval(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """An action whose skill needs approval acts on a proposal, and every path from
    ``start`` to it passes the ``approved`` transition of an approval of that proposal."""
    out: list[Diagnostic] = []
    for definition, spec in workflows(analysis):
        graph = graphs.workflows.get(definition.name)
        for action in action_calls(spec, analysis):
            why = needs_approval(analysis, spec, action.call)
            if why is None:
                continue
            name = action.call.skill.removeprefix("skill.")
            if action.proposal is None:
                message = (
                    f"state `{action.call.state}` calls skill `{name}` directly, but {why}; "
                    "an approval can only be given for a proposal"
                )
                suggestion = "draft a `proposal` of this call, approve it, then act on the proposal"
                out.append(error("OS504", message, action.call.span, suggestion=suggestion))
                continue
            bypass = _path_without_approval(spec, graph, action.call.state, action.proposal)
            if bypass is not None:
                route = " → ".join(bypass)
                message = (
                    f"state `{action.call.state}` sends proposal `{action.proposal}` and {why}, "
                    f"but a run can reach it without an approval of that proposal: {route}"
                )
                suggestion = (
                    f"let only the `approved` transition of an approval of "
                    f"`proposal.{action.proposal}` lead to `{action.call.state}`"
                )
                out.append(error("OS504", message, action.call.span, suggestion=suggestion))
    return out


def _path_without_approval(
    spec: WorkflowSpec, graph: WorkflowGraph | None, target: str, proposal: str
) -> list[str] | None:
    """A path from start to ``target`` that takes no ``approved`` transition of an
    approval of ``proposal``, or None when there is none (or the graph is broken)."""
    if graph is None or graph.start is None or target not in graph.graph:
        return None
    approvals = approval_states(spec, proposal)
    cut = nx.DiGraph(graph.graph)
    for source, dest, data in list(cut.edges(data=True)):
        events = {t.event for t in data.get("transitions", [])}
        if source in approvals and events <= {"approved"}:
            cut.remove_edge(source, dest)
    if not nx.has_path(cut, graph.start, target):
        return None
    return [str(s) for s in nx.shortest_path(cut, graph.start, target)]


# --------------------------------------------------------------------------- OS505


def check_bindings_only_narrow(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """A binding may lower the risk ceiling and tighten approval, never the reverse."""
    out: list[Diagnostic] = []
    for definition in sorted(analysis.of_kind("binding"), key=lambda d: d.name):
        spec = definition.spec
        skill = skill_spec(spec.skill, analysis) if isinstance(spec, BindingSpec) else None
        if skill is None or not isinstance(spec, BindingSpec):
            continue
        name = spec.skill.dotted
        spans = definition.key_spans
        if spec.max_risk is not None and risk(spec.max_risk) > risk(skill.effect):
            message = (
                f'`max_risk = "{spec.max_risk}"` is above the effect `{skill.effect}` of '
                f"`{name}`; a binding can only narrow the skill it grants"
            )
            span = spans.get(("max_risk",)) or definition.name_span
            out.append(error("OS505", message, span, suggestion=f'use at most "{skill.effect}"'))
        skill_approval = skill.approval if skill.approval and skill.approval.required else None
        if spec.approval is None or skill_approval is None:
            continue
        if not spec.approval.required:
            message = f"`{name}` requires approval; this binding cannot switch it off"
            span = spans.get(("approval", "required")) or definition.name_span
            out.append(error("OS505", message, span, suggestion="remove `required = false`"))
        mine, theirs = spec.approval.expires_in, skill_approval.expires_in
        if mine is not None and theirs is not None and mine > theirs:
            message = (
                f"approvals expire after {_duration(mine)} here, later than the "
                f"{_duration(theirs)} `{name}` allows"
            )
            span = spans.get(("approval", "expires_in")) or definition.name_span
            out.append(error("OS505", message, span, suggestion=f"use at most {_duration(theirs)}"))
    return out


def _duration(seconds: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


# --------------------------------------------------------------------------- OS506

_SECRET_WORDS = (
    "token",
    "password",
    "passwd",
    "secret",
    "apikey",
    "privatekey",
    "accesskey",
    "credential",
    "authorization",
)
#: Keys that mention a secret but hold something else: a header name, a URL, a count...
_NOT_SECRET_ENDINGS = ("header", "url", "uri", "endpoint", "name", "ref", "env", "file", "tokens")


@functools.lru_cache(maxsize=4096)  # asked for every key of every definition; few distinct
def looks_secret(key: str) -> bool:
    """Whether a key's name suggests it holds a secret (``api_key``, ``Authorization``...)."""
    plain = re.sub(r"[^a-z0-9]", "", key.lower())
    if plain.endswith(_NOT_SECRET_ENDINGS):
        return False
    return any(word in plain for word in _SECRET_WORDS)


#: The shapes of common credentials, found in any literal text of a definition
#: (instructions, URLs, headers, arguments, parameters): what a leaked-secret
#: scanner would flag. Each is specific enough not to match ordinary prose.
SECRET_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (what, re.compile(pattern))
    for what, pattern in (
        ("an API key (`sk-...`)", r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}"),
        ("a Stripe key", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
        (
            "a Slack webhook URL",
            r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{16,}",
        ),
        ("a Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
        ("an AWS access key id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"),
        (
            "an AWS secret access key",
            r"(?i)aws.{0,20}secret.{0,20}[:=\s][\s\"']*[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])",
        ),
        ("a GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
        ("a GitLab token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
        ("a Google API key", r"\bAIza[A-Za-z0-9_-]{35}"),
        ("a Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}"),
        ("a JSON web token", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        ("a private key", r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----"),
        ("a bearer token", r"\bBearer\s+[A-Za-z0-9._~+/-]{20,}=*"),
        ("a password in a URL", r"\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@"),
    )
)

_SECRET_HINT = (
    'reference a credential with `credential = "<name>"` on the skill or model '
    "and keep the value in the runtime configuration"
)


def check_no_literal_secrets(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """No literal secret in a definition: neither a literal string under a secret-like
    key nor text shaped like a common credential; definitions name credentials instead."""
    out: list[Diagnostic] = []
    for key in sorted(analysis.definitions):
        definition = analysis.definitions[key]
        reported: set[Span] = set()
        for name, span in _literal_secrets(definition, definition.spec, ()):
            message = (
                f"`{name}` holds a literal value that looks like a secret; definitions "
                "may only name credentials, whose values the runtime supplies"
            )
            out.append(error("OS506", message, span, suggestion=_SECRET_HINT))
            reported.add(span)
        for text, span in _texts(definition, definition.spec, ()):
            shapes = secret_shapes(text)
            if not shapes or span in reported:
                continue
            reported.add(span)
            what = shapes[0] if len(shapes) == 1 else ", ".join(shapes[:-1]) + " and " + shapes[-1]
            message = (
                f"this text holds what looks like {what}; definitions may only name "
                "credentials, whose values the runtime supplies"
            )
            out.append(error("OS506", message, span, suggestion=_SECRET_HINT))
    return out


def secret_shapes(text: str) -> list[str]:
    """The kinds of credential ``text`` contains (``["a Slack webhook URL"]``)."""
    return [what for what, pattern in SECRET_SHAPES if pattern.search(text)]


def _texts(definition: Definition, value: object, path: tuple[str | int, ...]) -> _Found:
    """Every literal string of a definition, with where it is written."""
    if isinstance(value, str):
        span = getattr(value, "span", None)
        yield value, span if isinstance(span, Span) else _path_span(definition, path)
    elif isinstance(value, BaseModel):
        for field in type(value).model_fields:
            yield from _texts(definition, getattr(value, field), (*path, field))
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from _texts(definition, child, (*path, str(key)))
    elif isinstance(value, list | tuple):
        for index, child in enumerate(value):
            yield from _texts(definition, child, (*path, index))
    elif isinstance(value, ex.Literal | ex.Template | ex.ObjectExpr | ex.ListExpr | ex.Call):
        for node in ex.walk(value):
            if isinstance(node, ex.Literal) and isinstance(node.value, str):
                yield node.value, node.span
            elif isinstance(node, ex.Template):
                literal = "".join(p for p in node.parts if isinstance(p, str))
                yield literal, node.span


def _path_span(definition: Definition, path: tuple[str | int, ...]) -> Span:
    for end in range(len(path), 0, -1):
        span = definition.key_spans.get(path[:end])
        if span is not None:
            return span
    return definition.name_span


_Found = Iterator[tuple[str, Span]]


def _literal_secrets(definition: Definition, value: object, path: tuple[str | int, ...]) -> _Found:
    if isinstance(value, BaseModel):
        for field in type(value).model_fields:
            child = getattr(value, field)
            # `credential` fields hold a reference name, which is what we want written
            if field != "credential" and looks_secret(field) and _is_text(child):
                yield field, definition.key_spans.get((*path, field)) or definition.name_span
            yield from _literal_secrets(definition, child, (*path, field))
    elif isinstance(value, dict):
        for key, child in value.items():
            where = (*path, str(key))
            if looks_secret(str(key)) and _is_text(child):
                yield str(key), _value_span(definition, child, where)
            yield from _literal_secrets(definition, child, where)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _literal_secrets(definition, child, (*path, index))
    elif isinstance(value, ex.ObjectExpr | ex.ListExpr | ex.Call | ex.Conditional):
        for node in ex.walk(value):
            if isinstance(node, ex.ObjectExpr):
                for key, child in node.items:
                    if looks_secret(key) and _is_text(child):
                        yield key, _value_span(definition, child, path)


def _is_text(value: object) -> bool:
    """A non-empty literal string: written as is, not computed from a reference."""
    if isinstance(value, ex.Literal):
        value = value.value
    return isinstance(value, str) and value != ""


def _value_span(definition: Definition, value: object, path: tuple[str | int, ...]) -> Span:
    if isinstance(value, ex.Literal):
        return value.span
    return definition.key_spans.get(path) or definition.name_span


# --------------------------------------------------------------------------- OS508


def check_runbook_skills_need_no_approval(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """Runbooks run in one process with no approvals, so no step may need one."""
    out: list[Diagnostic] = []
    for definition in sorted(analysis.of_kind("runbook"), key=lambda d: d.name):
        if not isinstance(definition.spec, RunbookSpec):
            continue
        for step_name, skill_ref in _runbook_skills(definition.spec):
            skill = skill_spec(skill_ref, analysis)
            if skill is None or skill.approval is None or not skill.approval.required:
                continue
            message = (
                f"step `{step_name}` calls `{skill_ref.dotted}`, which requires approval; "
                "runbooks run in-process with no approvals"
            )
            suggestion = "call it from a workflow, with a proposal and an approval state"
            out.append(error("OS508", message, skill_ref.span, suggestion=suggestion))
    return out


def _runbook_skills(spec: RunbookSpec) -> Iterator[tuple[str, ex.Ref]]:
    for name in sorted(spec.step):
        skill = spec.step[name].skill
        if skill is not None:
            yield name, skill


# --------------------------------------------------------------------------- OS510


def check_retry_can_apply(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """``retry`` on a skill with effects is refused where nothing would apply it.

    A read is repeated freely by both executors. An effect is repeated only with the same key:
    the runbook executor applies ``retry`` to a skill declaring ``same_key_retry``; the durable
    runtime never re-sends an action on a retry timer — reconciliation does (the lookup first,
    then the same key), so ``retry`` on an effect a workflow sends would be silently ignored.
    """
    sent_by: dict[str, Call] = {}
    for _, workflow in workflows(analysis):
        for action in action_calls(workflow, analysis):
            sent_by.setdefault(action.call.skill, action.call)
    out: list[Diagnostic] = []
    for definition in sorted(analysis.of_kind("skill"), key=lambda d: d.name):
        spec = definition.spec
        if not isinstance(spec, SkillSpec) or spec.effect == "read" or spec.retry.attempts <= 1:
            continue
        span = definition.key_spans.get(("retry",)) or definition.name_span
        name = definition.name
        if not (spec.idempotency and spec.idempotency.same_key_retry):
            message = (
                f"`retry` cannot apply to skill `{name}` (effect `{spec.effect}`): an effect is "
                "sent again only with the same key, and it does not declare `same_key_retry`"
            )
            suggestion = (
                "remove `retry`, or declare `idempotency { same_key_retry = true }` if a "
                "second request with the same key cannot act twice"
            )
            out.append(error("OS510", message, span, suggestion=suggestion))
            continue
        call = sent_by.get(f"skill.{name}")
        if call is None:
            continue
        message = (
            f"`retry` cannot apply to skill `{name}` (effect `{spec.effect}`) where a workflow "
            "sends it: the durable runtime sends an action again only to reconcile it (the "
            "lookup first, then the same key), never on a retry timer"
        )
        related = (Related(call.span, f"sent by the action in state `{call.state}`"),)
        suggestion = "remove `retry`; reconciliation decides whether the action is sent again"
        out.append(error("OS510", message, span, related=related, suggestion=suggestion))
    return out


# --------------------------------------------------------------------------- OS511

KeyPath = tuple[str, ...]
#: the lists of principals whose entries may name a token role as ``role:R``
_PRINCIPAL_LISTS = frozenset({"approvers", "reviewers", "deciders"})


def check_role_names(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """Every ``role:R`` in an approver, reviewer or decider list names a role a token grants:
    a misspelt one would match nobody, and the approval or change wait for ever."""
    out: list[Diagnostic] = []
    for definition in analysis.definitions.values():
        for path, entries in _principal_lists(definition.spec, ()):
            for entry in entries:
                role = entry.removeprefix(ROLE_PREFIX)
                if not entry.startswith(ROLE_PREFIX) or role in TOKEN_ROLES:
                    continue
                message = (
                    f"`{entry}` in {'.'.join(path)} names no role a token grants "
                    f"({', '.join(TOKEN_ROLES)}); it would match nobody"
                )
                close = difflib.get_close_matches(role, TOKEN_ROLES, n=1)
                span = definition.key_spans.get(path) or definition.name_span
                suggestion = f"did you mean `{ROLE_PREFIX}{close[0]}`?" if close else None
                out.append(error("OS511", message, span, suggestion=suggestion))
    return out


def _principal_lists(
    value: object, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], list[str]]]:
    """Each approver, reviewer or decider list in a spec, with its key path."""
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            item = getattr(value, name)
            if name in _PRINCIPAL_LISTS and isinstance(item, list):
                yield (*path, name), [str(entry) for entry in item]
            else:
                yield from _principal_lists(item, (*path, name))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _principal_lists(item, (*path, str(key)))


# --------------------------------------------------------------------------- OS512


def check_carved_budgets_fit(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """A ``delegate``'s ``budget`` carves no more of a budget than its caller has: the
    workflow's own ``budget``, and the owner agent's where the owner is an agent. Such a
    request could never be made (the run would stop for its budget when it tried)."""
    out: list[Diagnostic] = []
    for definition, spec in workflows(analysis):
        owner = principal(spec.owner)
        agent = analysis.get(owner) if owner is not None and owner.startswith("agent.") else None
        limits: list[tuple[str, Budget]] = [("the workflow's", spec.budget)]
        if agent is not None and isinstance(agent.spec, AgentSpec):
            limits.append((f"its owner `{owner}`'s", agent.spec.budget))
        for name in sorted(spec.state):
            delegate = spec.state[name].delegate
            if delegate is None or delegate.budget is None:
                continue
            for key, amount in delegate.budget.model_dump(exclude_none=True).items():
                for whose, budget in limits:
                    limit = getattr(budget, key)
                    if limit is None or amount <= limit:
                        continue
                    path = ("state", name, "delegate", "budget", key)
                    span = definition.key_spans.get(path) or definition.name_span
                    message = (
                        f"state `{name}` carves {key} = {amount} for its request, more than "
                        f"{whose} `budget.{key}` ({limit}): the request could never be made"
                    )
                    suggestion = f"carve at most {limit}, or raise {whose} `budget.{key}`"
                    out.append(error("OS512", message, span, suggestion=suggestion))
                    break
    return out


POLICY_CHECKS: tuple[Check, ...] = (
    check_skills_are_bound,
    check_risk_ceiling,
    check_effects_are_reconcilable,
    check_external_actions_need_approval,
    check_bindings_only_narrow,
    check_no_literal_secrets,
    check_runbook_skills_need_no_approval,
    check_turn_skills_only_read,
    check_retry_can_apply,
    check_role_names,
    check_carved_budgets_fit,
)
