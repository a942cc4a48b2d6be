"""Compiled skill documents read back into :class:`~openseal.compiler.definitions.specs.SkillSpec`.

Compiled documents hold expressions and types as JSON ASTs; the skill adapters
want the model's objects, so the gateway (read skills) and dispatch (actions)
both decode through here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from openseal.compiler import SkillSpec
from openseal.compiler import expr as ex
from openseal.compiler import types as ty
from openseal.runtime.compiled import ByIdentity, DefinitionError


def skill_spec(document: Mapping[str, Any]) -> SkillSpec:
    """The :class:`SkillSpec` of a compiled ``skill`` document, for the skill adapters.

    Compiled documents hold expressions and types as JSON ASTs; they are decoded back here,
    once per document (a pinned version never changes; the spec is frozen).
    """
    return _specs(document)


def _read(document: Mapping[str, Any]) -> SkillSpec:
    raw = dict(document.get("spec") or {})
    try:
        raw["adapter"] = _adapter(raw.get("adapter") or {})
        for key in ("input", "output"):
            if raw.get(key) is not None:
                raw[key] = ty.from_json(raw[key])
        idempotency = raw.get("idempotency")
        if isinstance(idempotency, Mapping) and idempotency.get("lookup") is not None:
            raw["idempotency"] = {**idempotency, "lookup": _adapter(idempotency["lookup"])}
        return SkillSpec.model_validate(raw)
    except (ValidationError, ex.ExpressionFormatError, ty.TypeFormatError, KeyError) as exc:
        name = document.get("name")
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DefinitionError(f"compiled skill {name!r} cannot be read: {first}") from None


_specs = ByIdentity(_read)


def _adapter(raw: Mapping[str, Any]) -> dict[str, Any]:
    adapter = dict(raw)
    http = adapter.get("http")
    if isinstance(http, Mapping):
        adapter["http"] = {
            **http,
            "url": ex.from_json(http["url"]),
            "headers": {k: ex.from_json(v) for k, v in (http.get("headers") or {}).items()},
            "body": ex.from_json(http["body"]) if http.get("body") is not None else None,
        }
    return adapter
