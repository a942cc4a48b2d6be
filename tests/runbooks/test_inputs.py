"""--input values typed by their declaration; which mistakes are usage (2), which type (1)."""

from __future__ import annotations

import pytest

from openseal.compiler.definitions.specs import Input
from openseal.compiler.lang.types import parse_type
from openseal.compiler.syntax.spans import Span
from openseal.runbooks.inputs import InputTypeError, InputUsageError, gather


def declared(**types: str) -> dict[str, Input]:
    out = {}
    for name, source in types.items():
        t, diagnostics = parse_type(source, Span.point("t"))
        assert t is not None and not diagnostics
        out[name] = Input(type=t)
    return out


@pytest.mark.parametrize(
    ("type_source", "text", "value"),
    [
        ("number", "3", 3),
        ("number", "2.5", 2.5),
        ("number", "-1e3", -1000.0),
        ("bool", "true", True),
        ("string", "42", "42"),
        ("string", "", ""),
        ("list(number)", "[1, 2]", [1, 2]),
        ("object({ a = string, b = optional(number, 7) })", '{"a": "x"}', {"a": "x", "b": 7}),
        ("any", '{"k": 1}', {"k": 1}),
        ("any", "plain words", "plain words"),
    ],
)
def test_values_are_typed_by_their_declaration(type_source: str, text: str, value: object) -> None:
    assert gather(declared(x=type_source), [f"x={text}"]) == {"x": value}


@pytest.mark.parametrize(
    ("type_source", "text", "message"),
    [
        ("number", "three", "input `x` expects a number, got `three`"),
        ("number", "nan", "input `x` expects a finite number"),
        ("bool", "yes", "input `x` expects true or false, got `yes`"),
        ("list(number)", "[1,", "input `x` expects list(number) as JSON"),
        ("list(number)", '["a"]', "input `x` does not fit list(number)"),
    ],
)
def test_wrong_values_are_type_errors(type_source: str, text: str, message: str) -> None:
    with pytest.raises(InputTypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        gather(declared(x=type_source), [f"x={text}"])


def test_pairs_override_the_file_and_defaults_apply() -> None:
    inputs = declared(a="number", b="string")
    inputs["c"] = Input(type=inputs["a"].type, default=5)
    assert gather(inputs, ["a=2"], {"a": 1, "b": "file"}) == {"a": 2, "b": "file", "c": 5}


def test_missing_required_input_is_a_type_error() -> None:
    with pytest.raises(InputTypeError, match=r"input `a` is required \(number\)"):
        gather(declared(a="number"), [])


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["novalue"], "`novalue` is not NAME=VALUE"),
        (["=1"], "is not NAME=VALUE"),
        (["ab=1"], "no input `ab`.*did you mean `a`"),
    ],
)
def test_malformed_pairs_and_unknown_names_are_usage_errors(pairs: list[str], message: str) -> None:
    with pytest.raises(InputUsageError, match=message):
        gather(declared(a="number"), pairs)


def test_untyped_inputs_accept_anything() -> None:
    assert gather(None, ["n=1", "s=hello", 'o={"a": [1]}']) == {
        "n": 1,
        "s": "hello",
        "o": {"a": [1]},
    }
