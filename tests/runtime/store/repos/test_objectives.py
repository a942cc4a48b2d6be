from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa
from sqlalchemy import Connection

from openseal.errors import StoreError
from openseal.runtime.statuses import ObjectiveStatus, RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.db.errors import IdempotencyConflict, NotFound
from openseal.runtime.store.tables import schema
from tests.runtime.support import DOCUMENT, WORKFLOW, deploy, digest_of, graph


def test_put_version_is_idempotent_and_immutable(store: Store) -> None:
    digest = digest_of(DOCUMENT)
    first = store.definitions.put(digest, "workflow", WORKFLOW, DOCUMENT)
    again = store.definitions.put(digest, "workflow", WORKFLOW, dict(reversed(DOCUMENT.items())))
    assert again.created_at == first.created_at
    assert store.definitions.get(digest).document == DOCUMENT
    with pytest.raises(IdempotencyConflict):
        store.definitions.put(digest, "workflow", WORKFLOW, {**DOCUMENT, "extra": 1})
    with pytest.raises(NotFound):
        store.definitions.get("0" * 64)


def test_activation_history_and_pinning(store: Store) -> None:
    v1 = deploy(store)
    first = store.objectives.create("acme", WORKFLOW, {"n": 1}, actor="user:a")
    v2_doc = {**DOCUMENT, "graph": graph("draft", "done")}
    v2 = digest_of(v2_doc)
    store.definitions.put(v2, "workflow", WORKFLOW, v2_doc)
    store.definitions.activate(WORKFLOW, v2, "user:b", change_proposal_id="cp1", reason="faster")
    second = store.objectives.create("acme", WORKFLOW, {"n": 2}, actor="user:a")

    assert first.run.workflow_digest == v1
    assert store.runs.get(first.run.id).workflow_digest == v1  # old runs stay pinned
    assert second.run.workflow_digest == v2
    history = store.definitions.history(WORKFLOW)
    assert [(a.digest, a.previous_digest) for a in history] == [(v1, None), (v2, v1)]
    assert history[1].change_proposal_id == "cp1"
    assert history[1].actor == "user:b"
    assert store.definitions.active_version(WORKFLOW) is not None
    assert store.definitions.get(v1).digest == v1  # old versions stay loadable


def test_activate_refuses_unknown_digest_and_other_names(store: Store) -> None:
    with pytest.raises(NotFound):
        store.definitions.activate(WORKFLOW, "1" * 64, "user:a")
    digest = deploy(store)
    with pytest.raises(StoreError) as raised:
        store.definitions.activate("another", digest, "user:a")
    assert raised.value.code == "name_mismatch"


def test_create_objective_needs_a_deployed_workflow(store: Store) -> None:
    with pytest.raises(StoreError) as raised:
        store.objectives.create("acme", "nothing", {}, actor="user:a")
    assert raised.value.code == "not_deployed"


def test_create_objective_queues_a_first_run_with_an_event(store: Store) -> None:
    deploy(store)
    created = store.objectives.create("acme", WORKFLOW, {"n": 3}, actor="user:a")
    assert created.created
    assert created.objective.status == ObjectiveStatus.ACTIVE
    assert created.objective.project == "acme"
    assert created.run.status == RunStatus.QUEUED
    assert created.run.context == {"inputs": {"n": 3}, "states": {}}
    [event] = store.runs.events(created.run.id)
    assert (event.seq, event.type, event.actor) == (1, "run.created", "user:a")
    assert event.payload["objective_id"] == created.objective.id


def test_a_project_is_created_with_its_first_objective_and_found_after(store: Store) -> None:
    deploy(store)
    made = [store.objectives.create(p, WORKFLOW, {"n": 1}, actor="u") for p in ("a", "a", "b")]
    assert [m.objective.project for m in made] == ["a", "a", "b"]
    with store.read() as conn:
        names = conn.execute(sa.select(schema.projects.c.name)).scalars().all()
        used = conn.execute(sa.select(schema.objectives.c.project_id)).scalars().all()
    assert sorted(names) == ["a", "b"]
    assert len(set(used)) == 2


