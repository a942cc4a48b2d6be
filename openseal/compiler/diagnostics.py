"""Diagnostics are data: a stable code, a severity, a message, a primary span,
related spans and an optional suggestion. Stages collect them; nothing is raised
one at a time.

Codes are stable. They are grouped by the stage that reports them:

* ``OS0xx`` reading files (encoding, size, syntax, duplicates);
* ``OS1xx`` the definition model (keys, values, types, expressions);
* ``OS2xx`` names and references;
* ``OS3xx`` expression and argument types;
* ``OS4xx`` graph checks (states, transitions, runbook cycles);
* ``OS5xx`` authority and policy checks (bindings, risk, approvals, secrets, budgets);
* ``OS6xx`` migrations of waiting runs (a ``migrate`` block against the earlier version).
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from openseal.compiler.syntax.spans import Span


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


#: What the codes of each hundred are about, by the digit after ``OS`` (``OS1xx``: the model).
CODE_GROUPS: dict[str, str] = {
    "0": "reading files",
    "1": "the definition model",
    "2": "names and references",
    "3": "types",
    "4": "graph checks",
    "5": "authority and policy checks",
    "6": "migrations of waiting runs",
}

#: Every code openseal emits, with a short title (used in docs and SARIF rules).
CODES: dict[str, str] = {
    # reading files
    "OS001": "file cannot be read",
    "OS002": "file is not valid UTF-8 text",
    "OS003": "file is too large",
    "OS004": "HCL syntax error",
    "OS005": "YAML syntax error",
    "OS006": "duplicate attribute or key",
    "OS007": "nesting too deep",
    "OS008": "unsupported YAML tag or construct",
    "OS009": "no definition files found",
    "OS010": "unsupported file type",
    "OS011": "duplicate block",
    "OS012": "file skipped by a directory scan",
    # the definition model
    "OS101": "unknown key",
    "OS102": "missing required key",
    "OS103": "wrong kind of value",
    "OS104": "invalid value",
    "OS105": "duplicate definition name",
    "OS106": "invalid type expression",
    "OS107": "invalid expression",
    "OS108": "file() cannot be read",
    "OS109": "unknown definition kind",
    "OS110": "invalid definition name",
    "OS111": "missing or extra block label",
    # names and references
    "OS201": "unresolved reference",
    "OS202": "reference to the wrong kind of thing",
    "OS203": "duplicate name",
    # types
    "OS301": "type mismatch",
    "OS302": "unknown attribute of a value",
    "OS303": "unknown function or wrong arguments",
    "OS304": "constant expression that always fails",
    # graph checks
    "OS401": "missing initial state",
    "OS402": "unreachable state",
    "OS403": "no path to an end state",
    "OS404": "transition out of an end state",
    "OS405": "ambiguous transitions",
    "OS406": "runbook cycle",
    "OS407": "unknown step or state",
    "OS408": "event not produced by this kind of state",
    "OS409": "delegate or action inside parallel or for_each",
    "OS410": "workflows start each other in a cycle without a depth bound",
    # authority and policy
    "OS501": "skill not bound to the acting agent, team or role",
    "OS502": "action above the agent's risk ceiling",
    "OS503": "effect without idempotency or reconciliation",
    "OS504": "external action reachable without approval",
    "OS505": "binding widens the skill it grants",
    "OS506": "literal secret in a definition",
    "OS507": "budget too small for the shortest path",
    "OS508": "skill requiring approval used in a runbook",
    "OS509": "turn offers a skill the model can never call",
    "OS510": "retry on an effect where nothing applies it",
    "OS511": "unknown token role in an approver, reviewer or decider list",
    "OS512": "delegate carves more of a budget than its caller has",
    # migrations of waiting runs
    "OS601": "unknown earlier version",
    "OS602": "waiting state neither mapped nor left behind",
    "OS603": "unknown state in a migration",
    "OS604": "carried value of the wrong type",
    "OS605": "migration moves runs past an effect",
    "OS606": "runs of this kind of state cannot move there",
}


@dataclass(frozen=True, slots=True)
class Related:
    """A secondary location that explains a diagnostic ("first defined here")."""

    span: Span
    message: str


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    message: str
    span: Span
    severity: Severity = Severity.ERROR
    related: tuple[Related, ...] = ()
    suggestion: str | None = None

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unregistered diagnostic code {self.code!r}")

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def to_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "span": self.span.to_dict(),
            "related": [{"span": r.span.to_dict(), "message": r.message} for r in self.related],
            "suggestion": self.suggestion,
        }


def error(
    code: str,
    message: str,
    span: Span,
    *,
    suggestion: str | None = None,
    related: Sequence[Related] = (),
) -> Diagnostic:
    return Diagnostic(code, message, span, Severity.ERROR, tuple(related), suggestion)


def warning(code: str, message: str, span: Span, *, suggestion: str | None = None) -> Diagnostic:
    return Diagnostic(code, message, span, Severity.WARNING, (), suggestion)


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate most like ``word``, if any is close enough to suggest."""
    matches = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def did_you_mean(word: str, candidates: Iterable[str], *, fmt: str = "`{}`") -> str | None:
    match = closest(word, candidates)
    return f"did you mean {fmt.format(match)}?" if match else None


def sort_key(d: Diagnostic) -> tuple[str, int, int, str, str]:
    return (d.span.file, d.span.line, d.span.column, d.code, d.message)


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.is_error for d in diagnostics)


@dataclass
class DiagnosticBag:
    """Collects diagnostics from one stage; stages return ``bag.items``."""

    items: list[Diagnostic] = field(default_factory=list)

    def add(self, diagnostic: Diagnostic) -> None:
        self.items.append(diagnostic)

    def error(self, code: str, message: str, span: Span, **kwargs: object) -> None:
        self.items.append(error(code, message, span, **kwargs))  # type: ignore[arg-type]

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.items.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        return has_errors(self.items)
