from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openseal.compiler.diagnostics import Diagnostic
from openseal.compiler.syntax import hcl_parser
from openseal.compiler.syntax.document_tree import (
    Attribute,
    Document,
    Expr,
    ListNode,
    MapNode,
    Scalar,
    Value,
)
from openseal.compiler.syntax.load_hcl import MAX_NESTING, load_hcl, load_hcl_file
from openseal.compiler.syntax.spans import Span

F = "defs/team.hcl"


def sp(line: int, column: int, end_line: int, end_column: int) -> Span:
    return Span(F, line, column, end_line, end_column)


def load_ok(text: str) -> Document:
    document, diagnostics = load_hcl(text, F)
    assert diagnostics == []
    assert document is not None
    return document


def attr(text: str, name: str = "a") -> Attribute:
    document = load_ok(text)
    found = [a for a in document.body.attributes if a.name == name]
    assert len(found) == 1
    return found[0]


def value_of(text: str) -> Value:
    return attr(text).value


def only_error(text: str) -> Diagnostic:
    _, diagnostics = load_hcl(text, F)
    assert len(diagnostics) == 1, diagnostics
    return diagnostics[0]


# -- spans ---------------------------------------------------------------------

SAMPLE = """\
agent "triage" {
  model     = model.default
  max_turns = 3
  tags      = ["a", 2]
  budget {
    tokens = 1000
  }
}
team procurement {}
"""


def test_block_type_labels_and_body_spans() -> None:
    body = load_ok(SAMPLE).body
    agent, team = body.blocks
    assert (agent.type, agent.type_span) == ("agent", sp(1, 1, 1, 6))
    assert [(label.value, label.span) for label in agent.labels] == [("triage", sp(1, 7, 1, 15))]
    assert agent.span == sp(1, 1, 8, 2)
    assert agent.body.span == sp(1, 16, 8, 2)
    # An unquoted label is a label too.
    assert [(label.value, label.span) for label in team.labels] == [
        ("procurement", sp(9, 6, 9, 17))
    ]
    assert body.span == sp(1, 1, 10, 1)


def test_attribute_and_value_spans() -> None:
    agent = load_ok(SAMPLE).body.blocks[0]
    model, turns, tags = agent.body.attributes
    assert model.name_span == sp(2, 3, 2, 8)
    assert model.span == sp(2, 3, 2, 28)
    assert model.value == Expr("model.default", sp(2, 15, 2, 28))
    assert turns.value == Scalar(3, sp(3, 15, 3, 16))
    assert tags.value == ListNode(
        (Scalar("a", sp(4, 16, 4, 19)), Scalar(2, sp(4, 21, 4, 22))), sp(4, 15, 4, 23)
    )
    (budget,) = agent.body.blocks
    assert budget.type_span == sp(5, 3, 5, 9)
    assert budget.body.attributes[0].value == Scalar(1000, sp(6, 14, 6, 18))


def test_body_items_come_back_in_source_order() -> None:
    agent = load_ok(SAMPLE).body.blocks[0]
    assert [getattr(item, "name", None) or item.type for item in agent.body.items()] == [  # type: ignore[union-attr]
        "model",
        "max_turns",
        "tags",
        "budget",
    ]


def test_map_entries_have_key_spans() -> None:
    value = value_of('a = {\n  vendor = "x"\n  "quoted key" = 1\n  in = true\n}\n')
    assert isinstance(value, MapNode)
    assert [(e.key, e.key_span) for e in value.entries] == [
        ("vendor", sp(2, 3, 2, 9)),
        ("quoted key", sp(3, 3, 3, 15)),
        ("in", sp(4, 3, 4, 5)),
    ]
    assert value.span == sp(1, 5, 5, 2)
    assert value.get("in") is not None and value.get("in").value == Scalar(True, sp(4, 8, 4, 12))  # type: ignore[union-attr]


def test_crlf_line_endings_keep_columns() -> None:
    document = load_ok("a = 1\r\nb = [\r\n  2,\r\n]\r\n")
    b = document.body.attributes[1]
    assert isinstance(b.value, ListNode)
    assert b.value.items[0].span == sp(3, 3, 3, 4)


def test_byte_order_mark_is_ignored_and_columns_are_kept() -> None:
    document = load_ok("\ufeffa = 1\n")
    assert document.body.attributes[0].name_span == sp(1, 2, 1, 3)


