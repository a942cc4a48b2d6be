"""The GitHub Actions workflow in docs/ci.md is a workflow GitHub accepts, as far as a schema
can tell: its events, jobs, permissions and steps validate against :data:`WORKFLOW`.

:data:`WORKFLOW` is a hand-written subset of GitHub's workflow syntax (the keys a workflow and
its jobs and steps may have, and what each must hold), closed at every level so a misspelt key
fails; the community schema is not vendored here and the tests never fetch anything.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

CI_PAGE = Path(__file__).resolve().parents[1] / "docs" / "ci.md"
MARKER = "# .github/workflows/"

_STRING_MAP = {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}}
_EXPRESSION = {"type": "string", "pattern": r"^\$\{\{.*\}\}$"}
_FILTERS = {
    "type": ["object", "null"],
    "additionalProperties": False,
    "properties": {
        key: {"type": "array", "items": {"type": "string"}, "minItems": 1}
        for key in (
            "branches", "branches-ignore", "tags", "tags-ignore", "paths", "paths-ignore", "types",
        )
    },
}  # fmt: skip
_EVENTS = ("pull_request", "pull_request_target", "push", "workflow_dispatch", "release")
_SCOPES = (
    "actions", "attestations", "checks", "contents", "deployments", "discussions", "id-token",
    "issues", "packages", "pages", "pull-requests", "repository-projects", "security-events",
    "statuses",
)  # fmt: skip
_PERMISSIONS = {
    "oneOf": [
        {"enum": ["read-all", "write-all"]},
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {scope: {"enum": ["read", "write", "none"]} for scope in _SCOPES},
        },
    ]
}
_STEP = {
    "type": "object",
    "additionalProperties": False,
    "oneOf": [{"required": ["uses"]}, {"required": ["run"]}],
    "properties": {
        "id": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_-]*$"},
        "name": {"type": "string"},
        "if": {"type": "string"},
        # owner/repository@ref (or a path inside the repository, or a docker image)
        "uses": {"type": "string", "pattern": r"^([\w.-]+/[\w./-]+@[\w.-]+|\./.+|docker://.+)$"},
        "with": _STRING_MAP,
        "run": {"type": "string", "minLength": 1},
        "shell": {"type": "string"},
        "working-directory": {"type": "string"},
        "env": _STRING_MAP,
        "continue-on-error": {"oneOf": [{"type": "boolean"}, _EXPRESSION]},
        "timeout-minutes": {"type": "number", "exclusiveMinimum": 0},
    },
}
_JOB = {
    "type": "object",
    "additionalProperties": False,
    "required": ["runs-on", "steps"],
    "properties": {
        "name": {"type": "string"},
        "if": {"type": "string"},
        "needs": {"type": ["string", "array"]},
        "runs-on": {"type": ["string", "array"]},
        "permissions": _PERMISSIONS,
        "environment": {"type": ["string", "object"]},
        "concurrency": {"type": ["string", "object"]},
        "env": _STRING_MAP,
        "timeout-minutes": {"type": "number", "exclusiveMinimum": 0},
        "steps": {"type": "array", "minItems": 1, "items": _STEP},
    },
}
WORKFLOW: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["on", "jobs"],
    "properties": {
        "name": {"type": "string"},
        "on": {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "properties": {event: _FILTERS for event in _EVENTS},
        },
        "env": _STRING_MAP,
        "permissions": _PERMISSIONS,
        "concurrency": {"type": ["string", "object"]},
        "jobs": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": False,
            "patternProperties": {r"^[A-Za-z_][A-Za-z0-9_-]*$": _JOB},
        },
    },
}


class WorkflowLoader(yaml.SafeLoader):
    """YAML as GitHub reads a workflow: ``on`` is a key, not the boolean YAML 1.1 makes it."""


WorkflowLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
WorkflowLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"), list("tf")
)


def documented_workflow() -> dict[str, Any]:
    text = CI_PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    workflows = [block for block in blocks if block.startswith(MARKER)]
    assert len(workflows) == 1, "docs/ci.md shows one workflow"
    loaded: dict[str, Any] = yaml.load(workflows[0], Loader=WorkflowLoader)
    return loaded


def test_the_documented_workflow_validates() -> None:
    workflow = documented_workflow()
    jsonschema.validate(workflow, WORKFLOW)
    check = workflow["jobs"]["check"]
    uploads = [s for s in check["steps"] if s.get("uses", "").startswith("github/codeql-action")]
    assert uploads and check["permissions"]["security-events"] == "write"
    assert workflow["jobs"]["deploy"]["environment"] == "production"


@pytest.mark.parametrize(
    "break_it",
    [
        lambda w: w["jobs"]["check"]["steps"][0].pop("uses"),  # a step neither runs nor uses
        lambda w: w["jobs"]["check"]["permissions"].update({"security-event": "write"}),
        lambda w: w["jobs"]["deploy"].update({"runs_on": "ubuntu-latest"}),
        lambda w: w["on"].update({"pull-request": None}),
        lambda w: w["jobs"]["check"]["steps"][0].update({"uses": "actions/checkout"}),
    ],
    ids=["no-run-nor-uses", "unknown-permission", "misspelt-key", "unknown-event", "no-ref"],
)
def test_the_schema_catches_a_broken_workflow(break_it: Any) -> None:
    workflow = copy.deepcopy(documented_workflow())
    break_it(workflow)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(workflow, WORKFLOW)
