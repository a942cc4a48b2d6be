from __future__ import annotations

import gc
import math
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openseal.compiler.diagnostics import Diagnostic
from openseal.compiler.syntax import load_yaml as load_yaml_module
from openseal.compiler.syntax.document_tree import Document, ListNode, MapNode, Scalar, Value
from openseal.compiler.syntax.load_yaml import (
    MAX_NESTING_DEPTH,
    _load,
    load_yaml,
    load_yaml_file,
)
from openseal.compiler.syntax.spans import Span

F = "defs.yaml"
Loader = Callable[[str], tuple[Document | None, list[Diagnostic]]]

_BACKENDS = [pytest.param(load_yaml_module._PY_BACKEND, id="python")]
if load_yaml_module._C_LOADER is not None:
    _BACKENDS.insert(0, pytest.param(load_yaml_module._BACKEND, id="libyaml"))


@pytest.fixture(params=_BACKENDS)
def load(request: pytest.FixtureRequest) -> Loader:
    """Every behaviour must hold for the libyaml loader and the pure-Python fallback."""
    backend = request.param
    return lambda text: _load(text, F, backend)


def ok(load: Loader, text: str) -> Document:
    doc, diagnostics = load(text)
    assert diagnostics == []
    assert doc is not None
    return doc


def fails(load: Loader, text: str) -> list[Diagnostic]:
    doc, diagnostics = load(text)
    if doc is not None:
        # Not `assert doc is None`: pytest would print the (possibly alias-bombed) tree.
        pytest.fail(f"loaded without errors; diagnostics: {diagnostics}")
    assert diagnostics
    return diagnostics


def top(doc: Document, name: str) -> Value:
    for attribute in doc.body.attributes:
        if attribute.name == name:
            return attribute.value
    raise AssertionError(f"no top-level key {name}")


def entry(value: Value, key: str) -> Value:
    assert isinstance(value, MapNode)
    found = value.get(key)
    assert found is not None, key
    return found.value


def scalar(value: Value) -> object:
    assert isinstance(value, Scalar)
    return value.value


def span(line: int, column: int, end_line: int, end_column: int) -> Span:
    return Span(F, line, column, end_line, end_column)


# -- spans -------------------------------------------------------------------------------

SPANS = """\
agent:
  writer:
    model: small
    tools: [a, bb]
    steps:
      - one
      - two
# trailing comment

"""


def test_spans_of_keys_values_and_list_items(load: Loader) -> None:
    doc = ok(load, SPANS)
    (agent,) = doc.body.attributes
    assert agent.name == "agent"
    assert agent.name_span == span(1, 1, 1, 6)
    writer_entry = agent.value.get("writer") if isinstance(agent.value, MapNode) else None
    assert writer_entry is not None
    assert writer_entry.key_span == span(2, 3, 2, 9)
    writer = writer_entry.value
    assert isinstance(writer, MapNode)
    model = writer.get("model")
    assert model is not None
    assert model.key_span == span(3, 5, 3, 10)
    assert model.value == Scalar("small", span(3, 12, 3, 17))
    tools = entry(writer, "tools")
    assert isinstance(tools, ListNode)
    assert tools.span == span(4, 12, 4, 19)
    assert tools.items == (Scalar("a", span(4, 13, 4, 14)), Scalar("bb", span(4, 16, 4, 18)))
    steps = entry(writer, "steps")
    assert isinstance(steps, ListNode)
    assert [item.span for item in steps.items] == [span(6, 9, 6, 12), span(7, 9, 7, 12)]
    # Block collections end at their last value, not at the comment lines after them.
    assert steps.span == span(6, 7, 7, 12)
    assert writer.span == span(3, 5, 7, 12)
    assert agent.span == span(1, 1, 7, 12)


def test_columns_count_characters_not_bytes(load: Loader) -> None:
    doc = ok(load, "é😀: [é😀, c]\n")
    (attribute,) = doc.body.attributes
    assert attribute.name_span == span(1, 1, 1, 3)
    assert isinstance(attribute.value, ListNode)
    assert attribute.value.items[1].span == span(1, 10, 1, 11)


