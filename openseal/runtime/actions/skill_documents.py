"""Compiled skill documents read as :class:`~openseal.skills.Skill`, what the adapters call.

A compiled skill document's ``spec`` has the contract's shape
(:class:`~openseal.contract.SkillSettings`), with expressions and types as JSON; the gateway
(read skills) and dispatch (actions) both read it through here, decoded once per document.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from openseal.compiler import expr as ex
from openseal.compiler import types as ty
from openseal.contract import SkillSettings
from openseal.runtime.compiled import ByIdentity, DefinitionError
from openseal.skills import Skill


def skill_spec(document: Mapping[str, Any]) -> Skill:
    """The :class:`Skill` of a compiled ``skill`` document, for the skill adapters.

    Compiled documents hold expressions and types as JSON ASTs; they are decoded here, once
    per document (a pinned version never changes; the skill is frozen).
    """
    return _specs(document)


def _read(document: Mapping[str, Any]) -> Skill:
    try:
        return Skill.from_settings(cast(SkillSettings, document["spec"]))
    except (
        ex.ExpressionFormatError, ty.TypeFormatError, KeyError, TypeError, ValueError
    ) as exc:  # fmt: skip
        name = document.get("name")
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        raise DefinitionError(f"compiled skill {name!r} cannot be read: {first}") from None


_specs = ByIdentity(_read)
