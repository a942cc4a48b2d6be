"""Every operational command as a client of a server (``--server``): each prints the same on
the store and through an ``openseal serve`` API over the same store (real HTTP on loopback);
what changes something is the server's to allow, as the token's principal; an operation the
server does not serve is explained in one line. On SQLite, and on PostgreSQL with the slow set
(what differs between the backends is the store's, tested on both in ``make test``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from openseal.api import ApiSettings
from openseal.cli.output import handle
from openseal.runtime import service
from openseal.runtime.store import Run, Store
from openseal.wire import jsonable
from tests.api.conftest import Serve, serve, store  # noqa: F401  (fixtures)
from tests.api.support import LiveServer, operated, serving
from tests.api.test_agent_requests_api import delegated  # noqa: F401  (fixture)
from tests.cli.support import Cli
from tests.cli.test_approvals_cli import pending, waiting  # noqa: F401  (fixture)
from tests.cli.test_deploy_cli import BOB, CAROL, write_definitions
from tests.cli.test_thin_client import both, server  # noqa: F401  (fixture)
from tests.cli.test_tokens_client import token
from tests.runtime.action_support import Flow, simulator_fixture  # noqa: F401  (fixture)
from tests.runtime.support import Backend
from tests.runtime.trigger_support import EVENT_TRIGGER, deploy_triggers, schedule, trigger_project


def test_runs_and_objectives_read_the_same_through_the_server(
    cli: Cli,
    waiting: tuple[Flow, str],  # noqa: F811
    server: LiveServer,  # noqa: F811
) -> None:
    f, run_id = waiting
    objective_id = f.store.runs.get(run_id).objective_id
    assert handle(run_id) in both(cli, server.url, "runs", "list")
    both(cli, server.url, "runs", "list", "--status", "waiting_for_approval", "-o", "json")
    # a time without an offset (UTC, as the store reads it) is sent as one the API takes
    for since in ("1h", "2000-01-01T09:30", "2000-01-01"):
        assert handle(run_id) in both(cli, server.url, "runs", "list", "--since", since)
    shown = both(cli, server.url, "runs", "show", run_id[:8])  # an id prefix
    assert "waiting" in shown
    both(cli, server.url, "runs", "show", run_id, "-o", "yaml")
    events = both(cli, server.url, "runs", "events", run_id)
    assert "run.created" in events
    both(cli, server.url, "runs", "events", run_id, "--after", "2", "--limit", "3", "-o", "json")
    assert "model" in both(cli, server.url, "runs", "turns", run_id)
    both(cli, server.url, "runs", "turns", run_id, "-o", "json")
    assert handle(objective_id) in both(cli, server.url, "objectives", "list")
    both(cli, server.url, "objectives", "list", "-o", "yaml")
    assert handle(run_id) in both(cli, server.url, "objectives", "show", objective_id[:10])
    both(cli, server.url, "objectives", "show", objective_id, "-o", "json")
    assert "attempts  1 of 1" in both(cli, server.url, "objectives", "show", objective_id)
    # not found is the same refusal either way, whatever characters the reference holds: each
    # is one path segment, never another route (`..`, a query, a fragment, an escape)
    for odd in ("f" * 32, "..", ".", "a?status=pending", "x#y", "%2e%2e", "turns"):
        missing = cli("runs", "show", odd)
        assert missing[0] == 1 and missing == cli("runs", "show", odd, "--server", server.url)
    code, out, err = cli("runs", "show", f"{run_id}/events", "--server", server.url)
    assert (code, out) == (2, "") and "holds '/'" in err


def test_runs_are_steered_through_the_server(
    cli: Cli,
    waiting: tuple[Flow, str],  # noqa: F811
    server: LiveServer,  # noqa: F811
) -> None:
    f, run_id = waiting
    steer = ("--server", server.url)
    code, out, err = cli("runs", "pause", run_id, "--reason", "vendor outage", *steer)
    assert (code, out) == (0, f"run {run_id} paused: now paused\n"), err
    stale = cli("runs", "resume", run_id, "--expected-revision", "0", *steer, "-o", "json")
    assert stale[0] == 1 and json.loads(stale[1])["error"]["code"] == "stale_revision"
    code, out, err = cli("runs", "resume", run_id, *steer)
    assert (code, out) == (0, f"run {run_id} resumed: now waiting_for_approval\n"), err
    code, out, err = cli("runs", "cancel", run_id, "--reason", "no longer needed", *steer)
    assert code == 0, err
    assert out.startswith(f"run {run_id} canceled: now canceled\n  was waiting_for_approval")
    assert f"approval {pending_id(f)} canceled" in out
    # the events say who: the server's caller (a loopback caller without a token)
    [canceled] = [e for e in f.store.runs.events(run_id) if e.type == "run.canceled"]
    assert canceled.actor == "user:local"
    # canceling again changes nothing and says so the same either way
    again = both(cli, server.url, "runs", "cancel", run_id)
    assert again == f"run {run_id} was canceled already (nothing changed)\n"
    assert both(cli, server.url, "runs", "cancel", run_id, "-o", "json")
    # a run that has ended: --follow prints what is there and stops, either way
    followed = both(cli, server.url, "runs", "events", run_id, "--follow", "-o", "json")
    assert json.loads(followed.splitlines()[-1])["type"] == "run.canceled"
    code, _, err = cli("runs", "intervene", run_id, "--reason", "retry", *steer)
    assert code == 1 and "canceled" in err


def pending_id(f: Flow) -> str:
    [approval] = service.list_approvals(f.store)
    return approval.id


def test_objectives_are_steered_through_the_server(
    cli: Cli,
    waiting: tuple[Flow, str],  # noqa: F811
    server: LiveServer,  # noqa: F811
) -> None:
    f, run_id = waiting
    objective_id = f.store.runs.get(run_id).objective_id
    steer = ("--server", server.url)
    code, out, err = cli("objectives", "pause", objective_id, "--reason", "outage", *steer)
    assert code == 0 and out.startswith(f"objective {objective_id}  paused"), err
    assert f.store.runs.get(run_id).status == "paused"
    stale = cli("objectives", "resume", objective_id, "--expected-revision", "1", *steer, "-o",
                "json")  # fmt: skip
    assert stale[0] == 1 and json.loads(stale[1])["error"]["code"] == "stale_revision"
    resumed = cli("objectives", "resume", objective_id, *steer, "-o", "json")
    assert resumed == cli("objectives", "show", objective_id, "-o", "json")
    assert json.loads(resumed[1])["runs"][0]["status"] == "waiting_for_approval"
    code, out, err = cli("objectives", "retire", objective_id, *steer)
    assert code == 0 and out.startswith(f"objective {objective_id}  retired"), err
    # the server's caller did it (a loopback caller without a token)
    [retired] = [e for e in f.store.runs.events(run_id) if e.type == "objective.retired"]
    assert retired.actor == "user:local"
    assert f.store.runs.get(run_id).status == "canceled"


def test_objectives_are_created_through_a_server_that_runs_them(
    cli: Cli,
    waiting: tuple[Flow, str],  # noqa: F811
    server: LiveServer,  # noqa: F811
) -> None:
    f, _ = waiting
    create = ("objectives", "create", "--workflow", "procure_laptops", "--input",
              'request={"item": "laptop", "quantity": 2, "budget": 3000}')  # fmt: skip
    # without workers the server does not start runs: said in one line, before anything
    code, out, err = cli(*create, "--server", server.url)
    assert (code, out) == (1, "")
    assert f"the server at {server.url} does not serve objectives.create" in err
    assert err.count("\n") == 1
    with serving(operated(cli.home, external_workers=True), f.store) as running:
        keyed = (*create, "--request-key", "order-7")
        code, out, err = cli(*keyed, "--server", running.url)
        assert code == 0 and " created run " in out, err
        again = cli(*keyed, "--server", running.url, "-o", "json")
        assert again == cli(*keyed, "-o", "json")  # the same key: the same objective
        assert json.loads(again[1])["created"] is False
        code, out, err = cli(*create, "--draft", "--server", running.url)
        assert code == 0 and out.endswith(" created a draft (procure_laptops)\n"), err
        draft_id = out.split()[1]
        code, out, err = cli("objectives", "resume", draft_id, "--server", running.url)
        hint = f"it is a draft: activate it with `openseal objectives activate {draft_id}`"
        assert (code, out) == (1, "") and hint in err
        code, out, err = cli("objectives", "activate", draft_id, "--server", running.url)
        assert code == 0 and out.startswith(f"objective {draft_id}  active"), err
        code, _, err = cli("objectives", "activate", draft_id, "--server", running.url)
        assert code == 1 and "it is active, not a draft" in err


def test_requests_and_triggers_read_the_same_through_the_server(
    cli: Cli,
    backend: Backend,
    tmp_path: Path,
) -> None:
    assert cli("db", "upgrade")[0] == 0
    opened = backend.open()
    deploy_triggers(opened, trigger_project(tmp_path, schedule() + EVENT_TRIGGER))
    with serving(operated(cli.home), opened) as live:
        assert "hourly   active  every 3600s      small" in both(cli, live.url, "triggers", "list")
        both(cli, live.url, "triggers", "list", "-o", "json")
        both(cli, live.url, "triggers", "show", "hourly", "--limit", "5")
        code, out, err = cli("triggers", "pause", "hourly", "--server", live.url)
        assert (code, out) == (0, "trigger hourly is paused; next -\n"), err
        both(cli, live.url, "triggers", "show", "hourly", "-o", "yaml")
        assert cli("triggers", "resume", "hourly", "--server", live.url)[0] == 0
        missing = cli("triggers", "pause", "nightly")
        assert missing[0] == 1
        assert missing == cli("triggers", "pause", "nightly", "--server", live.url)
        assert both(cli, live.url, "requests", "list") == "no agent requests\n"
        both(cli, live.url, "requests", "list", "--status", "accepted", "-o", "json")
        unknown = cli("requests", "show", "f" * 32)
        assert unknown[0] == 1 and unknown == cli(
            "requests", "show", "f" * 32, "--server", live.url
        )
        code, _, err = cli("requests", "accept", "f" * 32, "--actor", BOB, "--server", live.url)
        assert code == 2 and "--actor" in err


def test_agent_requests_are_read_and_answered_the_same_through_the_server(
    cli: Cli,
    store: Store,  # noqa: F811
    delegated: tuple[Run, str],  # noqa: F811
    serve: Serve,  # noqa: F811
) -> None:
    run, request_id = delegated
    url = serve(external_workers=True, home=Path(cli.home)).url
    assert handle(request_id) in both(cli, url, "requests", "list", "--run", run.id)
    both(cli, url, "requests", "list", "--status", "accepted", "-o", "json")
    assert "callee     agent.finance" in both(cli, url, "requests", "show", request_id[:8])
    both(cli, url, "requests", "show", request_id, "-o", "yaml")
    steps = [
        (("clarify", "--question", "Which cost center?"), "clarification_requested"),
        (("clarify", "--answer", "CC-7"), "accepted"),
        (("decline", "--reason", "CC-7 is frozen"), "declined"),
    ]
    for step, status in steps:
        code, out, err = cli("requests", step[0], request_id, *step[1:], "--server", url)
        assert (code, out) == (0, f"agent request {request_id}: {status}\n"), err
    shown = both(cli, url, "requests", "show", request_id)
    assert "question   Which cost center?  (by user:local)" in shown
    late = ("requests", "accept", request_id)
    assert cli(*late)[0] == 1 and cli(*late) == cli(*late, "--server", url)
    actors = {e.type: e.actor for e in store.runs.events(run.id) if "agent_request" in e.type}
    assert actors["agent_request.declined"] == "user:local"


@pytest.fixture
def governed(
    cli: Cli,
    backend: Backend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[Store, LiveServer, Path]]:
    """A store, a server over it with tokens for the author (the CLI's), bob and carol, and
    the definitions of a workflow and its governance."""
    assert cli("db", "upgrade")[0] == 0
    opened = backend.open()
    monkeypatch.setenv("OPENSEAL_TOKEN", token(opened, "user:alice", ("author",), ("*",)))
    with serving(ApiSettings(), opened) as live:
        yield opened, live, write_definitions(tmp_path, max_risk="write")


def test_deploy_and_proposals_go_through_the_server_as_each_token(
    cli: Cli,
    governed: tuple[Store, LiveServer, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    opened, live, defs = governed
    at = ("--server", live.url)
    filed = cli("deploy", str(defs), "--message", "v1", *at, "-o", "json")
    assert filed[0] == 0, filed
    proposal = json.loads(filed[1])["proposal"]
    assert proposal["author"] == "user:alice" and proposal["status"] == "proposed"
    again = cli("deploy", str(defs), *at)
    assert again[1].startswith(f"change proposal {proposal['id']} is already open")
    # waiting for activation asks the server for the proposal until it gives up
    code, out, err = cli("deploy", str(defs), "--wait-for-activation", "--timeout", "0", *at)
    assert code == 1 and out.endswith(f"change proposal {proposal['id']} is proposed\n")
    assert err.endswith("is still proposed after waiting 0 s for activation\n"), err
    assert handle(proposal["id"]) in both(cli, live.url, "proposals", "list")
    both(cli, live.url, "proposals", "list", "--status", "proposed", "-o", "json")
    shown = both(cli, live.url, "proposals", "show", proposal["id"][:12], "--events")
    assert "change_proposal.filed" in shown and "[risk-widening]" in shown
    both(cli, live.url, "proposals", "show", proposal["id"], "-o", "yaml")
    replayed = both(cli, live.url, "proposals", "replay", proposal["id"][:12], "--runs", "5")
    assert replayed.startswith(f"0 run(s) replayed against {proposal['id']}: 0 same"), replayed
    # the author may not review (the server's roles), nor claim to be someone else
    code, _, err = cli("proposals", "review", proposal["id"], "--approve", *at)
    assert code == 1 and "may not use proposals.review" in err
    code, _, err = cli("proposals", "review", proposal["id"], "--approve", "--actor", BOB, *at)
    assert code == 2 and "--actor" in err
    monkeypatch.setenv("OPENSEAL_TOKEN", token(opened, BOB, ("reviewer",), ("*",)))
    code, out, err = cli("proposals", "review", proposal["id"], "--approve", *at)
    assert (code, out.rsplit("; ", 1)[-1]) == (0, "status in_review\n"), err
    monkeypatch.setenv("OPENSEAL_TOKEN", token(opened, CAROL, ("decider", "author"), ("*",)))
    decided = cli("proposals", "decide", proposal["id"], "--approve", *at, "-o", "json")
    assert json.loads(decided[1])["status"] == "approved", decided
    code, out, err = cli("proposals", "activate", proposal["id"], *at)
    assert (code, out) == (0, f"change proposal {proposal['id']} activated; status activated\n")
    assert "answer" in both(cli, live.url, "deployments", "list")
    both(cli, live.url, "deployments", "list", "-o", "json")
    assert "active" in both(cli, live.url, "deployments", "show", "answer")
    both(cli, live.url, "deployments", "show", "answer", "-o", "json")
    history = both(cli, live.url, "deployments", "history", "answer")
    assert CAROL in history and handle(proposal["id"]) in history
    code, _, err = cli("deployments", "rollback", "answer", *at)
    assert code == 1 and err.startswith("error: ") and err.count("\n") == 1, err


def test_a_record_reads_back_from_its_document(
    waiting: tuple[Flow, str],  # noqa: F811
) -> None:
    """The one vocabulary: a record's JSON document reads back into the same record, so a
    command prints the same from the store and from a server."""
    from openseal.cli.client import record

    f, run_id = waiting
    held = f.store
    run = held.runs.get(run_id)
    approval = pending(held)
    samples = [
        run,
        service.show_run(held, run_id),
        approval,
        *service.list_objectives(held),
        *service.run_events(held, run_id),
        *service.run_turns(held, run_id),
    ]
    for sample in samples:
        assert record(type(sample), json.loads(json.dumps(jsonable(sample)))) == sample


OPERATIONAL = ("objectives", "runs", "approvals", "actions", "requests", "deploy", "proposals",
               "deployments", "triggers", "tokens")  # fmt: skip


@pytest.mark.parametrize("command", OPERATIONAL)
def test_help_says_where_the_command_acts(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    from openseal.cli.main import main

    assert main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--server" in text and "OPENSEAL_SERVER" in text, text
    assert "the store under --home" in text, text