# -- expressions ----------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "team.procurement.role.researcher",
        "state.research.output.unit_price * input.request.quantity",
        "object({ item = string, quantity = number })",
        "var.enabled ? 1 : 2",
        '[for s in var.list : upper(s) if s != ""]',
        "{for k, v in var.map : k => v}",
        "aws_instance.web[*].id",
        "var.items[0].name",
        "!var.flag",
        "-var.amount",
        "(1 + 2)",
        "{ (var.key) = 1 }",
        'file("instructions.md")',
    ],
)
def test_non_literals_are_expressions_with_exact_source(source: str) -> None:
    value = value_of(f"a = {source}\n")
    assert value == Expr(source, sp(1, 5, 1, 5 + len(source)))


def test_multiline_expression_source_excludes_the_trailing_newline() -> None:
    text = "a = object({\n  item     = string,\n  quantity = number,\n})\nb = (1 +\n  2)\n"
    document = load_ok(text)
    a, b = document.body.attributes
    assert a.value == Expr(text[4 : text.index("})") + 2], sp(1, 5, 4, 3))
    assert b.value == Expr("(1 +\n  2)", sp(5, 5, 6, 5))


def test_a_map_with_a_computed_key_is_an_expression() -> None:
    assert isinstance(value_of('a = { "${var.x}" = 1 }\n'), Expr)


# -- literals -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("1", 1),
        ("0", 0),
        ("1.5", 1.5),
        ("1e3", 1000.0),
        ("-1", -1),
        ("- 2.5", -2.5),
        ("true", True),
        ("false", False),
        ("null", None),
    ],
)
def test_literals(source: str, expected: object) -> None:
    value = value_of(f"a = {source}\n")
    assert isinstance(value, Scalar)
    assert value.value == expected
    assert type(value.value) is type(expected)
    assert value.span == sp(1, 5, 1, 5 + len(source))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (r'"line\nnext"', "line\nnext"),
        (r'"tab\there"', "tab\there"),
        (r'"say \"hi\""', 'say "hi"'),
        (r'"back\\slash"', "back\\slash"),
        (r'"caf\u00e9"', "café"),
        (r'"rocket \U0001F680"', "rocket 🚀"),
        ('"Compare ${input.quantity} ${input.item}"', "Compare ${input.quantity} ${input.item}"),
        ('"literal $${not_interpolated}"', "literal $${not_interpolated}"),
        ('"%{ if x }y%{ endif }"', "%{ if x }y%{ endif }"),
        ('"${"nested ${x}"}"', '${"nested ${x}"}'),
        # A `${` that comes from an escape is escaped, so it never interpolates.
        (r'"\u0024{x}"', "$${x}"),
        ('"café ♥"', "café ♥"),
        ('""', ""),
    ],
)
def test_quoted_strings(source: str, expected: str) -> None:
    value = value_of(f"a = {source}\n")
    assert value == Scalar(expected, sp(1, 5, 1, 5 + len(source)))


def test_labels_are_decoded_literally() -> None:
    document = load_ok('a "x\\ty" "$${literal}" {}\n')
    assert [label.value for label in document.body.blocks[0].labels] == ["x\ty", "${literal}"]


def test_heredoc() -> None:
    text = "a = <<EOT\n  hello ${name}\n$${kept}\nEOT\nb = 1\n"
    document = load_ok(text)
    a = document.body.attributes[0]
    assert a.value == Scalar("  hello ${name}\n$${kept}\n", sp(1, 5, 4, 4))
    assert document.body.attributes[1].name == "b"


def test_indented_heredoc_strips_common_indentation() -> None:
    text = "a = <<-EOT\n    first\n      second\n\n    third\n  EOT\n"
    assert value_of(text) == Scalar("first\n  second\n\nthird\n", sp(1, 5, 6, 6))


def test_empty_heredoc() -> None:
    value = value_of("a = <<EOT\nEOT\n")
    assert isinstance(value, Scalar) and value.value == ""


# -- empty and odd input --------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment", "/* block */\n", "  \t\n"])
def test_empty_files_load_to_an_empty_body(text: str) -> None:
    document = load_ok(text)
    assert document.body.attributes == () and document.body.blocks == ()
    assert document.text == text and document.syntax == "hcl" and document.file == F


def test_inline_comments_are_whitespace() -> None:
    document = load_ok('a = /* why */ 1\nb "x" /* between labels */ "y" {}\n')
    assert document.body.attributes[0].value == Scalar(1, sp(1, 15, 1, 16))
    assert [label.value for label in document.body.blocks[0].labels] == ["x", "y"]


