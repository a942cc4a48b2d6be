"""Fuzz the served OpenAPI document with schemathesis over real HTTP: whatever is sent, valid or
not, the API answers without a 5xx and without a traceback, on both backends.

Schemathesis' own pytest plugin does not load under this pytest, so each operation's case
strategy is driven by hypothesis directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, note, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from openseal.runtime import service
from openseal.runtime.actions.approvals import ApprovalAuthority
from openseal.runtime.store import Store
from openseal.skills.credentials import RuntimeContext
from tests.api.conftest import Serve
from tests.authoring.support import GOOD, KEY, KEY_VARIABLE, PROFILE, answer, workspace
from tests.runtime.providers.chat_server import ChatServer

pytestmark = pytest.mark.slow

EXAMPLES = 6


def no_traceback(_ctx: Any, response: Any, _case: Any) -> bool | None:
    text = response.text or ""
    assert "Traceback" not in text and 'File "' not in text, text[:500]
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error"}, text[:500]
        assert set(body["error"]) == {"code", "message", "details"}, text[:500]
    return None


def test_the_api_never_answers_5xx_nor_a_traceback(
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
        assert server.operator is not None  # as the local operator: with its per-start secret
        fuzz(server.url, {"Authorization": f"Bearer {server.operator.secret}"})


def test_with_tokens_the_api_never_answers_5xx_nor_a_traceback(serve: Serve, store: Store) -> None:
    """The same with identification on: an operator limited to one scope, so every guard
    (roles, scopes, 404 for what it may not see) is exercised by what is thrown at it."""
    service.create_objective(store, service.StartObjective("small", {"n": 1}), service.CLI)
    request = service.NewToken("user:fuzz", ("operator", "approver"), ("default", "ops"))
    secret = service.tokens.create_token(store, request, service.CLI).secret
    server = serve(external_workers=True, authority=ApprovalAuthority(local_operator=False))
    with server.client(secret) as client:
        assert client.get("/me").json()["principal"] == "user:fuzz"
    fuzz(server.url, {"Authorization": f"Bearer {secret}"})


def fuzz(url: str, headers: dict[str, str] | None = None) -> None:
    schema = schemathesis.openapi.from_url(f"{url}/api/v1/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    assert len(operations) >= 25
    # tokens last: what the other operations meet is the store without the fuzzer's tokens
    operations.sort(key=lambda operation: operation.label == "POST /api/v1/tokens")
    for operation in operations:
        for mode in GenerationMode:

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def check(case: Any) -> None:
                note(f"{case.method} {case.formatted_path}")
                case.call_and_validate(
                    checks=[not_a_server_error, no_traceback], timeout=20, headers=headers
                )

            try:
                check()
            except Unsatisfiable:
                # nothing invalid can be sent to an operation without parameters or body
                assert mode is GenerationMode.NEGATIVE, operation.label
