"""Typecheck: inference of expression types, argument mappings, guards, goldens."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from openseal.compiler.analysis.expression_scopes import Namespace, Scope, Value
from openseal.compiler.analysis.infer import Inferrer
from openseal.compiler.analysis.resolve import resolve
from openseal.compiler.analysis.typecheck import typecheck
from openseal.compiler.diagnostics import Diagnostic
from openseal.compiler.lang import expr as ex
from openseal.compiler.lang import types as ty
from openseal.compiler.load import load_definitions
from openseal.compiler.output.render_diagnostics import render_human
from openseal.compiler.syntax.spans import Span
from tests.golden_helper import assert_golden

ROOT = Path(__file__).resolve().parents[3]
INPUTS = Path("tests/golden/typecheck/inputs")
SPAN = Span.point("<test>")


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize(
    "name",
    [
        "os301_type_mismatch.hcl",
        "os302_unknown_attribute.hcl",
        "os303_unknown_function.hcl",
        "os304_constant_fails.hcl",
        "os304_constant_fails.yaml",
    ],
)
def test_golden_typecheck(name: str) -> None:
    loaded = load_definitions([INPUTS / name])
    assert loaded.ok, loaded.diagnostics
    analysis, unresolved = resolve(loaded.definitions)
    assert unresolved == []
    found = typecheck(analysis)
    assert {d.code for d in found} == {name[:5].upper()}
    text = render_human(found, loaded.sources, color=False, file_count=1)
    suffix = "_yaml.txt" if name.endswith(".yaml") else ".txt"
    assert_golden(text, f"typecheck/{Path(name).stem}{suffix}")


@pytest.mark.parametrize("example", ["procurement", "release_note", "budget_check"])
@pytest.mark.parametrize("syntax", ["hcl", "yaml"])
def test_examples_typecheck_cleanly(example: str, syntax: str) -> None:
    analysis, _ = resolve(load_definitions([Path("definitions") / example / syntax]).definitions)
    assert typecheck(analysis) == []


def test_unresolved_references_are_not_reported_again(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "definitions/procurement", tmp_path / "procurement")
    # A repository root, under which file("../prompts/...") may read.
    (tmp_path / "procurement" / ".git").mkdir()
    path = tmp_path / "procurement/hcl/workflow.hcl"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("${input.request.quantity} ", "${input.reqest.quantity} "))
    loaded = load_definitions([path.parent])
    assert loaded.ok, loaded.diagnostics
    analysis, found = resolve(loaded.definitions)
    assert [d.code for d in found] == ["OS201"]
    assert typecheck(analysis) == []


# --------------------------------------------------------------------------- inference

REQUEST = ty.object_type(
    [
        ty.Field("item", ty.STRING),
        ty.Field("quantity", ty.NUMBER),
        ty.Field("tags", ty.ListType(ty.STRING)),
        ty.Field("prices", ty.MapType(ty.NUMBER)),
    ]
)


class _Roots:
    def namespace_type(self, scope: Scope, root: str, name: str) -> ty.TypeExpr:
        return REQUEST if (root, name) == ("input", "request") else ty.ANY

    def skill_input(self, skill: ex.Ref) -> ty.TypeExpr:
        return ty.ANY


SCOPE = Scope("a test", "workflow.t", {"input": Namespace("input", ("request",))})


def infer(text: str, scope: Scope = SCOPE) -> tuple[str, list[Diagnostic]]:
    node, problems = ex.parse_expression(text, SPAN)
    assert problems == [] and node is not None
    inferrer = Inferrer(_Roots())
    found = inferrer.infer(node, scope)
    return ty.to_source(found), inferrer.diagnostics


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("input.request.quantity * 2", "number"),
        ("input.request.quantity > 2 && true", "bool"),
        ("input.request.tags[0]", "string"),
        ('input.request.prices["laptop"]', "number"),
        ("input.request.tags", "list(string)"),
        ('"${input.request.item} x ${input.request.quantity}"', "string"),
        ("[1, 2]", "list(number)"),
        ('[1, "a"]', "tuple([number, string])"),
        ('{ a = 1, b = "x" }', "object({ a = number, b = string })"),
        ("input.request.quantity > 1 ? input.request.item : null", "string"),
        ("length(input.request.tags)", "number"),
        ("upper(input.request.item)", "string"),
        ('contains(input.request.tags, "x")', "bool"),
        ("max(1, input.request.quantity)", "number"),
        ("sum([1, 2])", "number"),
        ('format("%s %d", input.request.item, 3)', "string"),
        ("coalesce(null, input.request.item)", "string"),
        ("keys(input.request.prices)", "list(string)"),
        ("values(input.request.prices)", "list(number)"),
        ("nobody.knows", "any"),
        ("input.missing.x", "any"),
    ],
)
def test_inferred_types(text: str, expected: str) -> None:
    found, problems = infer(text)
    assert problems == []
    assert found == expected


@pytest.mark.parametrize(
    ("text", "code", "fragment"),
    [
        ("input.request.item == 1", "OS301", "never equal"),
        ("input.request.item + 1", "OS301", "`+` needs number"),
        ("!input.request.quantity", "OS301", "`!` needs bool"),
        ('input.request.quantity > 1 ? 1 : "one"', "OS301", "differ"),
        ("input.request.tags.first", "OS302", "no attribute `first`"),
        ("input.request.item[0]", "OS302", "has no index 0"),
        ("input.request.item[input.request.quantity]", "OS301", "cannot be indexed"),
        ('input.request.tags["a"]', "OS302", "has no attribute `a`"),
        ("input.request.tags[input.request.item]", "OS301", "a list index needs number"),
        ("input.request.size", "OS302", "no attribute `size`"),
        ("lower(input.request.quantity)", "OS301", "`lower` needs string"),
        ("sum(input.request.tags)", "OS301", "needs list(number)"),
        ("keys(input.request.tags)", "OS301", "`keys` needs a map"),
        ('"x ${input.request}"', "OS301", "only strings, numbers and bools"),
        ("trim(input.request.item)", "OS303", "unknown function `trim`"),
        ("upper()", "OS303", "takes 1 argument, got 0"),
        ("1 / 0", "OS304", "`1 / 0` fails whenever it is evaluated: `/` by zero"),
        ("input.request.quantity % (2 - 2)", "OS304", "`%` by zero"),
        ("-(1e300 * 1e300)", "OS304", "`1e+300 * 1e+300` fails"),
        ("max(1e308 * 10, 1)", "OS304", "result is not a finite number"),
        ("(1 / 0) + 1 > 2", "OS304", "`1 / 0` fails"),
    ],
)
def test_type_errors(text: str, code: str, fragment: str) -> None:
    _, problems = infer(text)
    assert [d.code for d in problems] == [code]
    assert fragment in problems[0].message


@pytest.mark.parametrize(
    "text", ["1 / 2", "7 % 3", "1e300 * 1e8", "input.request.quantity / (1 - 1 + 1)", "2 / 0.5"]
)
def test_constant_expressions_that_can_run_are_not_reported(text: str) -> None:
    assert infer(text)[1] == []


def test_a_division_by_a_constant_zero_fails_whatever_it_reads() -> None:
    _, problems = infer("input.request.quantity / (1 - 1)")
    assert [(d.code, d.span.column) for d in problems] == [("OS304", 1)]
    assert problems[0].message == (
        "`input.request.quantity / (1 - 1)` fails whenever it is evaluated: `/` by zero"
    )


def test_a_failing_constant_is_reported_at_the_operation_that_fails() -> None:
    text = "input.request.quantity + (2 * (8 % 0))"
    _, problems = infer(text)
    start = text.index("8 % 0") + 1
    assert [(d.code, d.span.column, d.span.end_column) for d in problems] == [
        ("OS304", start, start + len("8 % 0"))
    ]
    assert problems[0].message == "`8 % 0` fails whenever it is evaluated: `%` by zero"


def test_string_concatenation_suggests_a_template() -> None:
    _, problems = infer('input.request.item + "s"')
    assert problems[-1].suggestion is not None and "template" in problems[-1].suggestion


def test_an_error_is_reported_once() -> None:
    # The unknown attribute makes the sub-expression `any`; the `*` is not reported too.
    _, problems = infer("input.request.price * input.request.quantity > 3")
    assert [d.code for d in problems] == ["OS302"]


def test_for_each_item_is_an_element_of_items() -> None:
    scope = SCOPE.with_value("tag", Value(items=ex.Ref("input", ("request", "tags"))))
    assert infer("upper(tag)", scope) == ("string", [])
    _, problems = infer("tag * 2", scope)
    assert [d.code for d in problems] == ["OS301"]


def _workflow(states: str) -> str:
    return f"""
