"""Starting work from a prompt: a team's or an agent's model picks a workflow and its inputs.

:func:`plan_ask` asks the model of the team or agent named in the :class:`Ask` which of the
deployed workflows it may start fits the prompt, and with which inputs. A workflow it may
start is one it owns (``owner = team.T`` or ``agent.A``), or, for an agent, the workflow its
delegated requests run as (its ``workflow``). The inputs are checked against the workflow's
input types; when they do not fit, the model is told why and answers once more. Nothing is
started: the plan is shown to the person who asked, and :func:`start_ask` starts it once they
confirm, through :func:`~openseal.runtime.engine.objectives.create_objective` with the prompt
as the objective's goal — so the caller's scopes are checked exactly as for any objective.

A prompt that fits none of those workflows (the model answers ``none``, or picks one the team
or agent may not start) is :class:`NoFittingWorkflow`; nothing is started.

Example::

    plan = plan_ask(store, Ask("note the 2.4 release", agent="release_writer"), caller)
    start_ask(store, plan, caller).objective.goal  # 'note the 2.4 release'
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openseal.errors import InvalidInput, OpenSealError, UsageError
from openseal.runtime.access import Forbidden
from openseal.runtime.caller import Caller
from openseal.runtime.store import NotFound

if TYPE_CHECKING:
    from openseal.runtime.providers import ModelProvider, ProviderFactory
    from openseal.runtime.requests import Ask
    from openseal.runtime.store import NewObjective, Store

#: what the model answers with
PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["workflow", "inputs", "reason"],
    "properties": {
        "workflow": {"type": "string", "description": "a workflow's name, or `none`"},
        "inputs": {"type": "object"},
        "reason": {"type": "string"},
    },
}

#: the model's answer when no workflow fits
NONE = "none"


class NoFittingWorkflow(OpenSealError):
    """The prompt fits no workflow the team or agent may start; nothing was started."""

    code = "no_fitting_workflow"


class AskInputsInvalid(OpenSealError):
    """The model's inputs still do not fit the workflow after its repair; nothing started."""

    code = "ask_inputs_invalid"


@dataclass(frozen=True)
class Candidate:
    """A deployed workflow the team or agent may start."""

    name: str
    digest: str
    description: str
    inputs: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputs": self.inputs}


@dataclass(frozen=True)
class AskPlan:
    """What would start: ``workflow`` with ``inputs``, the prompt as its goal."""

    prompt: str
    owner: str
    workflow: str
    inputs: dict[str, Any]
    reason: str
    project: str = "default"
    scope: str | None = None
    #: how many model calls the plan took (2: the inputs were repaired once)
    model_calls: int = 1
    candidates: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "owner": self.owner,
            "workflow": self.workflow,
            "inputs": self.inputs,
            "reason": self.reason,
            "project": self.project,
            "scope": self.scope,
            "model_calls": self.model_calls,
            "candidates": list(self.candidates),
        }


def owner_of(request: Ask) -> str:
    """``team.T`` or ``agent.A``: exactly one of them is named."""
    if bool(request.team) == bool(request.agent):
        raise UsageError("name the team or the agent to ask, one of them: --team T or --agent A")
    if not request.prompt.strip():
        raise UsageError("the prompt is empty: say what should be done")
    return f"team.{request.team}" if request.team else f"agent.{request.agent}"


def candidates(store: Store, owner: str) -> tuple[Candidate, ...]:
    """The deployed workflows ``owner`` may start, by name."""
    from openseal.runtime.service import get_version, governance

    found = []
    for deployment in governance.list_deployments(store):
        if deployment.kind != "workflow":
            continue
        document = get_version(store, deployment.active_digest).document
        if _may_start(store, owner, deployment.name, document):
            description = str((document.get("spec") or {}).get("description") or "")
            inputs = dict(document.get("inputs") or {})
            found.append(Candidate(deployment.name, deployment.active_digest, description, inputs))
    return tuple(found)


def _may_start(store: Store, owner: str, name: str, document: dict[str, Any]) -> bool:
    spec = document.get("spec") or {}
    if spec.get("owner") == owner:
        return True
    if not owner.startswith("agent."):
        return False
    digest = (document.get("dependencies") or {}).get(owner)
    if digest is None:
        return False
    from openseal.runtime.service import get_version

    agent = get_version(store, digest).document
    return bool((agent.get("spec") or {}).get("workflow") == name)


def plan_ask(
    store: Store, request: Ask, caller: Caller, factory: ProviderFactory | None = None
) -> AskPlan:
    """Ask the owner's model which workflow fits ``request.prompt``, with which inputs.

    Refused (``forbidden``) before any model call when the caller may not create objectives
    in ``request.scope``. ``factory`` maps the owner's agent profile to a provider (default:
    the runtime's, with no credentials resolved beyond the environment).
    """
    owner = owner_of(request)
    if caller.grant.home(request.scope) is None:
        raise Forbidden(f"you may not create objectives in scope {request.scope!r}")
    allowed = candidates(store, owner)
    if not allowed:
        raise NoFittingWorkflow(
            f"no deployed workflow is one {owner} may start (it owns none); nothing was started"
        )
    profile = _profile(store, owner, allowed[0])
    if factory is None:
        from openseal.runtime.providers import default_provider_factory

        factory = default_provider_factory()
    provider = factory(profile)
    return _pick(provider, profile.model, request, owner, allowed)


