"""Type constraints: parsing, OS106 errors, printing, JSON, JSON Schema, values."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from openseal.compiler.lang.types import (
    ANY,
    BOOL,
    NUMBER,
    STRING,
    Field,
    ListType,
    MapType,
    ObjectType,
    SetType,
    TupleType,
    TypeExpr,
    TypeFormatError,
    apply_defaults,
    conforms,
    from_json,
    is_assignable,
    object_type,
    parse_type,
    to_json,
    to_json_schema,
    to_source,
)
from openseal.compiler.syntax.spans import Span

ORIGIN = Span.point("skills.hcl", 12, 14)
REQUEST = 'object({ item = string, quantity = number, note = optional(string, "none") })'


def parse(source: str) -> TypeExpr:
    t, diagnostics = parse_type(source, ORIGIN)
    assert diagnostics == [], [d.message for d in diagnostics]
    assert t is not None
    return t


# --- parsing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("string", STRING),
        ("number", NUMBER),
        ("bool", BOOL),
        ("any", ANY),
        ("list(string)", ListType(STRING)),
        ("map(number)", MapType(NUMBER)),
        ("set(bool)", SetType(BOOL)),
        ("tuple([string, number])", TupleType((STRING, NUMBER))),
        ("list(map(list(any)))", ListType(MapType(ListType(ANY)))),
        ("object({})", ObjectType(())),
        (
            REQUEST,
            ObjectType(
                (
                    Field("item", STRING),
                    Field("note", STRING, optional=True, default="none"),
                    Field("quantity", NUMBER),
                )
            ),
        ),
        (
            "object({ o = optional(object({ x = number }), { x = 1 }),"
            " t = optional(list(string)) })",
            ObjectType(
                (
                    Field("o", ObjectType((Field("x", NUMBER),)), True, {"x": 1}),
                    Field("t", ListType(STRING), True, None),
                )
            ),
        ),
    ],
)
def test_parse_types(source: str, expected: TypeExpr) -> None:
    assert parse(source) == expected


def test_field_order_is_canonical() -> None:
    assert parse("object({ b = number, a = string })") == parse(
        "object({ a = string, b = number })"
    )
    t = parse("object({ b = number, a = string })")
    assert isinstance(t, ObjectType)
    assert [f.name for f in t.fields] == ["a", "b"]


def test_spans_point_into_the_file() -> None:
    t = parse("list(\n  string)")
    assert isinstance(t, ListType)
    assert t.span == Span("skills.hcl", 12, 14, 13, 10)
    assert t.element.span == Span("skills.hcl", 13, 3, 13, 9)


@pytest.mark.parametrize(
    ("source", "column", "message", "suggestion"),
    [
        ("strng", 14, "unknown type `strng`", "did you mean `string`?"),
        ("list(nubmer)", 19, "unknown type `nubmer`", "did you mean `number`?"),
        ("lst(string)", 14, "unknown type constructor `lst`", "did you mean `list`?"),
        ("list", 14, "`list` needs its element type", None),
        ("object", 14, "`object` needs its element type", None),
        ('"string"', 14, "a type is not a string", None),
        ("optional(string)", 14, "only allowed as the type of an object field", "object({"),
        ("list(optional(string))", 19, "only allowed as the type of an object field", None),
        ("object({ a = optional(optional(string)) })", 36, "only allowed", None),
        ('object({ a = optional(number, "x") })', 44, "does not fit `number`", None),
        ("object({ a = optional(number, b.c) })", 44, "must be a constant", None),
        ("object({ a = optional() })", 27, "`optional` takes a type", None),
        ("list(string, number)", 14, "`list` takes one element type", None),
        ("tuple(string)", 14, "`tuple` takes a list of types", None),
        ("object(string)", 14, "`object` takes fields in braces", None),
        ("1 + 2", 14, "`1 + 2` is not a type", "types are string, number"),
        ("a.b", 14, "is not a type", None),
        ("list(string", 25, "expected `)`", "types are string"),
        ("object({ a = string, a = number })", 35, "duplicate object key `a`", None),
    ],
)
def test_invalid_types_are_os106(
    source: str, column: int, message: str, suggestion: str | None
) -> None:
    t, diagnostics = parse_type(source, ORIGIN)
    assert t is None
    assert diagnostics, source
    d = diagnostics[0]
    assert d.code == "OS106"
    assert (d.span.file, d.span.line, d.span.column) == ("skills.hcl", 12, column)
    assert message in d.message
    if suggestion is not None:
        assert d.suggestion is not None and suggestion in d.suggestion


def test_every_problem_is_reported() -> None:
    _, diagnostics = parse_type("object({ a = strin, b = nummber })", ORIGIN)
    assert [d.message for d in diagnostics] == ["unknown type `strin`", "unknown type `nummber`"]


# --- printing and JSON -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "printed"),
    [
        ("list( string )", "list(string)"),
        (REQUEST, 'object({ item = string, note = optional(string, "none"), quantity = number })'),
        ('object({ "odd key" = bool })', 'object({ "odd key" = bool })'),
        (
            "object({ a = optional(list(number), [1, 2]) })",
            "object({ a = optional(list(number), [1, 2]) })",
        ),
        ("tuple([])", "tuple([])"),
        ("object({})", "object({})"),
    ],
)
def test_to_source(source: str, printed: str) -> None:
    t = parse(source)
    assert to_source(t) == printed
    assert parse(printed) == t


def test_to_json_round_trip_and_shape() -> None:
    t = parse(REQUEST)
    data = to_json(t)
    assert data == {
        "type": "object",
        "fields": [
            {"name": "item", "type": {"type": "string"}, "optional": False, "default": None},
            {"name": "note", "type": {"type": "string"}, "optional": True, "default": "none"},
            {"name": "quantity", "type": {"type": "number"}, "optional": False, "default": None},
        ],
    }
    assert from_json(json.loads(json.dumps(data))) == t


@pytest.mark.parametrize(
    "data",
    [
        None,
        {"type": "strin"},
        {"type": "list"},
        {"type": "tuple", "elements": {}},
        {"type": "object", "fields": [{"name": 1, "type": {"type": "string"}}]},
        {"type": "object", "fields": [{"name": "a", "type": {"type": "any"}, "default": {1}}]},
    ],
)
def test_from_json_rejects_malformed_types(data: object) -> None:
    with pytest.raises(TypeFormatError):
        from_json(data)


_types = st.recursive(
    st.sampled_from([STRING, NUMBER, BOOL, ANY]),
    lambda inner: st.one_of(
        st.builds(ListType, inner),
        st.builds(MapType, inner),
        st.builds(SetType, inner),
        st.lists(inner, max_size=3).map(lambda ts: TupleType(tuple(ts))),
        st.dictionaries(st.text(min_size=1, max_size=5), inner, max_size=3).map(
            lambda d: object_type([Field(k, v, optional=len(k) % 2 == 0) for k, v in d.items()])
        ),
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(_types)
def test_round_trips_for_generated_types(t: TypeExpr) -> None:
    assert from_json(json.loads(json.dumps(to_json(t)))) == t
    assert parse(to_source(t)) == t


# --- JSON Schema -------------------------------------------------------------------------


def test_object_lowers_to_closed_json_schema() -> None:
    assert to_json_schema(parse(REQUEST), dialect=True) == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "item": {"type": "string"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": "none"},
            "quantity": {"type": "number"},
        },
        "required": ["item", "quantity"],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("source", "schema"),
    [
        ("any", {}),
        ("bool", {"type": "boolean"}),
        ("list(number)", {"type": "array", "items": {"type": "number"}}),
        ("set(string)", {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
        ("map(bool)", {"type": "object", "additionalProperties": {"type": "boolean"}}),
        (
            "tuple([string, any])",
            {
                "type": "array",
                "prefixItems": [{"type": "string"}, {}],
                "items": False,
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (
            "object({ a = optional(any) })",
            {
                "type": "object",
                "properties": {"a": {}},
                "required": [],
                "additionalProperties": False,
            },
        ),
    ],
)
def test_json_schema_lowering(source: str, schema: dict[str, object]) -> None:
    assert to_json_schema(parse(source)) == schema
    Draft202012Validator.check_schema(schema)


_VALUES: list[object] = [
    None,
    True,
    0,
    1.5,
    "x",
    [],
    [1, 1],
    [1, "a"],
    ["a", "b"],
    {},
    {"item": "laptop", "quantity": 10},
    {"item": "laptop", "quantity": 10, "note": None},
    {"item": "laptop", "quantity": "10"},
    {"item": "laptop"},
    {"item": "laptop", "quantity": 1, "extra": True},
    {"item": "laptop", "quantity": True},
    {"a": {"x": [1, 2]}, "b": 1},
]
_TYPE_SOURCES = [
    "string",
    "number",
    "bool",
    "any",
    "list(number)",
    "set(number)",
    "tuple([number, string])",
    "map(number)",
    "map(any)",
    REQUEST,
    "object({ a = optional(object({ x = list(number) })), b = number })",
]


@pytest.mark.parametrize("source", _TYPE_SOURCES)
def test_conforms_agrees_with_the_json_schema(source: str) -> None:
    t = parse(source)
    validator = Draft202012Validator(to_json_schema(t))
    for value in _VALUES:
        assert (conforms(value, t) == []) == validator.is_valid(value), (source, value)


# --- conformance and defaults -------------------------------------------------------------


def test_conformance_problems_name_the_place() -> None:
    t = parse(
        "object({ request = object({ item = string, quantity = number }), tags = list(string) })"
    )
    value = {"request": {"item": 3, "qty": 1}, "tags": ["a", 2], "extra": 1}
    assert conforms(value, t) == [
        "request.item: expected string, got number",
        "request: required field `quantity` is missing",
        "request: unexpected field `qty`",
        "tags[1]: expected string, got number",
        "value: unexpected field `extra`",
    ]
    assert conforms({"request": None, "tags": []}, t) == ["value: required field `request` is null"]
    assert conforms([1, 1], parse("set(number)")) == [
        "value: a set cannot hold the same value twice"
    ]
    assert conforms([1], parse("tuple([number, number])")) == [
        "value: expected a list of 2, got a list of 1"
    ]
    assert conforms({1: "a"}, parse("map(string)")) == ["value: keys must be strings, got 1"]
    assert conforms(float("nan"), NUMBER) == ["value: expected a finite number"]
    assert conforms(
        {"b": 1, "quantiy": 2}, parse("object({ b = number, quantity = optional(number) })")
    ) == ["value: unexpected field `quantiy`; did you mean `quantity`?"]


def test_conformance_problem_count_is_bounded() -> None:
    assert len(conforms(["x"] * 1000, parse("list(number)"))) == 20


def test_apply_defaults_fills_nested_optional_fields_without_mutating() -> None:
    t = parse(
        "object({ a = string,"
        " o = optional(object({ x = optional(number, 3), y = optional(list(string), []) }), {}),"
        " items = optional(list(object({ n = optional(number, 1) })), [{}]) })"
    )
    value: dict[str, object] = {"a": "z", "items": [{}, {"n": 5}]}
    result = apply_defaults(value, t)
    assert result == {"a": "z", "o": {"x": 3, "y": []}, "items": [{"n": 1}, {"n": 5}]}
    assert value == {"a": "z", "items": [{}, {"n": 5}]}
    assert conforms(result, t) == []
    assert apply_defaults({"a": "z"}, t)["items"] == [{"n": 1}]  # type: ignore[index]
    # Defaults are copied, so changing a result cannot change the type.
    first = apply_defaults({"a": "z"}, t)
    first["o"]["y"].append("mutated")  # type: ignore[index]
    assert apply_defaults({"a": "z"}, t)["o"] == {"x": 3, "y": []}  # type: ignore[index]


def test_apply_defaults_sets_null_for_optional_without_default_and_leaves_misfits() -> None:
    t = parse(REQUEST.replace('optional(string, "none")', "optional(string)"))
    assert apply_defaults({"item": "x", "quantity": 1}, t) == {
        "item": "x",
        "quantity": 1,
        "note": None,
    }
    assert apply_defaults("not an object", t) == "not an object"
    assert apply_defaults({"note": None}, parse(REQUEST)) == {"note": "none"}
    assert apply_defaults([{}], parse("map(object({ a = optional(number, 1) }))")) == [{}]


# --- assignability --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target", "expected"),
    [
        ("string", "string", True),
        ("number", "string", False),
        ("any", "number", True),
        ("list(number)", "any", True),
        ("list(number)", "list(any)", True),
        ("list(number)", "list(string)", False),
        ("tuple([number, number])", "list(number)", True),
        ("tuple([number, string])", "list(number)", False),
        ("tuple([number])", "tuple([number])", True),
        ("tuple([number])", "tuple([number, number])", False),
        ("set(string)", "set(string)", True),
        ("set(string)", "list(string)", False),
        ("map(number)", "map(number)", True),
        ("object({ a = number, b = number })", "map(number)", True),
        ("object({ a = number, b = optional(number) })", "map(number)", False),
        ("object({ a = string })", "object({ a = string })", True),
        ("object({ a = string })", "object({ a = string, b = optional(number) })", True),
        ("object({ a = string })", "object({ a = string, b = number })", False),
        ("object({ a = string, c = bool })", "object({ a = string })", False),
        ("object({ a = optional(string) })", "object({ a = string })", False),
        ("object({ a = string })", "object({ a = optional(string) })", True),
        ("object({ a = list(number) })", "object({ a = list(string) })", False),
        ("map(number)", "object({ a = number })", False),
    ],
)
def test_is_assignable(source: str, target: str, expected: bool) -> None:
    assert is_assignable(parse(source), parse(target)) is expected
