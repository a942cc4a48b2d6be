"""What is kept of a destination's reply (invariants 10, 14): a confirmed reply that does not fit
the skill's output type is stored as its fitting fields plus a short excerpt, and no reply is
stored with a credential in it — against the procurement simulator over real HTTP, checked in
the database, the HTTP API and ``openseal actions show``."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest
import sqlalchemy as sa

from openseal.cli.main import main
from openseal.compiler.lang import types as ty
from openseal.runtime import service
from openseal.runtime.actions.replies import EXCERPT_CHARS, scrub, unfit_reply
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables import schema
from openseal.simulator.procurement import ProcurementSimulator
from openseal.skills.base import SkillResult
from openseal.skills.secrets import Secret
from tests.api.support import operated, serving
from tests.runtime.action_support import (  # noqa: F401
    LOCAL,
    TOKEN,
    Flow,
    flow,
    simulator_fixture,
)
from tests.runtime.support import Backend


def everything_stored(store: Store) -> str:
    """Every row of every table, as text."""
    chunks = []
    with store.engine.connect() as conn:
        for table in schema.metadata.sorted_tables:
            for row in conn.execute(sa.select(table)).mappings():
                chunks.append(repr(dict(row)))
    return "\n".join(chunks)


def approved_run(f: Flow) -> str:
    run = f.start()
    f.run_until_idle()
    [approval] = service.list_approvals(f.store, run_id=run.id)
    service.decide_approval(
        f.store,
        LOCAL,
        service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
        service.CLI,
    )
    return run.id


def test_an_echoed_credential_is_stored_nowhere_and_an_unfit_reply_only_in_part(
    backend: Backend,
    simulator: ProcurementSimulator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = backend.open()
    f = flow(store, simulator, tmp_path)
    run_id = approved_run(f)
    simulator.set_fault(echo_credential=True)
    f.run_until_idle()
    [order] = simulator.orders()  # the order was placed, the reply was an echo
    assert store.runs.get(run_id).status == RunStatus.NEEDS_ATTENTION
    [action] = service.list_actions(store, run_id=run_id)
    assert action.status == ActionStatus.NEEDS_ATTENTION
    assert "its reply does not fit" in str(action.error)
    # Only what the output type admits, plus a redacted excerpt for diagnosis.
    assert action.result["admitted"] == {"status": "received"}
    assert "Bearer ***" in action.result["excerpt"]
    assert action.result["truncated"] is False
    assert TOKEN not in everything_stored(store)

    with serving(operated(tmp_path), store) as server, server.client() as client:
        shown = client.get(f"/actions/{action.id}")
        assert shown.status_code == 200, shown.text
        assert shown.json()["action"]["result"]["admitted"] == {"status": "received"}
        assert TOKEN not in shown.text
        listed = client.get("/actions", params={"run_id": run_id})
        assert listed.status_code == 200 and TOKEN not in listed.text

    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    if backend.url is not None:
        options = quote(f"-csearch_path={backend.pg_schema}")
        monkeypatch.setenv("OPENSEAL_DATABASE_URL", f"{backend.url}?options={options}")
    for output in ("text", "json"):
        capsys.readouterr()
        code = main(["actions", "show", action.id, "--home", str(backend.home), "--output", output])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert TOKEN not in out + err
        assert "Bearer ***" in out
    assert order["idempotency_key"] == action.key


def test_every_reply_is_scrubbed_of_credential_values() -> None:
    secret = Secret("s3cr3t-value")
    reply = SkillResult(
        "succeeded",
        {"note": "token s3cr3t-value", "nested": [{"s3cr3t-value": 1}], "n": 3},
        "echo: s3cr3t-value",
        {"status": 200, "header": "Bearer s3cr3t-value"},
    )
    clean = scrub(reply, [secret])
    assert "s3cr3t-value" not in json.dumps([clean.output, clean.error, dict(clean.detail)])
    assert clean.output == {"note": "token ***", "nested": [{"***": 1}], "n": 3}
    assert (clean.outcome, clean.detail["status"]) == ("succeeded", 200)


def test_an_unfit_reply_keeps_fitting_declared_fields_and_a_capped_excerpt() -> None:
    from openseal.skills.skill import Adapter, Skill

    output = ty.ObjectType(
        (ty.Field("order_id", ty.Primitive("string")), ty.Field("total", ty.Primitive("number")))
    )
    spec = Skill(effect="external", adapter=Adapter(), output=output)
    kept = unfit_reply(spec, {"order_id": 7, "total": 5.0, "debug": "x" * 5000})
    assert kept["admitted"] == {"total": 5.0}  # order_id is not a string: not admitted
    assert len(kept["excerpt"]) == EXCERPT_CHARS and kept["truncated"] is True
    assert unfit_reply(spec, ["not", "an", "object"])["admitted"] == {}
