"""The store's records: ``evolve`` builds what ``dataclasses.replace`` builds, for less."""

from __future__ import annotations

import dataclasses
import inspect
from datetime import UTC, datetime

import pytest

from openseal.runtime.statuses import RunStatus
from openseal.runtime.store.tables import records
from openseal.runtime.store.tables.records import (
    Action,
    Proposal,
    RowRecord,
    Run,
    TriggerFiring,
    Turn,
    evolve,
    run_status,
)

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

RECORDS = [
    kind
    for _, kind in inspect.getmembers(records, inspect.isclass)
    if dataclasses.is_dataclass(kind) and kind.__module__ == records.__name__
] + [Action, Proposal, TriggerFiring]


def a_run() -> Run:
    return Run(
        id="r1", objective_id="o1", parent_run_id=None, workflow_digest="d",
        status=RunStatus.RUNNING, current_state="a", waiting=None, paused_from_status=None,
        context={"inputs": {}, "states": {}}, epoch=1, lease_owner="w", lease_expires_at=NOW,
        wake_at=None, last_event_seq=3, stale_writes=0, budget_used={}, revision=2,
        created_at=NOW, updated_at=NOW, scope="default",
    )  # fmt: skip


@pytest.mark.parametrize("kind", RECORDS, ids=lambda kind: kind.__name__)
def test_every_record_is_one_evolve_can_copy(kind: type) -> None:
    """What ``evolve`` and ``from_row`` (through ``assembled``) rely on: ``__init__`` only
    assigns the fields, into ``__dict__``."""
    assert not hasattr(kind, "__post_init__")
    assert not hasattr(kind, "__slots__")
    declared = kind.__dataclass_fields__  # type: ignore[attr-defined]
    assert [f.name for f in dataclasses.fields(kind)] == list(declared)
    assert all(f.init for f in dataclasses.fields(kind))


def test_evolve_gives_what_replace_gives_and_leaves_the_record_alone() -> None:
    run = a_run()
    changes = {"status": RunStatus.SLEEPING, "last_event_seq": 4, "wake_at": NOW}
    evolved = evolve(run, **changes)
    assert evolved == dataclasses.replace(run, **changes)  # type: ignore[arg-type]
    assert type(evolved) is Run and evolved is not run
    assert run.status == RunStatus.RUNNING and run.last_event_seq == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        evolved.status = RunStatus.RUNNING  # type: ignore[misc]
    assert evolve(run) == run


def test_evolve_refuses_a_name_that_is_not_a_field() -> None:
    turn = Turn("t1", "r1", 1, "a", "started", "running", 1, "w", NOW, None, None)
    with pytest.raises(TypeError, match="no field 'phases'"):
        evolve(turn, phases="advanced")


def test_a_row_record_is_read_from_its_columns() -> None:
    row = {"id": "t1", "run_id": "r1", "seq": 1, "state": "a", "phase": "started",
           "status": "running", "epoch": 1, "worker": "w", "started_at": NOW,
           "finished_at": None, "error": None, "extra": "ignored"}  # fmt: skip
    assert Turn.from_row(row) == Turn("t1", "r1", 1, "a", "started", "running", 1, "w", NOW,
                                      None, None)  # fmt: skip


def test_every_row_record_is_among_those_checked() -> None:
    assert set(RowRecord.__subclasses__()) <= set(RECORDS)


def test_a_run_read_from_its_row_is_the_run_its_init_builds() -> None:
    run = a_run()
    row = {**dataclasses.asdict(run), "status": "running", "paused_from_status": "sleeping"}
    read = Run.from_row(row)
    assert read == dataclasses.replace(run, paused_from_status=RunStatus.SLEEPING)
    assert type(read) is Run and read.status is RunStatus.RUNNING
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.epoch = 2  # type: ignore[misc]


def test_run_status_is_the_enums_own_lookup() -> None:
    for status in RunStatus:
        assert run_status(status.value) is status and run_status(status) is status
    with pytest.raises(ValueError, match="not a valid RunStatus"):
        run_status("asleep")
