"""Starting work from a prompt: ``POST /asks`` answers a plan (which workflow, which inputs)
without starting anything; ``POST /asks/confirm`` starts the plan the person confirmed — the
service functions of ``openseal ask``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from openseal.api import documents, idempotency
from openseal.api.capabilities import requires
from openseal.api.errors import responses
from openseal.api.models import AskBody, AskConfirmation
from openseal.api.routes.common import State, Who, runtime_caller
from openseal.api.routes.objectives import Key, started
from openseal.runtime import service
from openseal.runtime.service.asks import owner_of

router = APIRouter(tags=["asks"], route_class=documents.Documented)

CONFIRM = "asks.confirm"


def _request(body: AskBody) -> service.Ask:
    return service.Ask(body.prompt, body.team, body.agent, body.project, body.scope)


@router.post(
    "/asks",
    operation_id="asks.plan",
    dependencies=requires("asks.plan"),
    responses=responses(403, 404, 422, 501, 502, 503, ok=documents.AskPlanned),
    status_code=200,
)
def plan(body: AskBody, state: State, who: Who) -> dict[str, Any]:
    """Ask the team's (its first role's agent's) or the agent's model which deployed workflow
    it may start fits ``prompt``, with which inputs (checked against the workflow's input
    types, with one repair round). Nothing starts: confirm the plan with
    ``POST /asks/confirm``. 422 ``no_fitting_workflow`` when none fits, 422
    ``ask_inputs_invalid`` when the inputs still do not fit after the repair."""
    caller = runtime_caller(state, who)
    found = service.plan_ask(state.store, _request(body), caller, state.settings.provider_factory())
    return {"plan": found.to_dict()}


@router.post(
    "/asks/confirm",
    operation_id=CONFIRM,
    dependencies=requires(CONFIRM),
    responses=responses(403, 404, 409, 422, 501, ok=documents.AskStarted, ok_statuses=(201, 200)),
    status_code=201,
)
def confirm(body: AskConfirmation, state: State, who: Who, key: Key = None) -> Any:
    """Start a confirmed plan: ``workflow`` with ``inputs``, the prompt as the objective's
    goal. The plan is checked again: the workflow must be one the team or agent may start
    (422 ``no_fitting_workflow``), and the objective is created as ``POST /objectives``
    creates one (scopes, deployment, input types). No model is called."""

    def create(request_key: str | None) -> tuple[int, dict[str, Any]]:
        confirmed = service.AskPlan(
            body.prompt, owner_of(_request(body)), body.workflow, dict(body.inputs), "",
            body.project, body.scope,
        )  # fmt: skip
        created = service.start_ask(state.store, confirmed, runtime_caller(state, who), request_key)
        status, document = started(created)
        return status, {"plan": confirmed.to_dict(), **document}

    return idempotency.answered_once(
        state.store, key, CONFIRM, body.model_dump(mode="json"), who.principal, create
    )