def test_document_fields_and_body_span(load: Loader) -> None:
    text = "a: 1\r\nb: 2\r\n"
    doc = ok(load, text)
    assert (doc.file, doc.syntax, doc.text) == (F, "yaml", text)
    assert doc.body.blocks == ()
    assert [a.name for a in doc.body.attributes] == ["a", "b"]
    assert doc.body.attributes[1].value.span == span(2, 4, 2, 5)
    assert doc.body.span == span(1, 1, 3, 1)


# -- documents -----------------------------------------------------------------------------


def test_documents_are_concatenated(load: Loader) -> None:
    doc = ok(load, "agent: {a: 1}\n---\nskill: {s: 2}\n...\n---\nteam: {}\n")
    assert [a.name for a in doc.body.attributes] == ["agent", "skill", "team"]
    assert doc.body.attributes[1].name_span == span(3, 1, 3, 6)


def test_key_repeated_across_documents_is_a_duplicate(load: Loader) -> None:
    (d,) = fails(load, "agent: {a: 1}\n---\nagent: {b: 2}\n")
    assert d.code == "OS006"
    assert d.span == span(3, 1, 3, 6)
    assert [r.span for r in d.related] == [span(1, 1, 1, 6)]


@pytest.mark.parametrize(
    "text", ["", "\n\n", "# only a comment\n", "---\n# c\n", "---\n...\n", "~\n"]
)
def test_empty_documents_give_an_empty_body(load: Loader, text: str) -> None:
    doc = ok(load, text)
    assert doc.body.attributes == ()


def test_empty_document_between_others(load: Loader) -> None:
    doc = ok(load, "a: 1\n---\n# nothing\n---\nb: 2\n")
    assert [a.name for a in doc.body.attributes] == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "what"), [("- a\n- b\n", "a list"), ("hello\n", "a single value"), ("'x'\n", "")]
)
def test_top_level_must_be_a_mapping(load: Loader, text: str, what: str) -> None:
    (d,) = fails(load, text)
    assert d.code == "OS103"
    assert "must be a mapping of kinds" in d.message
    assert what in d.message
    assert d.span.line == 1 and d.span.column == 1


def test_non_mapping_second_document(load: Loader) -> None:
    (d,) = fails(load, "a: 1\n---\n- x\n")
    assert d.code == "OS103"
    assert d.span.line == 3


# -- duplicate and odd keys ----------------------------------------------------------------


def test_duplicate_top_level_key(load: Loader) -> None:
    (d,) = fails(load, "agent:\n  a: 1\nskill: {}\nagent:\n  b: 2\n")
    assert d.code == "OS006"
    assert "`agent`" in d.message
    assert d.span == span(4, 1, 4, 6)
    assert len(d.related) == 1
    assert d.related[0].span == span(1, 1, 1, 6)


def test_duplicate_nested_keys_are_all_reported(load: Loader) -> None:
    text = "w:\n  s:\n    next: a\n    next: b\n  t: {x: 1, x: 2}\n"
    diagnostics = fails(load, text)
    assert [(d.code, d.span.line, d.span.column) for d in diagnostics] == [
        ("OS006", 4, 5),
        ("OS006", 5, 13),
    ]
    assert [d.related[0].span for d in diagnostics] == [span(3, 5, 3, 9), span(5, 7, 5, 8)]


def test_quoted_and_plain_spellings_of_a_key_are_the_same_key(load: Loader) -> None:
    (d,) = fails(load, "a: 1\n'a': 2\n")
    assert d.code == "OS006"


def test_keys_are_kept_as_written(load: Loader) -> None:
    doc = ok(load, "m: {1: a, true: b, on: c, 0x1: d, null: e}\n")
    value = top(doc, "m")
    assert isinstance(value, MapNode)
    assert [e.key for e in value.entries] == ["1", "true", "on", "0x1", "null"]


@pytest.mark.parametrize("text", ["? [a, b]\n: c\n", "m:\n  ? {a: 1}\n  : c\n"])
def test_non_scalar_key(load: Loader, text: str) -> None:
    (d,) = fails(load, text)
    assert d.code == "OS103"
    assert "key" in d.message


