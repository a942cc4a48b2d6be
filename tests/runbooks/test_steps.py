"""Built-in step types, table-driven: arguments in, output (or error) out."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from openseal.compiler.analysis.builtin_steps import STEP_TYPES
from openseal.compiler.definitions.specs import BUILTIN_STEPS
from openseal.compiler.lang.expr import parse_expression
from openseal.compiler.syntax.spans import Span
from openseal.runbooks.steps import HANDLERS, StepContext, StepFailure

ITEMS = [{"name": "b", "price": 3}, {"name": "a", "price": 1}, {"name": "c", "price": 2}]


def call(uses: str, args: Mapping[str, object], lazy: Mapping[str, str] = ()) -> object:  # type: ignore[assignment]
    parsed = {}
    for name, source in dict(lazy).items():
        expr, diagnostics = parse_expression(source, Span.point("t"))
        assert expr is not None and not diagnostics
        parsed[name] = expr
    ctx = StepContext("s", args, parsed, {"input": {"limit": 2}}, {"x": 1}, 5.0)
    return asyncio.run(HANDLERS[uses](ctx))


def test_every_step_type_of_the_model_is_declared_and_has_a_handler() -> None:
    assert list(STEP_TYPES) == list(BUILTIN_STEPS)
    assert list(HANDLERS) == list(BUILTIN_STEPS)


CASES = [
    ("trigger", {}, {}, {"x": 1}),
    ("trigger", {"value": 7}, {}, 7),
    ("transform", {"value": [1, 2]}, {}, [1, 2]),
    ("set", {"a": 1, "b": "two"}, {}, {"a": 1, "b": "two"}),
    ("if", {"condition": False}, {}, {"result": False}),
    (
        "switch",
        {"value": "hi", "cases": {"low": "lo", "high": "hi"}},
        {},
        {"case": "high", "matched": True},
    ),
    ("switch", {"value": 2, "cases": [1, 2]}, {}, {"case": 2, "matched": True}),
    (
        "switch",
        {"value": 9, "cases": [1], "default": "other"},
        {},
        {"case": "other", "matched": False},
    ),
    ("filter", {"items": ITEMS}, {"predicate": "item.price >= input.limit"}, [ITEMS[0], ITEMS[2]]),
    ("sort", {"items": ITEMS, "by": "price"}, {}, [ITEMS[1], ITEMS[2], ITEMS[0]]),
    (
        "sort",
        {"items": ITEMS, "by": "name", "descending": True},
        {},
        [ITEMS[2], ITEMS[0], ITEMS[1]],
    ),
    ("sort", {"items": [3, 1, 2]}, {}, [1, 2, 3]),
    ("sort", {"items": [{"p": 2}, {}, {"p": 1}], "by": "p"}, {}, [{"p": 1}, {"p": 2}, {}]),
    ("aggregate", {"items": ITEMS, "op": "count"}, {}, 3),
    ("aggregate", {"items": ITEMS, "op": "sum", "field": "price"}, {}, 6),
    ("aggregate", {"items": ITEMS, "op": "min", "field": "price"}, {}, 1),
    ("aggregate", {"items": ITEMS, "op": "max", "field": "price"}, {}, 3),
    ("aggregate", {"items": ITEMS, "op": "avg", "field": "price"}, {}, 2),
    ("aggregate", {"items": [], "op": "avg"}, {}, None),
    ("merge", {"values": [{"a": 1, "b": 1}, {"b": 2}]}, {}, {"a": 1, "b": 2}),
    ("merge", {"values": [[1], [2, 3]]}, {}, [1, 2, 3]),
    ("split", {"text": "a, b,c"}, {}, ["a", "b", "c"]),
    ("split", {"text": "a|b ", "separator": "|", "trim": False}, {}, ["a", "b "]),
    ("delay", {"seconds": 0}, {}, {"seconds": 0.0}),
]


@pytest.mark.parametrize(("uses", "args", "lazy", "expected"), CASES)
def test_builtin(
    uses: str, args: dict[str, object], lazy: dict[str, str], expected: object
) -> None:
    assert call(uses, args, lazy) == expected


ERRORS = [
    ("if", {"condition": "yes"}, {}, "`condition` must be true or false, got string"),
    (
        "filter",
        {"items": ITEMS},
        {"predicate": "item.price"},
        "`predicate` must give true or false",
    ),
    ("filter", {"items": "abc"}, {"predicate": "true"}, "`items` must be a list, got string"),
    ("sort", {"items": [1, "a"]}, {}, "not a mix of number, string"),
    ("aggregate", {"items": ITEMS, "op": "median"}, {}, "`op` must be one of count, sum"),
    (
        "aggregate",
        {"items": ITEMS, "op": "sum", "field": "name"},
        {},
        "needs a number for field `name`",
    ),
    ("merge", {"values": [{"a": 1}, [1]]}, {}, "not a mix of list, map"),
    ("split", {"text": "a", "separator": ""}, {}, "`separator` cannot be empty"),
    ("delay", {"seconds": -1}, {}, "`seconds` cannot be negative"),
    ("switch", {"value": 1, "cases": 3}, {}, "`cases` must be a list of values or a map"),
    ("http", {"url": "http://127.0.0.1:9/", "expect_status": "ok"}, {}, "`expect_status` must be"),
]


@pytest.mark.parametrize(("uses", "args", "lazy", "message"), ERRORS)
def test_builtin_errors(
    uses: str, args: dict[str, object], lazy: dict[str, str], message: str
) -> None:
    with pytest.raises(StepFailure) as caught:
        call(uses, args, lazy)
    assert message in caught.value.message


def test_http_step_against_a_local_server(server: object) -> None:
    url = server.url  # type: ignore[attr-defined]
    out = call(
        "http",
        {"url": f"{url}/echo", "method": "post", "body": {"n": 1}, "headers": {"x-trace": "t1"}},
    )
    assert isinstance(out, dict) and out["status"] == 200
    assert out["body"]["method"] == "POST" and out["body"]["body"] == {"n": 1}
    assert out["body"]["headers"]["x-trace"] == "t1"
    with pytest.raises(StepFailure, match=r"answered 503 \(expected 2xx\)"):
        call("http", {"url": f"{url}/status/503"})
    assert call("http", {"url": f"{url}/status/404", "expect_status": [404]})["status"] == 404  # type: ignore[index]
