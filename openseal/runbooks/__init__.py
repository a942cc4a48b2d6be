"""The in-process runbook executor: compile a runbook, run its DAG once, in memory.

No persistence, approvals, event stream or recovery (see :data:`BOUNDARY`);
never imports the runtime or its store.

>>> prepared = prepare(Path("definitions/runbooks/vendor_quotes/hcl/runbook.hcl"))  # doctest: +SKIP
>>> result = run(prepared.plan, {"quotes": [...], "budget": 9000})                  # doctest: +SKIP
"""

from __future__ import annotations

from openseal.runbooks.executor import RunOptions, RunResult, StepOutcome, execute, run
from openseal.runbooks.frontend import Prepared, prepare
from openseal.runbooks.plan import BOUNDARY, Plan, PlanStep

__all__ = [
    "BOUNDARY",
    "Plan",
    "PlanStep",
    "Prepared",
    "RunOptions",
    "RunResult",
    "StepOutcome",
    "execute",
    "prepare",
    "run",
]
