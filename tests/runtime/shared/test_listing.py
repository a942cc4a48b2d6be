"""Every list: newest first, a cursor (``after``), ``since``, ``workflow`` and ``status``, the
same through the service for runs, objectives, approvals, actions and change proposals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from openseal.errors import UsageError
from openseal.runtime import service
from openseal.runtime.listing import parse_since
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import flow, simulator_fixture  # noqa: F401
from tests.runtime.support import DOCUMENT, WORKFLOW, deploy, digest_of

OTHER = "other_flow"


def _two_workflows(store: Store) -> tuple[list[str], list[str]]:
    """Five runs of WORKFLOW and two of OTHER, interleaved; their run ids in creation order."""
    deploy(store)
    other = {**DOCUMENT, "name": OTHER}
    store.definitions.put(digest_of(other), "workflow", OTHER, other)
    store.definitions.activate(OTHER, digest_of(other), "user:a")
    mine, theirs = [], []
    for i in range(7):
        name = OTHER if i in (2, 5) else WORKFLOW
        created = store.objectives.create("acme", name, {"n": i}, actor="u")
        (theirs if name == OTHER else mine).append(created.run.id)
    return mine, theirs


def test_runs_newest_first_paged_by_cursor_and_filtered(store: Store) -> None:
    mine, theirs = _two_workflows(store)
    everything = sorted(mine + theirs, reverse=True)
    first = service.list_runs(store, limit=3)
    assert [r.id for r in first] == everything[:3]
    rest = service.list_runs(store, limit=10, after=first[-1].id)
    assert [r.id for r in rest] == everything[3:]
    assert service.list_runs(store, after=everything[-1]) == ()
    of_mine = service.list_runs(store, workflow=WORKFLOW)
    assert [r.id for r in of_mine] == sorted(mine, reverse=True)
    assert [r.id for r in service.list_runs(store, workflow=OTHER)] == sorted(theirs, reverse=True)
    assert service.list_runs(store, workflow="nothing") == ()
    assert len(service.list_runs(store, status="queued", workflow=OTHER)) == 2
    assert service.list_runs(store, status="running") == ()


def test_since_keeps_what_was_created_at_or_after(store: Store) -> None:
    mine, _ = _two_workflows(store)
    third = store.runs.get(sorted(mine)[2])
    found = service.list_runs(store, since=third.created_at.isoformat())
    assert all(r.created_at >= third.created_at for r in found)
    assert third.id in {r.id for r in found} and len(found) < 7
    assert len(service.list_runs(store, since="1h")) == 7
    assert (
        service.list_runs(store, since=(datetime.now(UTC) + timedelta(hours=1)).isoformat()) == ()
    )
    objectives = service.list_objectives(store, since="1d", workflow=OTHER)
    assert [o.workflow_name for o in objectives] == [OTHER, OTHER]


def test_objectives_newest_first_with_a_cursor_and_status(store: Store) -> None:
    _two_workflows(store)
    every = service.list_objectives(store)
    assert [o.id for o in every] == sorted((o.id for o in every), reverse=True)
    page = service.list_objectives(store, limit=4)
    after = service.list_objectives(store, after=page[-1].id)
    assert [o.id for o in page + after] == [o.id for o in every]
    assert len(service.list_objectives(store, status="active")) == 7
    assert service.list_objectives(store, status="satisfied") == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [("yesterday", "since: expected an age"), ("5 parsecs", "since: expected an age")],
)
def test_a_bad_since_or_status_is_refused_naming_what_is_accepted(
    store: Store, text: str, problem: str
) -> None:
    with pytest.raises(UsageError, match=problem):
        service.list_runs(store, since=text)
    with pytest.raises(UsageError, match="unknown run status 'bogus' \\(one of queued"):
        service.list_runs(store, status="bogus")
    with pytest.raises(UsageError, match="unknown approval status"):
        service.list_approvals(store, status="bogus")


def test_ages_and_times() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert parse_since("90s", now) == now - timedelta(seconds=90)
    assert parse_since("1h30m", now) == now - timedelta(hours=1, minutes=30)
    assert parse_since("2w", now) == now - timedelta(weeks=2)
    assert parse_since("2026-12-01", now) == datetime(2026, 12, 1, tzinfo=UTC)
    assert parse_since("2026-12-01T10:00:00Z", now) == datetime(2026, 12, 1, 10, tzinfo=UTC)
    assert parse_since("2026-12-01T10:00:00+02:00", now) == datetime(2026, 12, 1, 8, tzinfo=UTC)


def test_approvals_and_actions_of_a_workflow_newest_first(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    runs = [f.start(), f.start()]
    f.run_until_idle()
    assert {f.status(r) for r in runs} == {RunStatus.WAITING_FOR_APPROVAL}
    approvals = service.list_approvals(store, workflow=WORKFLOW)
    assert [a.run_id for a in approvals] == [runs[1].id, runs[0].id]
    assert service.list_approvals(store, workflow=OTHER) == []
    [older] = service.list_approvals(store, after=approvals[0].id)
    assert older.run_id == runs[0].id
    assert service.list_approvals(store, status="pending", since="1h", limit=1) == approvals[:1]
    actions = service.list_actions(store, workflow=WORKFLOW)
    assert [a.run_id for a in actions] == [runs[1].id, runs[0].id]
    assert service.list_actions(store, workflow=OTHER, status="proposed") == []
