"""What the built-in step types do: one small async function each, in one table.

The arguments each type takes are declared for the compiler in
:data:`openseal.compiler.analysis.builtin_steps.STEP_TYPES`; :data:`HANDLERS`
has one handler per declared type. Every handler receives a :class:`StepContext`
with its arguments already evaluated (except the *lazy* ones, such as
``filter``'s ``predicate``, which are evaluated once per item with ``item``
bound) and returns the step's output. A handler reports a problem by raising
:class:`StepFailure`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openseal.compiler import EvaluationError, Expression, evaluate, functions
from openseal.errors import RunbookError
from openseal.runbooks.threads import in_thread
from openseal.skills.http import RequestAmbiguous, RequestNotSent, send


class StepFailure(RunbookError):
    """A step could not produce its output; the message is the step's error."""

    code = "step_failed"


@dataclass(frozen=True, slots=True)
class StepContext:
    step: str
    args: Mapping[str, object]
    #: arguments evaluated per item, with ``item`` bound (``StepType.lazy``)
    lazy: Mapping[str, Expression]
    scope: Mapping[str, object]
    input: Mapping[str, object]
    timeout: float


Handler = Callable[[StepContext], Awaitable[object]]


# --------------------------------------------------------------------------- argument access


def _arg(ctx: StepContext, name: str, default: object = None) -> object:
    return ctx.args.get(name, default)


def _list(ctx: StepContext, name: str) -> list[object]:
    value = _arg(ctx, name)
    if not functions.is_list(value):
        raise StepFailure(f"`{name}` must be a list, got {functions.kind(value)}")
    assert isinstance(value, Sequence)
    return list(value)


def _text(ctx: StepContext, name: str, default: str | None = None) -> str:
    value = _arg(ctx, name, default)
    if not isinstance(value, str):
        raise StepFailure(f"`{name}` must be a string, got {functions.kind(value)}")
    return value


def _number(ctx: StepContext, name: str) -> float:
    value = _arg(ctx, name)
    if not functions.is_number(value):
        raise StepFailure(f"`{name}` must be a number, got {functions.kind(value)}")
    assert isinstance(value, int | float)
    return float(value)


def _flag(ctx: StepContext, name: str, default: bool = False) -> bool:
    value = _arg(ctx, name, default)
    if not isinstance(value, bool):
        raise StepFailure(f"`{name}` must be true or false, got {functions.kind(value)}")
    return value


def field_of(item: object, path: str) -> object:
    """``"a.b"`` looked up in ``item``; ``None`` when absent (sorted last, refused by sums)."""
    value = item
    for part in path.split(".") if path else []:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


# --------------------------------------------------------------------------- handlers


async def _trigger(ctx: StepContext) -> object:
    return ctx.args["value"] if "value" in ctx.args else dict(ctx.input)


async def _transform(ctx: StepContext) -> object:
    return ctx.args["value"] if "value" in ctx.args else dict(ctx.args)


async def _if(ctx: StepContext) -> object:
    condition = _arg(ctx, "condition")
    if not isinstance(condition, bool):
        raise StepFailure(f"`condition` must be true or false, got {functions.kind(condition)}")
    return {"result": condition}


async def _switch(ctx: StepContext) -> object:
    value = _arg(ctx, "value")
    cases = _arg(ctx, "cases")
    if isinstance(cases, Mapping):
        pairs = [(name, expected) for name, expected in cases.items()]
    elif functions.is_list(cases):
        assert isinstance(cases, Sequence)
        pairs = [(expected, expected) for expected in cases]
    else:
        raise StepFailure(
            "`cases` must be a list of values or a map of name to value, "
            f"got {functions.kind(cases)}"
        )
    for name, expected in pairs:
        if functions.equal(value, expected):
            return {"case": name, "matched": True}
    return {"case": _arg(ctx, "default"), "matched": False}


async def _filter(ctx: StepContext) -> object:
    predicate = ctx.lazy["predicate"]
    kept: list[object] = []
    for item in _list(ctx, "items"):
        verdict = evaluate(predicate, {**ctx.scope, "item": item})
        if not isinstance(verdict, bool):
            raise StepFailure(f"`predicate` must give true or false, got {functions.kind(verdict)}")
        if verdict:
            kept.append(item)
    return kept


