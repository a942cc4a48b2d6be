from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from openseal.compiler.diagnostics import (
    CODE_GROUPS,
    CODES,
    Diagnostic,
    Related,
    Severity,
    error,
    warning,
)
from openseal.compiler.output.render_diagnostics import (
    DOCS_URL,
    SARIF_SCHEMA,
    capped,
    render_github,
    render_human,
    render_json,
    render_sarif,
    summary_line,
    use_color,
)
from openseal.compiler.syntax.spans import Span

ROOT = Path(__file__).resolve().parents[3]
ANSI = re.compile(r"\x1b\[")

FILE = "definitions/procurement.hcl"
SOURCE = """\
agent "researcher" {
  model = model.default
}

agent "researcher" {
  modle = model.default
}
"""


def example() -> list[Diagnostic]:
    """The same two diagnostics the docs show; deliberately given out of order."""
    return [
        error(
            "OS101",
            "unknown key `modle` in agent",
            Span(FILE, 6, 3, 6, 8),
            suggestion="did you mean `model`?",
        ),
        error(
            "OS105",
            "duplicate definition name `agent.researcher`",
            Span(FILE, 5, 7, 5, 19),
            related=[Related(Span(FILE, 1, 7, 1, 19), "first defined here")],
            suggestion="rename one of the two agents",
        ),
    ]


EXPECTED_HUMAN = """\
definitions/procurement.hcl:5:7: error[OS105]: duplicate definition name `agent.researcher`
5 | agent "researcher" {
  |       ^^^^^^^^^^^^
  = hint: rename one of the two agents
definitions/procurement.hcl:1:7: note: first defined here
1 | agent "researcher" {
  |       ^^^^^^^^^^^^

definitions/procurement.hcl:6:3: error[OS101]: unknown key `modle` in agent
6 |   modle = model.default
  |   ^^^^^
  = hint: did you mean `model`?

2 errors in 1 file
"""


def snippet(source: str, span: Span) -> str:
    d = error("OS104", "m", span)
    return render_human([d], {span.file: source}, color=False)


# --- human -------------------------------------------------------------------


def test_human_exact_output() -> None:
    out = render_human(example(), {FILE: SOURCE}, color=False, file_count=1)
    assert out == EXPECTED_HUMAN


def test_no_ansi_without_color_and_some_with_it() -> None:
    plain = render_human(example(), {FILE: SOURCE}, color=False, file_count=1)
    coloured = render_human(example(), {FILE: SOURCE}, color=True, file_count=1)
    assert not ANSI.search(plain)
    assert ANSI.search(coloured)
    # Colour only decorates: stripping the escapes gives the plain text back.
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


def test_source_control_characters_do_not_reach_the_terminal() -> None:
    out = snippet('name = "\x1b[2Jx"\n', Span("a.hcl", 1, 1, 1, 5))
    assert "\x1b" not in out
    assert "\ufffd[2Jx" in out


def test_message_newlines_survive_but_escapes_do_not() -> None:
    d = error("OS005", "bad YAML\n  \x1b[31min a mapping", Span("a.yaml", 1, 1, 1, 2))
    out = render_human([d], {}, color=False)
    assert out == "a.yaml:1:1: error[OS005]: bad YAML\n  \ufffd[31min a mapping\n"


def test_leading_tab_is_expanded_and_caret_lines_up() -> None:
    out = snippet("\tskills = []\n", Span("a.hcl", 1, 2, 1, 8))
    assert out.splitlines()[1:3] == ["1 |     skills = []", "  |     ^^^^^^"]


def test_tab_in_the_middle_expands_to_the_next_stop() -> None:
    out = snippet("ab\tc = 1\n", Span("a.hcl", 1, 4, 1, 5))
    assert out.splitlines()[1:3] == ["1 | ab  c = 1", "  |     ^"]


def test_wide_characters_take_two_columns() -> None:
    out = snippet("名前 = 1\n", Span("a.hcl", 1, 1, 1, 3))
    assert out.splitlines()[1:3] == ["1 | 名前 = 1", "  | ^^^^"]
    out = snippet("名前 = 1\n", Span("a.hcl", 1, 4, 1, 5))
    assert out.splitlines()[2] == "  |      ^"


def test_multi_line_span_underlines_to_end_of_first_line() -> None:
    out = snippet("a = {\n  b = 1\n}\n", Span("a.hcl", 1, 5, 3, 2))
    assert out.splitlines()[1:3] == ["1 | a = {", "  |     ^"]
    out = snippet("abc = {\n}\n", Span("a.hcl", 1, 2, 2, 2))
    assert out.splitlines()[2] == "  |  ^^^^^^"