def test_a_last_line_comment_without_newline_is_fine() -> None:
    assert load_ok("a = 1 # done").body.attributes[0].value == Scalar(1, sp(1, 5, 1, 6))


def test_unicode_identifiers() -> None:
    assert attr("größe = 1\n", "größe").name_span == sp(1, 1, 1, 6)


# -- duplicates -----------------------------------------------------------------


def test_duplicate_attribute_points_at_the_first_definition() -> None:
    document, diagnostics = load_hcl("a = 1\nb = 2\na = 3\n", F)
    (d,) = diagnostics
    assert d.code == "OS006" and d.is_error
    assert d.span == sp(3, 1, 3, 2)
    assert [(r.span, r.message) for r in d.related] == [(sp(1, 1, 1, 2), "first set here")]
    assert document is not None
    assert [a.value for a in document.body.attributes if a.name == "a"] == [
        Scalar(1, sp(1, 5, 1, 6))
    ]


def test_duplicate_attributes_in_different_blocks_are_fine() -> None:
    load_ok("x {\n  a = 1\n}\ny {\n  a = 1\n}\na = 1\n")


def test_attribute_and_block_with_the_same_name_are_left_alone() -> None:
    load_ok("a = 1\na {}\n")


def test_duplicate_object_key() -> None:
    d = only_error('a = {\n  k = 1\n  "k" = 2\n}\n')
    assert d.code == "OS006"
    assert d.span == sp(3, 3, 3, 6)
    assert d.related[0].span == sp(2, 3, 2, 4)


# -- syntax errors --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "column", "fragment"),
    [
        ('a = "a value", b = "b value"\n', 1, 14, "separated by newlines, not commas"),
        ("a {\n", 1, 3, "`{` is never closed"),
        ('a = "open\nb = 2\n', 1, 10, "cannot span lines"),
        ("a =\n", 1, 4, "needs a value after `=`"),
        ("a = [1 2]\n", 1, 8, "list items are separated by commas"),
        ("a = f(1 2)\n", 1, 9, "function arguments are separated by commas"),
        ("a 1 {}\n", 1, 3, "block labels are names or quoted strings"),
        ("}\n", 1, 1, "no open block"),
        ("a = 1 b = 2\n", 1, 7, "missing newline after attribute"),
        ("a {} b {}\n", 1, 6, "missing newline after block"),
        ("a { b = 1 c = 2 }\n", 1, 11, "missing newline"),
        ("a { d {} }\n", 1, 5, "cannot contain another block"),
        ('a { b = "foo"\n}\n', 1, 14, "single-line block"),
        ('a "b"\n{\n}\n', 1, 6, "same line as its type and labels"),
        ("line1\nline2\n", 1, 1, "neither an attribute"),
        ("a = {b = 1 c = 2}\n", 1, 12, "missing `,` or newline"),
        ("a = {\n  b = 1\n  , c = 2\n}\n", 3, 3, "start of a line"),
        ('a = "\\q"\n', 1, 6, "not a valid escape"),
        ('a = "\\u00"\n', 1, 6, "4 hexadecimal digits"),
        ('a = "\\ud800"\n', 1, 6, "not a valid Unicode character"),
        ('a "${x}" {}\n', 1, 4, "label cannot contain"),
        ("a = 1\n+ 2\n", 2, 1, "cannot start a line"),
        ('a = "kms%{ if v != \\"p\\" }x%{ endif }"\n', 1, 20, "backslash"),
        ("a = <<EOT\nhi\nEOT", 3, 4, "closing marker"),
        ("a = <<EOT\nhi\n", 1, 5, "heredoc `<<EOT` is never closed"),
        ("a = 1 @ 2\n", 1, 7, "unexpected"),
    ],
)
def test_syntax_errors(text: str, line: int, column: int, fragment: str) -> None:
    _, diagnostics = load_hcl(text, F)
    assert diagnostics, "expected a diagnostic"
    first = diagnostics[0]
    assert first.code == "OS004" and first.is_error
    assert (first.span.file, first.span.line, first.span.column) == (F, line, column)
    assert fragment in first.message


def test_a_failed_parse_returns_no_document() -> None:
    document, diagnostics = load_hcl("a = [\n", F)
    assert document is None and [d.code for d in diagnostics] == ["OS004"]


