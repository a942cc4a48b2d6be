"""The store's records: ``evolve`` builds what ``dataclasses.replace`` builds, for less."""

from __future__ import annotations

import dataclasses
import inspect
from datetime import UTC, datetime

import pytest

from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import records
from openseal.runtime.store.actions import Action
from openseal.runtime.store.records import Run, Turn, evolve

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

RECORDS = [
    kind
    for _, kind in inspect.getmembers(records, inspect.isclass)
    if dataclasses.is_dataclass(kind) and kind.__module__ == records.__name__
] + [Action]


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
    """What ``evolve`` relies on: ``__init__`` only assigns the fields, into ``__dict__``."""
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
