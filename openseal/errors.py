"""The one exception root of openseal, split by phase.

Every error a user can meet derives from :class:`OpenSealError` and carries a
stable ``code``; the CLI and the HTTP API turn them into one-line messages or
one JSON shape, never a traceback.
"""

from __future__ import annotations


class OpenSealError(Exception):
    """Root of every error openseal raises on purpose."""

    code: str = "openseal_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class ClaimLost(BaseException):
    """A worker no longer holds the run it works on: another claim or an operator took it.

    Not an error but a signal to stop at once, so it derives from :class:`BaseException`:
    a broad ``except Exception`` (in an adapter wrapper, a retry loop, a skill's code) must
    not swallow it and let the worker go on acting for a run it lost. Only the engine
    catches it, and drops the turn; everything accepted before is in events and activities.
    Its ``code`` is declared in the error registry like any error's.
    """

    code: str = "claim_lost"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(OpenSealError):
    """The caller asked for something malformed (exit code 2 in the CLI)."""

    code = "usage_error"


class InvalidInput(UsageError):
    """Well-formed input the operation refuses: values that do not fit what is asked for (a
    workflow's input types, a state the workflow does not have). Exit code 1 in the CLI, as
    any refusal; the API answers it as the other validation failures (422)."""

    code = "invalid_input"


class CompileError(OpenSealError):
    """Definitions could not be compiled; ``diagnostics`` says where and why."""

    code = "compile_error"

    def __init__(self, message: str, diagnostics: tuple[object, ...] = ()) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics


class StoreError(OpenSealError):
    """The persistent store refused or failed an operation."""

    code = "store_error"


class RuntimeFailure(OpenSealError):
    """The persistent runtime could not carry out an operation."""

    code = "runtime_error"


class RunbookError(OpenSealError):
    """The in-process runbook executor failed."""

    code = "runbook_error"