# -- scalars ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("on", "on"),
        ("off", "off"),
        ("yes", "yes"),
        ("no", "no"),
        ("y", "y"),
        ("n", "n"),
        ("Yes", "Yes"),
        ("true", True),
        ("True", True),
        ("TRUE", True),
        ("false", False),
        ("False", False),
        ("FALSE", False),
        ("tRUE", "tRUE"),
        ("null", None),
        ("Null", None),
        ("NULL", None),
        ("~", None),
        ("", None),
        ("nil", "nil"),
        ("42", 42),
        ("-7", -7),
        ("+7", 7),
        ("0", 0),
        ("012", 12),
        ("0x1F", 31),
        ("0o17", 15),
        ("0b101", "0b101"),
        ("1_000", "1_000"),
        ("1.5", 1.5),
        ("-0.5", -0.5),
        (".5", 0.5),
        ("1e3", 1000.0),
        ("2.5E-1", 0.25),
        (".inf", math.inf),
        ("-.inf", -math.inf),
        ("+.Inf", math.inf),
        (".infinity", ".infinity"),
        ("1e999", math.inf),
        ("-" + "9" * 5000, -math.inf),
        ("2024-01-01", "2024-01-01"),
        ("2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z"),
        ("12:30:00", "12:30:00"),
        ("=", "="),
        ("${input.x}", "${input.x}"),
        ("$${literal}", "$${literal}"),
    ],
)
def test_plain_scalars_follow_the_core_schema(load: Loader, written: str, expected: object) -> None:
    value = scalar(top(ok(load, f"v: {written}\n"), "v"))
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize("written", [".nan", ".NaN", ".NAN"])
def test_nan_is_a_number(load: Loader, written: str) -> None:
    # As in HCL: the value is a number, refused when folded (OS104), never a string.
    value = scalar(top(ok(load, f"v: {written}\n"), "v"))
    assert isinstance(value, float) and math.isnan(value)


def test_yaml_1_1_boolean_words_work_as_keys(load: Loader) -> None:
    doc = ok(load, "workflow:\n  on: {approved: {next: x}}\n  yes: 1\n  no: 2\n")
    workflow = top(doc, "workflow")
    assert isinstance(workflow, MapNode)
    assert [e.key for e in workflow.entries] == ["on", "yes", "no"]


@pytest.mark.parametrize(
    "text", ["v: 'true'\n", 'v: "42"\n', "v: '2024-01-01'\n", "v: ''\n", "v: 'null'\n"]
)
def test_quoted_scalars_are_strings(load: Loader, text: str) -> None:
    value = scalar(top(ok(load, text), "v"))
    assert isinstance(value, str)


def test_block_scalars_are_strings(load: Loader) -> None:
    doc = ok(load, "a: |\n  42\nb: >\n  true\n  more\n")
    assert scalar(top(doc, "a")) == "42\n"
    assert scalar(top(doc, "b")) == "true more\n"


def test_huge_decimal_integer_is_infinite_as_in_hcl(load: Loader) -> None:
    digits = "9" * 5000
    assert scalar(top(ok(load, f"v: {digits}\n"), "v")) == math.inf


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v: !!str 42\n", "42"),
        ("v: !!str true\n", "true"),
        ("v: !!int '0x10'\n", 16),
        ("v: !!int 7\n", 7),
        ("v: !!float 1\n", 1.0),
        ("v: !!float '2.5'\n", 2.5),
        ("v: !!bool 'false'\n", False),
        ("v: !!null ''\n", None),
        ("v: !<tag:yaml.org,2002:str> 5\n", "5"),
    ],
)
def test_core_tags_are_accepted(load: Loader, text: str, expected: object) -> None:
    value = scalar(top(ok(load, text), "v"))
    assert value == expected
    assert type(value) is type(expected)


def test_core_collection_tags_are_accepted(load: Loader) -> None:
    doc = ok(load, "m: !!map {a: 1}\nl: !!seq [1]\n")
    assert isinstance(top(doc, "m"), MapNode)
    assert isinstance(top(doc, "l"), ListNode)


@pytest.mark.parametrize(
    "text", ["v: !!int abc\n", "v: !!bool yes\n", "v: !!float abc\n", "v: !!null x\n"]
)
def test_value_that_does_not_match_its_tag(load: Loader, text: str) -> None:
    (d,) = fails(load, text)
    assert d.code == "OS104"
    assert d.span.line == 1 and d.span.column == 4


