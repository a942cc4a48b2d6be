"""JSON Schemas generated from the definition model and the compiled contract
(committed under ``schemas/``).

``definitions.schema.json`` describes a whole YAML definition file, so editors
with the YAML language server validate and complete definitions; one schema per
kind describes a single definition body. ``compiled-<kind>.schema.json`` describes
a compiled document; a workflow's graph, each state's settings by kind, and what a
run stores in ``waiting`` and ``context`` come from :mod:`openseal.contract`
(``compiled-graph``, ``run-waiting`` and ``run-context``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from openseal import contract
from openseal.compiler.definitions.specs import KIND_MODELS, DefinitionFile

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def definition_schemas() -> dict[str, dict[str, object]]:
    """File name → JSON Schema, for every schema generated from the model."""
    out: dict[str, dict[str, object]] = {
        "definitions.schema.json": _with_header(
            DefinitionFile.model_json_schema(), "openseal definition file"
        )
    }
    for kind, model in KIND_MODELS.items():
        out[f"{kind}.schema.json"] = _with_header(model.model_json_schema(), f"openseal {kind}")
    return out


def _with_header(schema: dict[str, object], title: str) -> dict[str, object]:
    return {"$schema": SCHEMA_DIALECT, **schema, "title": title}


def render_schema(schema: dict[str, object]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schemas(out_dir: Path, extra: dict[str, dict[str, object]] | None = None) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in {**all_schemas(), **(extra or {})}.items():
        path = out_dir / name
        path.write_text(render_schema(schema), encoding="utf-8")
        written.append(path)
    return written


# --------------------------------------------------------------------------- compiled documents

#: Descriptions the definition model gives its parsed field types; in a compiled
#: document those fields hold canonical JSON, so their schemas are swapped for
#: the AST and type schemas below.
_SERIALISED_AS = {
    "an expression: a literal, a reference, or a string with ${...}": "expression",
    "text with optional ${...} interpolation": "expression",
    "a type constraint, e.g. list(string)": "type",
}

_DIGEST = {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"}
_NAME = {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_-]*$"}
_JSON_SCHEMA = {"type": ["object", "boolean"]}


def _expression_schema() -> dict[str, object]:
    """Canonical expression AST JSON (see ``openseal.compiler.lang.expr.to_json``)."""

    def node(kind: str, **props: object) -> dict[str, object]:
        return {
            "type": "object",
            "properties": {"node": {"const": kind}, **props},
            "required": ["node", *props],
            "additionalProperties": False,
        }

    expr = {"$ref": "#/$defs/expression"}
    many = {"type": "array", "items": expr}
    return {
        "oneOf": [
            node("literal", value={}),
            node("list", items=many),
            node(
                "object",
                items={
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"key": {"type": "string"}, "value": expr},
                        "required": ["key", "value"],
                        "additionalProperties": False,
                    },
                },
            ),
            node(
                "ref",
                root={"type": "string"},
                path={"type": "array", "items": {"type": ["string", "integer"]}},
            ),
            node("index", target=expr, index=expr),
            node("unary", op={"type": "string"}, operand=expr),
            node("binary", op={"type": "string"}, left=expr, right=expr),
            node("conditional", condition=expr, then=expr, **{"else": expr}),
            node("call", name={"type": "string"}, args=many),
            node(
                "template", parts={"type": "array", "items": {"anyOf": [{"type": "string"}, expr]}}
            ),
        ]
    }


def _type_schema() -> dict[str, object]:
    """Canonical type JSON (see ``openseal.compiler.lang.types.to_json``)."""
    t = {"$ref": "#/$defs/type"}
    field = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "type": t,
            "optional": {"type": "boolean"},
            "default": {},
        },
        "required": ["name", "type", "optional", "default"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "type": {
                "enum": ["string", "number", "bool", "any", "list", "map", "set", "tuple", "object"]
            },
            "element": t,
            "elements": {"type": "array", "items": t},
            "fields": {"type": "array", "items": field},
        },
        "required": ["type"],
        "additionalProperties": False,
    }


def _swap_serialised(schema: object) -> object:
    if isinstance(schema, dict):
        target = _SERIALISED_AS.get(str(schema.get("description", "")))
        if target is not None and "properties" not in schema:
            return {"$ref": f"#/$defs/{target}"}
        return {k: _swap_serialised(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_swap_serialised(v) for v in schema]
    return schema


def _obj(properties: dict[str, object], required: list[str] | None = None) -> dict[str, object]:
    return {
        "type": "object",
        "properties": properties,
        "required": sorted(properties) if required is None else required,
        "additionalProperties": False,
    }


def _budget_schema() -> dict[str, object]:
    number_or_null = {"type": ["number", "null"]}
    return _obj(
        {
            "turns": number_or_null,
            "model_calls": number_or_null,
            "tool_calls": number_or_null,
            "tokens": number_or_null,
            "spend": number_or_null,
            "currency": {"type": ["string", "null"]},
            "period": number_or_null,
        }
    )


def _workflow_parts() -> dict[str, object]:
    grant = {
        "type": "object",
        "properties": {
            "actor": {"type": "string"},
            "granted_by": {"type": ["string", "null"]},
            "grantee": {"type": ["string", "null"]},
            "max_risk": {"type": ["string", "null"]},
            "approval": {"type": ["object", "null"]},
            "constraints": {"type": "array", "items": {"$ref": "#/$defs/expression"}},
        },
        "required": ["actor", "granted_by", "grantee"],
        "additionalProperties": False,
    }
    skill = _obj(
        {
            "digest": {"anyOf": [_DIGEST, {"type": "null"}]},
            "effect": {"type": ["string", "null"]},
            "grants": {"type": "array", "items": grant},
        }
    )
    budgets = _obj(
        {
            "workflow": {"$ref": "#/$defs/budget"},
            "owner": {"anyOf": [{"$ref": "#/$defs/budget"}, {"type": "null"}]},
            "on_exhausted": {"enum": ["needs_attention", "failed"]},
        }
    )
    return {
        "graph": {"$ref": "#/$defs/WorkflowGraph"},
        "skills": {"type": "object", "additionalProperties": skill},
        "budgets": budgets,
        "inputs": _JSON_SCHEMA,
        "outputs": _JSON_SCHEMA,
    }


def _runbook_parts() -> dict[str, object]:
    # a step's config is its definition, as the spec declares it (``$defs/Step``)
    step = _obj({"kind": {"enum": ["skill", "builtin"]}, "config": {"$ref": "#/$defs/Step"}})
    names = {"type": "array", "items": {"type": "string"}}
    skill = _obj(
        {"digest": {"anyOf": [_DIGEST, {"type": "null"}]}, "effect": {"type": ["string", "null"]}}
    )
    return {
        "graph": _obj(
            {
                "steps": {"type": "object", "additionalProperties": step},
                "edges": {"type": "array", "items": {**names, "minItems": 2, "maxItems": 2}},
                "levels": {"type": "array", "items": names},
            }
        ),
        "skills": {"type": "object", "additionalProperties": skill},
        "inputs": _JSON_SCHEMA,
        "outputs": _JSON_SCHEMA,
    }


def _kind_parts(kind: str) -> dict[str, object]:
    if kind == "workflow":
        return _workflow_parts()
    if kind == "runbook":
        return _runbook_parts()
    if kind == "skill":
        return {"inputs": _JSON_SCHEMA, "outputs": _JSON_SCHEMA}
    if kind in ("agent", "team"):
        return {"budgets": _obj({kind: {"$ref": "#/$defs/budget"}})}
    return {}


def compiled_document_schema(kind: str) -> dict[str, object]:
    """The JSON Schema of a compiled ``kind`` document (as written by ``emit``)."""
    spec = _swap_serialised(KIND_MODELS[kind].model_json_schema(mode="serialization"))
    assert isinstance(spec, dict)
    defs = dict(spec.pop("$defs", {}))
    defs.update(expression=_expression_schema(), type=_type_schema(), budget=_budget_schema())
    if kind == "workflow":
        graph = contract_defs("WorkflowGraph")
        assert not set(graph) & set(defs), "a contract shape is named like a definition model"
        defs.update(graph)
    properties: dict[str, object] = {
        "apiVersion": {"const": "openseal/v1"},
        "kind": {"const": kind},
        "name": _NAME,
        "spec": spec,
        "dependencies": {"type": "object", "additionalProperties": _DIGEST},
        **_kind_parts(kind),
    }
    return {
        "$schema": SCHEMA_DIALECT,
        "title": f"openseal compiled {kind}",
        "type": "object",
        "properties": properties,
        "required": sorted(properties),
        "additionalProperties": False,
        "$defs": defs,
    }


# --------------------------------------------------------------------------- the contract

#: schema file → (title, the shape of :mod:`openseal.contract` it describes)
CONTRACT_FILES = {
    "compiled-graph.schema.json": ("openseal compiled workflow graph", "WorkflowGraph"),
    "run-waiting.schema.json": ("openseal run waiting record", "Waiting"),
    "run-context.schema.json": ("openseal run context", "RunContext"),
}


def contract_defs(root: str) -> dict[str, Any]:
    """The ``$defs`` of one of :mod:`openseal.contract`'s shapes (named ``root`` among them).

    Generated from the TypedDicts; every object is closed (``additionalProperties: false``),
    so a key the contract does not declare fails validation. A graph's state entry is a
    union tagged by ``kind``, each kind with its own settings (``STATE_SETTINGS``).
    """
    shapes: list[tuple[str, Any]] = [(root, getattr(contract, root))]
    if root == "WorkflowGraph":
        shapes += [(kind, shape) for kind, shape in contract.STATE_SETTINGS.items()]
    found, top = TypeAdapter.json_schemas(
        [(name, "serialization", TypeAdapter(shape)) for name, shape in shapes]
    )
    defs: dict[str, Any] = dict(top.get("$defs", {}))
    defs.setdefault(root, found[(root, "serialization")])  # a union has no $def of its own
    if root == "WorkflowGraph":
        entry = defs["StateEntry"]
        defs["StateEntry"] = {
            "description": entry["description"],
            "oneOf": [
                {
                    **entry,
                    "properties": {
                        **entry["properties"],
                        "kind": {"const": kind},
                        "config": found[(kind, "serialization")],
                    },
                }
                for kind in contract.STATE_SETTINGS
            ],
        }
    swapped = _closed(_swap_markers(defs))
    assert isinstance(swapped, dict)
    return swapped


def _swap_markers(schema: object) -> object:
    """The contract marks expressions and types (``x-openseal-ref``); point them at ``$defs``."""
    if isinstance(schema, dict):
        target = schema.get(contract.SCHEMA_REF)
        if target is not None:
            return {"$ref": f"#/$defs/{target}"}
        return {k: _swap_markers(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_swap_markers(v) for v in schema]
    return schema


def _closed(schema: object) -> object:
    """Every object schema with declared properties admits no other key."""
    if isinstance(schema, dict):
        out = {k: _closed(v) for k, v in schema.items()}
        if "properties" in out and out.get("type") == "object":
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(schema, list):
        return [_closed(v) for v in schema]
    return schema


def contract_schemas() -> dict[str, dict[str, object]]:
    """File name → JSON Schema of the compiled graph, a waiting record and a run context."""
    out: dict[str, dict[str, object]] = {}
    for name, (title, root) in CONTRACT_FILES.items():
        defs = contract_defs(root)
        if root == "WorkflowGraph":
            defs.update(expression=_expression_schema(), type=_type_schema())
        out[name] = {"$schema": SCHEMA_DIALECT, "title": title, "$ref": f"#/$defs/{root}",
                     "$defs": defs}  # fmt: skip
    return out


def manifest_schema() -> dict[str, object]:
    """The JSON Schema of a bundle's ``manifest.json``."""
    entry = _obj(
        {
            "kind": {"enum": list(KIND_MODELS)},
            "name": _NAME,
            "digest": _DIGEST,
            "path": {"type": "string", "pattern": r"^[a-z]+/[A-Za-z_][A-Za-z0-9_-]*\.json$"},
        }
    )
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "openseal bundle manifest",
        **_obj(
            {
                "apiVersion": {"const": "openseal/v1"},
                "compiler": _obj({"name": {"const": "openseal"}, "version": {"type": "string"}}),
                "definitions": {"type": "object", "additionalProperties": entry},
                "sources": {"type": "object", "additionalProperties": _DIGEST},
            }
        ),
    }


def compiled_schemas() -> dict[str, dict[str, object]]:
    """File name → JSON Schema for compiled documents (one per kind), the bundle manifest, and
    the compiled contract's graph, waiting records and run context."""
    out = {f"compiled-{kind}.schema.json": compiled_document_schema(kind) for kind in KIND_MODELS}
    out["bundle-manifest.schema.json"] = manifest_schema()
    out.update(contract_schemas())
    return out


def all_schemas() -> dict[str, dict[str, object]]:
    """Every schema committed under ``schemas/``."""
    return {**definition_schemas(), **compiled_schemas()}
