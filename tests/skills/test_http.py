"""The HTTP adapter against a local server: templates, keys, credentials, outcomes."""

from __future__ import annotations

import pytest

from openseal.compiler.definitions.decode import Definition
from openseal.compiler.definitions.specs import SkillSpec
from openseal.compiler.load import load_definitions
from openseal.skills import HttpAdapter, Skill, SkillCall, adapter_for
from tests.runtime.support import eventually
from tests.skills.server import Server


def skill(tmp_path, text: str) -> Skill:  # type: ignore[no-untyped-def]
    """The skill in ``text`` as the adapters get it: read from the settings it compiles to."""
    path = tmp_path / "skill.hcl"
    path.write_text(text)
    loaded = load_definitions([path])
    assert loaded.ok, [d.message for d in loaded.diagnostics]
    [definition] = loaded.definitions
    assert isinstance(definition, Definition) and isinstance(definition.spec, SkillSpec)
    return Skill.from_settings(definition.spec.model_dump(mode="json"))  # type: ignore[arg-type]


ORDER = """
skill "submit_order" {{
  description = "Submit an order."
  effect      = "{effect}"
  input       = object({{ vendor = string, quantity = optional(number, 1) }})
  output      = object({{ method = string, body = any, headers = any }})
  credential  = "procurement_api"
  adapter "http" {{
    method  = "POST"
    url     = "${{config.base_url}}/{path}"
    headers = {{ x-vendor = "${{args.vendor}}" }}
  }}
  idempotency {{
    key_header = "Idempotency-Key"
  }}
}}
"""


def _call(spec: Skill, server: Server, **args: object) -> SkillCall:
    config = {"base_url": server.url, "credential.procurement_api": "env:TEST_PROCUREMENT_TOKEN"}
    return SkillCall("submit_order", spec, args, 5.0, "run-1:submit", config)


def test_success_sends_templates_key_credential_and_defaults(
    tmp_path,
    server: Server,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("TEST_PROCUREMENT_TOKEN", "s3cret")
    spec = skill(tmp_path, ORDER.format(effect="external", path="echo"))
    assert isinstance(adapter_for(spec), HttpAdapter)
    result = HttpAdapter().call(_call(spec, server, vendor="Contoso"))
    assert result.outcome == "succeeded", result.error
    [seen] = server.requests
    assert seen.path == "/echo" and seen.method == "POST"
    assert seen.body == {"vendor": "Contoso", "quantity": 1}
    assert seen.headers["idempotency-key"] == "run-1:submit"
    assert seen.headers["x-vendor"] == "Contoso"
    assert seen.headers["authorization"] == "Bearer s3cret"
    assert result.detail == {"status": 200}


def test_arguments_are_checked_before_sending(tmp_path, server: Server) -> None:  # type: ignore[no-untyped-def]
    spec = skill(tmp_path, ORDER.format(effect="external", path="echo"))
    result = HttpAdapter().call(_call(spec, server, vendor=3))
    assert result.outcome == "failed"
    assert result.error is not None and "do not fit its input type" in result.error
    assert server.requests == []


def test_missing_credential_fails_without_sending(
    tmp_path,
    server: Server,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.delenv("TEST_PROCUREMENT_TOKEN", raising=False)
    spec = skill(tmp_path, ORDER.format(effect="external", path="echo"))
    result = HttpAdapter().call(_call(spec, server, vendor="Contoso"))
    assert result.outcome == "failed"
    assert result.error is not None and "TEST_PROCUREMENT_TOKEN" in result.error
    assert server.requests == []


@pytest.mark.parametrize(
    ("effect", "path", "outcome"),
    [
        ("external", "status/503", "unknown"),  # ambiguous status: may have taken effect
        ("read", "status/503", "failed"),  # a read has no effect to be unsure about
        ("external", "status/400", "failed"),
    ],
)
def test_outcomes_by_status(
    tmp_path,
    server: Server,
    monkeypatch: pytest.MonkeyPatch,
    effect: str,
    path: str,
    outcome: str,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("TEST_PROCUREMENT_TOKEN", "t")
    spec = skill(tmp_path, ORDER.format(effect=effect, path=path))
    result = HttpAdapter().call(_call(spec, server, vendor="Contoso"))
    assert result.outcome == outcome
    assert result.detail == {"status": int(path.split("/")[1])}


def test_connection_refused_is_failed_not_unknown(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TEST_PROCUREMENT_TOKEN", "t")
    spec = skill(tmp_path, ORDER.format(effect="external", path="echo"))
    call = SkillCall(
        "submit_order",
        spec,
        {"vendor": "x"},
        5.0,
        "k",
        {
            "base_url": "http://127.0.0.1:9",
            "credential.procurement_api": "env:TEST_PROCUREMENT_TOKEN",
        },
    )
    result = HttpAdapter().call(call)
    assert result.outcome == "failed"
    assert result.error is not None and "cannot connect" in result.error


def test_no_reply_in_time_is_unknown_for_effects(
    tmp_path,
    server: Server,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("TEST_PROCUREMENT_TOKEN", "t")
    spec = skill(tmp_path, ORDER.format(effect="external", path="slow?seconds=2"))
    call = SkillCall(
        "submit_order",
        spec,
        {"vendor": "x"},
        0.2,
        "k",
        {"base_url": server.url, "credential.procurement_api": "env:TEST_PROCUREMENT_TOKEN"},
    )
    result = HttpAdapter().call(call)
    assert result.outcome == "unknown"
    assert result.error is not None and "no reply within 0.2s" in result.error


@pytest.mark.slow
def test_the_timeout_bounds_the_whole_exchange_not_each_read(
    tmp_path,
    server: Server,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    """A reply that trickles in, a byte well within each read's timeout, is cut at the skill's
    timeout: the server sees the connection closed long before its reply would have ended."""
    monkeypatch.setenv("TEST_PROCUREMENT_TOKEN", "t")
    spec = skill(tmp_path, ORDER.format(effect="external", path="drip?seconds=60"))
    config = {"base_url": server.url, "credential.procurement_api": "env:TEST_PROCUREMENT_TOKEN"}
    result = HttpAdapter().call(SkillCall("submit_order", spec, {"vendor": "x"}, 1.0, "k", config))
    assert result.outcome == "unknown"
    assert result.error is not None and "no reply within 1s" in result.error
    eventually(lambda: bool(server.drips), timeout=60)
    assert server.drips == ["cut"]
