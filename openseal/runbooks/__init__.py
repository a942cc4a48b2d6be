"""The in-process runbook executor: run a runbook's plan once, in memory.

Reading a runbook and planning it are the compiler's
(:func:`openseal.compiler.runbook_pipeline.prepare`); this package only runs
the plan: the DAG executor, the built-in steps' handlers, run inputs and the
views of a result. No persistence, approvals, event stream or recovery (see
:data:`BOUNDARY`); never imports the runtime or its store.

>>> prepared = prepare(Path("definitions/runbooks/vendor_quotes/hcl/runbook.hcl"))  # doctest: +SKIP
>>> result = run(prepared.plan, {"quotes": [...], "budget": 9000})                  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openseal.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openseal.runbooks.boundary import BOUNDARY
    from openseal.runbooks.executor import RunOptions, RunResult, StepOutcome, execute, run

__getattr__ = lazy_exports(__name__, __file__)

__all__ = [
    "BOUNDARY",
    "RunOptions",
    "RunResult",
    "StepOutcome",
    "execute",
    "run",
]
