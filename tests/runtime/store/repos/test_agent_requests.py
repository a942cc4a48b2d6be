"""The agent-request lifecycle in the store: each step locked, recorded and evented on the
caller run, waking the caller for what it must act on; on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from openseal.runtime.engine.cascade import cancel_run, stop_child
from openseal.runtime.engine.delegation import request_work
from openseal.runtime.statuses import AgentRequestStatus as S
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.db.errors import InvalidStatus
from openseal.runtime.store.tables.records import AgentRequest
from tests.runtime.support import new_run


def _request(store: Store, *, review: bool = False) -> AgentRequest:
    run = new_run(store)
    held = store.leases.claim("w1")
    assert held is not None
    with store.leases.fenced(held) as tx:
        request = request_work(
            store, tx, "team.procurement", {"goal": "compare vendors", "review": review}
        )
        tx.update_run(status=RunStatus.WAITING_FOR_AGENT, waiting={"kind": "agent"})
    assert request.caller_run_id == run.id
    assert request.status == S.REQUESTED
    return request


def _types(store: Store, request: AgentRequest) -> list[str]:
    return [e.type for e in store.runs.events(request.caller_run_id)]


def test_completion_wakes_the_caller_and_every_step_is_an_event(store: Store) -> None:
    request = _request(store)
    assert (
        store.agent_requests.accept(request.id, "user:ann", stop=stop_child(store)).status
        == S.ACCEPTED
    )
    assert store.leases.claim("w2") is None  # accepting is not an answer
    done = store.agent_requests.complete(
        request.id, "user:ann", {"vendor": "A"}, stop=stop_child(store)
    )
    assert (done.status, done.response) == (S.COMPLETED, {"vendor": "A"})
    woken = store.leases.claim("w2")
    assert woken is not None and woken.run_id == request.caller_run_id
    events = store.runs.events(request.caller_run_id)
    steps = [(e.type, e.actor) for e in events if e.type.startswith("agent_request.")]
    assert steps == [
        ("agent_request.requested", "worker:w1"),
        ("agent_request.accepted", "user:ann"),
        ("agent_request.completed", "user:ann"),
    ]
    with pytest.raises(InvalidStatus, match="did not ask for a review"):
        store.agent_requests.review(request.id, "user:lead", "accept", stop=stop_child(store))


def test_a_caller_paused_while_its_request_completes_continues_when_resumed(
    store: Store,
) -> None:
    request = _request(store)
    store.runs.pause(request.caller_run_id, "user:ann")
    store.agent_requests.accept(request.id, "user:bob", stop=stop_child(store))
    store.agent_requests.complete(request.id, "user:bob", {"vendor": "A"}, stop=stop_child(store))
    assert store.leases.claim("w2") is None  # paused: nobody works on it
    store.runs.resume(request.caller_run_id, "user:ann")
    assert store.runs.get(request.caller_run_id).status == RunStatus.WAITING_FOR_AGENT
    woken = store.leases.claim("w2")  # the completion's wake-up survived the pause
    assert woken is not None and woken.run_id == request.caller_run_id


def test_a_completion_under_review_waits_until_it_is_accepted(store: Store) -> None:
    request = _request(store, review=True)
    store.agent_requests.accept(request.id, "user:ann", stop=stop_child(store))
    store.agent_requests.complete(request.id, "user:ann", {"vendor": "A"}, stop=stop_child(store))
    assert store.leases.claim("w2") is None  # the review is still due
    back = store.agent_requests.review(
        request.id, "user:lead", "send_back", "wrong office", stop=stop_child(store)
    )
    assert (back.status, back.response) == (S.ACCEPTED, None)
    assert store.leases.claim("w2") is None
    store.agent_requests.complete(request.id, "user:ann", {"vendor": "B"}, stop=stop_child(store))
    reviewed = store.agent_requests.review(
        request.id, "user:lead", "accept", stop=stop_child(store)
    )
    assert reviewed.status == S.COMPLETION_REVIEWED
    assert reviewed.review == [
        {"by": "user:lead", "verdict": "send_back", "reason": "wrong office"},
        {"by": "user:lead", "verdict": "accept", "reason": None},
    ]
    assert store.leases.claim("w2") is not None
    with pytest.raises(InvalidStatus):
        store.agent_requests.review(request.id, "user:lead", "accept", stop=stop_child(store))


def test_clarification_round_trip(store: Store) -> None:
    request = _request(store)
    store.agent_requests.accept(request.id, "user:ann", stop=stop_child(store))
    asked = store.agent_requests.ask(
        request.id, "user:ann", "which budget?", stop=stop_child(store)
    )
    assert asked.status == S.CLARIFICATION_REQUESTED
    claim = store.leases.claim("w2")
    assert claim is not None  # the caller is woken for the question
    store.leases.release(claim)
    answered = store.agent_requests.clarify(
        request.id, "user:bob", "1200 EUR", stop=stop_child(store)
    )
    assert answered.status == S.ACCEPTED  # back where it was asked from
    assert answered.clarification == [
        {"question": "which budget?", "asked_by": "user:ann", "answer": "1200 EUR",
         "answered_by": "user:bob", "from": "accepted"},
    ]  # fmt: skip
    steps = [t for t in _types(store, request) if t.startswith("agent_request.")]
    assert steps[-2:] == ["agent_request.clarification_requested", "agent_request.clarified"]


@pytest.mark.parametrize("step", ["decline", "expire", "cancel"])
def test_closing_steps_wake_the_caller_and_close_the_request(store: Store, step: str) -> None:
    request = _request(store)
    requests = store.agent_requests
    closed = {
        "decline": lambda: requests.decline(request.id, "user:ann", "busy", stop=stop_child(store)),
        "expire": lambda: requests.expire(request.id, "worker:w1", stop=stop_child(store)),
        "cancel": lambda: requests.cancel(request.id, "user:op", "late", stop=stop_child(store)),
    }[step]()
    assert closed.status == {"decline": S.DECLINED, "expire": S.EXPIRED,
                             "cancel": S.CANCELED}[step]  # fmt: skip
    assert store.leases.claim("w2") is not None
    for again in (
        lambda: requests.accept(request.id, "user:ann", stop=stop_child(store)),
        lambda: requests.complete(request.id, "user:ann", {}, stop=stop_child(store)),
        lambda: requests.decline(request.id, "user:ann", "no", stop=stop_child(store)),
    ):
        with pytest.raises(InvalidStatus):
            again()


def test_status_checks(store: Store) -> None:
    request = _request(store)
    with pytest.raises(InvalidStatus):
        store.agent_requests.complete(
            request.id, "user:ann", {}, stop=stop_child(store)
        )  # not accepted yet
    with pytest.raises(InvalidStatus):
        store.agent_requests.clarify(
            request.id, "user:ann", "no question is open", stop=stop_child(store)
        )
    with pytest.raises(InvalidStatus):
        store.agent_requests.review(request.id, "user:lead", "accept", stop=stop_child(store))


def test_canceling_the_caller_cancels_open_requests(store: Store) -> None:
    request = _request(store)
    cancel_run(store, request.caller_run_id, "user:op", "stop")
    assert store.agent_requests.get(request.id).status == S.CANCELED
    event = store.runs.events(request.caller_run_id)[-1]
    assert event.payload["canceled_agent_requests"] == [request.id]


def test_listing_filters_by_status_and_caller(store: Store) -> None:
    first = _request(store)
    store.agent_requests.decline(first.id, "user:ann", "busy", stop=stop_child(store))
    assert [r.id for r in store.agent_requests.newest(status=S.DECLINED)] == [first.id]
    assert store.agent_requests.newest(status=S.REQUESTED) == []
    mine = store.agent_requests.newest(caller_run_id=first.caller_run_id)
    assert [r.id for r in mine] == [first.id]
