from __future__ import annotations

import pytest

from openseal.runtime.statuses import AgentRequestStatus as S
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.errors import InvalidStatus
from openseal.runtime.store.records import AgentRequest
from tests.runtime.support import new_run


def _request(store: Store) -> AgentRequest:
    run = new_run(store)
    held = store.leases.claim("w1")
    assert held is not None
    with store.leases.fenced(held) as tx:
        request = tx.create_agent_request("team.procurement", {"ask": "compare vendors"})
        tx.update_run(status=RunStatus.WAITING_FOR_AGENT, waiting={"kind": "agent"})
    assert request.caller_run_id == run.id
    return request


def test_request_lifecycle_wakes_the_caller_on_completion(store: Store) -> None:
    request = _request(store)
    assert store.agent_requests.accept(request.id, "agent:buyer").status == S.ACCEPTED
    assert store.leases.claim("w2") is None  # accepting is not an answer
    done = store.agent_requests.complete(request.id, "agent:buyer", {"vendor": "A"})
    assert (done.status, done.response) == (S.COMPLETED, {"vendor": "A"})
    woken = store.leases.claim("w2")
    assert woken is not None and woken.run_id == request.caller_run_id
    reviewed = store.agent_requests.review(request.id, "user:lead", {"verdict": "good"})
    assert reviewed.review == {"by": "user:lead", "review": {"verdict": "good"}}
    with pytest.raises(InvalidStatus):
        store.agent_requests.review(request.id, "user:lead", {"verdict": "again"})
    types = [e.type for e in store.runs.events(request.caller_run_id)]
    assert types[-3:] == ["agent_request.completed", "lease.claimed", "agent_request.reviewed"]


def test_clarification_round_trip(store: Store) -> None:
    request = _request(store)
    asked = store.agent_requests.request_clarification(request.id, "agent:buyer", "which budget?")
    assert asked.status == S.CLARIFICATION_REQUESTED
    assert store.leases.claim("w2") is not None  # the caller must answer
    answered = store.agent_requests.answer_clarification(request.id, "w2", "1200 EUR")
    assert answered.status == S.PENDING
    assert answered.clarification == {"question": "which budget?", "answer": "1200 EUR"}


def test_status_checks(store: Store) -> None:
    request = _request(store)
    with pytest.raises(InvalidStatus):
        store.agent_requests.complete(request.id, "agent:buyer", {})  # not accepted yet
    with pytest.raises(InvalidStatus):
        store.agent_requests.review(request.id, "user:lead", {})
    assert store.agent_requests.reject(request.id, "agent:buyer", "busy").status == S.REJECTED
    with pytest.raises(InvalidStatus):
        store.agent_requests.accept(request.id, "agent:buyer")
    with pytest.raises(InvalidStatus):
        store.agent_requests.cancel(request.id, "user:op", "late")


def test_canceling_the_caller_cancels_open_requests(store: Store) -> None:
    request = _request(store)
    store.runs.cancel(request.caller_run_id, "user:op", "stop")
    assert store.agent_requests.get(request.id).status == S.CANCELED
    event = store.runs.events(request.caller_run_id)[-1]
    assert event.payload["canceled_agent_requests"] == [request.id]
