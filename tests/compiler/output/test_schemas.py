"""The committed ``schemas/`` are exactly what the code generates, and they validate output."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from openseal.compiler.output.schemas import (
    all_schemas,
    compiled_schemas,
    definition_schemas,
    render_schema,
)
from openseal.compiler.pipeline import compile_paths

ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = ROOT / "schemas"
FIX = "run `openseal schema --out schemas/` (or `make schemas`) and commit the result"


def test_every_generated_schema_is_committed_unchanged() -> None:
    for name, schema in all_schemas().items():
        path = SCHEMAS / name
        assert path.is_file(), f"schemas/{name} is missing; {FIX}"
        assert path.read_text(encoding="utf-8") == render_schema(schema), (
            f"schemas/{name} drifted from the code; {FIX}"
        )


def test_no_stale_schema_is_committed() -> None:
    committed = {p.name for p in SCHEMAS.glob("*.json")}
    assert committed == set(all_schemas()), f"unexpected or missing files in schemas/; {FIX}"


def test_all_schemas_cover_definitions_and_compiled_documents() -> None:
    assert set(definition_schemas()) <= set(all_schemas())
    assert "compiled-workflow.schema.json" in compiled_schemas()
    assert "bundle-manifest.schema.json" in compiled_schemas()
    for schema in all_schemas().values():
        jsonschema.Draft202012Validator.check_schema(schema)


@pytest.fixture(scope="module")
def compiled() -> dict[str, dict[str, object]]:
    result = compile_paths([ROOT / "definitions"])
    assert result.ok
    return {key: doc.document for key, doc in result.documents.items()}


def test_compiled_examples_validate(compiled: dict[str, dict[str, object]]) -> None:
    schemas = compiled_schemas()
    kinds = set()
    for document in compiled.values():
        kinds.add(document["kind"])
        jsonschema.validate(document, schemas[f"compiled-{document['kind']}.schema.json"])
    assert {"model", "skill", "agent", "team", "binding", "workflow", "runbook"} <= kinds


@pytest.mark.parametrize(
    ("key", "path", "bad"),
    [
        ("workflow.procure_laptops", ("graph", "transitions", 0, "guard"), {"node": "nope"}),
        ("workflow.procure_laptops", ("dependencies", "skill.search_vendors"), "sha1:abc"),
        ("skill.search_vendors", ("spec", "input"), "object({ q = string })"),
        ("skill.search_vendors", ("spec", "effect"), "omnipotent"),
        ("agent.buyer", ("apiVersion",), "openseal/v0"),
        ("runbook.vendor_quotes", ("graph", "steps", "approved", "config", "retries"), 3),
        ("runbook.vendor_quotes", ("graph", "steps", "approved", "config", "timeout"), "soon"),
    ],
)
def test_schemas_reject_malformed_documents(
    compiled: dict[str, dict[str, object]], key: str, path: tuple[object, ...], bad: object
) -> None:
    document = copy.deepcopy(compiled[key])
    node: object = document
    for part in path[:-1]:
        node = node[part]  # type: ignore[index]
    node[path[-1]] = bad  # type: ignore[index]
    schema = compiled_schemas()[f"compiled-{document['kind']}.schema.json"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(json.dumps(document)), schema)
