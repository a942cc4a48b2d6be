"""Schemathesis, with every check it has, against a real server on loopback, on both backends:
whatever is sent, valid or not, the API answers what its OpenAPI document declares.

Every check runs: no 5xx and no traceback; status codes, content types, headers and bodies as
declared; data the document allows is accepted and data it forbids is refused; a missing
required header is refused; a method the document does not list answers 405 with ``Allow``;
with tokens, an operation called without one is refused. The phases (explicit examples, the
coverage of each parameter's boundaries, hypothesis fuzzing, stateful sequences) run in-process
through schemathesis' engine, with a fixed seed and a bounded number of examples.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import Status, events, from_schema
from schemathesis.specs.openapi.checks import positive_data_acceptance

from openseal.runtime import service
from openseal.runtime.actions.approvals import ApprovalAuthority
from openseal.runtime.store import Store
from openseal.skills.credentials import RuntimeContext
from tests.api.conftest import Serve
from tests.authoring.support import GOOD, KEY, KEY_VARIABLE, PROFILE, answer, workspace
from tests.runtime.providers.chat_server import ChatServer

pytestmark = pytest.mark.slow

EXAMPLES = 5


#: refusals of well-formed data that the document cannot declare: a body checked against the
#: deployed definitions (a workflow's input types, its states, the workflows a team or an agent
#: may start), compiled documents checked by the compiler, a draft the model could not make
#: compile
BEYOND_THE_DOCUMENT = {"invalid_input", "bundle_error", "draft_failed", "no_fitting_workflow"}


def refusal(response: Any) -> str | None:
    """The stable code of an error answer (the service's own, under ``invalid_request``)."""
    if response.status_code < 400:
        return None
    error = response.json()["error"]
    return str(error["details"].get("reason", error["code"]))


@schemathesis.check
def valid_data_is_accepted(ctx: Any, response: Any, case: Any) -> bool | None:
    """Schemathesis' ``positive_data_acceptance`` (data the document allows is accepted), but
    for the refusals only the deployed definitions can decide (:data:`BEYOND_THE_DOCUMENT`)."""
    if response.status_code == 422 and refusal(response) in BEYOND_THE_DOCUMENT:
        return None
    return positive_data_acceptance(ctx, response, case)


@schemathesis.check
def no_traceback(_ctx: Any, response: Any, _case: Any) -> bool | None:
    text = response.text or ""
    assert "Traceback" not in text and 'File "' not in text, text[:500]
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error"}, text[:500]
        assert set(body["error"]) == {"code", "message", "details"}, text[:500]
    return None


def test_the_local_operator_gets_what_the_document_declares(
    serve: Serve, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service.create_objective(
        store, service.StartObjective("small", {"n": 1}), service.CLI
    )  # something to find besides 404s
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    with ChatServer() as chat:
        chat.reply(answer(("auditor.hcl", GOOD)))  # every draft compiles
        server = serve(
            external_workers=True,
            authority=ApprovalAuthority(local_operator=True),
            authoring_definitions=workspace(tmp_path, chat),
            authoring_profile=PROFILE,
            context=RuntimeContext.load(tmp_path / "context.yaml"),
        )
        assert server.operator is not None
        assert_conforms(server.url, server.operator.secret)


def test_a_token_holder_gets_what_the_document_declares(serve: Serve, store: Store) -> None:
    """With identification on, an operator limited to some scopes, so every guard (roles,
    scopes, 404 for what it may not see) is exercised, and calls without the token are
    refused as the document says."""
    service.create_objective(store, service.StartObjective("small", {"n": 1}), service.CLI)
    request = service.NewToken("user:fuzz", ("operator", "approver"), ("default", "ops"))
    secret = service.tokens.create_token(store, request, service.CLI).secret
    server = serve(external_workers=True, authority=ApprovalAuthority(local_operator=False))
    with server.client(secret) as client:
        assert client.get("/me").json()["principal"] == "user:fuzz"
    assert_conforms(server.url, secret)


def assert_conforms(url: str, token: str) -> None:
    """Run every schemathesis phase with every check against the server at ``url``, calling
    with ``token`` (the checks call without it too, and expect a 401)."""
    config = SchemathesisConfig.from_dict(
        {
            "seed": 20261207,
            "suppress-health-check": ["all"],
            "request-timeout": 20,
            # the live event stream stays open while its run lives: read its first event only
            "max-stream-events": 1,
            "checks": {"enabled": True, "positive_data_acceptance": {"enabled": False}},
            "generation": {
                "max-examples": EXAMPLES, "mode": "all", "deterministic": True, "database": "none",
            },
            "phases": {"stateful": {"max-steps": 6}},
            "auth": {"openapi": {"bearer": {"bearer": token}}},
        }
    )  # fmt: skip
    schema = schemathesis.openapi.from_url(f"{url}/api/v1/openapi.json", config=config)
    problems = list(failures(from_schema(schema).execute()))
    assert not problems, "\n\n".join(problems[:20])


def failures(stream: Any) -> Any:
    """Each failed check of the run, as a line to read (and a command to reproduce it), and
    each error the engine met."""
    for event in stream:
        if isinstance(event, events.ScenarioFinished | events.FuzzScenarioFinished):
            for case_id, checks in event.recorder.checks.items():
                interaction = event.recorder.interactions.get(case_id)
                response = interaction.response if interaction is not None else None
                answered = (
                    ""
                    if response is None
                    else f"[{response.status_code}] {response.content[:300]!r}"
                )
                for check in checks:
                    if check.status == Status.FAILURE and check.failure_info is not None:
                        failure = check.failure_info.failure
                        yield (
                            f"{event.recorder.label}: {check.name}: {failure.title}\n"
                            f"{failure.message}\n{check.failure_info.code_sample}\n{answered}"
                        )
        elif isinstance(event, events.NonFatalError | events.FatalError):
            yield f"engine error: {event!r}"
        elif isinstance(event, events.EngineFinished):
            yield from (f"after the run: {failure.title}" for failure in event.failures)
