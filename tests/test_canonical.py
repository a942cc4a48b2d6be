"""The canonical-JSON fast path writes exactly what rfc8785 writes."""

from __future__ import annotations

import json
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from openseal import canonical
from openseal.canonical import canonical_bytes
from openseal.errors import CompileError

# Characters where the two writers could differ: controls, quote, backslash,
# DEL, the JavaScript line separators, BMP characters above the surrogates
# (which sort differently in UTF-16 against astral ones), astral characters,
# and lone surrogates.
_TRICKY = st.sampled_from(
    [
        *(chr(i) for i in range(0x20)),
        '"',
        "\\",
        "/",
        "\x7f",
        "\u2028",
        "\u2029",
        "\ue000",
        "\uffff",
        "\U0001f600",
        "\U00010000",
        "\ud800",
        "\udfff",
        "é",
        "a",
    ]
)
_TEXT = st.text(st.one_of(st.characters(), _TRICKY), max_size=12)
_NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e17, max_value=1e17).map(float.__floor__).map(float),
    st.sampled_from([0.0, -0.0, 1e-4, 9.99e-5, 1e16, 1e16 - 2, 2.0**53, 0.5, 1e21, 5e-324]),
)
_SCALARS = st.one_of(st.none(), st.booleans(), _NUMBERS, _TEXT)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(_TEXT, inner, max_size=4),
    ),
    max_leaves=24,
)


def _reference(value: Any) -> bytes | None:
    """rfc8785's bytes, or ``None`` where it refuses the value."""
    try:
        return bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, TypeError, ValueError):
        return None


def _ours(value: Any) -> bytes | None:
    try:
        return canonical_bytes(value)
    except CompileError:
        return None


@settings(max_examples=600, deadline=None)
@given(_VALUES)
def test_canonical_bytes_equal_rfc8785(value: Any) -> None:
    assert _ours(value) == _reference(value)


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_the_fast_path_is_taken_only_where_it_equals_rfc8785(value: Any) -> None:
    # Checked on the fast path alone, so a fallback cannot hide a difference.
    try:
        fast = canonical._fast_bytes(canonical._plain(value))
    except canonical._NotPlain:
        return
    assert fast == _reference(value)


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_a_value_encoded_unchanged_is_one_plain_would_not_change(value: Any) -> None:
    # The fast path skips _plain's copy only where the copy would write the same bytes.
    if not canonical._unchanged(value):
        return
    try:
        fast = canonical._fast_bytes(value)
    except canonical._NotPlain:  # a lone surrogate: rfc8785 decides, as after _plain
        with pytest.raises(canonical._NotPlain):
            canonical._fast_bytes(canonical._plain(value))
        return
    assert fast == canonical._fast_bytes(canonical._plain(value)) == _reference(value)


@pytest.mark.parametrize(
    "value",
    [
        {"b": 1, "a": [10.0, 0.5, -0.0, True, None]},
        {"\ue000": 1, "\U0001f600": 2},  # astral key: rfc8785's UTF-16 order
        {"s": '\x00\x1f\x7f\u2028"\\/'},
        [1e21, 1e-7, 2.0**60, 123.456],
    ],
)
def test_examples_equal_rfc8785(value: Any) -> None:
    assert canonical_bytes(value) == bytes(rfc8785.dumps(value))


def test_documents_the_fast_path_serves() -> None:
    # A document of strings, safe integers and whole floats never needs rfc8785.
    document: Any = {"timeout": 10.0, "name": "é\n", "items": [1, (2, 3)], "ok": True, "x": None}
    assert canonical._fast_bytes(canonical._plain(document)) == bytes(rfc8785.dumps(document))


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), 2**60, "\ud800", {"\ud800": 1}, {1: 2}, object()]
)
def test_values_rfc8785_refuses_are_still_refused(value: object) -> None:
    with pytest.raises(CompileError, match="canonical JSON"):
        canonical_bytes({"x": value})


@pytest.mark.parametrize("value", [float("nan"), 2**60, "\ud800", {1: 2}, object()])
def test_the_runtimes_canonical_bytes_refuse_as_rfc8785_does(value: object) -> None:
    with pytest.raises(Exception) as theirs:
        rfc8785.dumps({"x": value})
    with pytest.raises(type(theirs.value)):
        canonical.rfc8785_bytes({"x": value})


@settings(max_examples=200, deadline=None)
@given(_VALUES)
def test_the_runtimes_canonical_bytes_equal_rfc8785(value: Any) -> None:
    try:
        ours: bytes | None = canonical.rfc8785_bytes(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError):
        ours = None
    assert ours == _reference(value)


def test_output_reads_back_as_json() -> None:
    document = {"a": [1, 2.5, {"b": "c"}]}
    assert json.loads(canonical_bytes(document)) == document
