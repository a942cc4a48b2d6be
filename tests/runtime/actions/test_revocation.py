"""Revocation: admission holds an in-flight run to the pinned grants *and* to the active
version's (invariant 12) — a narrowing reaches the run, a widening never does."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.providers import ScriptedProvider
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables.records import Run
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import (  # noqa: F401
    EXAMPLE,
    LOCAL,
    Flow,
    flow,
    simulator_fixture,
)
from tests.runtime.engine_support import compile_files, engine, register

#: the engine's logic, end to end: its PostgreSQL half runs with the slow set (the
#: store's own tests cover both backends in make test)
pytestmark = pytest.mark.slow_on_postgresql

#: the example's grant of the order skill to the buyer (each order is 11490 EUR)
GRANT = 'constraints = [args.total <= 20000, args.currency == "EUR"]'


def activate_grant(store: Store, tmp: Path, constraints: str) -> str:
    """Deploy the example with the buyer's grant constrained to ``constraints``; the new
    workflow version becomes the active one. Its digest."""
    root = tmp / f"grant_{abs(hash(constraints))}"
    shutil.copytree(EXAMPLE, root)
    (root / ".git").mkdir()  # a repository root: file("../prompts/...") reads under it
    team = root / "hcl" / "team.hcl"
    text = team.read_text(encoding="utf-8")
    assert GRANT in text
    team.write_text(text.replace(GRANT, f"constraints = {constraints}"), encoding="utf-8")
    register(store, compile_files(*sorted((root / "hcl").glob("*.hcl"))))
    active = store.definitions.active_version("procure_laptops")
    assert active is not None
    return active.digest


def approved(f: Flow) -> Run:
    run = f.start()
    f.run_until_idle()
    [approval] = service.list_approvals(f.store, run_id=run.id)
    service.decide_approval(
        f.store,
        LOCAL,
        service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
        service.CLI,
    )
    return run


def test_a_grant_narrowed_after_approval_stops_the_in_flight_action(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    run = approved(f)
    pinned = store.runs.get(run.id).workflow_digest
    active = activate_grant(store, tmp_path, '[args.total <= 5000, args.currency == "EUR"]')
    assert active != pinned
    f.run_until_idle()
    current = store.runs.get(run.id)
    assert current.workflow_digest == pinned  # still pinned: only the narrowing reached it
    assert current.status == RunStatus.NEEDS_ATTENTION
    reason = str((current.waiting or {}).get("reason"))
    assert f"the active version {active} of the workflow narrowed the grant" in reason
    [action] = service.list_actions(store, run_id=run.id)
    assert action.status == ActionStatus.DENIED
    assert simulator.order_count() == 0


def test_a_grant_revoked_after_approval_stops_the_in_flight_action(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    run = approved(f)
    # The active version's only grant of the skill is to the researcher, not the buyer.
    root = tmp_path / "revoked"
    shutil.copytree(EXAMPLE, root)
    (root / ".git").mkdir()  # a repository root: file("../prompts/...") reads under it
    team = root / "hcl" / "team.hcl"
    text = team.read_text(encoding="utf-8")
    text = text.replace("to          = team.procurement.role.buyer", "to = team.procurement")
    team.write_text(text, encoding="utf-8")
    workflow = root / "hcl" / "workflow.hcl"
    wf = workflow.read_text(encoding="utf-8")
    assert "team.procurement.role.buyer" in wf
    workflow.write_text(wf.replace("team.procurement.role.buyer", "team.procurement"), "utf-8")
    register(store, compile_files(*sorted((root / "hcl").glob("*.hcl"))))
    f.run_until_idle()
    current = store.runs.get(run.id)
    assert current.status == RunStatus.NEEDS_ATTENTION
    reason = str((current.waiting or {}).get("reason"))
    assert "no longer grants skill submit_purchase_order to team.procurement.role.buyer" in reason
    assert simulator.order_count() == 0


def test_a_widening_after_approval_never_reaches_the_in_flight_action(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    activate_grant(store, tmp_path, '[args.total <= 10000, args.currency == "EUR"]')
    run = approved(f)  # pinned to the narrow grant: 11490 EUR does not fit it
    activate_grant(store, tmp_path, '[args.total <= 50000, args.currency == "EUR"]')
    f.run_until_idle()
    current = store.runs.get(run.id)
    assert current.status == RunStatus.NEEDS_ATTENTION
    assert "constraint 1 does not hold" in str((current.waiting or {}).get("reason"))
    assert simulator.order_count() == 0


def test_an_unchanged_grant_in_a_new_active_version_still_admits(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    run = approved(f)
    # Another version is active (a looser currency rule), the buyer's total limit unchanged.
    activate_grant(store, tmp_path, "[args.total <= 20000]")
    f.run_until_idle()
    assert f.status(run) == RunStatus.COMPLETED
    assert simulator.order_count() == 1


# -- a stricter approval requirement ---------------------------------------------------

NOTES = Path(__file__).parents[1] / "revocation_defs"
#: the file the ``record`` skill appends each note to (a write skill runs in a process of its
#: own, so the test reads what it did from a file)
RECORDED_ENV = "OPENSEAL_TEST_NOTES"


@pytest.fixture(autouse=True)
def notes_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RECORDED_ENV, str(tmp_path / "notes.txt"))


def record(q: str) -> dict[str, object]:
    """The ``record`` skill of the notes workflow (a python entry point)."""
    with open(os.environ[RECORDED_ENV], "a", encoding="utf-8") as notes:
        notes.write(f"{q}\n")
    return {"answer": q}


def recorded(tmp: Path) -> list[str]:
    path = tmp / "notes.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def notes_run(store: Store, tmp: Path, *, then: str | None) -> str:
    """A run of notes v1 (no approval needed); ``then`` is activated before any worker runs."""
    from openseal.runtime import service

    register(store, compile_files(NOTES / "notes_v1.hcl"))
    run = service.create_objective(store, service.StartObjective("notes", {}), service.CLI).run
    if then is not None:
        register(store, compile_files(NOTES / then))
    engine(store, ScriptedProvider({})).run_until_idle()
    return run.id


def test_an_approval_required_after_the_run_started_is_required_at_admission(
    store: Store, tmp_path: Path
) -> None:
    run_id = notes_run(store, tmp_path, then="notes_v2.hcl")
    current = store.runs.get(run_id)
    assert current.status == RunStatus.NEEDS_ATTENTION
    assert "has no approval" in str((current.waiting or {}).get("reason"))
    assert recorded(tmp_path) == []


def test_without_the_stricter_version_the_notes_run_needs_no_approval(
    store: Store, tmp_path: Path
) -> None:
    run_id = notes_run(store, tmp_path, then=None)
    assert store.runs.get(run_id).status == RunStatus.COMPLETED
    assert recorded(tmp_path) == ["hello"]


def test_a_grant_narrowed_before_a_direct_action_stores_its_action_denied(
    store: Store, tmp_path: Path
) -> None:
    # The direct form drafts its proposal in the transaction that admits its action: the
    # action is first stored by the admission's move, here as denied, with its whole history.
    from bench.runtime_support import ACTION_WORKFLOW, RUNTIME_PREAMBLE, compiled
    from openseal.runtime.engine.engine import Engine

    binding = "skill = skill.record\n  to    = agent.writer\n"
    assert binding in RUNTIME_PREAMBLE
    register(store, compiled(tmp_path / "v1", ACTION_WORKFLOW))
    start = service.StartObjective("three_steps", {"n": 1})
    run = service.create_objective(store, start, service.CLI).run
    assert run is not None
    narrowed = binding + '  constraints = [args.q == "never"]\n'
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            "bench.runtime_support.RUNTIME_PREAMBLE", RUNTIME_PREAMBLE.replace(binding, narrowed)
        )
        register(store, compiled(tmp_path / "v2", ACTION_WORKFLOW))
    Engine(store).run_until_idle(max_steps=4)
    current = store.runs.get(run.id)
    assert current.status == RunStatus.NEEDS_ATTENTION
    assert "narrowed the grant" in str(current.waiting)
    [action] = service.list_actions(store, run_id=run.id)
    assert (action.status, action.revision, action.attempts) == (ActionStatus.DENIED, 2, 0)
    assert [(h["from"], h["to"]) for h in action.history] == [("proposed", "denied")]
    types = [e.type for e in store.runs.events(run.id, 0, 100)]
    assert types.index("proposal.drafted") < types.index("action.denied")
