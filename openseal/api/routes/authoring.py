"""Authoring from a prompt: ``POST /authoring/drafts`` — the service functions of
``openseal author``. Served only with a complete model profile (otherwise 501 with the reason).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header

from openseal.api import documents, idempotency
from openseal.api.capabilities import requires
from openseal.api.errors import ApiError, responses
from openseal.api.models import AuthoringDraftBody
from openseal.api.routes.common import State, Who, runtime_caller
from openseal.authoring import AuthoringRequest, active_governance, draft, outcome, propose

router = APIRouter(tags=["authoring"], route_class=documents.Documented)


OPERATION = "authoring.draft"
Key = Annotated[
    str | None,
    Header(
        alias=idempotency.HEADER,
        pattern=idempotency.KEY_PATTERN,
        description="Same key and body: the first answer again, without a model call.",
    ),
]


@router.post(
    "/authoring/drafts",
    operation_id=OPERATION,
    dependencies=requires(OPERATION),
    responses=responses(409, 422, 501, 502, 503, ok=documents.Draft, ok_statuses=(200, 201)),
    status_code=200,
)
def create_draft(body: AuthoringDraftBody, state: State, who: Who, key: Key = None) -> Any:
    """Draft definitions from a prompt; the compiler checks them and the model repairs them.

    200 with the files, the semantic diff and the changes that widen authority (listed
    first, as ``widening``) when the draft compiles; with ``propose`` it is also filed as a
    change proposal authored by the caller (201). Nothing is written on the server and
    nothing is activated. 422 ``draft_failed`` when the draft still does not compile after
    ``maxRepairs`` repair rounds: ``details`` holds the diagnostics and every round.
    With an ``Idempotency-Key`` the same request is answered once: a retry gets the first
    answer back without asking the model again.
    """

    def create(_key: str | None) -> tuple[int, dict[str, Any]]:
        setup = state.settings.authoring_setup()
        request = AuthoringRequest(
            body.prompt, setup.definitions, syntax=body.syntax, max_repairs=body.max_repairs,
            token_budget=state.settings.authoring_token_budget,
            active_governance=active_governance(state.store),
        )  # fmt: skip
        result = draft(setup, request)
        if not result.ok:
            raise ApiError(
                422, "draft_failed", f"{result.reason}; nothing was filed", result.to_dict()
            )
        if not body.propose:
            return 200, outcome(result, None)
        filed = propose(
            state.store, result, who.principal, body.prompt, caller=runtime_caller(state, who)
        )
        return (201 if filed.created else 200), outcome(result, filed)

    return idempotency.answered_once(
        state.store, key, OPERATION, body.model_dump(mode="json"), who.principal, create
    )