def test_zero_width_span_and_end_of_line_get_one_caret() -> None:
    assert snippet("abc\n", Span.point("a.hcl", 1, 2)).splitlines()[2] == "  |  ^"
    # One past the last character is a real place: "expected `}` here".
    assert snippet("abc\n", Span.point("a.hcl", 1, 4)).splitlines()[2] == "  |    ^"


def test_span_running_past_the_line_is_clamped() -> None:
    assert snippet("abc\n", Span("a.hcl", 1, 2, 1, 40)).splitlines()[2] == "  |  ^^"


def test_crlf_line_endings_are_not_shown() -> None:
    assert snippet("abc\r\ndef\r\n", Span("a.hcl", 2, 1, 2, 4)).splitlines()[1] == "2 | def"


@pytest.mark.parametrize(
    ("sources", "span"),
    [
        ({}, Span("a.hcl", 1, 1, 1, 2)),  # no source text at all
        ({"a.hcl": "abc\n"}, Span("a.hcl", 9, 1, 9, 2)),  # line past the end
        ({"a.hcl": "abc\n"}, Span("a.hcl", 1, 9, 1, 12)),  # column past the end
        ({"a.hcl": "abc\n"}, Span("a.hcl", 0, 0, 0, 0)),  # nonsense position
        ({"a.hcl": "abc\n"}, Span("a.hcl", 1, -3, 1, -1)),
    ],
)
def test_out_of_range_spans_omit_the_snippet(sources: dict[str, str], span: Span) -> None:
    d = error("OS104", "bad value", span, suggestion="fix it")
    out = render_human([d], sources, color=False)
    assert out == f"{span}: error[OS104]: bad value\n  = hint: fix it\n"


def test_related_note_without_source_has_no_snippet() -> None:
    d = error(
        "OS105",
        "duplicate",
        Span("a.hcl", 1, 1, 1, 4),
        related=[Related(Span("other.hcl", 3, 1, 3, 2), "also here")],
    )
    out = render_human([d], {"a.hcl": "abc\n"}, color=False)
    assert out.splitlines() == [
        "a.hcl:1:1: error[OS105]: duplicate",
        "1 | abc",
        "  | ^^^",
        "other.hcl:3:1: note: also here",
    ]


def test_gutter_is_as_wide_as_the_largest_line_number() -> None:
    source = "x\n" * 9 + "key = 1\n"
    d = error(
        "OS105",
        "dup",
        Span("a.hcl", 10, 1, 10, 4),
        related=[Related(Span("a.hcl", 1, 1, 1, 2), "first")],
    )
    lines = render_human([d], {"a.hcl": source}, color=False).splitlines()
    assert lines[1:3] == ["10 | key = 1", "   | ^^^"]
    assert lines[4:6] == [" 1 | x", "   | ^"]


def test_empty_input() -> None:
    assert render_human([], {}, color=False) == ""
    assert render_human([], {}, color=True, file_count=3) == "no problems in 3 files\n"


def test_summary_line_counts_and_plurals() -> None:
    span = Span.point("a.hcl")
    diags = [
        error("OS101", "a", span),
        error("OS101", "b", span),
        warning("OS402", "c", span),
        Diagnostic("OS402", "d", span, Severity.NOTE),
    ]
    assert summary_line(diags, 3) == "2 errors, 1 warning, 1 note in 3 files"
    assert summary_line(diags[2:3], 1) == "1 warning in 1 file"
    assert summary_line([], 0) == "no problems in 0 files"


# --- colour decision -----------------------------------------------------------


class FakeStream:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    ("tty", "env", "expected"),
    [
        (True, {}, True),
        (False, {}, False),
        (True, {"NO_COLOR": "1"}, False),
        (True, {"NO_COLOR": ""}, True),
        (False, {"FORCE_COLOR": "1"}, True),
        (False, {"FORCE_COLOR": "0"}, False),
        (True, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False),
        (True, {"TERM": "dumb"}, False),
    ],
)
def test_use_color(tty: bool, env: dict[str, str], expected: bool) -> None:
    assert use_color(FakeStream(tty), env) is expected


def test_use_color_on_a_closed_stream_is_false() -> None:
    stream = io.StringIO()
    stream.close()
    assert use_color(stream, {}) is False


# --- JSON ----------------------------------------------------------------------


