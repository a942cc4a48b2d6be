"""Authority and policy checks (placeholder until the policy checks land)."""

from __future__ import annotations

from openseal.compiler.checks.graph import Check

POLICY_CHECKS: tuple[Check, ...] = ()