model "m" {{
  provider = "scripted"
  model    = "scripted-m"
}}
agent "a" {{
  model        = model.m
  instructions = "x"
}}
workflow "w" {{
  owner = agent.a
  start = state.first
  input "names" {{
    type = list(string)
  }}
{states}
  state "done" {{
    end = "completed"
  }}
}}
"""


def check_text(tmp_path: Path, text: str) -> list[Diagnostic]:
    path = tmp_path / "w.hcl"
    path.write_text(text, encoding="utf-8")
    loaded = load_definitions([path])
    assert loaded.ok, loaded.diagnostics
    analysis, unresolved = resolve(loaded.definitions)
    assert unresolved == []
    return typecheck(analysis)


def test_state_output_types_flow_through_transforms_and_loops(tmp_path: Path) -> None:
    states = """
  state "first" {
    for_each {
      items = input.names
      item  = "name"
      do {
        turn {
          agent  = agent.a
          goal   = "Greet ${name}"
          output = object({ greeting = string })
        }
      }
    }
    next = state.pick
  }
  state "pick" {
    transform {
      output = { first = state.first.output[0].greeting, count = length(state.first.output) }
    }
    next = state.check
  }
  state "check" {
    decision {}
    branch {
      when = state.pick.output.count > 0 && state.pick.output.first != ""
      next = state.done
    }
    branch {
      when = state.pick.output.first > 0
      next = state.done
    }
    branch {
      next = state.done
    }
  }
"""
    found = check_text(tmp_path, _workflow(states))
    assert [d.code for d in found] == ["OS301"]
    assert "`state.pick.output.first` is string" in found[0].message


def test_parallel_output_is_an_object_of_branches(tmp_path: Path) -> None:
    states = """
  state "first" {
    parallel {
      branch "left" {
        transform {
          output = 1
        }
      }
      branch "right" {
        transform {
          output = "r"
        }
      }
    }
    next = state.use
  }
  state "use" {
    transform {
      output = state.first.output.left + state.first.output.middle
    }
    next = state.done
  }
"""
    found = check_text(tmp_path, _workflow(states))
    assert [d.code for d in found] == ["OS302"]
    assert "`left`, `right`" in found[0].message


def test_a_transform_that_reads_itself_does_not_loop(tmp_path: Path) -> None:
    states = """
  state "first" {
    transform {
      output = state.first.output
    }
    next = state.done
  }
"""
    assert check_text(tmp_path, _workflow(states)) == []