# -- tags ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("v: !!python/object:os.system ls\n", "!!python/object:os.system"),
        ("v: !!python/object/apply:os.system ['ls']\n", "!!python/object/apply:os.system"),
        ("v: !Ref other\n", "!Ref"),
        ("v: !Sub {a: 1}\n", "!Sub"),
        ("v: !!binary aGk=\n", "!!binary"),
        ("v: !!timestamp 2024-01-01\n", "!!timestamp"),
        ("v: !!set {a, b}\n", "!!set"),
        ("v: !!omap [a: 1]\n", "!!omap"),
        ("v: !!merge <<\n", "!!merge"),
        ("!custom k: v\n", "!custom"),
        ("--- !doc\nk: v\n", "!doc"),
    ],
)
def test_other_tags_are_refused(load: Loader, text: str, tag: str) -> None:
    (d,) = fails(load, text)
    assert d.code == "OS008"
    assert tag in d.message


def test_core_tag_on_the_wrong_kind_of_node(load: Loader) -> None:
    diagnostics = fails(load, "a: !!map x\nb: !!seq {k: 1}\nc: !!str [1]\n")
    assert [(d.code, d.span.line) for d in diagnostics] == [
        ("OS008", 1),
        ("OS008", 2),
        ("OS008", 3),
    ]
    assert "!!map" in diagnostics[0].message and "scalar" in diagnostics[0].message


def test_refused_python_tag_never_constructs_anything(
    load: Loader, monkeypatch: pytest.MonkeyPatch
) -> None:
    called: list[object] = []

    def fake_system(*args: object) -> int:
        called.append(args)
        return 0

    monkeypatch.setattr("os.system", fake_system)
    fails(load, "v: !!python/object/apply:os.system ['echo pwned']\n")
    assert called == []


# -- anchors, aliases and merge keys ---------------------------------------------------------


def test_alias_resolves_to_the_anchored_value_and_its_spans(load: Loader) -> None:
    doc = ok(load, "base: &b {x: 1}\nother: *b\nlist: [&s hi, *s]\n")
    base, other = top(doc, "base"), top(doc, "other")
    assert other == base
    # The anchored node's span, which (as PyYAML marks it) includes the `&b` anchor.
    assert other.span == span(1, 7, 1, 16)
    items = top(doc, "list")
    assert isinstance(items, ListNode)
    assert [scalar(v) for v in items.items] == ["hi", "hi"]
    assert items.items[1].span == items.items[0].span
    # The attribute of an aliased value still starts at its key.
    assert doc.body.attributes[1].span == span(2, 1, 2, 6)


def test_undefined_alias(load: Loader) -> None:
    (d,) = fails(load, "a: 1\nb: *missing\n")
    assert d.code == "OS005"
    assert "undefined alias" in d.message
    assert (d.span.line, d.span.column) == (2, 4)


def test_merge_keys(load: Loader) -> None:
    text = (
        "defaults: &d {timeout: 30, retries: 2, mode: a}\n"
        "extra: &e {retries: 9, label: x}\n"
        "skill:\n"
        "  name: s\n"
        "  <<: [*d, *e]\n"
        "  mode: b\n"
    )
    doc = ok(load, text)
    skill = top(doc, "skill")
    assert isinstance(skill, MapNode)
    assert [(e.key, scalar(e.value)) for e in skill.entries] == [
        ("name", "s"),
        ("timeout", 30),
        ("retries", 2),
        ("label", "x"),
        ("mode", "b"),
    ]
    timeout = skill.get("timeout")
    assert timeout is not None and timeout.key_span == span(1, 15, 1, 22)


def test_single_merge_and_quoted_merge_key(load: Loader) -> None:
    doc = ok(load, "b: &b {x: 1}\nm:\n  <<: *b\nq:\n  '<<': *b\n")
    assert [e.key for e in _map(top(doc, "m")).entries] == ["x"]
    assert [e.key for e in _map(top(doc, "q")).entries] == ["<<"]


@pytest.mark.parametrize("text", ["m:\n  <<: 1\n", "s: &s x\nm:\n  <<: [*s]\n"])
def test_merge_of_something_other_than_a_mapping(load: Loader, text: str) -> None:
    (d,) = fails(load, text)
    assert d.code == "OS008"
    assert "<<" in d.message


def test_alias_bomb_is_refused_without_expanding(load: Loader) -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join(['*' + prev] * 10)}]")
    (d,) = fails(load, "\n".join(lines) + "\n")
    assert d.code == "OS008"
    assert "100,000" in d.message


