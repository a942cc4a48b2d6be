"""A compiled skill as the adapters call it.

A compiled skill document's ``spec`` has the contract's shape
(:class:`~openseal.contract.SkillSettings`): expressions and types as their JSON. A
:class:`Skill` is those settings with the expressions and types decoded once, so a call
evaluates the adapter's templates and checks its arguments without decoding them again. The
runtime reads one from each pinned skill document; the runbook executor from the skills of
its plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from openseal.compiler import expr, types
from openseal.contract import (
    AdapterSettings,
    IdempotencySettings,
    RateLimitSettings,
    SkillSettings,
)

Effect = Literal["read", "write", "external", "production", "destructive"]
AdapterKind = Literal["http", "python", "runbook"]


@dataclass(frozen=True, slots=True)
class HttpCall:
    """An ``http`` adapter: the method, and the templates of its URL, headers and body."""

    method: str
    url: expr.Expression
    headers: Mapping[str, expr.Expression]
    body: expr.Expression | None
    ambiguous_statuses: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PythonCall:
    entry_point: str


@dataclass(frozen=True, slots=True)
class RunbookCall:
    #: the runbook, as a dotted reference (``runbook.name``)
    runbook: str


@dataclass(frozen=True, slots=True)
class Adapter:
    """Exactly one of the three is set."""

    http: HttpCall | None = None
    python: PythonCall | None = None
    runbook: RunbookCall | None = None

    @property
    def kind(self) -> AdapterKind:
        if self.http is not None:
            return "http"
        return "python" if self.python is not None else "runbook"


@dataclass(frozen=True, slots=True)
class Retry:
    attempts: int = 1
    backoff: float = 1.0


@dataclass(frozen=True, slots=True)
class Idempotency:
    key_header: str | None = None
    same_key_retry: bool = False
    #: the operation that finds an action by its key
    lookup: Adapter | None = None


@dataclass(frozen=True, slots=True)
class RateLimit:
    """``requests`` calls per ``per`` seconds, ``burst`` at once, shared by every worker."""

    requests: int
    per: float
    burst: int


@dataclass(frozen=True, slots=True)
class Skill:
    """What a call of a skill needs: its effect, its input and output types, its adapter, its
    credential reference, its timeout in seconds, retries and idempotency."""

    effect: Effect
    adapter: Adapter
    input: types.TypeExpr | None = None
    output: types.TypeExpr | None = None
    credential: str | None = None
    timeout: float = 30.0
    retry: Retry = Retry()
    idempotency: Idempotency | None = None
    rate_limit: RateLimit | None = None
    #: the most calls in flight to the skill's destination at once, across every worker
    concurrency: int | None = None

    @classmethod
    def from_settings(cls, settings: SkillSettings) -> Skill:
        """Decode a compiled skill's settings. Raises ``KeyError``, ``TypeError``,
        ``ValueError``, ``expr.ExpressionFormatError`` or ``types.TypeFormatError`` when they
        do not have the contract's shape."""
        retry = settings["retry"]
        return cls(
            effect=settings["effect"],
            adapter=_adapter(settings["adapter"]),
            input=_type(settings["input"]),
            output=_type(settings["output"]),
            credential=settings["credential"],
            timeout=float(settings["timeout"]),
            retry=Retry(int(retry["attempts"]), float(retry["backoff"])),
            idempotency=_idempotency(settings["idempotency"]),
            rate_limit=_rate_limit(settings.get("rate_limit")),
            concurrency=settings.get("concurrency"),
        )


def _rate_limit(settings: RateLimitSettings | None) -> RateLimit | None:
    if not settings or settings["requests"] is None:
        return None
    requests = int(settings["requests"])
    return RateLimit(requests, float(settings["per"]), int(settings["burst"] or requests))


def _type(data: object) -> types.TypeExpr | None:
    return None if data is None else types.from_json(data)


def _adapter(settings: AdapterSettings) -> Adapter:
    http, python, runbook = settings["http"], settings["python"], settings["runbook"]
    if [http, python, runbook].count(None) != 2:
        raise ValueError("a skill declares exactly one adapter: `http`, `python` or `runbook`")
    return Adapter(
        http=None
        if http is None
        else HttpCall(
            method=http["method"],
            url=expr.from_json(http["url"]),
            headers={name: expr.from_json(value) for name, value in http["headers"].items()},
            body=None if http["body"] is None else expr.from_json(http["body"]),
            ambiguous_statuses=tuple(http["ambiguous_statuses"]),
        ),
        python=None if python is None else PythonCall(python["entry_point"]),
        runbook=None if runbook is None else RunbookCall(runbook["runbook"]),
    )


def _idempotency(settings: IdempotencySettings | None) -> Idempotency | None:
    if settings is None:
        return None
    lookup = settings["lookup"]
    return Idempotency(
        key_header=settings["key_header"],
        same_key_retry=settings["same_key_retry"],
        lookup=None if lookup is None else _adapter(lookup),
    )
