"""``openseal models check``: what an OpenAI-compatible endpoint can do, before any run.

Three small requests with the profile's endpoint, model and credential:

1. a plain completion — is the endpoint **reachable**, is the credential **authorized**, does
   it know the **model**;
2. a completion that must call a tool — does it answer with **tool calls**;
3. a completion with a strict ``json_schema`` response format — does it honour **structured
   output** (without it, turns fall back to ``json_object`` and then plain text).

Nothing is stored and no run is started. The key is resolved from the runtime context like a
worker resolves it, and never appears in a result.

Example::

    report = check_profile(profile_document, credentials)
    report.ok, [(c.name, c.status, c.detail) for c in report.checks]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import openai

from openseal.errors import OpenSealError
from openseal.runtime.providers.openai_provider import (
    PLACEHOLDER_KEY,
    Endpoint,
    describe_failure,
)
from openseal.skills.credentials import CredentialResolver
from openseal.skills.secrets import Secret, redact

Status = Literal["ok", "failed", "unsupported", "skipped"]

#: the checks in the order they run; a failure of the first two skips the rest
CHECKS = ("reachable", "authorized", "tool_calls", "json_schema")

_TOOL = {
    "type": "function",
    "function": {
        "name": "record_answer",
        "description": "Record the answer.",
        "parameters": {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
            "additionalProperties": False,
        },
    },
}
_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "answer",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
            "additionalProperties": False,
        },
    },
}
_ASK = [{"role": "user", "content": "Answer with the single word: ok"}]


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class Report:
    profile: str
    model: str
    base_url: str
    checks: tuple[Check, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        """The profile can run turns: reachable, authorized, and it calls tools.
        (Without ``json_schema`` turns still work, on a weaker output mode.)"""
        return all(c.status == "ok" for c in self.checks if c.name != "json_schema")

    def to_json(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "model": self.model,
            "base_url": self.base_url,
            "ok": self.ok,
            "checks": [c.to_json() for c in self.checks],
        }


def check_profile(
    profile: Mapping[str, Any], credentials: CredentialResolver | None = None
) -> Report:
    """Run the checks against the compiled model ``profile`` (``{"name", "base_url", ...}``)."""
    endpoint = Endpoint.from_profile(profile)
    report = Report(endpoint.name, endpoint.model, endpoint.base_url)
    try:
        secret = _secret(endpoint, credentials)
    except OpenSealError as exc:
        failed = Check("authorized", "failed", exc.message)
        return _with(report, Check("reachable", "skipped", "no credential"), failed)
    with openai.OpenAI(
        base_url=endpoint.base_url,
        api_key=secret.reveal(),
        timeout=endpoint.timeout,
        max_retries=0,
    ) as client:
        first = _ask(client, endpoint, secret, {})
        if isinstance(first, Check):
            return _with(report, *_first_failure(first))
        checks = [Check("reachable", "ok"), Check("authorized", "ok")]
        checks.append(_tool_calls(client, endpoint, secret))
        checks.append(_json_schema(client, endpoint, secret))
    return _with(report, *checks)


def _with(report: Report, *checks: Check) -> Report:
    done = {c.name for c in checks}
    rest = tuple(Check(name, "skipped") for name in CHECKS if name not in done)
    return Report(report.profile, report.model, report.base_url, (*checks, *rest))


def _secret(endpoint: Endpoint, credentials: CredentialResolver | None) -> Secret:
    if not endpoint.credential:
        return Secret(PLACEHOLDER_KEY)
    resolver = credentials or CredentialResolver()
    return resolver.resolve(endpoint.credential)


def _ask(
    client: openai.OpenAI, endpoint: Endpoint, secret: Secret, extra: dict[str, Any]
) -> dict[str, Any] | Check:
    """The answer's message, or a failed check naming why (with the key redacted)."""
    arguments: dict[str, Any] = {
        "model": endpoint.model, "messages": _ASK, **dict(endpoint.parameters), **extra,
    }  # fmt: skip
    try:
        raw = client.chat.completions.with_raw_response.create(**arguments)
        document = json.loads(raw.text)
        message = document["choices"][0]["message"]
    except openai.OpenAIError as exc:
        code, text = describe_failure(exc, endpoint)
        return Check(code, "failed", redact(text, [secret]))
    except (ValueError, KeyError, IndexError, TypeError):
        return Check("malformed_response", "failed", "the answer is not a chat completion")
    return dict(message) if isinstance(message, dict) else {}


def _first_failure(failure: Check) -> tuple[Check, ...]:
    """Which of reachable / authorized the first request's failure means."""
    if failure.name in ("model_unreachable", "model_timeout", "reply_lost"):
        return (Check("reachable", "failed", failure.detail),)
    if failure.name == "model_unauthorized":
        return Check("reachable", "ok"), Check("authorized", "failed", failure.detail)
    # it answered, but not with a completion: a wrong model name, a wrong path, a gateway error
    return Check("reachable", "ok"), Check("authorized", "failed", failure.detail)


def _tool_calls(client: openai.OpenAI, endpoint: Endpoint, secret: Secret) -> Check:
    choice = {"type": "function", "function": {"name": "record_answer"}}
    message = _ask(client, endpoint, secret, {"tools": [_TOOL], "tool_choice": choice})
    if isinstance(message, Check):
        return Check("tool_calls", "unsupported", message.detail)
    calls = message.get("tool_calls") or []
    if not calls:
        return Check("tool_calls", "unsupported", "it answered without calling the tool")
    try:
        arguments = json.loads(calls[0]["function"]["arguments"])
    except (ValueError, KeyError, TypeError):
        return Check("tool_calls", "failed", "the tool call's arguments are not JSON")
    if not isinstance(arguments, dict) or "answer" not in arguments:
        return Check("tool_calls", "failed", "the tool call's arguments miss `answer`")
    return Check("tool_calls", "ok")


def _json_schema(client: openai.OpenAI, endpoint: Endpoint, secret: Secret) -> Check:
    message = _ask(client, endpoint, secret, {"response_format": _SCHEMA})
    fallback = "; turns fall back to json_object, then plain text"
    if isinstance(message, Check):
        return Check("json_schema", "unsupported", message.detail + fallback)
    try:
        answer = json.loads(message.get("content") or "")
    except ValueError:
        return Check("json_schema", "unsupported", "the answer is not JSON" + fallback)
    if not isinstance(answer, dict) or set(answer) != {"answer"}:
        return Check("json_schema", "unsupported", "the answer ignores the schema" + fallback)
    return Check("json_schema", "ok")
