"""Skill adapters (http, python entry point) shared by the runbook executor and the runtime.

Adapters never touch the store; see :mod:`openseal.skills.base` for the interface.
"""

from __future__ import annotations

from openseal.compiler import SkillSpec
from openseal.skills.base import Outcome, SkillAdapter, SkillCall, SkillResult
from openseal.skills.http import HttpAdapter
from openseal.skills.python import PythonAdapter

ADAPTERS: dict[str, SkillAdapter] = {"http": HttpAdapter(), "python": PythonAdapter()}


def adapter_kind(spec: SkillSpec) -> str:
    for kind in ("http", "python", "runbook"):
        if getattr(spec.adapter, kind) is not None:
            return kind
    raise ValueError("a skill without an adapter")  # the model forbids this


def adapter_for(spec: SkillSpec) -> SkillAdapter | None:
    """The adapter that calls ``spec``; ``None`` for kinds the caller handles (``runbook``)."""
    return ADAPTERS.get(adapter_kind(spec))


__all__ = [
    "ADAPTERS",
    "HttpAdapter",
    "Outcome",
    "PythonAdapter",
    "SkillAdapter",
    "SkillCall",
    "SkillResult",
    "adapter_for",
    "adapter_kind",
]