def _profile(store: Store, owner: str, pinned_by: Candidate) -> Any:
    """The agent (a team: its first role's) whose model plans, as ``pinned_by`` pins it."""
    from openseal.runtime.engine.catalog import WorkflowCatalog

    workflow = WorkflowCatalog(store).workflow(pinned_by.digest)
    ref = owner
    if owner.startswith("team."):
        roles = list((workflow.dependency(owner).get("spec") or {}).get("role") or {})
        if not roles:
            raise NotFound(f"{owner} has no role whose agent could plan")
        ref = f"{owner}.role.{roles[0]}"
    return workflow.agent(ref)


def _pick(
    provider: ModelProvider,
    model: dict[str, Any],
    request: Ask,
    owner: str,
    allowed: tuple[Candidate, ...],
) -> AskPlan:
    from openseal.runtime.engine.objectives import fit_inputs
    from openseal.runtime.providers import ModelRequest

    by_name = {c.name: c for c in allowed}
    instructions = instructions_for(owner, allowed)
    messages: list[dict[str, Any]] = []
    for call in (1, 2):
        asked = ModelRequest(
            agent=owner, model=model, instructions=instructions, goal=request.prompt,
            messages=tuple(messages), tools=(), output_schema=PLAN_SCHEMA, state="ask",
            visit=1, call=call,
        )  # fmt: skip
        response = provider.complete(asked)
        answer = _read(response.output)
        name = str(answer.get("workflow") or NONE)
        reason = str(answer.get("reason") or "")
        if name == NONE:
            raise NoFittingWorkflow(
                f"no workflow {owner} may start fits the prompt"
                f"{f' ({reason})' if reason else ''}; nothing was started"
            )
        chosen = by_name.get(name)
        if chosen is None:
            raise NoFittingWorkflow(
                f"the model picked workflow {name!r}, which {owner} may not start (it may "
                f"start {', '.join(sorted(by_name))}); nothing was started"
            )
        inputs = answer.get("inputs")
        inputs = dict(inputs) if isinstance(inputs, dict) else {}
        try:
            fit_inputs(name, inputs, {"inputs": chosen.inputs}, chosen.digest)
        except InvalidInput as exc:
            if call == 2:
                raise AskInputsInvalid(
                    f"the inputs the model chose still do not fit: {exc}; nothing was started"
                ) from None
            messages += [
                {"role": "assistant", "content": json.dumps(answer, sort_keys=True)},
                {"role": "user", "content": f"The inputs do not fit: {exc}. Answer again."},
            ]
            continue
        return AskPlan(
            request.prompt, owner, name, inputs, reason, request.project, request.scope,
            call, tuple(sorted(by_name)),
        )  # fmt: skip
    raise AssertionError("unreachable")


def instructions_for(owner: str, allowed: tuple[Candidate, ...]) -> str:
    """What the model is told before the prompt: the workflows it may pick from."""
    listed = "\n".join(json.dumps(c.to_dict(), sort_keys=True) for c in allowed)
    return (
        f"You are {owner}. A person asks for work in their own words. Pick the one workflow "
        "below that does what they ask and fill its inputs from what they said; the inputs "
        "must fit the workflow's input JSON Schema. Answer with a JSON object "
        '{"workflow", "inputs", "reason"}. When no workflow fits, answer "workflow": "none" '
        "and say why in reason.\n\n# Workflows you may start (one JSON object each)\n\n" + listed
    )


def _read(output: object) -> dict[str, Any]:
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except ValueError:
            return {}
    return dict(output) if isinstance(output, dict) else {}


def start_ask(
    store: Store, plan: AskPlan, caller: Caller, request_key: str | None = None
) -> NewObjective:
    """Start a confirmed plan: its workflow with its inputs, the prompt as the goal.

    The plan is checked again as it is confirmed: the workflow must still be one its owner may
    start (``no_fitting_workflow``), and the objective is created as any other, so the
    caller's scopes, the workflow's deployment and the input types are checked there."""
    from openseal.runtime.engine.objectives import create_objective
    from openseal.runtime.requests import StartObjective

    if plan.workflow not in {c.name for c in candidates(store, plan.owner)}:
        raise NoFittingWorkflow(
            f"{plan.owner} may not start workflow {plan.workflow!r}; nothing was started"
        )
    request = StartObjective(
        plan.workflow, plan.inputs, plan.project, request_key, plan.scope, goal=plan.prompt
    )
    return create_objective(store, request, caller)
