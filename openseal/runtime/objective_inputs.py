"""A workflow's inputs, ready for the version a new run pins: defaults filled in, types checked.

Used when an objective is started by a caller (``service.create_objective``) and by a trigger,
in the transaction that pins the version, so an activation in between cannot pin a version the
inputs do not fit.
"""

from __future__ import annotations

from typing import Any

import jsonschema

from openseal.errors import InvalidInput
from openseal.runtime.store import DefinitionVersion

#: input validators by workflow digest: a version's input schema never changes
_validators: dict[str, jsonschema.Draft202012Validator] = {}


def prepare_inputs(
    workflow: str, inputs: dict[str, Any], version: DefinitionVersion
) -> dict[str, Any]:
    """``inputs`` with the version's defaults; raises ``InvalidInput`` when they do not fit."""
    schema = version.document.get("inputs") or {}
    assert isinstance(schema, dict)
    filled = _with_defaults(inputs, schema)
    _check_inputs(workflow, filled, schema, version.digest)
    return filled


def _with_defaults(inputs: dict[str, Any], input_schema: dict[str, Any]) -> dict[str, Any]:
    filled = dict(inputs)
    for name, prop in (input_schema.get("properties") or {}).items():
        if name not in filled and isinstance(prop, dict) and "default" in prop:
            filled[name] = prop["default"]
    return filled


def _check_inputs(
    workflow: str, inputs: dict[str, Any], input_schema: dict[str, Any], digest: str
) -> None:
    if not input_schema:
        return
    validator = _validators.get(digest)
    if validator is None:
        validator = _validators[digest] = jsonschema.Draft202012Validator(input_schema)
    errors = sorted(validator.iter_errors(inputs), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.absolute_path) or "inputs"
        raise InvalidInput(f"invalid input for {workflow}: {where}: {first.message}")
