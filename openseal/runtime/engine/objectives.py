"""Starting an objective, with a workflow's inputs ready for the version its run pins.

Inputs get the version's defaults and are checked against its types in the transaction that
pins the version, so an activation in between cannot pin a version the inputs do not fit.
Used when a caller starts an objective (:func:`create_objective`, also what
``Engine.submit`` runs) and by a trigger (:func:`prepare_inputs`).
"""

from __future__ import annotations

from typing import Any

import jsonschema

from openseal.errors import InvalidInput
from openseal.runtime.access import Forbidden
from openseal.runtime.caller import Caller
from openseal.runtime.engine import door, quotas
from openseal.runtime.requests import StartObjective
from openseal.runtime.store import DefinitionVersion, NewObjective, Store

#: input validators by workflow digest: a version's input schema never changes
_validators: dict[str, jsonschema.Draft202012Validator] = {}


def prepare_inputs(
    workflow: str, inputs: dict[str, Any], version: DefinitionVersion
) -> dict[str, Any]:
    """``inputs`` with the version's defaults; raises ``InvalidInput`` when they do not fit."""
    return fit_inputs(workflow, inputs, version.document, version.digest)


def fit_inputs(
    workflow: str, inputs: dict[str, Any], document: dict[str, Any], digest: str
) -> dict[str, Any]:
    """``inputs`` with the defaults of compiled workflow ``document`` (version ``digest``);
    raises ``InvalidInput`` when they do not fit. A retry run, which may pin a newer version
    than its objective's first run, is checked with this when it starts."""
    schema = document.get("inputs") or {}
    assert isinstance(schema, dict)
    filled = _with_defaults(inputs, schema)
    _check_inputs(workflow, filled, schema, digest)
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
    if not input_schema or _plainly_fit(inputs, input_schema):
        return
    validator = _validators.get(digest)
    if validator is None:
        validator = _validators[digest] = jsonschema.Draft202012Validator(input_schema)
    errors = sorted(validator.iter_errors(inputs), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.absolute_path) or "inputs"
        raise InvalidInput(f"invalid input for {workflow}: {where}: {first.message}")


#: the Python types whose values surely are of a JSON Schema type (a whole float is an
#: ``integer`` too, and other number types may be numbers: those are left to jsonschema)
_PLAIN_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
}
_INPUTS_KEYWORDS = frozenset({"$schema", "type", "properties", "required", "additionalProperties"})
_PROPERTY_KEYWORDS = frozenset({"type", "description", "default"})


def _plainly_fit(inputs: dict[str, Any], input_schema: dict[str, Any]) -> bool:
    """Whether ``inputs`` surely fit an input schema of named strings, numbers and booleans
    (the usual one), checked without jsonschema, which costs more than the rest of starting
    an objective; False also when the schema says more than this reads: jsonschema decides
    then, and says why inputs do not fit."""
    if (
        not _INPUTS_KEYWORDS.issuperset(input_schema)
        or input_schema.get("type") != "object"
        or input_schema.get("additionalProperties") is not False
    ):
        return False
    properties = input_schema.get("properties") or {}
    if any(name not in inputs for name in input_schema.get("required") or ()):
        return False
    for name, value in inputs.items():
        schema = properties.get(name)
        if not isinstance(schema, dict) or not _PROPERTY_KEYWORDS.issuperset(schema):
            return False
        if type(value) not in _PLAIN_TYPES.get(str(schema.get("type")), ()):
            return False
    return True


def create_objective(
    store: Store,
    request: StartObjective,
    caller: Caller,
    *,
    write_run: bool = True,
    refuse_in_recovery: bool = False,
) -> NewObjective:
    """Start a workflow (its active version) with inputs checked against its input types.

    The inputs are checked against the very version the run pins, in the transaction that
    pins it, and so is that the workflow is deployed (``not_deployed`` otherwise). The same
    ``request_key`` from the same principal again returns the objective it created. The
    objective records who asked for it, and lives in ``request.scope`` (a scope the caller may
    act in) or the caller's own. ``write_run`` False leaves a new objective's first run for
    the caller's claim to write, and ``refuse_in_recovery`` creates nothing while the store is
    in recovery mode (``store.objectives.create``)."""
    workflow = request.workflow
    scope = caller.grant.home(request.scope)
    if scope is None:
        raise Forbidden(f"you may not create objectives in scope {request.scope!r}")

    def prepare(version: DefinitionVersion) -> dict[str, Any]:
        if not request.draft:  # a draft starts no run until it is activated
            door.check_version(store, workflow, version)
            quotas.check_door(store, scope)
        return prepare_inputs(workflow, request.inputs, version)

    return store.objectives.create(
        request.project, workflow, request.inputs, request_key=request.request_key,
        actor=caller.actor, scope=scope, prepare=prepare, goal=request.goal,
        priority=request.priority, draft=request.draft, write_run=write_run,
        refuse_in_recovery=refuse_in_recovery,
    )  # fmt: skip
