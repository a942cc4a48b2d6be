"""The workers benchmark's worker process stops rather than be measured on the slower path."""

from __future__ import annotations

import warnings
from pathlib import Path

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


def test_claims_that_took_a_run_are_timed_and_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    class Leases:
        def claim_and_start(self, worker: str, start: object) -> tuple[str, None] | None:
            return (worker, None) if worker != "idle" else None

    monkeypatch.setattr(counted_worker, "_claims", [])
    counted_worker.time_claims(Leases)
    leases = Leases()
    assert leases.claim_and_start("w1", None) == ("w1", None)
    assert leases.claim_and_start("idle", None) is None  # found nothing: not a claim
    assert leases.claim_and_start("w2", None) == ("w2", None)
    monkeypatch.setenv(counted_worker.CLAIMS_ENV, str(tmp_path / "claims"))
    counted_worker._write_claims()
    lines = (tmp_path / "claims").read_text().splitlines()
    assert len(lines) == 2 and all(float(line) >= 0 for line in lines)
