"""The skill adapter interface shared by the runbook executor and the persistent runtime.

An adapter turns one :class:`SkillCall` into one :class:`SkillResult`. It never
touches the store: whatever must be persisted around a call (the action row,
the recorded activity) is the caller's business. Adapters are synchronous and
end a call at its ``timeout`` where they can (see :mod:`openseal.skills.bounded`);
callers run them on a worker thread for concurrency and a bound of their own.

>>> from openseal.skills import adapter_for                           # doctest: +SKIP
>>> skill = Skill.from_settings(document["spec"])                     # doctest: +SKIP
>>> result = adapter_for(skill).call(SkillCall("lookup", skill, {"q": "x"}, 5.0))  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from openseal.compiler import types as ty
from openseal.skills.credentials import CredentialResolver
from openseal.skills.skill import Skill

#: ``unknown``: the call may or may not have taken effect (a timeout after the
#: request was sent, an ambiguous status); the caller must reconcile, never resend blindly.
Outcome = Literal["succeeded", "failed", "unknown"]


@dataclass(frozen=True, slots=True)
class SkillCall:
    """One call of one skill. Hook-point input: new fields get defaults."""

    skill: str
    spec: Skill
    args: Mapping[str, object]
    timeout: float
    #: stable key for effects (sent in the skill's ``key_header``); ``None`` for reads
    idempotency_key: str | None = None
    #: deployment configuration visible to adapter templates as ``config.<key>``
    config: Mapping[str, str] = field(default_factory=dict)
    #: the runtime context's resolver; when set, the skill's credential comes from it (at
    #: call time) instead of the flat ``credential.<name>`` entries of ``config``
    credentials: CredentialResolver | None = None
    #: the governed action behind the call (``key``, ``run``, ``proposal``), visible to
    #: adapter templates as ``action.<field>`` (an idempotency lookup URL uses ``action.key``)
    action: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SkillResult:
    outcome: Outcome
    output: object = None
    #: one line for people; never holds a credential value
    error: str | None = None
    #: adapter specifics worth recording (``status`` for HTTP)
    detail: Mapping[str, object] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.outcome == "succeeded"


def failed(message: str, **detail: object) -> SkillResult:
    return SkillResult("failed", error=message, detail=detail)


class SkillAdapter(Protocol):
    """What every adapter implements."""

    kind: str

    def call(self, call: SkillCall) -> SkillResult: ...


def check_args(call: SkillCall) -> SkillResult | None:
    """A failed result when the arguments do not fit the skill's input type, else ``None``."""
    if call.spec.input is None:
        return None
    problems = ty.conforms(dict(call.args), call.spec.input)
    if problems:
        listing = "; ".join(problems)
        return failed(f"skill `{call.skill}` arguments do not fit its input type: {listing}")
    return None


def with_defaults(call: SkillCall) -> dict[str, object]:
    """The call's arguments with the input type's optional defaults filled in."""
    args: object = dict(call.args)
    if call.spec.input is not None:
        args = ty.apply_defaults(args, call.spec.input)
    assert isinstance(args, dict)
    return args


def check_output(call: SkillCall, result: SkillResult) -> SkillResult:
    """Turn a success whose output does not fit the declared output type into a failure."""
    if not result.ok or call.spec.output is None:
        return result
    problems = ty.conforms(result.output, call.spec.output)
    if problems:
        listing = "; ".join(problems)
        message = f"skill `{call.skill}` returned output that does not fit its type: {listing}"
        return SkillResult("failed", result.output, message, result.detail)
    return result
