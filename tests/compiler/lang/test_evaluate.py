"""The restricted evaluator: semantics, scope, functions and every error code."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from openseal.compiler.lang.evaluate import EvaluationError, evaluate
from openseal.compiler.lang.expr import (
    Expression,
    from_json,
    parse_expression,
    parse_template,
    to_json,
)
from openseal.compiler.lang.functions import FUNCTIONS, MAX_STRING_CHARS
from openseal.compiler.syntax.spans import Span
from openseal.errors import OpenSealError

SCOPE: dict[str, object] = {
    "input": {"request": {"item": "laptop", "quantity": 10, "budget": 12000, "tags": ["it", "q3"]}},
    "state": {
        "research": {"output": {"vendor": "Acme", "unit_price": 999.5, "currency": "EUR"}},
        "draft": {"output": {"total": 9995}},
    },
    "step": {"fetch": {"output": {"body": {"count": 3, "ids": [7, 8, 9]}}}},
}


def parse(source: str) -> Expression:
    expr, diagnostics = parse_expression(source, Span.point("flow.hcl", 7, 5))
    assert diagnostics == [], [d.message for d in diagnostics]
    assert expr is not None
    return expr


def run(source: str, scope: Mapping[str, object] = SCOPE) -> object:
    return evaluate(parse(source), scope)


def fails(source: str, scope: Mapping[str, object] = SCOPE) -> EvaluationError:
    with pytest.raises(EvaluationError) as info:
        run(source, scope)
    return info.value


# --- the running example --------------------------------------------------------------


def test_procurement_expressions() -> None:
    assert run("state.research.output.unit_price * input.request.quantity") == 9995.0
    guard = "state.draft.output.total <= input.request.budget && length(input.request.item) > 0"
    assert run(guard) is True
    text = '"Compare vendors for ${input.request.quantity} ${input.request.item}"'
    assert run(text) == "Compare vendors for 10 laptop"
    assert run("step.fetch.output.body.ids[1]") == 8
    assert run('input["request"]["tags"][0]') == "it"


def test_collections_and_conditionals() -> None:
    assert run("[1, input.request.quantity]") == [1, 10]
    assert run("{ total = 2 * 3, who = state.research.output.vendor }") == {
        "total": 6,
        "who": "Acme",
    }
    assert run('input.request.quantity > 5 ? "bulk" : "single"') == "bulk"
    assert run("step.fetch.output.body.ids[step.fetch.output.body.count - 1]") == 9
    assert run('{ a = 1 }[input.request.tags[0] == "it" ? "a" : "b"]') == 1
    assert run("[10, 20][4 / 2 - 1]") == 20  # a whole float is a valid index
    # A lone interpolation is the value itself, not its text.
    assert run('"${input.request.tags}"') == ["it", "q3"]


# --- arithmetic and comparison --------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("7 / 2", 3.5),
        ("8 / 2", 4),
        ("7 % 3", 1),
        ("7.5 % 2", 1.5),
        ("2 + 3 * 4", 14),
        ("-(2 + 3)", -5),
        ("1 == 1.0", True),
        ("1 == true", False),
        ('"1" == 1', False),
        ("null == null", True),
        ('[1, { a = "x" }] == [1.0, { a = "x" }]', True),
        ("{ a = 1 } != { a = 1, b = 2 }", True),
        ("2 < 3 && 3 <= 3 && 4 > 3 && 4 >= 5", False),
        ("!false", True),
        ("true || (1 / 0 > 0)", True),
        ("false && (1 / 0 > 0)", False),
        ("true ? 1 : missing.root", 1),
    ],
)
def test_operators(source: str, expected: object) -> None:
    result = run(source)
    assert result == expected
    assert type(result) is type(expected)


def test_templates_render_numbers_and_booleans_canonically() -> None:
    assert run('"${10.0} ${2.5} ${true} ${-3}"') == "10 2.5 true -3"


# --- functions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('length("héllo")', 5),
        ("length(input.request.tags)", 2),
        ("length(state.research.output)", 3),
        ('lower("ÀBC")', "àbc"),
        ('upper("abc")', "ABC"),
        ('contains(input.request.tags, "q3")', True),
        ("contains([1, 2], 2.0)", True),
        ("contains([1], true)", False),
        ('contains("procurement", "cure")', True),
        ("min(3, 1.5, 2)", 1.5),
        ("max([3, 9, 2])", 9),
        ("sum([1, 2, 3])", 6),
        ("sum([])", 0),
        ("sum([0.5, 0.25])", 0.75),
        ('format("%s x %d at %.2f%%", "laptop", 10, 999.5)', "laptop x 10 at 999.50%"),
        ('format("%f", 1)', "1.000000"),
        ('format("%d", 4.0)', "4"),
        ('format("%s", 2.0)', "2"),
        ('coalesce(null, "x", "y")', "x"),
        ("keys({ b = 1, a = 2 })", ["a", "b"]),
        ("values({ b = 1, a = 2 })", [2, 1]),
    ],
)
def test_functions(source: str, expected: object) -> None:
    assert run(source) == expected


def test_function_registry_names() -> None:
    assert set(FUNCTIONS) == {
        "length",
        "lower",
        "upper",
        "contains",
        "min",
        "max",
        "sum",
        "format",
        "coalesce",
        "keys",
        "values",
    }


# --- scope and the absence of Python attribute access ---------------------------------


class _Secretive:
    x = "python attribute"

    def __getitem__(self, key: str) -> str:  # not a Mapping: must not be used
        return "leaked"


def test_only_scope_roots_are_visible() -> None:
    err = fails("os.environ")
    assert err.code == "unknown_reference"
    assert "available here: input, state, step" in err.message
    assert fails("inputs.request", SCOPE).message.endswith("did you mean `input`?")
    assert fails("__builtins__").code == "unknown_reference"
    assert run("x", {"x": 1}) == 1
    assert fails("input", {}).code == "unknown_reference"


@pytest.mark.parametrize(
    "source", ["input.__class__", "input.request.__dict__", 'input["__class__"]', "input.items"]
)
def test_dunder_and_method_names_are_just_missing_keys(source: str) -> None:
    err = fails(source)
    assert err.code == "missing_key"


def test_objects_are_never_read_through_attributes_or_getitem() -> None:
    scope = {"input": _Secretive()}
    err = fails("input.x", scope)
    assert err.code == "type_error"
    assert fails('input["x"]', scope).code == "type_error"
    assert "leaked" not in err.message and "python attribute" not in err.message


def test_strings_are_not_indexable() -> None:
    assert fails('"abc"[0]').code == "type_error"


# --- every error code --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "code", "fragment"),
    [
        ("nope.x", "unknown_reference", "unknown reference `nope`"),
        ("input.request.quantit", "missing_key", "did you mean `quantity`?"),
        ('{ a = 1 }["b"]', "missing_key", "has no key `b`"),
        ('"a" + "b"', "type_error", "template"),
        ("1 + true", "type_error", "needs numbers"),
        ('"a" < "b"', "type_error", "needs numbers"),
        ("-input.request.item", "type_error", "needs a number"),
        ("!1", "type_error", "true or false"),
        ("1 && true", "type_error", "true or false"),
        ("true && 1", "type_error", "true or false"),
        ("input.request.item ? 1 : 2", "type_error", "true or false"),
        ("input.request.item.x", "type_error", "not a map"),
        ("input.request[0]", "type_error", "not a list"),
        ("input.request.tags.x", "type_error", "not a map"),
        ("input.request.tags[true]", "type_error", "cannot index"),
        ("input.request.tags[0.5]", "type_error", "cannot index"),
        ("{ a = 1 }[0]", "type_error", "indexed by a string"),
        ('"tags: ${input.request.tags}"', "type_error", "cannot interpolate a list"),
        ('"x${null}"', "type_error", "cannot interpolate a null"),
        ("length(1)", "type_error", "length()"),
        ("upper(1)", "type_error", "upper()"),
        ("sum(1)", "type_error", "sum()"),
        ('min(1, "2")', "type_error", "min()"),
        ("contains(1, 1)", "type_error", "contains()"),
        ('contains("abc", 1)', "type_error", "contains()"),
        ("keys([1])", "type_error", "keys()"),
        ('format("%d", "x")', "type_error", "`%d`"),
        ('format("%d", 1.5)', "type_error", "whole number"),
        ('format("%s", [1])', "type_error", "convert list"),
        ("1 / 0", "division_by_zero", "by zero"),
        ("1 % 0.0", "division_by_zero", "by zero"),
        ("input.request.tags[2]", "index_out_of_range", "index 2 is out of range"),
        ("input.request.tags[-1]", "index_out_of_range", "out of range"),
        ("[1][5 - 4]", "index_out_of_range", "out of range"),
        ("lenght(input)", "unknown_function", "did you mean `length`?"),
        ("eval(1)", "unknown_function", "unknown function `eval`"),
        ("length()", "invalid_argument", "wrong number of arguments"),
        ("length(1, 2)", "invalid_argument", "usage: length("),
        ("min([])", "invalid_argument", "empty"),
        ("coalesce(null)", "invalid_argument", "only null"),
        ('format("%s %s", 1)', "invalid_argument", "no argument"),
        ('format("%s", 1, 2)', "invalid_argument", "more argument"),
        ('format("%x", 1)', "invalid_argument", "unsupported format verb"),
        ('format("%.2d", 1)', "invalid_argument", "unsupported format verb"),
        ('format("%.50f", 1)', "invalid_argument", "precision"),
        ("1e308 * 10", "number_out_of_range", "finite"),
        ("-1e308 - 1e308", "number_out_of_range", "finite"),
    ],
)
def test_error_codes(source: str, code: str, fragment: str) -> None:
    err = fails(source)
    assert err.code == code
    assert fragment in err.message
    assert isinstance(err, OpenSealError)
    assert str(err) == err.message and "\n" not in err.message


def test_errors_carry_the_span_of_the_failing_subexpression() -> None:
    expr, _ = parse_expression("1 +\n  input.request.nope", Span.point("flow.hcl", 7, 5))
    assert expr is not None
    with pytest.raises(EvaluationError) as info:
        evaluate(expr, SCOPE)
    assert info.value.span == Span("flow.hcl", 8, 3, 8, 21)
    expr, _ = parse_template("x ${upper(1)}", Span.point("f.yaml", 2, 9))
    assert expr is not None
    with pytest.raises(EvaluationError) as info:
        evaluate(expr, SCOPE)
    assert (info.value.span.line, info.value.span.column) == (2, 13)


# --- resource bounds --------------------------------------------------------------------


def test_huge_strings_are_refused() -> None:
    big = "x" * (MAX_STRING_CHARS // 2 + 1)
    scope = {"input": {"s": big}}
    assert fails('"${input.s}${input.s}"', scope).code == "too_large"
    assert fails('format("%s%s", input.s, input.s)', scope).code == "too_large"
    assert run('"${input.s}!"', scope) == big + "!"


def test_huge_integers_are_refused() -> None:
    scope = {"input": {"n": 2**1000}}
    assert fails("input.n * input.n", scope).code == "number_out_of_range"
    assert fails("input.n * input.n / 3", scope).code == "number_out_of_range"
    assert run("input.n / input.n", scope) == 1


def test_deeply_nested_values_compare_without_recursion() -> None:
    deep: object = 1
    for _ in range(20_000):
        deep = [deep]
    assert run("input.a == input.b", {"input": {"a": deep, "b": deep}}) is True


# --- compiled guards ---------------------------------------------------------------------


def test_guards_evaluate_identically_from_their_json_form() -> None:
    guard = parse('state.draft.output.total <= input.request.budget ? "ok" : "over"')
    assert evaluate(from_json(to_json(guard)), SCOPE) == evaluate(guard, SCOPE) == "ok"
