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


def test_waits_ended_by_a_wake_up_naming_a_run_are_counted_and_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from openseal.runtime.store.db.work_signal import WorkSignal

    monkeypatch.setattr(counted_worker, "_wakes", [0])
    monkeypatch.setattr(WorkSignal, "wait", WorkSignal.wait)  # put back after the test
    counted_worker.count_wakes(WorkSignal)
    signal = WorkSignal()
    signal.broadcast()
    assert signal.wait(0, since=0).run_id is None  # woken, for no run: not counted
    signal._waiting = 1  # one idle thread, as far as the offer can tell
    signal.offer(["r1"])
    assert signal.wait(0).run_id == "r1"
    monkeypatch.setenv(counted_worker.WAKES_ENV, str(tmp_path / "wakes"))
    counted_worker._write_wakes()
    assert (tmp_path / "wakes").read_text() == "1"