def test_an_objective_its_run_and_event_are_inserted_all_or_nothing(store: Store) -> None:
    """``insert_rows`` (on PostgreSQL one statement for every row and the NOTIFY, which is how
    an objective and its first run are created): a row that cannot be inserted leaves none of
    the others, and wakes nobody."""
    deploy(store)
    first = store.objectives.create("acme", WORKFLOW, {"n": 1}, actor="u")
    with store.read() as conn:
        objective = dict(conn.execute(sa.select(schema.objectives)).mappings().one())
        run = dict(conn.execute(sa.select(schema.runs)).mappings().one())
    objective["id"], run["id"], run["objective_id"] = "o-2", "r-2", "o-2"
    taken = {"run_id": first.run.id, "seq": 1, "type": "run.created", "actor": "u",
             "payload": {}, "at": run["created_at"]}  # fmt: skip
    rows = [(schema.objectives, objective), (schema.runs, run), (schema.events, taken)]
    mark = store.work_mark()
    with pytest.raises(sa.exc.IntegrityError), store.write() as conn:
        store.insert_rows(conn, rows, notify="r-2")
    assert [r.id for r in store.runs.query()] == [first.run.id]
    with pytest.raises(NotFound):
        store.objectives.get("o-2")
    assert not store.wait_for_local_work(0, since=mark).woken
    with store.write() as conn:  # the same rows, the clash left out
        store.insert_rows(conn, [*rows[:2], (schema.events, {**taken, "run_id": "r-2"})])
    assert [e.type for e in store.runs.events("r-2")] == ["run.created"]


def test_objective_idempotency_on_request_key(store: Store) -> None:
    deploy(store)
    first = store.objectives.create("acme", WORKFLOW, {"n": 1}, request_key="k1", actor="u")
    again = store.objectives.create("acme", WORKFLOW, {"n": 1}, request_key="k1", actor="u")
    assert not again.created
    assert again.objective.id == first.objective.id
    assert again.run.id == first.run.id
    assert len(store.runs.query()) == 1
    with pytest.raises(StoreError) as raised:
        store.objectives.create("acme", WORKFLOW, {"n": 2}, request_key="k1", actor="u")
    assert raised.value.code == "idempotency_conflict"
    other = store.objectives.create("acme", WORKFLOW, {"n": 1}, request_key="k2", actor="u")
    assert other.objective.id != first.objective.id


def test_list_runs_filters_and_pages(store: Store) -> None:
    deploy(store)
    ids = [store.objectives.create("acme", WORKFLOW, {"n": i}, actor="u").run.id for i in range(5)]
    page1 = store.runs.query(limit=2)
    page2 = store.runs.query(limit=10, after=page1[-1].id)
    assert [r.id for r in page1 + page2] == sorted(ids)
    assert store.runs.query(status=RunStatus.RUNNING) == ()
    assert len(store.runs.query(status=RunStatus.QUEUED)) == 5


def test_inputs_are_checked_against_the_version_the_run_pins(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openseal.errors import UsageError
    from openseal.runtime import service

    numbers = {**DOCUMENT, "inputs": {"type": "object", "properties": {"n": {"type": "number"}}}}
    strings = {**DOCUMENT, "inputs": {"type": "object", "properties": {"n": {"type": "string"}}}}
    deploy(store, numbers)
    v2 = digest_of(strings)
    store.definitions.put(v2, "workflow", WORKFLOW, strings)
    write = store.write

    @contextmanager
    def activation_first() -> Iterator[Connection]:
        # The request was made while v1 was active; v2 is activated as its transaction begins.
        monkeypatch.setattr(store, "write", write)  # once
        store.definitions.activate(
            WORKFLOW, v2, "user:b", change_proposal_id="cp1", reason="strings"
        )
        with write() as conn:
            yield conn

    monkeypatch.setattr(store, "write", activation_first)
    with pytest.raises(UsageError, match="n: 1 is not of type 'string'"):
        service.create_objective(store, service.StartObjective(WORKFLOW, {"n": 1}), service.CLI)
    assert service.list_objectives(store) == []
