"""How the store writes and reads JSON and timestamps (openseal.runtime.store.tables.values,
schema): the faster functions give exactly what the standard ones give."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from openseal.runtime.store.db.json_text import compact_json, loads_json
from openseal.runtime.store.tables.schema import UtcTimestamp
from openseal.runtime.store.tables.values import epoch_seconds

VALUES: list[Any] = [
    None,
    True,
    0,
    -7,
    2.5,
    1e300,
    float("nan"),
    float("inf"),
    "plain",
    'é ü \u2028 \x00 "quoted" \\',
    [],
    {},
    {"inputs": {"n": 1}, "states": {"a": [1, 2.0, None, "x"]}, "trail": ["a", "b"]},
    [{"at": "2026-01-01T00:00:00+00:00", "from": "proposed", "to": "admitted"}],
    {1: "integer key", 2.5: "float key", False: "bool key", None: "none key"},
]


@pytest.mark.parametrize("value", VALUES)
def test_compact_json_writes_what_json_dumps_writes(value: Any) -> None:
    # The stored bytes (and the digests over them) must not change.
    assert compact_json(value) == json.dumps(value, separators=(",", ":"))


def test_compact_json_raises_what_json_dumps_raises() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        compact_json({"when": datetime.now(UTC)})
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        compact_json(cycle)
    # A value met twice is no cycle, also after the failures above.
    shared = {"a": 1}
    assert compact_json([shared, shared]) == '[{"a":1},{"a":1}]'


@pytest.mark.parametrize(
    "text",
    ['{"a":1}', "null", '[1,2.5,"x"]', ' {"a":1}', '{"a":1} ', '"\\u00e9"', b'{"a":1}'],
)
def test_loads_json_reads_what_json_loads_reads(text: str | bytes) -> None:
    assert loads_json(text) == json.loads(text)


@pytest.mark.parametrize("text", ["", "{", '{"a":1}x', "\ufeff{}", "nul"])
def test_loads_json_refuses_what_json_loads_refuses(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        loads_json(text)
    assert str(got.value) == str(expected.value)


def test_epoch_seconds_of_any_aware_time() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert epoch_seconds(moment) == moment.timestamp()
    assert epoch_seconds(moment.astimezone(timezone(timedelta(hours=5)))) == moment.timestamp()
    assert epoch_seconds(None) is None
    with pytest.raises(ValueError, match="naive"):
        epoch_seconds(datetime(2026, 1, 1))


def test_epoch_seconds_of_the_same_time_again_and_of_another_in_between() -> None:
    first = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    second = first + timedelta(microseconds=1)
    for moment in (first, first, second, second, None, first, None, None, second):
        assert epoch_seconds(moment) == (None if moment is None else moment.timestamp())


class _Wrapped(sa.types.TypeDecorator[datetime]):
    """UtcTimestamp's conversions through TypeDecorator's own processors."""

    impl = sa.Float(precision=53)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        return UtcTimestamp().process_bind_param(value, dialect)

    def process_result_value(self, value: Any, dialect: Any) -> Any:
        return UtcTimestamp().process_result_value(value, dialect)


@pytest.mark.parametrize("dialect", [sqlite.dialect(), postgresql.psycopg.dialect()])
def test_timestamp_processors_convert_as_typedecorator_does(dialect: Any) -> None:
    ours, wrapped = UtcTimestamp(), _Wrapped()
    bind = ours._cached_bind_processor(dialect)
    expected_bind = wrapped._cached_bind_processor(dialect)
    assert bind is not None and expected_bind is not None
    moment = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    for value in (moment, moment.astimezone(timezone(timedelta(hours=-3))), None):
        assert bind(value) == expected_bind(value)
        assert type(bind(value)) is type(expected_bind(value))
    coltype = None if dialect.name == "sqlite" else 701  # float8
    result = ours._cached_result_processor(dialect, coltype)
    expected_result = wrapped._cached_result_processor(dialect, coltype)
    assert result is not None and expected_result is not None
    for stored in (moment.timestamp(), 0.0, None):
        assert result(stored) == expected_result(stored)
