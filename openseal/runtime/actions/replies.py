"""What of a destination's reply is kept: redacted always, typed when it does not fit.

A reply is evidence (invariant 14), but it is also input from outside: a destination may echo
the request back, ``Authorization`` header and all. So:

* every reply is scrubbed, before anything records it, of every credential value the runtime
  context can resolve (:func:`scrub`, with :func:`openseal.skills.secrets.redact`) — the
  output, the error line and the adapter's details (invariant 10);
* a confirmed (2xx) reply that does not fit the skill's output type is not stored verbatim:
  :func:`unfit_reply` keeps the declared fields whose values fit their types, plus a short
  excerpt of the rest for diagnosis.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

from openseal.compiler import types as ty
from openseal.errors import OpenSealError
from openseal.skills import Skill
from openseal.skills.base import SkillCall, SkillResult
from openseal.skills.credentials import resolve_credential
from openseal.skills.secrets import Secret, redact

#: characters of an unfit reply kept for diagnosis (after redaction)
EXCERPT_CHARS = 500


def secrets_for(call: SkillCall) -> list[Secret]:
    """Every credential value this call could have sent or been sent back: the skill's own and
    every other one the runtime context defines (one that cannot be read is skipped)."""
    found: list[Secret] = []
    resolver = call.credentials
    if resolver is not None:
        references = set(resolver.references)
        if call.spec.credential is not None:
            references.add(call.spec.credential)
        for reference in sorted(references):
            try:
                found.append(resolver.resolve(reference))
            except OpenSealError:
                continue
    elif call.spec.credential is not None:
        with contextlib.suppress(OpenSealError):
            found.append(Secret(resolve_credential(call.spec.credential, call.config)))
    return found


def scrub(result: SkillResult, secrets: list[Secret]) -> SkillResult:
    """``result`` with every secret value masked in its output, error and details."""
    if not any(s.reveal() for s in secrets):
        return result
    return SkillResult(
        result.outcome,
        _redact(result.output, secrets),
        None if result.error is None else redact(result.error, secrets),
        {key: _redact(value, secrets) for key, value in result.detail.items()},
    )


def _redact(value: object, secrets: list[Secret]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, Mapping):
        return {redact(str(k), secrets): _redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact(item, secrets) for item in value]
    return value


def unfit_reply(spec: Skill, output: object) -> dict[str, Any]:
    """What is recorded of a confirmed reply that does not fit the output type.

    ``admitted``: the declared fields whose values fit their types (``{}`` when none do, or
    the type is not an object); ``excerpt``: the start of the (already redacted) reply as JSON,
    at most :data:`EXCERPT_CHARS` characters; ``truncated``: whether it was cut.
    """
    admitted: dict[str, Any] = {}
    declared = spec.output
    if isinstance(declared, ty.ObjectType) and isinstance(output, Mapping):
        for entry in declared.fields:
            if entry.name in output and not ty.conforms(output[entry.name], entry.type):
                admitted[entry.name] = output[entry.name]
    text = json.dumps(output, sort_keys=True, default=str, ensure_ascii=False)
    return {
        "admitted": admitted,
        "excerpt": text[:EXCERPT_CHARS],
        "truncated": len(text) > EXCERPT_CHARS,
    }
