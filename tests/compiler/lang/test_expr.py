"""Parsing, printing and serialising expressions and templates."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openseal.compiler.lang import expr_fast_parse, expr_parse
from openseal.compiler.lang.expr import (
    MAX_DEPTH,
    Binary,
    Call,
    Conditional,
    Expression,
    ExpressionFormatError,
    Index,
    ListExpr,
    Literal,
    ObjectExpr,
    Ref,
    Template,
    Unary,
    from_json,
    parse_expression,
    parse_template,
    references,
    same,
    to_json,
    to_source,
    walk,
)
from openseal.compiler.lang.expr_ast import BINARY_OPS
from openseal.compiler.syntax.spans import Span

ORIGIN = Span.point("flow.hcl", 3, 11)


def parse(source: str) -> Expression:
    expr, diagnostics = parse_expression(source, ORIGIN)
    assert diagnostics == [], [d.message for d in diagnostics]
    assert expr is not None
    return expr


def template(text: str) -> Expression:
    expr, diagnostics = parse_template(text, ORIGIN)
    assert diagnostics == [], [d.message for d in diagnostics]
    assert expr is not None
    return expr


def a(name: str, *path: str | int) -> Ref:
    return Ref(name, tuple(path))


def lit(value: object) -> Literal:
    return Literal(value)  # type: ignore[arg-type]


# --- precedence and shapes --------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("1 + 2 * 3", Binary("+", lit(1), Binary("*", lit(2), lit(3)))),
        ("(1 + 2) * 3", Binary("*", Binary("+", lit(1), lit(2)), lit(3))),
        ("a - b - c", Binary("-", Binary("-", a("a"), a("b")), a("c"))),
        ("a / b % c", Binary("%", Binary("/", a("a"), a("b")), a("c"))),
        ("a || b && c", Binary("||", a("a"), Binary("&&", a("b"), a("c")))),
        ("a && b || c", Binary("||", Binary("&&", a("a"), a("b")), a("c"))),
        (
            "a < b == c >= d",
            Binary("==", Binary("<", a("a"), a("b")), Binary(">=", a("c"), a("d"))),
        ),
        ("a + 1 < b", Binary("<", Binary("+", a("a"), lit(1)), a("b"))),
        (
            "a == b && c != d",
            Binary("&&", Binary("==", a("a"), a("b")), Binary("!=", a("c"), a("d"))),
        ),
        ("!a == b", Binary("==", Unary("!", a("a")), a("b"))),
        ("-a * b", Binary("*", Unary("-", a("a")), a("b"))),
        ("!!a", Unary("!", Unary("!", a("a")))),
        ("-a.b[0]", Unary("-", a("a", "b", 0))),
        ("a || b ? c : d", Conditional(Binary("||", a("a"), a("b")), a("c"), a("d"))),
        ("a ? b : c ? d : e", Conditional(a("a"), a("b"), Conditional(a("c"), a("d"), a("e")))),
        ("a ? b ? c : d : e", Conditional(a("a"), Conditional(a("b"), a("c"), a("d")), a("e"))),
        (
            "x.y <= z.w && length(v) > 0",
            Binary(
                "&&",
                Binary("<=", a("x", "y"), a("z", "w")),
                Binary(">", Call("length", (a("v"),)), lit(0)),
            ),
        ),
    ],
)
def test_precedence_follows_hcl(source: str, expected: Expression) -> None:
    assert parse(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("42", lit(42)),
        ("4.5", lit(4.5)),
        ("1e3", lit(1000.0)),
        ("2.5E-1", lit(0.25)),
        ("-7", lit(-7)),
        ("-(7)", Unary("-", lit(7))),
        ("true", lit(True)),
        ("false", lit(False)),
        ("null", lit(None)),
        ('"plain"', lit("plain")),
        ('""', lit("")),
        ("[]", ListExpr(())),
        ("[1, 2,]", ListExpr((lit(1), lit(2)))),
        ("{}", ObjectExpr(())),
        ('{ a = 1, "b c" = 2, d: 3 }', ObjectExpr((("a", lit(1)), ("b c", lit(2)), ("d", lit(3))))),
        ("{\n  a = 1\n  b = [x]\n}", ObjectExpr((("a", lit(1)), ("b", ListExpr((a("x"),)))))),
        ("{ null = 1, true = 2 }", ObjectExpr((("null", lit(1)), ("true", lit(2))))),
        ("f()", Call("f", ())),
        ("max(1, x,)", Call("max", (lit(1), a("x")))),
        ("truex", a("truex")),
        ("a-b", a("a-b")),
        ("a - b", Binary("-", a("a"), a("b"))),
    ],
)
def test_literals_collections_and_calls(source: str, expected: Expression) -> None:
    assert parse(source) == expected


def test_number_types_are_kept() -> None:
    assert type(parse("3").value) is int  # type: ignore[union-attr]
    assert type(parse("3.0").value) is float  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("input.request.quantity", a("input", "request", "quantity")),
        ('a["k"]', a("a", "k")),
        ('a["two words"][0].b', a("a", "two words", 0, "b")),
        ("a[-1]", a("a", -1)),
        ("a.true", a("a", "true")),
        ("a[i]", Index(a("a"), a("i"))),
        ("a[i].b", Index(Index(a("a"), a("i")), lit("b"))),
        ("a[1.5]", Index(a("a"), lit(1.5))),
        ("a[true]", Index(a("a"), lit(True))),
        ("(a).b", Index(a("a"), lit("b"))),
        ("f(x).y[0]", Index(Index(Call("f", (a("x"),)), lit("y")), lit(0))),
        ("[1, 2][0]", Index(ListExpr((lit(1), lit(2))), lit(0))),
    ],
)
def test_references_and_indexing(source: str, expected: Expression) -> None:
    assert parse(source) == expected


def test_references_lists_every_ref_in_source_order() -> None:
    expr = parse('f(a.b, x[i]) ? "${c.d} and ${a.b}" : { k = [e] }')
    assert [r.dotted for r in references(expr)] == ["a.b", "x", "i", "c.d", "a.b", "e"]


def test_ref_dotted_quotes_non_name_keys() -> None:
    assert a("a", "b c", 0, "d").dotted == 'a["b c"][0].d'


# --- templates ---------------------------------------------------------------------


def test_template_without_interpolation_is_a_string_literal() -> None:
    assert template("hello world") == lit("hello world")
    assert template("") == lit("")
    assert template("cost: $5 and 100%%{") == lit("cost: $5 and 100%{")
    assert template("100% {") == lit("100% {")


def test_single_interpolation_is_the_expression_itself() -> None:
    inner = a("input", "request", "item")
    assert template("${input.request.item}") == inner
    assert parse('"${input.request.item}"') == inner
    assert parse("input.request.item") == inner
    assert template("${ a + 1 }") == parse("a + 1")


def test_template_with_text_and_interpolations() -> None:
    expected = Template(
        (
            "Compare vendors for ",
            a("input", "request", "quantity"),
            " ",
            a("input", "request", "item"),
        )
    )
    text = "Compare vendors for ${input.request.quantity} ${input.request.item}"
    assert template(text) == expected
    assert parse(f'"{text}"') == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$${x}", lit("${x}")),
        ("a $${x} ${y}", Template(("a ${x} ", a("y")))),
        ("$$${x}", lit("$${x}")),
        ("$ {x} $x", lit("$ {x} $x")),
        ('${"lit"} tail', lit("lit tail")),
        ('${"$"}${x}', Template(("$", a("x")))),
        ("${x}${y}", Template((a("x"), a("y")))),
        ('${ f("}") }', Call("f", (lit("}"),))),
        ('${"n ${m}"}', Template(("n ", a("m")))),
        ("line1\n  ${x}\n", Template(("line1\n  ", a("x"), "\n"))),
    ],
)
def test_template_escapes_and_normalisation(text: str, expected: Expression) -> None:
    assert template(text) == expected


def test_quoted_string_escapes() -> None:
    assert parse(r'"a\"b\\c\n\t\r\u00e9\U0001F600"') == lit('a"b\\c\n\t\ré😀')
    assert parse(r'"$${not} ${"${x}"}"') == Template(("${not} ", a("x")))


# --- spans -------------------------------------------------------------------------


def test_spans_are_in_file_coordinates_on_the_first_line() -> None:
    expr = parse("a.b + c")  # starts at line 3, column 11
    assert isinstance(expr, Binary)
    assert expr.span == Span("flow.hcl", 3, 11, 3, 18)
    assert expr.left.span == Span("flow.hcl", 3, 11, 3, 14)
    assert expr.right.span == Span("flow.hcl", 3, 17, 3, 18)


def test_spans_on_later_lines_use_their_own_columns() -> None:
    expr = parse("f(\n    x,\n  y.z)")
    assert isinstance(expr, Call)
    assert expr.span == Span("flow.hcl", 3, 11, 5, 7)
    assert expr.args[0].span == Span("flow.hcl", 4, 5, 4, 6)
    assert expr.args[1].span == Span("flow.hcl", 5, 3, 5, 6)


def test_template_interpolation_spans() -> None:
    expr = template("hi ${name}\nby ${who.x}")
    assert isinstance(expr, Template)
    name, who = expr.parts[1], expr.parts[3]
    assert isinstance(name, Ref) and isinstance(who, Ref)
    assert name.span == Span("flow.hcl", 3, 16, 3, 20)
    assert who.span == Span("flow.hcl", 4, 6, 4, 11)
    assert template("${x}").span == Span("flow.hcl", 3, 13, 3, 14)


def test_equality_ignores_spans() -> None:
    here, _ = parse_expression("a.b + 1", Span.point("one.hcl", 1, 1))
    there, _ = parse_expression("a.b   +   1", Span.point("two.yaml", 40, 7))
    assert here is not None and there is not None
    assert here == there and same(here, there) and hash(here) == hash(there)
    assert here.span != there.span


# --- syntax errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "line", "column", "message", "suggestion"),
    [
        ("a +", 3, 14, "unexpected end of the expression; expected an expression", None),
        ("a b", 3, 13, "unexpected `b`; expected an operator or the end of the expression", None),
        ("(a", 3, 13, "expected `)`", None),
        ("a ? b", 3, 16, "expected `:`", None),
        ("", 3, 11, "unexpected end of the expression", None),
        ("1 +\n  )", 4, 3, "unexpected `)`", None),
        ('"abc', 3, 15, "unterminated string", 'close the string with `"`'),
        ('"abc\n"', 3, 15, "unterminated string", "on the same line"),
        ("'x'", 3, 11, "unexpected `'`", "double quotes"),
        ("a = b", 3, 13, "unexpected `=`", "`==`"),
        ("x and y", 3, 13, "unexpected `and`", "`&&`"),
        ("x or y", 3, 13, "unexpected `or`", "`||`"),
        ("${x}", 3, 11, "unexpected `${`", "only for interpolation"),
        (r'"a\qb"', 3, 13, r"invalid escape sequence `\q`", r"\uXXXX"),
        (r'"\ud800"', 3, 12, r"invalid escape sequence `\ud800`", None),
        ("{ a = 1, a = 2 }", 3, 20, "duplicate object key `a`", None),
        ('{ "${k}" = 1 }', 3, 13, "object keys must be names or plain strings", None),
        ("a.", 3, 13, "unexpected end of the expression", None),
        ("[1 2]", 3, 14, "unexpected `2`", None),
    ],
)
def test_syntax_errors_are_os107_at_the_right_place(
    source: str, line: int, column: int, message: str, suggestion: str | None
) -> None:
    expr, diagnostics = parse_expression(source, ORIGIN)
    assert expr is None
    assert len(diagnostics) == 1
    d = diagnostics[0]
    assert d.code == "OS107"
    assert d.is_error
    assert (d.span.file, d.span.line, d.span.column) == ("flow.hcl", line, column)
    assert message in d.message
    if suggestion is not None:
        assert d.suggestion is not None and suggestion in d.suggestion


@pytest.mark.parametrize(
    ("source", "column", "message"),
    [
        ("1e999", 11, "this number is too large: it overflows a 64-bit float (about ±1.8e308)"),
        ("x + 1e-400", 15, "the number 1e-400 is too small: it underflows a 64-bit float to 0"),
        ("-2.5e-999", 11, "the number -2.5e-999 is too small: it underflows a 64-bit float to 0"),
        ("x + 9007199254740992", 15, "the integer 9007199254740992 is beyond ±9007199254740991"),
    ],
)
def test_a_number_a_document_cannot_hold_is_os104_where_it_is_written(
    source: str, column: int, message: str
) -> None:
    expr, diagnostics = parse_expression(source, ORIGIN)
    assert expr is None
    assert [(d.code, d.span.line, d.span.column) for d in diagnostics] == [("OS104", 3, column)]
    assert diagnostics[0].message.startswith(message)
    assert diagnostics[0].suggestion is not None


@pytest.mark.parametrize("source", ["0.0e-999", "0e5", "1e-300", "x * 0.0"])
def test_zero_and_small_numbers_are_not_underflows(source: str) -> None:
    expr, diagnostics = parse_expression(source, ORIGIN)
    assert expr is not None and diagnostics == []


@pytest.mark.parametrize(
    ("text", "message"),
    [("x ${", "unexpected end"), ("x ${a", "`${` is not closed"), ("${a b}", "unexpected `b`")],
)
def test_template_syntax_errors(text: str, message: str) -> None:
    expr, diagnostics = parse_template(text, ORIGIN)
    assert expr is None
    assert [d.code for d in diagnostics] == ["OS107"]
    assert message in diagnostics[0].message


def test_too_deep_and_too_long_are_diagnostics_not_crashes() -> None:
    deep = "(" * (MAX_DEPTH + 50) + "1" + ")" * (MAX_DEPTH + 50)
    expr, diagnostics = parse_expression(deep, ORIGIN)
    assert expr is None and "nested too deeply" in diagnostics[0].message
    chain = " + ".join(["1"] * 5000)
    expr, diagnostics = parse_expression(chain, ORIGIN)
    assert expr is None and diagnostics[0].code == "OS107"
    huge = "x" * (expr_parse.MAX_SOURCE_CHARS + 1)
    expr, diagnostics = parse_expression(huge, ORIGIN)
    assert expr is None and "too long" in diagnostics[0].message


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('ab1.$"{}[]()=!<>&|?:,+-*/% \n\\')), max_size=40))
def test_any_input_gives_a_tree_or_diagnostics_never_an_exception(source: str) -> None:
    for parse_fn in (parse_expression, parse_template):
        expr, diagnostics = parse_fn(source, ORIGIN)
        assert (expr is None) == bool(diagnostics)
        assert all(d.code == "OS107" for d in diagnostics)


# --- printing and JSON ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "printed"),
    [
        ("a.b*(c+1)", "a.b * (c + 1)"),
        ("(a * b) + c", "a * b + c"),
        ("a - (b - c)", "a - (b - c)"),
        ("(a ? b : c) ? d : e", "(a ? b : c) ? d : e"),
        ("-(a + b)", "-(a + b)"),
        ("(-1)[0]", "(-1)[0]"),
        ('a["b"]["c d"]', 'a.b["c d"]'),
        ('"${x}"', "x"),
        ('{a:1,"b"=[true,null]}', "{ a = 1, b = [true, null] }"),
        (r'"q\"${x}\n$${y}"', r'"q\"${x}\n$${y}"'),
    ],
)
def test_to_source_is_canonical(source: str, printed: str) -> None:
    expr = parse(source)
    assert to_source(expr) == printed
    assert parse(printed) == expr


def test_to_json_is_span_free_and_plain_json() -> None:
    expr = parse('state.x.total <= input.budget && contains(["a"], "${y}!")')
    data = to_json(expr)
    text = json.dumps(data, sort_keys=True)
    assert "span" not in text and "flow.hcl" not in text
    assert from_json(json.loads(text)) == expr
    assert data["node"] == "binary" and data["op"] == "&&"


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {"node": "nope"},
        {"node": "binary", "op": "**", "left": {"node": "literal", "value": 1}, "right": {}},
        {"node": "ref", "root": "a", "path": [True]},
        {"node": "ref", "root": 3, "path": []},
        {"node": "literal", "value": [1]},
        {"node": "literal", "value": float("nan")},
        {"node": "list", "items": "abc"},
        {"node": "object", "items": [{"key": 1, "value": {"node": "literal", "value": 1}}]},
    ],
)
def test_from_json_rejects_malformed_input(data: object) -> None:
    with pytest.raises(ExpressionFormatError):
        from_json(data)


def test_from_json_rejects_excessive_nesting() -> None:
    data: dict[str, object] = {"node": "literal", "value": 1}
    for _ in range(MAX_DEPTH + 5):
        data = {"node": "unary", "op": "!", "operand": data}
    with pytest.raises(ExpressionFormatError, match="nested too deeply"):
        from_json(data)


# Hypothesis: generated trees (in the parser's normal form) survive both
# to_json/from_json and to_source/parse exactly.

_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,6}", fullmatch=True).filter(
    lambda s: s not in ("true", "false", "null")
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
_leaves = st.one_of(
    st.builds(Literal, _scalars),
    st.builds(
        Ref,
        _names,
        st.lists(st.one_of(_names, st.text(max_size=5), st.integers(-3, 30)), max_size=3).map(
            tuple
        ),
    ),
)


def _template(parts: list[str | Expression]) -> Expression:
    node = expr_fast_parse.template_node(list(parts), ORIGIN)
    # An empty string literal among the parts is dropped, which can leave one
    # interpolation; printed, that is `"${x}"`, which parses to `x` itself.
    if isinstance(node, Template) and len(node.parts) == 1 and not isinstance(node.parts[0], str):
        return node.parts[0]
    return node


def _trees(children: st.SearchStrategy[Expression]) -> st.SearchStrategy[Expression]:
    small = st.lists(children, max_size=3).map(tuple)
    return st.one_of(
        st.builds(ListExpr, small),
        st.builds(
            ObjectExpr,
            st.dictionaries(st.text(max_size=5), children, max_size=3).map(
                lambda d: tuple(d.items())
            ),
        ),
        st.builds(Index, children, children),
        st.builds(Unary, st.sampled_from(["!", "-"]), children),
        st.builds(Binary, st.sampled_from(BINARY_OPS), children, children),
        st.builds(Conditional, children, children, children),
        st.builds(Call, _names, small),
        st.lists(st.one_of(st.text(min_size=1, max_size=6), children), min_size=2, max_size=4).map(
            _template
        ),
    )


expressions = st.recursive(_leaves, _trees, max_leaves=16)


def _keys_sorted(expr: Expression) -> bool:
    return all(
        [k for k, _ in node.items] == sorted(k for k, _ in node.items)
        for node in walk(expr)
        if isinstance(node, ObjectExpr)
    )


@settings(max_examples=300, deadline=None)
@given(expressions)
def test_json_round_trip_is_exact_but_for_object_key_order(expr: Expression) -> None:
    data = to_json(expr)
    back = from_json(json.loads(json.dumps(data)))
    assert _keys_sorted(back)
    assert to_json(back) == data
    if _keys_sorted(expr):
        assert back == expr


def test_object_keys_are_written_sorted() -> None:
    x, y = Literal(1), Literal(2)
    assert to_json(ObjectExpr((("y", y), ("x", x)))) == to_json(ObjectExpr((("x", x), ("y", y))))


@settings(max_examples=300, deadline=None)
@given(expressions)
def test_printed_source_parses_back_to_the_same_tree(expr: Expression) -> None:
    text = to_source(expr)
    parsed, diagnostics = parse_expression(text, ORIGIN)
    assert diagnostics == [], (text, [d.message for d in diagnostics])
    assert parsed == expr, text


# --- the parser itself ------------------------------------------------------------------


def test_parser_is_not_built_at_import_time() -> None:
    code = (
        "import openseal.compiler.lang.evaluate, openseal.compiler.lang.expr\n"
        "import openseal.compiler.lang.types\n"
        "from openseal.compiler.lang import expr_parse\n"
        "print(expr_parse.parser.cache_info().currsize)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


def test_parser_tables_are_written_and_unwritable_dirs_are_tolerated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def parse(source: str) -> Expression | None:
        # Through lark itself: well-formed input never builds the parser otherwise.
        return expr_parse._parse_lark(source, ORIGIN, "expression")[0]

    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    try:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user"))
        expr_parse.parser.cache_clear()
        assert parse("1 + 1") == Binary("+", lit(1), lit(1))
        tables = list((tmp_path / "user" / "openseal" / "parsers").iterdir())
        assert [p.suffix for p in tables] == [".lark"]
        expr_parse.parser.cache_clear()  # the second build loads the tables
        assert parse("a.b") == a("a", "b")

        monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "sub"))
        expr_parse.parser.cache_clear()
        assert parse("[x]") == ListExpr((a("x"),))
    finally:
        expr_parse.parser.cache_clear()
