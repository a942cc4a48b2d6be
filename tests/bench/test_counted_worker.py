"""The workers benchmark's worker process stops rather than be measured on the slower path."""

from __future__ import annotations

import warnings

import pytest
import sqlalchemy as sa

from bench import counted_worker
from openseal.runtime.store.db import fastsql


def test_the_fallback_warning_stops_a_counted_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    # the warning the store really gives, from an internals check that finds a problem
    monkeypatch.setattr(fastsql, "_checked", {})
    monkeypatch.setattr(fastsql, "internals_problems", lambda _dialects: ["something moved"])
    dialect = sa.create_engine("sqlite://").dialect
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        counted_worker.stop_on_fallback()
        with pytest.raises(RuntimeWarning, match=counted_worker.FALLBACK_WARNING):
            fastsql._internals_ok(dialect)
        warnings.warn("another warning", RuntimeWarning, stacklevel=1)  # only that one stops
    assert [str(warning.message) for warning in seen] == ["another warning"]