async def _sort(ctx: StepContext) -> object:
    items = _list(ctx, "items")
    by = _text(ctx, "by", "")
    keys = [field_of(item, by) for item in items]
    kinds = {functions.kind(k) for k in keys if k is not None}
    if len(kinds) > 1 or kinds - {"number", "string"}:
        listing = ", ".join(sorted(kinds))
        raise StepFailure(f"`sort` compares numbers or strings, not a mix of {listing}")
    # Items without the field go last in either direction.
    present = [(k, i) for k, i in zip(keys, items, strict=True) if k is not None]
    absent = [i for k, i in zip(keys, items, strict=True) if k is None]
    present.sort(key=lambda pair: pair[0], reverse=_flag(ctx, "descending"))  # type: ignore[arg-type, return-value]
    return [i for _, i in present] + absent


def _numbers(ctx: StepContext, items: list[object], path: str) -> list[int | float]:
    values = [field_of(item, path) for item in items]
    bad = [v for v in values if not functions.is_number(v)]
    if bad:
        what = f"field `{path}` of each item" if path else "each item"
        raise StepFailure(f"`aggregate` needs a number for {what}, got {functions.kind(bad[0])}")
    return values  # type: ignore[return-value]


_AGGREGATES: dict[str, Callable[[list[int | float]], object]] = {
    "sum": lambda xs: sum(xs),
    "min": lambda xs: min(xs) if xs else None,
    "max": lambda xs: max(xs) if xs else None,
    "avg": lambda xs: sum(xs) / len(xs) if xs else None,
}


async def _aggregate(ctx: StepContext) -> object:
    items = _list(ctx, "items")
    op = _text(ctx, "op")
    if op == "count":
        return len(items)
    if op not in _AGGREGATES:
        raise StepFailure(f"`op` must be one of count, sum, min, max, avg; got `{op}`")
    return _AGGREGATES[op](_numbers(ctx, items, _text(ctx, "field", "")))


async def _merge(ctx: StepContext) -> object:
    values = _list(ctx, "values")
    if all(isinstance(v, Mapping) for v in values):
        merged: dict[str, object] = {}
        for value in values:
            assert isinstance(value, Mapping)
            merged.update(value)
        return merged
    if all(functions.is_list(v) for v in values):
        return [item for value in values for item in value]  # type: ignore[attr-defined]
    listing = ", ".join(sorted({functions.kind(v) for v in values}))
    raise StepFailure(f"`merge` joins maps or lists, not a mix of {listing}")


async def _split(ctx: StepContext) -> object:
    separator = _text(ctx, "separator", ",")
    if not separator:
        raise StepFailure("`separator` cannot be empty")
    parts = _text(ctx, "text").split(separator)
    return [p.strip() for p in parts] if _flag(ctx, "trim", True) else parts


async def _delay(ctx: StepContext) -> object:
    seconds = _number(ctx, "seconds")
    if seconds < 0:
        raise StepFailure("`seconds` cannot be negative")
    await asyncio.sleep(seconds)
    return {"seconds": seconds}


async def _http(ctx: StepContext) -> object:
    method = _text(ctx, "method", "GET").upper()
    url = _text(ctx, "url")
    headers = _arg(ctx, "headers", {})
    if not isinstance(headers, Mapping):
        raise StepFailure(f"`headers` must be a map, got {functions.kind(headers)}")
    body = _arg(ctx, "body")
    expected = _expected_statuses(_arg(ctx, "expect_status"))

    def request() -> Any:
        return send(
            method,
            url,
            headers={str(k): str(v) for k, v in headers.items()},
            body=body,
            timeout=ctx.timeout,
        )

    try:
        reply = await in_thread(request, ctx.step)
    except (RequestNotSent, RequestAmbiguous) as exc:
        raise StepFailure(str(exc)) from None
    ok = 200 <= reply.status < 300 if expected is None else reply.status in expected
    if not ok:
        wanted = "2xx" if expected is None else " or ".join(str(s) for s in sorted(expected))
        raise StepFailure(f"{method} {url} answered {reply.status} (expected {wanted})")
    return reply.to_output()


def _expected_statuses(value: object) -> set[int] | None:
    if value is None:
        return None
    values = value if functions.is_list(value) else [value]
    assert isinstance(values, Sequence)
    if not all(functions.is_number(v) and float(v).is_integer() for v in values):
        raise StepFailure("`expect_status` must be a status code or a list of them")
    return {int(v) for v in values}


#: The handler of every built-in step type, by the name written in ``uses``.
HANDLERS: dict[str, Handler] = {
    "trigger": _trigger,
    "http": _http,
    "transform": _transform,
    "set": _transform,
    "if": _if,
    "switch": _switch,
    "filter": _filter,
    "sort": _sort,
    "aggregate": _aggregate,
    "merge": _merge,
    "split": _split,
    "delay": _delay,
}

__all__ = ["HANDLERS", "EvaluationError", "StepContext", "StepFailure"]
