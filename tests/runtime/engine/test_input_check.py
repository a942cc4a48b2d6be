"""An objective's inputs: the plain check accepts only what jsonschema accepts."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openseal.errors import InvalidInput
from openseal.runtime.engine import objectives
from openseal.runtime.engine.objectives import fit_inputs

USUAL = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "n": {"type": "number"},
        "name": {"type": "string", "description": "who"},
        "loud": {"type": "boolean", "default": False},
        "count": {"type": "integer"},
    },
    "required": ["n", "name"],
    "additionalProperties": False,
}
#: one the plain check does not read: jsonschema alone decides
NESTED = {
    **USUAL,
    "properties": {**USUAL["properties"], "tags": {"type": "array", "items": {"type": "string"}}},
}

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3)
)
_VALUES = st.one_of(_SCALARS, st.lists(_SCALARS, max_size=2))
_INPUTS = st.dictionaries(
    st.sampled_from(["n", "name", "loud", "count", "tags", "other"]), _VALUES, max_size=5
)


@settings(max_examples=400, deadline=None)
@given(_INPUTS, st.sampled_from([USUAL, NESTED]))
def test_the_plain_check_accepts_only_what_jsonschema_accepts(
    inputs: dict[str, Any], schema: dict[str, Any]
) -> None:
    if objectives._plainly_fit(inputs, schema):
        jsonschema.validate(inputs, schema)


def test_the_plain_check_serves_the_usual_inputs() -> None:
    assert objectives._plainly_fit({"n": 1.5, "name": "a", "loud": True, "count": 3}, USUAL)
    assert not objectives._plainly_fit({"n": 1, "name": "a", "tags": []}, NESTED)


@pytest.mark.parametrize(
    ("inputs", "where"),
    [
        ({"n": True, "name": "a"}, "n: True is not of type 'number'"),
        ({"name": "a"}, "inputs: 'n' is a required property"),
        ({"n": 1, "name": "a", "other": 1}, "Additional properties are not allowed"),
    ],
)
def test_inputs_that_do_not_fit_are_refused_with_jsonschemas_reason(
    inputs: dict[str, Any], where: str
) -> None:
    with pytest.raises(InvalidInput, match=f"invalid input for w: .*{where}"):
        fit_inputs("w", inputs, {"inputs": USUAL}, "sha256:usual")
