"""The GitHub Actions workflow in docs/ci.md is a workflow GitHub accepts, as far as a schema
can tell: it validates against the community schema of Actions workflows, which the test extra's
check-jsonschema ships (nothing is fetched), and every action it uses names a ref.
"""

from __future__ import annotations

import copy
import json
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

CI_PAGE = Path(__file__).resolve().parents[1] / "docs" / "ci.md"
MARKER = "# .github/workflows/"


def workflow_schema() -> dict[str, Any]:
    """The community schema of GitHub Actions workflows, as check-jsonschema ships it."""
    vendor = files("check_jsonschema.builtin_schemas.vendor")
    schema: dict[str, Any] = json.loads((vendor / "github-workflows.json").read_text("utf-8"))
    return schema


def problems(workflow: dict[str, Any]) -> list[str]:
    """What GitHub would refuse in ``workflow``: the schema's errors, and a step that uses an
    action without a ref (the schema admits it; GitHub refuses to run it)."""
    schema = workflow_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    found = [error.message for error in validator.iter_errors(workflow)]
    for job in workflow.get("jobs", {}).values():
        for step in job.get("steps", []):
            uses = step.get("uses", "")
            if uses and not uses.startswith(("./", "docker://")) and "@" not in uses:
                found.append(f"{uses!r} names no ref")
    return found


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
    assert problems(workflow) == []
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
    assert problems(workflow)
