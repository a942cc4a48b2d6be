"""Parts of pinned documents (stored expressions, skill specs) are decoded once, by identity."""

from __future__ import annotations

from typing import Any

import pytest

from openseal.compiler.lang import expr as ex
from openseal.compiler.syntax.spans import Span
from openseal.runtime.compiled import ByIdentity, DefinitionError, evaluate_json


def test_the_same_part_is_decoded_once_and_an_equal_new_one_again() -> None:
    decoded: list[Any] = []

    def decode(part: dict[str, int]) -> int:
        decoded.append(part)
        return part["n"] * 2

    by_identity = ByIdentity(decode)
    part = {"n": 2}
    assert by_identity(part) == 4 and by_identity(part) == 4
    assert decoded == [part]
    other = {"n": 2}  # equal content, another object: decoded on its own
    assert by_identity(other) == 4
    assert len(decoded) == 2 and decoded[1] is other


def test_the_cache_starts_again_at_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ByIdentity, "LIMIT", 2)
    calls: list[object] = []
    by_identity = ByIdentity(lambda part: calls.append(part) or len(calls))
    first, second, third = object(), object(), object()
    by_identity(first)
    by_identity(second)
    by_identity(third)  # the limit is reached: the cache holds only this one now
    by_identity(third)
    by_identity(first)
    assert calls == [first, second, third, first]


def test_a_part_that_cannot_be_decoded_is_refused_every_time() -> None:
    broken = {"node": "no_such_node"}
    for _ in range(2):
        with pytest.raises(DefinitionError, match="malformed"):
            evaluate_json(broken, {})


def test_a_stored_expression_evaluates_in_each_scope_it_is_given() -> None:
    expression, _ = ex.parse_expression("input.n", Span.point("<test>"))
    node = ex.to_json(expression)
    assert evaluate_json(node, {"input": {"n": 1}}) == 1
    assert evaluate_json(node, {"input": {"n": 2}}) == 2
