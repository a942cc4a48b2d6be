"""The hand-written expression parser answers exactly as the lark parser does.

Every tree :func:`parse_fast` returns must equal lark's, spans and value types
included; where it gives up, lark decides (and reports any diagnostics).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openseal.compiler.lang.expr_fast_parse import parse_fast
from openseal.compiler.lang.expr_parse import _parse_lark, parse_expression, parse_template
from openseal.compiler.syntax.spans import Span


def _spanned(value: object) -> object:
    """A node as nested tuples that also hold spans and exact value types.

    ``==`` on nodes ignores spans, and ``1 == 1.0 == True`` in Python.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = (_spanned(getattr(value, f.name)) for f in dataclasses.fields(value))
        return (type(value).__name__, *fields)
    if isinstance(value, tuple):
        return tuple(_spanned(item) for item in value)
    return (type(value).__name__, value)


def _agree(source: str, origin: Span, start: str) -> bool:
    """Whether the fast parser agrees with lark; ``True`` when it answered at all."""
    fast = parse_fast(source, origin, start)
    if fast is None:
        return False
    expected, diagnostics = _parse_lark(source, origin, start)
    assert diagnostics == [], (source, diagnostics)
    assert _spanned(fast) == _spanned(expected), source
    return True


# --------------------------------------------------------------------------- generated sources

_SPACE = st.sampled_from(["", "", " ", "  ", "\n", " \t", "\r\n"])
_NAMES = st.sampled_from(["a", "b_2", "x-y", "state", "true", "false", "null", "trueish", "_"])
_NUMBERS = st.sampled_from(["0", "7", "42", "1.5", "10.0", "2e3", "1E-2", "007", "1" * 420])
_TEXT = st.text(st.sampled_from(list('ab $${}"\\\n.é%')), max_size=6)


def _pad(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(_SPACE, inner, _SPACE).map("".join)


def _string(expression: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    part = st.one_of(_TEXT.map(lambda t: t.replace('"', "")), expression.map("${{{}}}".format))
    return st.lists(part, max_size=3).map(lambda parts: '"' + "".join(parts) + '"')


def _compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    padded = _pad(inner)
    items = st.lists(padded, max_size=3)
    operators = st.sampled_from(
        ["||", "&&", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%"]
    )
    key = st.one_of(_NAMES, st.sampled_from(['"k"', '"a b"', '"${a}"']))
    return st.one_of(
        st.tuples(padded, operators, padded).map("".join),
        st.tuples(st.sampled_from(["-", "!", "- ", "--"]), inner).map("".join),
        st.tuples(padded, st.just("?"), padded, st.just(":"), padded).map("".join),
        st.tuples(inner, st.just("."), _NAMES).map("".join),
        st.tuples(inner, st.sampled_from([" . ", ".0", "."]), _NAMES).map("".join),
        st.tuples(inner, st.just("["), padded, st.just("]")).map("".join),
        inner.map("({})".format),
        st.tuples(_NAMES, items, st.booleans()).map(
            lambda t: f"{t[0]}({','.join(t[1])}{',' if t[2] and t[1] else ''})"
        ),
        items.map(lambda xs: "[" + ",".join(xs) + "]"),
        st.lists(
            st.tuples(
                key, st.sampled_from(["=", ":", " = "]), padded, st.sampled_from([",", "", "\n"])
            ),
            max_size=3,
        ).map(lambda kvs: "{" + "".join(k + s + v + e for k, s, v, e in kvs) + "}"),
        _string(inner),
    )


_EXPRESSIONS = st.recursive(
    st.one_of(_NAMES, _NUMBERS, _string(st.one_of(_NAMES, _NUMBERS))),
    _compound,
    max_leaves=12,
)
_TEMPLATES = st.lists(
    st.one_of(_TEXT, _EXPRESSIONS.map("${{{}}}".format), st.just("$${x}")), max_size=4
).map("".join)
_ORIGINS = st.builds(Span.point, st.just("w.hcl"), st.integers(1, 40), st.integers(1, 80))
#: Arbitrary text from the grammar's alphabet: mostly errors, which must be left to lark.
_NOISE = st.text(st.sampled_from(list('ab1.-+*!?:()[]{}"$\\ \n=,<>&|%e')), max_size=14)


@settings(max_examples=1500, deadline=None)
@given(_pad(_EXPRESSIONS), _ORIGINS)
def test_expressions_parse_as_lark_parses_them(source: str, origin: Span) -> None:
    _agree(source, origin, "expression")


@settings(max_examples=800, deadline=None)
@given(_TEMPLATES, _ORIGINS)
def test_templates_parse_as_lark_parses_them(source: str, origin: Span) -> None:
    _agree(source, origin, "template")


@settings(max_examples=1500, deadline=None)
@given(_NOISE, st.sampled_from(["expression", "template"]), _ORIGINS)
def test_arbitrary_text_is_parsed_as_lark_or_left_to_it(
    source: str, start: str, origin: Span
) -> None:
    _agree(source, origin, start)


# --------------------------------------------------------------------------- what it answers

ORIGIN = Span.point("w.hcl", 4, 9)


@pytest.mark.parametrize(
    "source",
    [
        "state.review",
        "state.s0.output.score > 3",
        "state.s0.output.score + 10",
        "object({ answer = string, score = number })",
        'list(object({ a = optional(string, "x") }))',
        'input.items[0]["name"]',
        "(a).b",
        "-1.5e3",
        "-(1)",
        "a ? b : c ? d : -e",
        'f(1, [2, 3], { k = "v", "q": true },)',
        '"${a}"',
        '"x ${a.b} $${y} z"',
        "a\n  .b\n  + 1",
    ],
)
def test_the_fast_parser_answers_well_formed_expressions(source: str) -> None:
    assert _agree(source, ORIGIN, "expression")


@pytest.mark.parametrize(
    "text", ["", "plain text", "Answer ${input.question}", "${a}", "${input.q}-3", "a\nb ${c}\n"]
)
def test_the_fast_parser_answers_well_formed_templates(text: str) -> None:
    assert _agree(text, ORIGIN, "template")


@pytest.mark.parametrize(
    "source",
    [
        "a +",  # syntax error
        '"a\\nb"',  # escapes are decoded by expr_parse
        "{ a = 1, a = 2 }",  # duplicate key: a diagnostic
        "1" * 401,  # too long a number
        "1e999",  # infinite
        "9007199254740992",  # beyond what JSON carries exactly
        "(" * 40 + "a" + ")" * 40,  # deep nesting
        "+".join(["a"] * 150),  # a tree deeper than expr_parse allows
        "a." + ".".join(["b"] * 250),
        "é",
    ],
)
def test_it_leaves_what_it_does_not_answer_to_lark(source: str) -> None:
    assert parse_fast(source, ORIGIN, "expression") is None


def test_diagnostics_still_come_from_lark() -> None:
    node, diagnostics = parse_expression("{ a = 1, a = 2 }", ORIGIN)
    assert node is None and [d.code for d in diagnostics] == ["OS107"]
    node, diagnostics = parse_template("${a +}", ORIGIN)
    assert node is None and diagnostics[0].span.column > ORIGIN.column
