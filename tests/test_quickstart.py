"""``openseal quickstart`` as a user runs it: a real process from the repository root."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import yaml

from openseal.cli.quickstart import render_outcome
from openseal.quickstart import CONTEXT_NAME, TOKEN_ENV, Decision, Options, Order, run_quickstart
from openseal.runtime import service
from openseal.runtime.store import open_store
from openseal.runtime.store.tables import schema

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
DEFINITIONS = REPO / "definitions" / "procurement" / "hcl"
LAUNCH = "import sys; from openseal.cli.main import main; sys.exit(main(sys.argv[1:]))"


def quickstart(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    command = [sys.executable, "-c", LAUNCH, "quickstart", "--home", str(home), *args]
    return subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False
    )


def as_json(home: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = quickstart(home, "--output", "json")
    return done, json.loads(done.stdout)


def count(home: Path, table: sa.Table) -> int:
    store = open_store(home=home)
    try:
        with store.read() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())
    finally:
        store.close()


def test_the_quickstart_orders_the_approved_laptops_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done, result = as_json(home)
    assert done.returncode == 0, done.stderr
    assert result["status"] == "completed"
    assert result["purchase_order_id"] == "PO-000001"
    order = result["order"]
    assert (order["vendor"], order["quantity"], order["total"]) == ("northwind", 10, 11490.0)
    assert (order["currency"], order["destination"]) == ("EUR", "O4")
    assert result["hash"] == order["hash"]
    assert [(d["decision"], d["approver"]) for d in result["decisions"]] == [
        ("approve", "user:local")
    ]

    # the hash printed is the sha256 of the stored proposal artefact, whose args are the order
    store = open_store(home=home)
    try:
        data = store.artifacts.read(result["hash"])
    finally:
        store.close()
    assert hashlib.sha256(data).hexdigest() == result["hash"]
    stored = json.loads(data)
    assert stored["run"] == result["run_id"]
    assert stored["args"] == {
        "vendor": "northwind", "quantity": 10, "total": 11490, "currency": "EUR",
        "destination": "O4",
    }  # fmt: skip

    types = [e["type"] for e in result["events"]]
    assert [e["seq"] for e in result["events"]] == list(range(1, len(types) + 1))
    for expected in ("proposal.drafted", "wait.approval", "approval.decided", "action.succeeded"):
        assert expected in types
    assert types.index("approval.decided") < types.index("action.admitted")
    assert types[-1] == "run.completed"


def test_running_it_again_in_the_same_home_starts_a_new_run_and_stores_versions_once(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    first, one = as_json(home)
    assert first.returncode == 0, first.stderr
    versions = count(home, schema.definition_versions)
    second, two = as_json(home)

    assert (two["objective_id"], two["run_id"]) != (one["objective_id"], one["run_id"])
    assert count(home, schema.definition_versions) == versions  # deduplicated
    assert count(home, schema.runs) == 2
    # The team's spend budget (250000 EUR per 30 days) has room for a second order.
    assert second.returncode == 0, second.stderr
    assert two["status"] == "completed"
    assert two["purchase_order_id"].startswith("PO-")


def test_another_home_runs_again_from_scratch(tmp_path: Path) -> None:
    for name in ("a", "b"):
        done, result = as_json(tmp_path / name)
        assert done.returncode == 0, done.stderr
        assert result["purchase_order_id"] == "PO-000001"  # a new simulator each time


def test_text_output_names_what_it_does_the_order_and_what_to_try_next(tmp_path: Path) -> None:
    done = quickstart(tmp_path / "home")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("openseal quickstart: ")
    text = done.stdout
    assert "vendor       northwind" in text
    assert "total        11490.00 EUR" in text
    assert "destination  O4" in text
    assert "purchase order PO-000001 confirmed" in text
    assert text.index("hash         sha256:") < text.index("approved by user:local")
    assert lines[-1].startswith("next: openseal runs show ")
    assert "run.completed" in text
    assert done.stderr == ""  # no progress lines when stderr is not a terminal


def test_definitions_with_errors_are_diagnostics_and_exit_1(tmp_path: Path) -> None:
    broken = tmp_path / "defs"
    broken.mkdir()
    (broken / "bad.hcl").write_text('workflow "procure_laptops" {\n  start = state.nope\n}\n')
    done = quickstart(tmp_path / "home", "--definitions", str(broken))
    assert done.returncode == 1
    assert "bad.hcl:" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_definitions_folder_is_one_line(tmp_path: Path) -> None:
    done = quickstart(tmp_path / "home", "--definitions", str(tmp_path / "missing"))
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and "does not exist" in line


def test_interactive_needs_a_terminal(tmp_path: Path) -> None:
    done = quickstart(tmp_path / "home", "--interactive")
    assert done.returncode == 2
    assert "--interactive needs a terminal" in done.stderr


class Terminal:
    """``openseal quickstart --interactive`` on a pseudo-terminal, as a person runs it."""

    def __init__(self, home: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
        self.master, slave = pty.openpty()
        command = [sys.executable, "-c", LAUNCH, "quickstart", "--home", str(home), "--interactive"]
        self.process = subprocess.Popen(
            command, cwd=REPO, env={**env, "NO_COLOR": "1"}, stdin=slave, stdout=slave,
            stderr=slave, close_fds=True,
        )  # fmt: skip
        os.close(slave)
        self.seen = ""

    def read_until(self, text: str, *, after: int = 0) -> None:
        """Read the terminal until ``text`` appears past offset ``after`` (a hang guard only)."""
        while text not in self.seen[after:]:
            ready, _, _ = select.select([self.master], [], [], 180)
            assert ready, f"gave up waiting for {text!r}; the terminal shows:\n{self.seen}"
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # the process ended and closed the terminal
                chunk = b""
            assert chunk, f"the terminal closed before {text!r}:\n{self.seen}"
            self.seen += chunk.decode("utf-8", "replace")

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def finish(self) -> int:
        code = self.process.wait(timeout=180)
        with contextlib.suppress(OSError):
            while chunk := os.read(self.master, 4096):
                self.seen += chunk.decode("utf-8", "replace")
        os.close(self.master)
        return code


def test_a_bare_enter_decides_nothing_and_the_end_of_input_exits_undecided(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    terminal = Terminal(home)
    terminal.read_until("Decision (approve, reject, request-changes):")
    asked = len(terminal.seen)
    terminal.type("\r")  # a bare Enter: no default, so the question is asked again
    terminal.read_until("Decision (approve, reject, request-changes):", after=asked)
    terminal.type("\x04")  # the end of input (Ctrl-D)
    assert terminal.finish() == 1
    assert "no decision was made (the input ended): nothing was approved or sent" in (terminal.seen)
    assert "Traceback" not in terminal.seen and "approved by" not in terminal.seen
    store = open_store(home=home)
    try:
        [approval] = service.list_approvals(store)
        assert approval.status == "pending" and approval.decided_by is None
        assert [a.status for a in service.list_actions(store)] == ["waiting_for_approval"]
    finally:
        store.close()


def test_a_typed_approve_orders_the_laptops(tmp_path: Path) -> None:
    terminal = Terminal(tmp_path / "home")
    terminal.read_until("Decision (approve, reject, request-changes):")
    terminal.type("approve\r")
    assert terminal.finish() == 0, terminal.seen
    assert "approved by user:local" in terminal.seen
    assert "purchase order PO-000001 confirmed" in terminal.seen


# -- decisions other than approve (in process: the same code the prompt feeds) -----------


def test_a_rejected_order_is_never_submitted(tmp_path: Path) -> None:
    seen: list[Order] = []

    def reject(order: Order) -> Decision:
        seen.append(order)
        return Decision("reject", "too expensive")

    outcome = run_quickstart(Options(tmp_path / "home", DEFINITIONS), decide=reject)
    assert outcome.ok
    assert outcome.status == "canceled"
    assert outcome.purchase_order_id is None
    assert [o.vendor for o in seen] == ["northwind"]
    types = [e.type for e in outcome.events]
    assert "action.admitted" not in types and "action.dispatched" not in types
    assert "the order was rejected: nothing was submitted" in render_outcome(outcome)


def test_requested_changes_draft_again_and_need_a_new_decision(tmp_path: Path) -> None:
    answers = [Decision("request_changes", "check the vendors again"), Decision("approve")]
    outcome = run_quickstart(
        Options(tmp_path / "home", DEFINITIONS), decide=lambda _o: answers.pop(0)
    )
    assert outcome.status == "completed"
    assert outcome.purchase_order_id == "PO-000001"
    assert [d.decision.verb for d in outcome.decisions] == ["request_changes", "approve"]
    first, second = (d.order for d in outcome.decisions)
    assert first.approval_id != second.approval_id  # a new approval for the new draft


def test_the_simulator_is_stopped_and_the_token_dropped_whatever_happens(tmp_path: Path) -> None:
    class Walkaway(Exception):
        pass

    def walk_away(_order: Order) -> Decision:
        raise Walkaway

    home = tmp_path / "home"
    with pytest.raises(Walkaway):
        run_quickstart(Options(home, DEFINITIONS), decide=walk_away)
    assert TOKEN_ENV not in os.environ
    url = yaml.safe_load((home / CONTEXT_NAME).read_text())["config"]["procurement_url"]
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/stats", timeout=5)