def test_moderate_alias_reuse_is_fine(load: Loader) -> None:
    text = "a: &a [1, 2, 3]\n" + "".join(f"k{i}: *a\n" for i in range(1000))
    doc = ok(load, text)
    assert len(doc.body.attributes) == 1001


@pytest.mark.parametrize("text", ["a: &x [*x]\n", "a: &x {k: *x}\n", "a: &x [[*x]]\n"])
def test_recursive_alias(load: Loader, text: str) -> None:
    (d,) = fails(load, text)
    assert d.code == "OS008"
    assert "recursive" in d.message


# -- syntax errors and limits ----------------------------------------------------------------


def test_syntax_error_location_and_message(load: Loader) -> None:
    (d,) = fails(load, "agent:\n  a: [1, 2\n")
    assert d.code == "OS005"
    assert (d.span.line, d.span.column) == (3, 1)
    assert "\n" not in d.message
    assert "'," in d.message or "','" in d.message
    assert [r.span.line for r in d.related] == [2]
    assert "flow sequence" in d.related[0].message


def test_mapping_value_error(load: Loader) -> None:
    (d,) = fails(load, "a: b: c\n")
    assert d.code == "OS005"
    assert (d.span.line, d.span.column) == (1, 5)
    assert "mapping values are not allowed" in d.message


def test_tab_indentation_gets_a_suggestion(load: Loader) -> None:
    (d,) = fails(load, "a:\n\t- x\n")
    assert d.code == "OS005"
    assert (d.span.line, d.span.column) == (2, 1)
    assert d.suggestion is not None and "tabs" in d.suggestion


def test_control_character(load: Loader) -> None:
    (d,) = fails(load, "é: ok\nb: x\x01\n")
    assert d.code == "OS005"
    assert "U+0001" in d.message
    assert (d.span.line, d.span.column) == (2, 5)


def test_lone_surrogate(load: Loader) -> None:
    (d,) = fails(load, "a: \ud800\n")
    assert d.code == "OS002"
    assert (d.span.line, d.span.column) == (1, 4)


def _nested_maps(levels: int) -> str:
    return "".join(" " * i + f"k{i}:\n" for i in range(levels)) + " " * levels + "x\n"


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 10_000 + "]" * 10_000 + "\n",
        "a: " + "{b: " * 10_000 + "c" + "}" * 10_000 + "\n",
        _nested_maps(10_000),
        "- " * 10_000 + "x\n",
        "a: " + "[" * (MAX_NESTING_DEPTH + 5) + "]" * (MAX_NESTING_DEPTH + 5) + "\n",
    ],
    ids=["flow-lists", "flow-maps", "block-maps", "block-lists", "just-over"],
)
def test_deep_nesting(load: Loader, text: str) -> None:
    (d,) = fails(load, text)
    assert d.code == "OS007"
    assert d.span.line >= 1


def test_nesting_at_the_limit_is_fine(load: Loader) -> None:
    depth = MAX_NESTING_DEPTH - 1  # plus the top-level mapping
    doc = ok(load, "a: " + "[" * depth + "1" + "]" * depth + "\n")
    value = top(doc, "a")
    for _ in range(depth):
        assert isinstance(value, ListNode)
        value = value.items[0]
    assert scalar(value) == 1


def test_aliases_cannot_exceed_the_nesting_limit(load: Loader) -> None:
    half = MAX_NESTING_DEPTH // 2 + 5
    deep = "[" * half + "1" + "]" * half
    text = f"a: &d {deep}\nb: " + "[" * half + "*d" + "]" * half + "\n"
    (d,) = fails(load, text)
    assert d.code == "OS007"


def test_loading_restores_the_garbage_collector_state(load: Loader) -> None:
    assert gc.isenabled()
    ok(load, "a: 1\n")
    fails(load, "a: [\n")
    assert gc.isenabled()
    gc.disable()
    try:
        ok(load, "a: 1\n")
        assert not gc.isenabled()
    finally:
        gc.enable()


# -- public entry points ---------------------------------------------------------------------


def test_load_yaml_uses_the_fastest_available_loader() -> None:
    doc, diagnostics = load_yaml("a: yes\n", "x.yaml")
    assert diagnostics == [] and doc is not None
    assert doc.file == "x.yaml"
    assert scalar(doc.body.attributes[0].value) == "yes"
    if yaml.__with_libyaml__:
        assert issubclass(load_yaml_module._BACKEND.loader, yaml.CSafeLoader)