@pytest.mark.parametrize(
    "text",
    [
        "a = (1\n+ 2)\n",
        "a = [1\n, 2]\n",
        "a = f(1\n, 2)\n",
        "a = { b = 1, }\n",
        "a { b = 1 }\n",
        "a {}\n",
        "a = { for k, v in m : k => v... }\n",
        "a = f(x...)\n",
        "x = a.0\n",
    ],
)
def test_valid_hcl_that_the_checks_must_not_flag(text: str) -> None:
    load_ok(text)


# -- nesting --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 10_000 + "]" * 10_000 + "\n",
        "a = " + "{a=" * 10_000 + "1" + "}" * 10_000 + "\n",
        "a {\n" * 10_000 + "}\n" * 10_000,
        "a = " + "f(" * 10_000 + ")" * 10_000 + "\n",
        "a = " + "(" * 10_000 + "1" + ")" * 10_000 + "\n",
    ],
)
def test_deep_nesting_is_a_diagnostic(text: str) -> None:
    document, diagnostics = load_hcl(text, F)
    assert document is None
    assert [d.code for d in diagnostics] == ["OS007"]
    assert diagnostics[0].span.line >= 1


def test_nesting_up_to_the_limit_loads() -> None:
    depth = MAX_NESTING - 1  # the attribute's list is one level, the rest nested in it
    value = value_of("a = " + "[" * depth + "]" * depth + "\n")
    for _ in range(depth - 1):
        assert isinstance(value, ListNode)
        value = value.items[0]
    assert value == ListNode((), value.span)


def test_long_operator_chains_are_not_nesting() -> None:
    value = value_of("a = 1" + " + 1" * 5_000 + "\n")
    assert isinstance(value, Expr) and value.source.count("+") == 5_000


# -- files ----------------------------------------------------------------------


def test_load_file_uses_the_display_name(tmp_path: Path) -> None:
    path = tmp_path / "team.hcl"
    path.write_text('team "procurement" {}\n', encoding="utf-8")
    document, diagnostics = load_hcl_file(path, display_name=F)
    assert diagnostics == [] and document is not None
    assert document.body.blocks[0].span.file == F


def test_binary_garbage_is_a_diagnostic(tmp_path: Path) -> None:
    path = tmp_path / "garbage.hcl"
    path.write_bytes(bytes(range(256)) * 4)
    document, diagnostics = load_hcl_file(path)
    assert document is None
    assert [d.code for d in diagnostics] == ["OS002"]


def test_missing_file_is_a_diagnostic(tmp_path: Path) -> None:
    document, diagnostics = load_hcl_file(tmp_path / "absent.hcl")
    assert document is None and [d.code for d in diagnostics] == ["OS001"]


# -- the parser cache -----------------------------------------------------------


def test_the_parser_is_built_without_a_writable_cache_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "cache"))
    hcl_parser.parser.cache_clear()
    try:
        document, diagnostics = load_hcl("a = 1\n", F)
        assert document is not None and diagnostics == []
    finally:
        hcl_parser.parser.cache_clear()


# -- fuzzing --------------------------------------------------------------------

VALID = [
    SAMPLE,
    'workflow "w" {\n  owner = team.procurement\n  state "a" {\n    next = state.b\n  }\n}\n',
    'a = { k = [1, 2.5, "x${y}"], "q" = <<-EOT\n    text\n    EOT\n}\n',
    "a = var.x ? f(1, 2) : [for i in l : i * 2]\n# c\nb = -1\n",
]
PIECES = [
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    '"',
    "=",
    ",",
    "\n",
    "${",
    "%{",
    "\\",
    "<<EOT\n",
    "#",
    "/*",
    "é",
    "-",
]


@st.composite
def mutated_hcl(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(VALID))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()) and text:
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + draw(st.sampled_from(PIECES)) + text[at:]
    return text


def check_never_raises(text: str) -> None:
    document, diagnostics = load_hcl(text, F)
    for d in diagnostics:
        assert d.span.file == F and d.span.line >= 1 and d.span.column >= 1
        assert "internal error" not in d.message
    if document is None:
        assert any(d.is_error for d in diagnostics)


FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.text())
def test_fuzz_any_text(text: str) -> None:
    check_never_raises(text)


@FUZZ
@given(mutated_hcl())
def test_fuzz_mutated_hcl(text: str) -> None:
    check_never_raises(text)
