"""What the in-process runbook executor is not, said wherever it runs (a module of its own,
so ``openseal run --help`` says it without importing the executor)."""

from __future__ import annotations

BOUNDARY = (
    "runbook: in-process; no persistence, approvals, event stream or recovery"
    " — use a workflow for those"
)
