"""Checks run after ``build``: graph checks, then authority and policy checks.

Each check is a function ``(analysis, graphs) -> list[Diagnostic]`` with its own
diagnostic code; :data:`CHECKS` is the order the pipeline runs them in.
"""

from __future__ import annotations

from openseal.compiler.analysis.checks.graph import GRAPH_CHECKS, Check
from openseal.compiler.analysis.checks.policy import POLICY_CHECKS

CHECKS: tuple[Check, ...] = (*GRAPH_CHECKS, *POLICY_CHECKS)

__all__ = ["CHECKS", "GRAPH_CHECKS", "POLICY_CHECKS", "Check"]
