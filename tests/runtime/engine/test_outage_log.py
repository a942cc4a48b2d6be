"""While the database is away a worker writes one line per beat, not one per fault."""

from __future__ import annotations

import logging

import pytest

from openseal.runtime.engine.outage import OutageLog

log = logging.getLogger("openseal.test.outage")


def test_faults_within_a_beat_are_one_line_and_the_next_line_counts_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outage = OutageLog(log, interval=0.0)  # every fault may be written: each is its own line
    caplog.set_level(logging.WARNING, log.name)
    outage.fault("heartbeat for 4 runs failed: ConnectionFailure")
    outage.fault("worker w: database error; retrying")
    assert len(caplog.records) == 2

    caplog.clear()
    outage = OutageLog(log, interval=3600.0)  # one beat lasts longer than this test
    for n in range(50):
        outage.fault(f"worker w{n % 8}: database error; retrying")
    assert [r.getMessage() for r in caplog.records] == ["worker w0: database error; retrying"]
    outage.recovered()
    assert caplog.records[-1].getMessage().startswith("the database answers again (after ")
    outage.recovered()  # the outage ended once: no second line
    assert len(caplog.records) == 2


def test_the_line_after_a_beat_says_how_many_faults_it_stands_for(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [100.0]
    monkeypatch.setattr("openseal.runtime.engine.outage.time.monotonic", lambda: now[0])
    caplog.set_level(logging.WARNING, log.name)
    outage = OutageLog(log, interval=10.0)
    for _ in range(7):
        outage.fault("heartbeat for 3 runs failed: ConnectionFailure")
        now[0] += 1.0
    now[0] += 10.0
    outage.fault("heartbeat for 3 runs failed: ConnectionFailure")
    assert [r.getMessage() for r in caplog.records] == [
        "heartbeat for 3 runs failed: ConnectionFailure",
        "heartbeat for 3 runs failed: ConnectionFailure (6 more like it since the last line)",
    ]
