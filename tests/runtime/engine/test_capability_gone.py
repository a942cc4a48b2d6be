"""A pinned run whose capability is gone waits in ``needs_attention`` with the reason; it never
fails, or takes a workflow's failure branch, because of it.

The run's version pins its skills, bindings, agents and models by digest, but what a worker
needs to use them lives outside the version: the runtime context's credentials and
configuration, the python modules a skill's entry point names. When one is gone, the action is
held back (not sent, not marked failed, its approval kept) until a worker has it again.
A revoked binding is held to at admission (tests/runtime/actions/test_revocation.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import ScriptedProvider, fixed
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Store
from openseal.simulator.procurement import ProcurementSimulator
from openseal.skills.credentials import RuntimeContext
from tests.runtime.action_support import (  # noqa: F401
    LOCAL,
    TOKEN_ENV,
    Flow,
    flow,
    simulator_fixture,
)
from tests.runtime.engine_support import compile_files, event_types, register
from tests.runtime.governance_support import DEFINITIONS, WORKFLOW

#: the engine's logic, end to end: its PostgreSQL half runs with the slow set (the
#: store's own tests cover both backends in make test)
pytestmark = pytest.mark.slow_on_postgresql


def approved(f: Flow) -> str:
    run = f.start()
    f.run_until_idle()
    [approval] = service.list_approvals(f.store, run_id=run.id)
    decision = service.ApprovalDecision(approval.id, "approve", approval.proposal_hash)
    service.decide_approval(f.store, LOCAL, decision, service.CLI)
    return run.id


def attention(store: Store, run_id: str) -> str:
    """The run's reason for needing attention, checked to be the one its last event gives."""
    run = store.runs.get(run_id)
    assert run.status == RunStatus.NEEDS_ATTENTION, (run.status, run.waiting)
    reason = str((run.waiting or {}).get("reason"))
    [last] = [e for e in store.runs.events(run_id, 0, 1000) if e.type == "run.needs_attention"][-1:]
    assert last.payload["reason"] == reason
    assert service.show_run(store, run_id).reason == reason  # what `openseal runs show` prints
    return reason


def test_a_credential_gone_holds_the_approved_action_back_until_it_is_back(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = flow(store, simulator, tmp_path)
    run_id = approved(f)
    monkeypatch.delenv(TOKEN_ENV)  # the credential the order skill needs is gone
    f.run_until_idle()
    reason = attention(store, run_id)
    assert "was not sent: this worker cannot call skill submit_purchase_order" in reason
    assert "the action of proposal order was not sent" in reason
    assert f"environment variable {TOKEN_ENV} is not set" in reason
    assert f"openseal runs intervene {run_id}" in reason
    [action] = service.list_actions(store, run_id=run_id)
    assert action.status == ActionStatus.WAITING_FOR_APPROVAL  # not failed, not dispatched
    assert "action.failed" not in event_types(store, run_id)
    assert simulator.order_count() == 0
    # the credential is back: the run goes on with the approval it had
    monkeypatch.setenv(TOKEN_ENV, "sim-token-not-a-secret")
    service.intervene(
        store, service.Intervention(run_id, "credential restored", None, None, None), service.CLI
    )
    f.run_until_idle()
    assert store.runs.get(run_id).status == RunStatus.COMPLETED
    assert simulator.order_count() == 1


def test_a_config_value_gone_holds_the_action_back(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    run_id = approved(f)
    bare = tmp_path / "bare.yaml"  # the credential still there, the service's address gone
    bare.write_text(f"credentials:\n  procurement_api: {{env: {TOKEN_ENV}}}\n", encoding="utf-8")
    context = RuntimeContext.load(bare)
    Engine(store, fixed(ScriptedProvider({})), context=context).run_until_idle()
    reason = attention(store, run_id)
    assert "uses `config.procurement_url`, which the runtime context does not set" in reason
    assert simulator.order_count() == 0


def test_a_module_gone_holds_the_action_back_instead_of_taking_the_failure_branch(
    store: Store, tmp_path: Path
) -> None:
    # The workflow leaves `act` for `done` on `failed`: a failed call would complete the run.
    from bench.runtime_support import ACTION_WORKFLOW, RUNTIME_PREAMBLE, compiled

    gone = RUNTIME_PREAMBLE.replace('"bench.skills:noop"', '"bench.no_such_module:noop"', 1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("bench.runtime_support.RUNTIME_PREAMBLE", gone)
        register(store, compiled(tmp_path / "v1", ACTION_WORKFLOW))
    start = service.StartObjective("three_steps", {"n": 1})
    run = service.create_objective(store, start, service.CLI).run
    assert run is not None
    Engine(store).run_until_idle(max_steps=8)
    reason = attention(store, run.id)
    assert "module `bench.no_such_module` of `bench.no_such_module:noop` is not installed" in reason
    assert "the action of proposal act was not sent" in reason
    # drafted, never sent: its action is stored by the admission that lets it go
    assert "proposal.drafted" in event_types(store, run.id)
    assert list(service.list_actions(store, run_id=run.id)) == []


def test_a_model_credential_gone_makes_the_turn_wait_with_the_reason(
    store: Store, tmp_path: Path
) -> None:
    text = DEFINITIONS % {"max_risk": "read", "instructions": "Answer."}
    scripted = 'provider = "scripted"\n  model    = "scripted-small"'
    assert scripted in text
    openai = (
        'provider   = "openai"\n  base_url   = "http://127.0.0.1:9/v1"\n'
        '  model      = "small"\n  credential = "model_key"'
    )
    (tmp_path / "defs.hcl").write_text(text.replace(scripted, openai), encoding="utf-8")
    register(store, compile_files(tmp_path / "defs.hcl"))
    start = service.StartObjective(WORKFLOW, {"question": "why"})
    run = service.create_objective(store, start, service.CLI).run
    assert run is not None
    Engine(store, context=RuntimeContext.empty()).run_until_idle(max_steps=8)
    reason = attention(store, run.id)
    assert "model profile 'm': credential `model_key` is not defined" in reason
