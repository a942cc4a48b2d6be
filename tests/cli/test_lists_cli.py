"""Lists people can use: headers, newest first, a cursor, filters and widths that fit; a run's
turns; and what ``runs cancel`` says it prevented. SQLite and PostgreSQL, through ``main``."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from openseal.cli.output import handle, when
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import ScriptedProvider, fixed
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.simulator.procurement import ProcurementSimulator
from openseal.skills.credentials import RuntimeContext
from tests.cli.support import Cli, create
from tests.cli.test_approvals_cli import authority, pending, waiting  # noqa: F401  (fixture)
from tests.runtime.action_support import (  # noqa: F401
    PICK,
    Flow,
    context_file,
    flow,
    simulator_fixture,
)
from tests.runtime.support import Backend


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()]


def test_lists_have_headers_newest_first_and_a_cursor(
    cli: Cli,
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    made = [create(cli, str(n)) for n in range(3)]
    code, out, err = cli("runs", "list", "--limit", "2")
    assert code == 0, err
    header, *listed = rows(out)
    assert header == ["HANDLE", "STATUS", "WORKFLOW", "STATE", "CREATED"]
    assert [r[0] for r in listed] == [handle(made[2]), handle(made[1])]
    assert listed[0][1:3] == ["queued", "small"]
    assert f"the next page: --after {made[1]}" in err
    code, out, err = cli("runs", "list", "--after", made[1])
    assert [r[0] for r in rows(out)[1:]] == [handle(made[0])] and "next page" not in err
    # what a list shows is what a command takes
    assert cli.json("runs", "show", listed[1][0])["run"]["id"] == made[1]  # type: ignore[index]
    assert cli("runs", "list", "--workflow", "nothing")[1] == "no runs\n"
    assert len(rows(cli("runs", "list", "--since", "10m")[1])) == 4
    later = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()
    assert cli("runs", "list", "--since", later)[1] == "no runs\n"
    code, out, err = cli("objectives", "list", "--workflow", "small", "--status", "active")
    header, *listed = rows(out)
    assert header == ["HANDLE", "STATUS", "PRIORITY", "WORKFLOW", "CREATED", "GOAL"]
    assert len(listed) == 3 and listed[0][2:4] == ["0", "small"] and listed[0][5:] == ["-"]
    code, _, err = cli("runs", "list", "--since", "last tuesday")
    assert code == 2 and err.startswith("error: since: expected an age (30m, 2h, 7d)")


def test_columns_fit_the_terminal_and_handles_are_never_cut(
    cli: Cli,
    waiting: tuple[Flow, str],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, run_id = waiting
    authority(tmp_path, monkeypatch)
    monkeypatch.setenv("COLUMNS", "200")
    wide = cli("approvals", "list")[1]
    assert max(len(line) for line in wide.splitlines()) > 120
    monkeypatch.setenv("COLUMNS", "120")
    code, out, _ = cli("approvals", "list")
    assert code == 0
    assert all(len(line) <= 120 for line in out.splitlines())
    header, row = rows(out)
    assert header == ["HANDLE", "STATUS", "PROPOSAL", "RUN", "EXPIRES", "HASH"]
    assert row[3] == handle(run_id) and row[5].endswith("…")  # the hash is cut, handles whole
    # the handle and the hash prefix a 120-column list shows are what a decision takes
    assert len(row[5]) - 1 >= 10
    approved = cli.json("approvals", "approve", row[0], "--hash", row[5][:-1])
    assert approved["approval"]["status"] == "approved", approved  # type: ignore[index]


@pytest.fixture
def researched(
    cli: Cli,
    backend: Backend,
    simulator: ProcurementSimulator,
    tmp_path: Path,
) -> str:
    """A procurement run whose research called a tool, then answered; waiting for approval."""
    assert cli("db", "upgrade")[0] == 0
    f = flow(backend.open(), simulator, tmp_path)
    run = f.start()
    search = {"id": "c1", "name": "search_vendors", "arguments": {"item": "laptop", "quantity": 10}}
    script = {"research#1": [
        {"tool_calls": [search], "usage": {"input_tokens": 400, "output_tokens": 20}},
        {"output": PICK, "usage": {"input_tokens": 600, "output_tokens": 30}},
    ]}  # fmt: skip
    context = RuntimeContext.load(context_file(tmp_path, simulator))
    Engine(f.store, fixed(ScriptedProvider(script)), context=context).run_until_idle()
    assert f.status(run) == RunStatus.WAITING_FOR_APPROVAL
    return run.id


def test_runs_turns_shows_each_turn_with_its_calls_model_and_tokens(
    cli: Cli,
    researched: str,
) -> None:
    run_id = researched
    code, out, err = cli("runs", "turns", run_id[:16])
    assert code == 0, err
    first = out.splitlines()[0].split()
    assert first[:4] == ["turn", "1", "research", "advanced"]
    assert "1000+50 tokens" in out.splitlines()[0]
    assert (
        "model  research:1:model:1  scripted-procurement  400+20 tokens  -> search_vendors" in out
    )
    assert "tool   research:1:tool:1:0  search_vendors  ok" in out
    assert "model  research:1:model:2  scripted-procurement  600+30 tokens  -> output" in out
    turns = cli.json("runs", "turns", run_id)
    assert isinstance(turns, list)
    research = turns[0]
    models = [c for c in research["calls"] if c["kind"] == "model"]
    assert [c["model"] for c in models] == ["scripted-procurement"] * 2
    assert all(c["profile"] == "procurement_default" for c in models)
    assert research["tokens"] == {"input": 1000, "output": 50}
    assert [t["calls"] for t in turns[1:]] == [[]] * (len(turns) - 1)
    assert turns[-1]["outcome"] == "waiting"
    assert cli("runs", "turns", "ffff")[0] == 1


def test_cancel_says_what_it_prevented_and_what_may_have_happened(
    cli: Cli,
    waiting: tuple[Flow, str],  # noqa: F811
) -> None:
    _, run_id = waiting
    [approval] = [a for a in cli.json("approvals", "list")]  # type: ignore[union-attr]
    code, out, err = cli("runs", "cancel", run_id, "--reason", "not needed")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"run {run_id} canceled: now canceled"
    assert "  was waiting_for_approval in state review" in lines
    assert f"  prevented: approval {approval['id']} canceled" in out
    assert "  may have happened: nothing" in lines
    # a repeated cancel is a no-op that says so, as a repeated approval is
    events = cli.json("runs", "show", run_id)["run"]["last_event_seq"]  # type: ignore[index]
    code, out, err = cli("runs", "cancel", run_id, "--reason", "again")
    assert (code, out) == (0, f"run {run_id} was canceled already (nothing changed)\n"), err
    again = cli.json("runs", "cancel", run_id)
    assert isinstance(again, dict) and again["changed"] is False
    assert again["report"]["canceled_approvals"] == [approval["id"]]
    assert cli.json("runs", "show", run_id)["run"]["last_event_seq"] == events  # type: ignore[index]
    shown = cli.json("runs", "show", run_id)
    assert shown["run"]["status"] == "canceled"  # type: ignore[index]


def test_every_list_has_a_header_and_says_when_it_is_empty(
    cli: Cli,
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    for empty in (("tokens", "list"), ("requests", "list"), ("triggers", "list")):
        code, out, err = cli(*empty)
        assert code == 0, err
        assert out.startswith("no ") and len(out.splitlines()) == 1, out
    assert cli("tokens", "create", "user:vera", "--role", "viewer")[0] == 0
    code, out, _ = cli("tokens", "list")
    header, [_id, state, principal, roles, scopes, expires] = rows(out)
    assert header == ["HANDLE", "STATE", "PRINCIPAL", "ROLES", "SCOPES", "EXPIRES"]
    assert len(_id) == 8
    assert (state, principal, roles, scopes, expires) == (
        "active", "user:vera", "viewer", "default", "never",
    )  # fmt: skip
    code, out, _ = cli("deployments", "list")
    header, [name, kind, version, _revision, activated, by, _proposal] = rows(out)
    assert header == ["NAME", "KIND", "VERSION", "REVISION", "ACTIVATED", "BY", "PROPOSAL"]
    assert (name, kind, by) == ("small", "workflow", "user:test")
    assert TIME.fullmatch(activated), activated
    code, out, _ = cli("deployments", "history", "small")
    header, [activated, before, after, by, _proposal] = rows(out)
    assert header == ["ACTIVATED", "FROM", "TO", "BY", "PROPOSAL"]
    assert TIME.fullmatch(activated) and (before, after[:8]) == ("-", version[:8])


#: the one format every list and show prints a time in
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def test_times_are_printed_one_way_in_lists_and_shows(
    cli: Cli,
    waiting: tuple[Flow, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, run_id = waiting
    monkeypatch.setenv("COLUMNS", "250")
    [approval] = cli.json("approvals", "list")  # type: ignore[misc]
    shown = cli("approvals", "show", approval["id"])[1]
    listed = cli("approvals", "list")[1]
    expires = when(datetime.fromisoformat(approval["expires_at"]))
    assert TIME.fullmatch(expires)
    assert f"  expires    {expires}\n" in shown and f"  {expires}  " in listed
    deployed = cli("deployments", "list")[1].splitlines()[1].split()[4]
    history = cli("deployments", "history", "procure_laptops")[1].splitlines()[1].split()[0]
    assert TIME.fullmatch(deployed) and deployed == history
    created = rows(cli("runs", "list")[1])[1][4]
    assert TIME.fullmatch(created)
    # events and turns add milliseconds to the same form
    first_event = cli("runs", "events", run_id)[1].splitlines()[0].split()[1]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", first_event)


def test_actions_list_shows_what_the_destination_confirmed(
    cli: Cli,
    waiting: tuple[Flow, str],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    f, run_id = waiting
    approval = pending(f.store)
    authority(tmp_path, monkeypatch)
    assert cli("approvals", "approve", approval.id, "--hash", approval.proposal_hash)[0] == 0
    f.run_until_idle()
    monkeypatch.setenv("COLUMNS", "160")
    code, out, err = cli("actions", "list")
    assert code == 0, err
    header, listed = out.splitlines()
    assert header.split() == ["HANDLE", "STATUS", "SKILL", "RUN", "CREATED", "OUTCOME"]
    # the purchase-order id comes first, not a JSON document cut in its middle
    outcome = listed.split(handle(run_id), 1)[1].split(None, 1)[1]
    assert outcome.startswith("order_id=PO-000001"), outcome
    assert "{" not in listed
