"""``openseal approvals|actions`` on SQLite and PostgreSQL, in-process through ``main``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openseal.cli.output import handle
from openseal.runtime import service
from openseal.runtime.actions.approvals import AUTHORITY_ENV
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Approval, Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.cli.support import Cli
from tests.runtime.action_support import Flow, flow, simulator_fixture  # noqa: F401
from tests.runtime.support import Backend


@pytest.fixture
def waiting(
    cli: Cli,
    backend: Backend,
    simulator: ProcurementSimulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Flow, str]:
    """A procurement run waiting for approval; no authority configured yet."""
    monkeypatch.delenv(AUTHORITY_ENV, raising=False)
    assert cli("db", "upgrade")[0] == 0
    f = flow(backend.open(), simulator, tmp_path)
    run = f.start()
    f.run_until_idle()
    assert f.status(run) == RunStatus.WAITING_FOR_APPROVAL
    return f, run.id


def authority(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "approvals.yaml"
    path.write_text("local_operator: true\n", encoding="utf-8")
    monkeypatch.setenv(AUTHORITY_ENV, str(path))


def pending(store: Store) -> Approval:
    [approval] = service.list_approvals(store, status="pending")
    return approval


def test_show_prints_every_field_of_the_proposal_and_its_hash(
    cli: Cli,
    waiting: tuple[Flow, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    f, run_id = waiting
    approval = pending(f.store)
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = cli("approvals", "list")
    assert code == 0, err
    # a narrow terminal cuts the hash (`show` prints it whole), never the handles
    assert handle(approval.id) in out and handle(run_id) in out and "pending" in out
    assert approval.proposal_hash[:7] in out and approval.proposal_hash not in out
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = cli("approvals", "list")
    assert approval.proposal_hash in out
    code, out, err = cli("approvals", "show", approval.id)
    assert code == 0, err
    for text in ('"vendor": "northwind"', '"total": 11490', '"destination": "O4"',
                 '"currency": "EUR"', '"quantity": 10', '"actor": "team.procurement.role.buyer"',
                 f'"run": "{run_id}"', '"name": "submit_purchase_order"',
                 f"--hash {approval.proposal_hash}", "verified against its artefact"):  # fmt: skip
        assert text in out, text
    shown = cli.json("approvals", "show", approval.proposal_hash)
    assert isinstance(shown, dict)
    assert shown["hash"] == approval.proposal_hash
    assert shown["proposal"]["args"]["vendor"] == "northwind"


def test_deciding_needs_an_authority_and_the_hash(
    cli: Cli,
    waiting: tuple[Flow, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    f, run_id = waiting
    approval = pending(f.store)
    code, _, err = cli("approvals", "approve", approval.id)
    assert code == 2 and "--hash" in err  # the hash the approver saw is required
    code, _, err = cli("approvals", "approve", approval.id, "--hash", approval.proposal_hash)
    assert code == 1
    assert "[approvals_unavailable]" in err and "Traceback" not in err
    authority(tmp_path, monkeypatch)
    code, _, err = cli("approvals", "approve", approval.id, "--hash", "0" * 64)
    assert code == 1 and "[hash_mismatch]" in err
    code, _, err = cli("approvals", "approve", approval.id, "--hash", approval.proposal_hash[:9])
    assert code == 2 and "at least its first 10 hex digits" in err
    code, out, err = cli("approvals", "approve", approval.id, "--hash", approval.proposal_hash[:10])
    assert code == 0, err
    decided = service.show_approval(f.store, approval.id).approval
    assert decided.decided_hash == approval.proposal_hash  # the hash decided on, whole
    assert "approved by user:local: recorded" in out
    code, out, err = cli("approvals", "approve", approval.id, "--hash", approval.proposal_hash)
    assert code == 0 and "nothing changed" in out
    code, _, err = cli(
        "approvals", "reject", approval.id, "--hash", approval.proposal_hash, "--reason", "no"
    )
    assert code == 1 and "[already_decided]" in err
    f.run_until_idle()
    assert f.store.runs.get(run_id).status == RunStatus.COMPLETED


def test_actions_list_show_and_resolve(
    cli: Cli,
    waiting: tuple[Flow, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    simulator: ProcurementSimulator,
) -> None:
    f, run_id = waiting
    approval = pending(f.store)
    authority(tmp_path, monkeypatch)
    assert cli("approvals", "approve", approval.id, "--hash", approval.proposal_hash)[0] == 0
    simulator.set_fault(fail_with_status=503, fail_times=2, fail_scope="all")
    f.run_until_idle()
    listed = cli.json("actions", "list", "--status", "unknown")
    assert isinstance(listed, list) and len(listed) == 1
    action: dict[str, str] = listed[0]
    assert action["key"] == f"{run_id}:{approval.proposal_hash}"
    code, out, err = cli("actions", "show", action["id"])
    assert code == 0, err
    assert "boundary   dispatched at" in out and "outcome unknown" in out
    assert "team.procurement (reserved)" in out
    code, _, err = cli("actions", "resolve", action["id"], "--outcome", "failed")
    assert code == 2 and "--evidence" in err
    code, out, err = cli(
        "actions", "resolve", action["id"], "--outcome", "failed",
        "--evidence", "no order with this key in the vendor portal",
    )  # fmt: skip
    assert code == 0, err
    assert "resolved as failed" in out
    shown = cli.json("actions", "show", action["id"])
    assert isinstance(shown, dict)
    assert shown["action"]["resolution"]["actor"] == "user:local"
    assert [s["status"] for s in shown["spend"]] == ["released"]
    code, _, err = cli("actions", "resolve", action["id"], "--outcome", "succeeded",
                       "--evidence", "x")  # fmt: skip
    assert code == 1 and "invalid_status" not in err and "only dispatched" in err
    assert simulator.order_count() == 0
    assert json.loads(json.dumps(shown))  # JSON output is plain data


def test_an_unverifiable_proposal_is_shown_with_the_reason_and_not_approved(
    cli: Cli,
    waiting: tuple[Flow, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.runtime.actions.test_artefact_hosts import change_row

    f, _ = waiting
    approval = pending(f.store)
    change_row(f.store, approval.proposal_id, quantity=17, total=19533)
    code, out, err = cli("approvals", "show", approval.id)
    assert code == 0, err
    assert "NOT VERIFIED" in out and "changed after it was drafted" in out
    assert '"quantity": 10' in out  # the approved content, not the changed row
    shown = cli.json("approvals", "show", approval.id)
    assert isinstance(shown, dict)
    assert shown["verified"] is False and "changed after" in shown["unverified_reason"]
    authority(tmp_path, monkeypatch)
    code, out, err = cli("approvals", "approve", approval.id, "--hash", approval.proposal_hash)
    assert code == 1
    assert "cannot be approved" in err
    assert pending(f.store).id == approval.id