def test_load_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_bytes(b"\xef\xbb\xbfteam: {a: 1}\n")
    doc, diagnostics = load_yaml_file(path, display_name="defs/team.yaml")
    assert diagnostics == [] and doc is not None
    assert doc.file == "defs/team.yaml"
    assert doc.body.attributes[0].name_span == Span("defs/team.yaml", 1, 1, 1, 5)


def test_load_yaml_file_reports_read_errors(tmp_path: Path) -> None:
    doc, diagnostics = load_yaml_file(tmp_path / "missing.yaml")
    assert doc is None
    assert [d.code for d in diagnostics] == ["OS001"]


def test_load_yaml_file_reports_errors_with_the_display_name(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("a: 1\na: 2\n", encoding="utf-8")
    doc, diagnostics = load_yaml_file(path, display_name="bad.yaml")
    assert doc is None
    assert [(d.code, d.span.file) for d in diagnostics] == [("OS006", "bad.yaml")]


# -- fuzzing ---------------------------------------------------------------------------------

VALID = """\
workflow:
  procure_laptops:
    owner: team.procurement
    input:
      request: {type: "object({item = string, quantity = number})"}
    states:
      research: &turn
        turn:
          agent: team.procurement.role.researcher
          goal: "Compare vendors for ${input.request.quantity}"
          skills: [skill.search_vendors]
        next: state.draft
      again: *turn
      review:
        approval: {proposal: proposal.order, approvers: [requester], expires_in: 72h}
        on:
          approved: {next: state.submit}
          rejected: {next: state.done}
      done: {end: completed}
---
skill:
  search_vendors: {risk: read, timeout: 30, retry: 2, ratio: 0.5, enabled: true}
"""

_YAML_ALPHABET = st.sampled_from([*"abc:-[]{},&*!|>'\"#?%@`~ \n\t\\x0.", "\ud800", "é"])


def _assert_well_formed(doc: Document | None, diagnostics: list[Diagnostic]) -> None:
    assert (doc is None) == bool(diagnostics)
    for d in diagnostics:
        assert d.span.file == F
        assert d.span.line >= 1 and d.span.column >= 1
        assert "\n" not in d.message
        for related in d.related:
            assert related.span.line >= 1


def test_the_fuzz_seed_document_is_valid(load: Loader) -> None:
    doc = ok(load, VALID)
    assert [a.name for a in doc.body.attributes] == ["workflow", "skill"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.text(max_size=300), st.text(_YAML_ALPHABET, max_size=300)))
def test_arbitrary_text_never_raises(text: str) -> None:
    for backend in (load_yaml_module._BACKEND, load_yaml_module._PY_BACKEND):
        _assert_well_formed(*_load(text, F, backend))


@st.composite
def _mutations(draw: st.DrawFn) -> str:
    text = VALID
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = draw(st.text(_YAML_ALPHABET, min_size=1, max_size=6))
        end = min(len(text), at + draw(st.integers(1, 8)))
        if kind == "insert":
            text = text[:at] + piece + text[at:]
        elif kind == "delete":
            text = text[:at] + text[end:]
        else:
            text = text[:at] + piece + text[end:]
    return text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_mutations())
def test_mutated_documents_never_raise(text: str) -> None:
    for backend in (load_yaml_module._BACKEND, load_yaml_module._PY_BACKEND):
        _assert_well_formed(*_load(text, F, backend))


def _map(value: Value) -> MapNode:
    assert isinstance(value, MapNode)
    return value


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        (
            "o: {type: string, value: ${state.submit.output.order_id}}\n",
            "${state.submit.output.order_id}",
        ),
        ("a: [1, ${x}]\n", "${x}"),
        ("args: {items: ${f({a = 1})}, op: count}\n", "${f({a = 1})}"),
    ],
)
def test_unquoted_interpolation_in_a_flow_collection_gets_a_hint(
    load: Loader, text: str, quoted: str
) -> None:
    (d,) = fails(load, text)
    assert d.code == "OS005"
    assert d.suggestion is not None and d.suggestion.startswith(f'quote it: `"{quoted}"`')


def test_other_flow_errors_get_no_quoting_hint(load: Loader) -> None:
    (d,) = fails(load, "a: {b: [1}\n")
    assert d.code == "OS005"
    assert d.suggestion is None or "quote" not in d.suggestion
