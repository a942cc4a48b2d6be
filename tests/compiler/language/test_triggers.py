"""Trigger definitions: both syntaxes, one digest; located errors for what cannot fire."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.pipeline import compile_paths
from tests.compiler.compile_support import compile_texts, project_text, write_project

TRIGGERS_HCL = """
trigger "hourly" {
  workflow = workflow.answer
  schedule {
    cron      = "0 * * * MON-FRI"
    time_zone = "Europe/Berlin"
  }
  input    = { question = "what changed at ${trigger.occurrence}?" }
  overlap  = "queue"
  catch_up = "all"
  catch_up_limit = 3
}

trigger "asked" {
  workflow = workflow.answer
  event {
    name   = "question.asked"
    filter = payload.urgent && event.name == "question.asked"
  }
  input = { question = payload.text }
}
"""

TRIGGERS_YAML = """
trigger:
  hourly:
    workflow: workflow.answer
    schedule: {cron: 0 * * * MON-FRI, time_zone: Europe/Berlin}
    input: {question: "what changed at ${trigger.occurrence}?"}
    overlap: queue
    catch_up: all
    catch_up_limit: 3
  asked:
    workflow: workflow.answer
    event:
      name: question.asked
      filter: ${payload.urgent && event.name == "question.asked"}
    input: {question: "${payload.text}"}
"""


def test_a_trigger_compiles_to_one_digest_in_both_syntaxes(tmp_path: Path) -> None:
    hcl = compile_texts(tmp_path / "hcl", {"p.hcl": project_text(), "triggers.hcl": TRIGGERS_HCL})
    yaml = compile_texts(
        tmp_path / "yaml", {"p.hcl": project_text(), "triggers.yaml": TRIGGERS_YAML}
    )
    for key in ("trigger.hourly", "trigger.asked"):
        assert hcl.documents[key].digest == yaml.documents[key].digest
    document = hcl.documents["trigger.hourly"].document
    assert document["kind"] == "trigger"
    assert document["spec"]["schedule"] == {
        "cron": "0 * * * MON-FRI",
        "time_zone": "Europe/Berlin",
        "every": None,
    }
    assert document["spec"]["workflow"] == "workflow.answer"
    # the workflow version it was checked against is named by digest
    assert set(document["dependencies"]) == {"workflow.answer"}


def _errors(tmp_path: Path, trigger: str) -> list[tuple[str, int, int, str]]:
    root = write_project(tmp_path, {"p.hcl": project_text(), "t.hcl": trigger})
    result = compile_paths([root])
    assert not result.ok
    return [
        (d.code, d.span.line, d.span.column, d.message)
        for d in result.diagnostics
        if d.span.file.endswith("t.hcl")
    ]


@pytest.mark.parametrize(
    ("trigger", "code", "line", "column", "fragment"),
    [
        (
            'trigger "t" {\n  workflow = workflow.answer\n'
            '  schedule { cron = "61 * * * *" }\n  input = { question = "x" }\n}\n',
            "OS104",
            3,
            21,
            "is not a cron expression",
        ),
        (
            'trigger "t" {\n  workflow = workflow.answer\n'
            '  schedule {\n    cron = "0 * * * *"\n    time_zone = "Mars/Olympus"\n  }\n'
            '  input = { question = "x" }\n}\n',
            "OS104",
            5,
            17,
            "is not an IANA time zone",
        ),
        (
            'trigger "t" {\n  workflow = workflow.anwser\n  schedule { every = "1h" }\n}\n',
            "OS201",
            2,
            14,
            "`workflow.anwser` is not defined",
        ),
        (
            'trigger "t" {\n  workflow = workflow.answer\n'
            '  schedule { every = "1h" }\n  input = { question = 42 }\n}\n',
            "OS301",
            4,
            24,  # the value, where it is written
            "input `question` expects string",
        ),
        (
            'trigger "t" {\n  workflow = workflow.answer\n'
            '  schedule { every = "1h" }\n  input = { question = "x", colour = "red" }\n}\n',
            "OS302",
            4,
            39,
            "has no input `colour`",
        ),
        (
            'trigger "t" {\n  workflow = workflow.answer\n  schedule { every = "1h" }\n}\n',
            "OS301",
            2,
            14,
            "needs input `question`, which the trigger does not map",
        ),
        (
            'trigger "t" {\n  workflow = workflow.answer\n'
            '  event {\n    name = "e"\n    filter = payload.n + 1\n  }\n'
            "  input = { question = payload.q }\n}\n",
            "OS301",
            5,
            14,
            "the filter expects bool",
        ),
        (
            'trigger "t" {\n  workflow = workflow.answer\n'
            '  schedule { every = "1h" }\n  input = { question = payload.q }\n}\n',
            "OS201",
            4,
            24,
            "`payload` is not available in a schedule trigger",
        ),
        (
            'trigger "t" {\n  workflow = runbook.tidy\n  schedule { every = "1h" }\n}\n',
            "OS202",
            2,
            14,
            "is a runbook",
        ),
        (
            'trigger "t" {\n  workflow = workflow.answer\n  input = { question = "x" }\n}\n',
            "OS104",
            1,
            1,
            "either a `schedule` or an `event`",
        ),
    ],
)
def test_trigger_errors_are_located(
    tmp_path: Path, trigger: str, code: str, line: int, column: int, fragment: str
) -> None:
    found = _errors(tmp_path, trigger)
    assert any(
        (c, ln, col) == (code, line, column) and fragment in message
        for c, ln, col, message in found
    ), found
