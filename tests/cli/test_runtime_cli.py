"""``openseal db|objectives|runs`` on SQLite and PostgreSQL, in-process through ``main``."""

from __future__ import annotations

import gc
import json

import pytest

from openseal.cli.output import handle
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.cli.support import Cli, create, work


def test_a_worker_leaves_what_start_up_built_out_of_garbage_collections(
    cli: Cli, store: Store
) -> None:
    # (the suite's autouse fixture unfreezes after every test)
    code, _out, err = cli("worker", "--until-idle")
    assert code == 0, err
    # what the process had built before its first claim, modules and store included
    assert gc.get_freeze_count() > 10_000


def test_a_server_leaves_what_start_up_built_out_of_garbage_collections(
    cli: Cli, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    frozen: list[int] = []

    def run(server: uvicorn.Server) -> None:  # what the server would find on starting
        frozen.append(gc.get_freeze_count())
        server.should_exit = True

    monkeypatch.setattr(uvicorn.Server, "run", run)
    code, _out, err = cli("serve", "--port", "0")
    assert code == 0, err
    assert frozen and frozen[0] > 10_000


def test_db_upgrade_reports_the_revision(cli: Cli) -> None:
    code, out, err = cli("db", "upgrade")
    assert code == 0, err
    assert out.startswith("database at revision ")
    assert cli.json("db", "upgrade")["revision"]  # type: ignore[index]


def test_objectives_create_list_show_and_idempotency(cli: Cli, store: Store) -> None:
    first = cli.json("objectives", "create", "--workflow", "small", "--input", "n=5",
                     "--request-key", "k1")  # fmt: skip
    again = cli.json("objectives", "create", "--workflow", "small", "--input", "n=5",
                     "--request-key", "k1")  # fmt: skip
    assert isinstance(first, dict) and isinstance(again, dict)
    assert again["created"] is False
    assert again["objective"]["id"] == first["objective"]["id"]
    listed = cli.json("objectives", "list")
    assert [o["id"] for o in listed] == [first["objective"]["id"]]  # type: ignore[union-attr]
    code, out, _ = cli("objectives", "show", first["objective"]["id"])
    assert code == 0
    [row] = [line for line in out.splitlines() if handle(first["run"]["id"]) in line]
    assert row.split()[:3] == ["1", handle(first["run"]["id"]), "queued"]
    assert '"n": 5' in out


def test_objectives_terms_show_with_runs_and_steering(cli: Cli, store: Store) -> None:
    created = cli.json("objectives", "create", "--workflow", "small", "--input", "n=5",
                       "--goal", "pick a number", "--priority", "4")  # fmt: skip
    assert isinstance(created, dict)
    objective_id, run_id = created["objective"]["id"], created["run"]["id"]
    assert (created["objective"]["priority"], created["run"]["priority"]) == (4, 4)
    code, out, _ = cli("objectives", "show", objective_id)
    assert code == 0
    assert "goal      pick a number" in out and "priority  4" in out
    assert "owner     agent.clerk" in out and "attempts  1 of 1" in out
    shown = cli.json("objectives", "show", objective_id)
    assert isinstance(shown, dict)
    assert [(r["id"], r["attempt"]) for r in shown["runs"]] == [(run_id, 1)]
    code, out, _ = cli("objectives", "list")
    assert out.splitlines()[1].split()[2:4] == ["4", "small"]
    assert out.splitlines()[1].endswith("pick a number")
    [listed] = cli.json("objectives", "list")  # type: ignore[misc]
    assert (listed["priority"], listed["goal"]) == (4, "pick a number")

    paused = cli.json("objectives", "pause", objective_id, "--reason", "outage")
    assert isinstance(paused, dict) and paused["objective"]["status"] == "paused"
    assert store.runs.get(run_id).status == RunStatus.PAUSED
    code, out, _ = cli("objectives", "resume", objective_id)
    assert code == 0 and "active" in out.splitlines()[0]
    assert store.runs.get(run_id).status == RunStatus.QUEUED
    retired = cli.json("objectives", "retire", objective_id)
    assert isinstance(retired, dict) and retired["objective"]["status"] == "retired"
    assert [r["status"] for r in retired["runs"]] == ["canceled"]
    code, _, err = cli("objectives", "pause", objective_id)
    assert code == 1 and "it is retired" in err


def test_a_draft_objective_is_created_listed_and_activated(cli: Cli, store: Store) -> None:
    code, out, err = cli("objectives", "create", "--workflow", "small", "--input", "n=5", "--draft")
    assert code == 0, err
    assert out.startswith("objective ") and out.endswith(" created a draft (small)\n")
    objective_id = out.split()[1]
    [listed] = cli.json("objectives", "list", "--status", "draft")  # type: ignore[misc]
    assert listed["id"] == objective_id and listed["attempts"] == 0
    code, out, _ = cli("objectives", "show", objective_id)
    assert "draft" in out.splitlines()[0] and "no runs" in out
    code, out, err = cli("objectives", "resume", objective_id)
    hint = f"it is a draft: activate it with `openseal objectives activate {objective_id}`"
    assert (code, out) == (1, "") and hint in err
    assert store.objectives.get(objective_id).status == "draft"
    activated = cli.json("objectives", "activate", objective_id[:12], "--reason", "go")
    assert isinstance(activated, dict) and activated["objective"]["status"] == "active"
    assert [r["status"] for r in activated["runs"]] == ["queued"]
    code, _, err = cli("objectives", "activate", objective_id)
    assert code == 1 and "it is active, not a draft" in err
    assert cli("objectives", "pause", objective_id)[0] == 0
    code, _, err = cli("objectives", "activate", objective_id)
    assert code == 1 and f"resume it with `openseal objectives resume {objective_id}`" in err


def test_runs_show_prints_state_waiting_reason_and_position(cli: Cli, store: Store) -> None:
    run_id = create(cli)
    work(store)
    code, out, _ = cli("runs", "show", run_id)
    assert code == 0
    assert f"run {run_id}  waiting_for_event  workflow small" in out
    assert "position  sum -> await_ok -> done" in out
    assert "waiting   event ok {'n': 5}" in out
    shown = cli.json("runs", "show", run_id)
    assert shown["position"] == {"previous": "sum", "current": "await_ok", "next": ["done"]}  # type: ignore[index]
    listed = cli.json("runs", "list", "--status", "waiting_for_event")
    assert [r["id"] for r in listed] == [run_id]  # type: ignore[union-attr]


def test_runs_events_pages_and_follows(cli: Cli, store: Store) -> None:
    run_id = create(cli)
    work(store)
    code, out, _ = cli("runs", "events", run_id, "--after", "2", "--output", "json")
    assert code == 0
    seqs = [json.loads(line)["seq"] for line in out.splitlines()]
    assert seqs[0] == 3 and seqs == list(range(3, 3 + len(seqs)))
    cli("runs", "cancel", run_id, "--reason", "done testing")
    code, out, _ = cli("runs", "events", run_id, "--follow")
    assert code == 0  # ends because the run is terminal
    heads = [line for line in out.splitlines() if not line.startswith(" " * 7)]
    assert heads[-1].split()[2] == "run.canceled"
    advanced = [line for line in heads if line.split()[2] == "state.advanced"]
    assert advanced and " -> " in advanced[0]  # a summary line per event...
    payloads = [line.strip() for line in out.splitlines() if line.startswith(" " * 7)]
    assert '"reason": "done testing"' in " ".join(payloads)  # ...and its whole payload
    assert len(payloads) >= len(heads)


def test_pause_resume_cancel_through_the_cli(cli: Cli, store: Store) -> None:
    run_id = create(cli)
    revision = store.runs.get(run_id).revision
    code, _, err = cli("runs", "pause", run_id, "--expected-revision", str(revision + 1))
    assert code == 1
    assert err.strip() == (
        f"error: run {run_id} is at revision {revision}, not {revision + 1}; "
        "reload it and try again"
    )
    assert store.runs.get(run_id).status != "paused"  # refused: nothing changed
    assert f"revision {revision}" in cli("runs", "show", run_id)[1]
    code, out, _ = cli(
        "runs", "pause", run_id, "--reason", "hold", "--expected-revision", str(revision)
    )
    assert (code, out.strip()) == (0, f"run {run_id} paused: now paused")
    assert cli.json("runs", "resume", run_id)["status"] == "queued"  # type: ignore[index]
    assert cli("runs", "cancel", run_id)[0] == 0
    code, _, err = cli("runs", "resume", run_id)
    assert code == 1
    assert err.strip() == f"error: cannot resume run {run_id}: it is canceled"


def test_intervene_through_the_cli(cli: Cli, store: Store) -> None:
    run_id = create(cli)
    work(store, {"ask": [{"output": {"bad": True}}] * 3})
    assert store.runs.get(run_id).status == RunStatus.NEEDS_ATTENTION
    code, _, err = cli("runs", "intervene", run_id, "--reason", "x", "--value", "{nope")
    assert code == 2 and err.startswith("error: --value must be JSON")
    changed = cli.json("runs", "intervene", run_id, "--reason", "fixed", "--value", '{"pick": 9}')
    assert changed["status"] == "queued"  # type: ignore[index]
    work(store)
    assert store.runs.get(run_id).context["states"]["sum"] == {"total": 14}


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("runs", "show", "nope"), 1, "error: run nope not found"),
        (("objectives", "create", "--workflow", "small", "--input", "n=five"), 1,
         "error: invalid input for small: n: 'five' is not of type 'number'"),
        (("objectives", "create", "--workflow", "small", "--input", "n"), 2,
         "error: --input takes key=value, got 'n'"),
        (("objectives", "create", "--workflow", "nope"), 1,
         "error: no workflow 'nope' is deployed"),
    ],
)  # fmt: skip
def test_errors_are_one_line_with_meaningful_exit_codes(
    cli: Cli, store: Store, args: tuple[str, ...], code: int, message: str
) -> None:
    got, out, err = cli(*args)
    assert got == code
    assert err.startswith(message)
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in out + err
