"""Skill adapters (http, python entry point) shared by the runbook executor and the runtime.

Adapters never touch the store; see :mod:`openseal.skills.base` for the interface.
"""

from __future__ import annotations

from openseal.skills.base import Outcome, SkillAdapter, SkillCall, SkillResult
from openseal.skills.http import HttpAdapter
from openseal.skills.python import PythonAdapter
from openseal.skills.skill import Skill

ADAPTERS: dict[str, SkillAdapter] = {"http": HttpAdapter(), "python": PythonAdapter()}


def adapter_for(spec: Skill) -> SkillAdapter | None:
    """The adapter that calls ``spec``; ``None`` for kinds the caller handles (``runbook``)."""
    return ADAPTERS.get(spec.adapter.kind)


__all__ = [
    "ADAPTERS",
    "HttpAdapter",
    "Outcome",
    "PythonAdapter",
    "Skill",
    "SkillAdapter",
    "SkillCall",
    "SkillResult",
    "adapter_for",
]