def test_json_shape() -> None:
    diags = [*example(), warning("OS402", "unreachable state `x`", Span(FILE, 2, 1, 2, 2))]
    doc = json.loads(render_json(diags))
    assert list(doc) == ["diagnostics", "summary"]
    assert doc["summary"] == {"errors": 2, "warnings": 1, "notes": 0}
    assert [d["code"] for d in doc["diagnostics"]] == ["OS402", "OS105", "OS101"]
    first = doc["diagnostics"][1]
    assert list(first) == ["code", "severity", "message", "span", "related", "suggestion"]
    assert first["related"][0]["span"]["line"] == 1
    assert render_json(diags) == render_json(list(reversed(diags)))


def test_json_empty() -> None:
    assert json.loads(render_json([])) == {
        "diagnostics": [],
        "summary": {"errors": 0, "warnings": 0, "notes": 0},
    }


# --- SARIF ---------------------------------------------------------------------

# A hand-written subset of what SARIF 2.1.0 requires of the parts we emit, and of what GitHub
# code scanning reads from a rule (fullDescription, help; helpUri, optional, only with a
# published address); the official schema is not
# vendored here, and the tests never fetch it.
_REGION = {
    "type": "object",
    "required": ["startLine", "startColumn", "endLine", "endColumn"],
    "properties": {
        key: {"type": "integer", "minimum": 1}
        for key in ("startLine", "startColumn", "endLine", "endColumn")
    },
}
_PHYSICAL = {
    "type": "object",
    "required": ["artifactLocation", "region"],
    "properties": {
        "artifactLocation": {
            "type": "object",
            "required": ["uri"],
            "properties": {"uri": {"type": "string", "pattern": r"^[^\\ ]+$"}},
        },
        "region": _REGION,
    },
}
_MESSAGE = {
    "type": "object",
    "required": ["text"],
    "properties": {"text": {"type": "string", "minLength": 1}},
}
SARIF_SUBSET: dict[str, Any] = {
    "type": "object",
    "required": ["$schema", "version", "runs"],
    "properties": {
        "$schema": {"type": "string", "format": "uri"},
        "version": {"const": "2.1.0"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1,
            "items": {
                "type": "object",
                "required": ["tool", "results"],
                "properties": {
                    "columnKind": {"enum": ["utf16CodeUnits", "unicodeCodePoints"]},
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name", "version", "rules"],
                                "properties": {
                                    "name": {"const": "openseal"},
                                    "version": {"type": "string"},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": [
                                                "id",
                                                "shortDescription",
                                                "fullDescription",
                                                "help",
                                            ],
                                            "properties": {
                                                "id": {"type": "string"},
                                                "shortDescription": _MESSAGE,
                                                "fullDescription": _MESSAGE,
                                                "help": {
                                                    **_MESSAGE,
                                                    "required": ["text", "markdown"],
                                                    "properties": {
                                                        "text": {"type": "string", "minLength": 1},
                                                        "markdown": {
                                                            "type": "string",
                                                            "minLength": 1,
                                                        },
                                                    },
                                                },
                                                "helpUri": {
                                                    "type": "string",
                                                    "pattern": "^https://[^ ]+$",
                                                },
                                            },
                                        },
                                    },
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["ruleId", "level", "message", "locations"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "ruleIndex": {"type": "integer", "minimum": 0},
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "message": _MESSAGE,
                                "locations": {
                                    "type": "array",
                                    "minItems": 1,
                                    "items": {
                                        "type": "object",
                                        "required": ["physicalLocation"],
                                        "properties": {"physicalLocation": _PHYSICAL},
                                    },
                                },
                                "relatedLocations": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "required": ["id", "physicalLocation", "message"],
                                        "properties": {
                                            "id": {"type": "integer", "minimum": 0},
                                            "physicalLocation": _PHYSICAL,
                                            "message": _MESSAGE,
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def sarif(diags: list[Diagnostic]) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(render_sarif(diags, tool_version="1.2.3"))
    jsonschema.validate(doc, SARIF_SUBSET)
    return doc


def test_sarif_subset_schema_rejects_a_broken_log() -> None:
    # Guards the guard: the subset must be strict enough to catch a bad region.
    doc = sarif(example())
    doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SARIF_SUBSET)


def test_sarif_structure_levels_and_regions() -> None:
    diags = [
        *example(),
        warning("OS402", "unreachable", Span(r"defs\sub dir\w.yaml", 3, 1, 4, 2)),
        Diagnostic("OS402", "fyi", Span("a.hcl", 1, 1, 1, 1), Severity.NOTE),
    ]
    doc = sarif(diags)
    assert doc["$schema"] == SARIF_SCHEMA
    run = doc["runs"][0]
    assert run["tool"]["driver"]["version"] == "1.2.3"
    assert run["columnKind"] == "unicodeCodePoints"
    by_message = {r["message"]["text"].split("\n")[0]: r for r in run["results"]}
    assert by_message["unreachable"]["level"] == "warning"
    assert by_message["fyi"]["level"] == "note"
    dup = by_message["duplicate definition name `agent.researcher`"]
    assert dup["level"] == "error"
    assert dup["message"]["text"].endswith("\nhint: rename one of the two agents")
    loc = dup["locations"][0]["physicalLocation"]
    assert loc == {
        "artifactLocation": {"uri": FILE},
        "region": {"startLine": 5, "startColumn": 7, "endLine": 5, "endColumn": 19},
    }
    related = dup["relatedLocations"][0]
    assert related["message"]["text"] == "first defined here"
    assert related["physicalLocation"]["region"]["startLine"] == 1
    windows = by_message["unreachable"]["locations"][0]["physicalLocation"]
    assert windows["artifactLocation"]["uri"] == "defs/sub%20dir/w.yaml"
    assert windows["region"] == {"startLine": 3, "startColumn": 1, "endLine": 4, "endColumn": 2}


def test_sarif_rules_point_where_they_are_told() -> None:
    log = render_sarif(example(), tool_version="1", docs_url="https://docs.example.org/openseal")
    rules = json.loads(log)["runs"][0]["tool"]["driver"]["rules"]
    uri = "https://docs.example.org/openseal/diagnostics.md#codes"
    assert {r["helpUri"] for r in rules} == {uri}
    assert all(uri in r["help"]["text"] and f"]({uri})" in r["help"]["markdown"] for r in rules)


def test_every_code_group_is_described_and_the_docs_page_has_its_codes_anchor() -> None:
    assert {code[2] for code in CODES} <= set(CODE_GROUPS)
    assert "\n## Codes\n" in (ROOT / "docs" / "diagnostics.md").read_text()


def test_sarif_rules_only_for_used_codes_and_indexes_match() -> None:
    doc = sarif(example())
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [(r["id"], r["shortDescription"]["text"]) for r in rules] == [
        ("OS101", CODES["OS101"]),
        ("OS105", CODES["OS105"]),
    ]
    unknown_key = rules[0]
    assert unknown_key["fullDescription"]["text"] == (
        f"OS101 (OS1xx: the definition model): {CODES['OS101']}."
    )
    # no published address yet: no guessed helpUri; the rule's help says where the codes are
    assert DOCS_URL == "" and "helpUri" not in unknown_key
    assert "docs/diagnostics.md" in unknown_key["help"]["text"]
    assert "docs/diagnostics.md" in unknown_key["help"]["markdown"]
    assert "http" not in json.dumps(rules)
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_sarif_clamps_inverted_regions() -> None:
    doc = sarif([error("OS104", "m", Span("a.hcl", 0, 0, 0, 0))])
    region = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1}


def test_sarif_empty_run_is_valid() -> None:
    doc = sarif([])
    assert doc["runs"][0]["results"] == []
    assert doc["runs"][0]["tool"]["driver"]["rules"] == []


# --- GitHub --------------------------------------------------------------------


def test_github_lines_per_severity() -> None:
    span = Span("a.hcl", 2, 3, 2, 8)
    diags = [
        error("OS101", "e", span),
        warning("OS402", "w", span),
        Diagnostic("OS402", "n", span, Severity.NOTE),
    ]
    lines = render_github(diags).splitlines()
    assert sorted(lines) == sorted(
        f"::{kind} file=a.hcl,line=2,col=3,endLine=2,endColumn=8,title={code}::{msg}"
        for kind, code, msg in [
            ("error", "OS101", "e"),
            ("warning", "OS402", "w"),
            ("notice", "OS402", "n"),
        ]
    )


def test_github_escaping() -> None:
    d = error("OS104", "100% sure: a, b\r\nnext", Span("dir,x/a:b.hcl", 1, 1, 1, 2))
    line = render_github([d])
    assert line == (
        "::error file=dir%2Cx/a%3Ab.hcl,line=1,col=1,endLine=1,endColumn=2,title=OS104"
        "::100%25 sure: a, b%0D%0Anext\n"
    )


def test_github_hint_and_notes_become_message_lines() -> None:
    out = render_github(example())
    first = out.splitlines()[0]
    assert first.endswith(
        "::duplicate definition name `agent.researcher`"
        "%0Ahint: rename one of the two agents"
        f"%0Anote: {FILE}:1:7: first defined here"
    )


def test_github_multi_line_span_has_no_columns() -> None:
    out = render_github([error("OS104", "m", Span("a.hcl", 3, 5, 6, 2))])
    assert out == "::error file=a.hcl,line=3,endLine=6,title=OS104::m\n"


def test_github_empty() -> None:
    assert render_github([]) == ""


# --- docs ----------------------------------------------------------------------


def test_docs_list_every_code() -> None:
    docs = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    rows = {
        m.group(1): m.group(2).strip()
        for m in re.finditer(r"^\|\s*`(OS\d{3})`\s*\|([^|]*)\|", docs, re.MULTILINE)
    }
    missing = [code for code in CODES if code not in rows]
    assert not missing, f"docs/diagnostics.md does not list {missing}"
    wrong = {code: rows[code] for code in CODES if rows[code] != CODES[code]}
    assert not wrong, f"docs/diagnostics.md titles differ from CODES: {wrong}"


# --- the cap -------------------------------------------------------------------


def _flood(errors: int, warnings: int) -> list[Diagnostic]:
    out = [warning("OS509", f"w{i}", Span("a.hcl", i + 1, 1, i + 1, 2)) for i in range(warnings)]
    out += [error("OS101", f"e{i}", Span("b.hcl", i + 1, 1, i + 1, 2)) for i in range(errors)]
    return out


def test_capped_keeps_errors_before_warnings_in_file_order() -> None:
    shown, hidden = capped(_flood(errors=3, warnings=5), 4)
    assert hidden == 4
    assert [d.message for d in shown] == ["w0", "e0", "e1", "e2"]
    assert len(capped(_flood(2, 2), 0)[0]) == len(capped(_flood(2, 2), None)[0]) == 4


def test_human_output_is_capped_with_a_summary() -> None:
    text = render_human(_flood(errors=10_000, warnings=0), {}, color=False, file_count=1, limit=3)
    assert text.count("error[OS101]") == 3
    assert text.endswith(
        "... 9997 more diagnostics not shown (showing the first 3)\n\n10000 errors in 1 file\n"
    )
    assert render_human(_flood(2, 0), {}, color=False, limit=2).count("not shown") == 0


def test_github_output_is_capped_with_a_notice() -> None:
    lines = render_github(_flood(errors=5, warnings=0), limit=2).splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == ["::error", "::error", "::notice"]
    assert lines[-1].endswith("::... 3 more diagnostics not shown (showing the first 2)")


def _excerpt_of(source: str, span: Span) -> tuple[str, str]:
    """The source line and the caret line a diagnostic at ``span`` renders, without gutters."""
    d = error("OS104", "bad", span)
    lines = render_human([d], {span.file: source}, color=False).splitlines()
    return lines[1].split(" | ", 1)[1], lines[2].split(" | ", 1)[1]


def test_a_long_line_is_shown_as_a_window_around_the_caret() -> None:
    # Minified YAML: one line holding a whole definition, the mistake far along it.
    pairs = ", ".join(f"k{i}: {i}" for i in range(200))
    source = f"model: {{m: {{provider: scripted, {pairs}, model: 5}}}}\n"
    column = source.index("model: 5") + len("model: ") + 1
    shown, carets = _excerpt_of(source, Span("min.yaml", 1, column, 1, column + 1))
    assert len(shown) <= 122 and shown.startswith("…") and not shown.endswith("…")
    at = carets.index("^")
    assert carets.strip() == "^" and shown[at] == "5"
    assert shown[at - 7 : at] == "model: "  # what comes before the mistake is kept


def test_a_long_span_in_a_long_line_is_underlined_up_to_the_cut() -> None:
    source = "x = " + "a" * 300 + "\n"
    shown, carets = _excerpt_of(source, Span("long.hcl", 1, 5, 1, 305))
    assert not shown.startswith("…") and shown.endswith("…")
    assert shown[carets.index("^")] == "a" and len(carets) == len(shown) - 1


def test_a_short_line_is_shown_whole() -> None:
    source = "a = " + "b" * 100 + "\n"
    shown, carets = _excerpt_of(source, Span("short.hcl", 1, 5, 1, 6))
    assert shown == source.rstrip("\n") and carets == "    ^"
