"""Old versions stay honest: a change that removes what live runs still pin says how many runs
use it, per version, and a deployment lists the versions its live runs are pinned to (both
backends)."""

from __future__ import annotations

from pathlib import Path

from openseal.runtime import service
from openseal.runtime.service import governance as gov
from openseal.runtime.store import Store
from tests.runtime.engine_support import register
from tests.runtime.governance_support import WORKFLOW, compile_set, key, without_lookup

ALICE = "user:alice"


def start(store: Store, n: int) -> list[str]:
    request = service.StartObjective(WORKFLOW, {"question": "why"})
    runs = [service.create_objective(store, request, service.CLI).run for _ in range(n)]
    return [run.id for run in runs if run is not None]


def test_a_change_removing_what_live_runs_pin_counts_them_per_version(
    store: Store, tmp_path: Path
) -> None:
    v1 = compile_set(tmp_path / "v1")
    register(store, list(v1.values()))
    v1_runs = start(store, 2)
    v1b = compile_set(tmp_path / "v1b", instructions="Answer briefly.")
    register(store, list(v1b.values()))
    [v1b_run] = start(store, 1)
    old, older = key(v1b, f"workflow.{WORKFLOW}"), key(v1, f"workflow.{WORKFLOW}")

    result = gov.deploy(store, gov.Deployment(without_lookup(tmp_path / "v2"), None), service.CLI)
    assert result.proposal is not None
    found = {item.capability: item for item in result.in_use}
    assert set(found) == {"skill.lookup", "binding.helper_looks_up", "model.m"}
    for item in found.values():
        assert item.workflow == WORKFLOW
        assert item.runs == 3
        assert [(v.digest, v.runs) for v in item.versions] == [(older, 2), (old, 1)]
    assert found["skill.lookup"].kind == "skill"
    # read again later (proposals show): counted now, so an ended run no longer counts
    service.cancel_run(store, service.RunCommand(v1_runs[0], reason="done"), service.CLI)
    again = gov.proposal_in_use(store, result.proposal.id)
    assert {(i.capability, i.runs) for i in again} == {
        ("skill.lookup", 2),
        ("binding.helper_looks_up", 2),
        ("model.m", 2),
    }
    # one run each: equal counts are listed by digest
    assert [(v.digest, v.runs) for v in again[0].versions] == sorted([(older, 1), (old, 1)])
    service.cancel_run(store, service.RunCommand(v1_runs[1], reason="done"), service.CLI)
    service.cancel_run(store, service.RunCommand(v1b_run, reason="done"), service.CLI)
    assert gov.proposal_in_use(store, result.proposal.id) == ()


def test_a_change_that_keeps_everything_reports_nothing_in_use(
    store: Store, tmp_path: Path
) -> None:
    register(store, list(compile_set(tmp_path / "v1").values()))
    start(store, 2)
    wider = compile_set(tmp_path / "v2", max_risk="external")
    result = gov.deploy(store, gov.Deployment(wider, None), service.CLI)
    assert result.proposal is not None
    assert result.in_use == ()


def test_a_deployment_lists_the_versions_its_live_runs_pin(store: Store, tmp_path: Path) -> None:
    v1 = compile_set(tmp_path / "v1")
    register(store, list(v1.values()))
    first = start(store, 3)
    v2 = compile_set(tmp_path / "v2", instructions="Answer briefly.")
    register(store, list(v2.values()))
    start(store, 1)
    shown = gov.deployment_versions(store, WORKFLOW)
    active = key(v2, f"workflow.{WORKFLOW}")
    assert shown.deployment.active_digest == active
    assert [(v.digest, v.runs) for v in shown.live] == [
        (key(v1, f"workflow.{WORKFLOW}"), 3),
        (active, 1),
    ]
    assert shown.live_runs == 4
    for run_id in first:
        service.cancel_run(store, service.RunCommand(run_id, reason="done"), service.CLI)
    shown = gov.deployment_versions(store, WORKFLOW)
    assert [(v.digest, v.runs) for v in shown.live] == [(active, 1)]
    assert shown.live_runs == 1
