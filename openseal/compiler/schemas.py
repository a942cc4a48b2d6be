"""JSON Schemas generated from the definition model (committed under ``schemas/``).

``definitions.schema.json`` describes a whole YAML definition file, so editors
with the YAML language server validate and complete definitions; one schema per
kind describes a single definition body.
"""

from __future__ import annotations

import json
from pathlib import Path

from openseal.compiler.model import KIND_MODELS, DefinitionFile

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
    for name, schema in {**definition_schemas(), **(extra or {})}.items():
        path = out_dir / name
        path.write_text(render_schema(schema), encoding="utf-8")
        written.append(path)
    return written
