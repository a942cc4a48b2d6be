"""``openseal deploy``, ``proposals`` and ``deployments`` end to end, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from openseal.cli.main import main
from openseal.runtime.governance import flow as gov
from openseal.runtime.statuses import ChangeProposalStatus as S
from tests.runtime.governance_support import DEFINITIONS, governance_yaml
from tests.runtime.support import Backend, eventually

BOB, CAROL = "user:bob", "user:carol"


class Cli:
    """Runs ``openseal`` in-process with ``--home`` pointing at the test store."""

    def __init__(self, opened: Backend, capsys: pytest.CaptureFixture[str]) -> None:
        self.home = str(opened.home)
        self.capsys = capsys

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        store_args = [] if args[0] in ("compile", "diff") else ["--home", self.home]
        code = main([*args, *store_args])
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *args: str) -> Any:
        code, out, err = self(*args, "--output", "json")
        assert code == 0, err
        return json.loads(out)


@pytest.fixture
def cli(
    backend: Backend,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Cli:
    for name in ("OPENSEAL_DATABASE_URL", "OPENSEAL_ACTOR", "NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    if backend.url is not None:
        options = quote(f"-csearch_path={backend.pg_schema}")
        monkeypatch.setenv("OPENSEAL_DATABASE_URL", f"{backend.url}?options={options}")
    runner = Cli(backend, capsys)
    assert runner("db", "upgrade")[0] == 0
    return runner


def write_definitions(root: Path, *, max_risk: str, auto: bool = False) -> Path:
    defs = root / "defs"
    defs.mkdir(parents=True, exist_ok=True)
    text = DEFINITIONS % {"max_risk": max_risk, "instructions": "Answer the question."}
    (defs / "answer.hcl").write_text(text, encoding="utf-8")
    policy = governance_yaml(auto_approve_narrowing=auto)
    (defs / "governance.yaml").write_text(policy, encoding="utf-8")
    return defs


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.org", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository holding version 1 of the definitions; the working directory."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write_definitions(root, max_risk="write")
    git(root, "add", "defs")
    git(root, "commit", "-q", "-m", "answer workflow v1")
    monkeypatch.chdir(root)
    return root


def deploy_json(cli: Cli, *args: str) -> dict[str, Any]:
    result = cli.json("deploy", *args)
    assert isinstance(result, dict)
    return result


def approve_and_activate(cli: Cli, proposal_id: str) -> None:
    assert cli("proposals", "review", proposal_id, "--approve", "--actor", BOB)[0] == 0
    assert cli("proposals", "decide", proposal_id, "--approve", "--actor", CAROL)[0] == 0
    assert cli("proposals", "activate", proposal_id, "--actor", CAROL)[0] == 0


# --------------------------------------------------------------------------- end to end


def test_end_to_end_from_a_git_repository(cli: Cli, repo: Path) -> None:
    filed = deploy_json(cli, "defs", "--message", "v1", "--actor", "user:alice")
    first = filed["proposal"]
    assert filed["created"] is True and first["status"] == "proposed"
    assert first["author"] == "user:alice"
    assert {t["name"] for t in first["targets"]} == {"answer", "production"}

    code, out, _ = cli("proposals", "show", first["id"][:12])
    assert code == 0
    assert "workflow.answer  (added)" in out
    assert "grant added: skill.lookup to agent.helper  [risk-widening]" in out
    assert "\x1b[" not in out  # not a terminal: no colour

    code, out, _ = cli("proposals", "review", first["id"], "--approve", "--actor", BOB)
    assert (code, "status in_review") == (0, out.strip().rsplit("; ", 1)[1])
    decided = cli.json("proposals", "decide", first["id"], "--approve", "--actor", CAROL)
    assert decided["status"] == "approved"
    assert cli.json("deployments", "list") == []  # deciding is not activating
    activated = cli.json("proposals", "activate", first["id"], "--actor", CAROL)
    assert activated["status"] == "activated"
    listed = cli.json("deployments", "list")
    assert [(d["name"], d["kind"], d["change_proposal_id"]) for d in listed] == [
        ("answer", "workflow", first["id"]),
        ("production", "governance", first["id"]),
    ]

    # A second commit widens the agent's risk ceiling; CI would show this diff on the PR.
    write_definitions(repo, max_risk="external")
    git(repo, "commit", "-q", "-am", "answer workflow v2")
    code, out, _ = cli("diff", "HEAD~1", "HEAD", "--path", "defs")
    assert code == 0 and "agent risk ceiling raised: write → external" in out

    second = deploy_json(cli, "defs", "--actor", "user:alice")["proposal"]
    assert second["risk_widening"] is True
    assert [t["name"] for t in second["targets"]] == ["answer"]
    code, out, _ = cli("proposals", "show", second["id"])
    assert "! agent risk ceiling raised: write → external  [risk-widening]" in out
    approve_and_activate(cli, second["id"])

    rollback = cli.json("deployments", "rollback", "answer", "--actor", "user:alice")
    assert rollback["proposal"]["kind"] == "rollback"
    assert rollback["proposal"]["risk_widening"] is False
    approve_and_activate(cli, rollback["proposal"]["id"])
    history = cli.json("deployments", "history", "answer")
    assert [h["change_proposal_id"] for h in history] == [
        first["id"],
        second["id"],
        rollback["proposal"]["id"],
    ]
    assert history[2]["digest"] == history[0]["digest"]

    shown = cli.json("proposals", "show", first["id"], "--events")
    assert [(e["type"], e["actor"]) for e in shown["events"]] == [
        ("change_proposal.filed", "user:alice"),
        ("change_proposal.reviewed", BOB),
        ("change_proposal.decided", CAROL),
        ("change_proposal.activated", CAROL),
    ]


def test_deploy_a_compiled_bundle_and_again_unchanged(cli: Cli, repo: Path) -> None:
    assert cli("compile", "defs", "--out", "build")[0] == 0
    filed = deploy_json(cli, "build")
    assert filed["proposal"]["author"] == "user:local"  # the default actor
    again = deploy_json(cli, "build")
    assert again["created"] is False and again["proposal"]["id"] == filed["proposal"]["id"]
    code, out, _ = cli("deploy", "build")
    assert code == 0 and "already open" in out
    approve_and_activate(cli, filed["proposal"]["id"])
    code, out, _ = cli("deploy", "defs")
    assert code == 0 and out.startswith("nothing changed")


def test_actor_comes_from_the_environment(
    cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENSEAL_ACTOR", "user:erin")
    assert deploy_json(cli, "defs")["proposal"]["author"] == "user:erin"


# --------------------------------------------------------------------------- errors


def test_deploy_of_invalid_definitions_exits_1_with_diagnostics(cli: Cli, repo: Path) -> None:
    (repo / "defs" / "broken.hcl").write_text('agent "x" {\n  model = model.nope\n}\n')
    code, out, err = cli("deploy", "defs")
    assert code == 1 and out == ""
    assert "defs/broken.hcl:1:7: error[OS102]" in err  # at the definition's name
    assert err.strip().splitlines()[-1] == "error: defs does not compile; nothing deployed"
    assert "Traceback" not in err
    assert cli.json("proposals", "list") == []


def test_refusals_are_one_line_errors_with_exit_codes(cli: Cli, repo: Path) -> None:
    proposal = deploy_json(cli, "defs", "--actor", "user:alice")["proposal"]
    pid = proposal["id"]

    code, out, err = cli("proposals", "decide", pid, "--approve", "--actor", BOB)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "not a decider" in err
    code, _, err = cli("proposals", "decide", pid, "--approve", "--actor", CAROL)
    assert code == 1 and "needs 1 approving review(s)" in err
    code, _, err = cli("proposals", "activate", pid, "--actor", CAROL)
    assert code == 1 and "only an approved proposal can be activated" in err
    code, _, err = cli("proposals", "review", pid, "--actor", BOB)
    assert code == 2 and "give --approve or --request-changes" in err
    code, _, err = cli("proposals", "review", pid, "--approve", "--actor", BOB,
                       "--expected-revision", "99")  # fmt: skip
    assert code == 1 and "revision" in err and err.count("\n") == 1
    code, _, err = cli("proposals", "show", "ffffffffffff")
    assert code == 1 and "not found" in err
    code, _, err = cli("deployments", "rollback", "answer")
    assert code == 1 and "deployment answer not found" in err
    code, _, err = cli("proposals", "list", "--status", "bogus")
    assert code == 2 and "'bogus' is not one of 'proposed', 'in_review'" in err


def test_stale_proposal_is_refused_until_refresh(cli: Cli, repo: Path) -> None:
    approve_and_activate(cli, deploy_json(cli, "defs")["proposal"]["id"])
    write_definitions(repo, max_risk="read")
    narrow = deploy_json(cli, "defs")["proposal"]["id"]
    write_definitions(repo, max_risk="external")
    wide = deploy_json(cli, "defs")["proposal"]["id"]
    assert cli("proposals", "review", wide, "--approve", "--actor", BOB)[0] == 0
    assert cli("proposals", "decide", wide, "--approve", "--actor", CAROL)[0] == 0
    approve_and_activate(cli, narrow)  # the older one: the newer stays open, but stale
    assert cli.json("proposals", "show", wide)["status"] == "approved"

    code, _, err = cli("proposals", "activate", wide, "--actor", CAROL)
    assert code == 1 and "is stale" in err and f"openseal proposals refresh {wide}" in err
    code, out, _ = cli("proposals", "refresh", wide, "--actor", BOB)
    assert code == 0 and "reviews and decision were reset" in out
    approve_and_activate(cli, wide)
    assert cli.json("proposals", "show", wide)["status"] == "activated"


def test_show_colours_only_when_forced_and_never_with_no_color(
    cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = deploy_json(cli, "defs")["proposal"]["id"]
    monkeypatch.setenv("FORCE_COLOR", "1")
    code, out, _ = cli("proposals", "show", pid)
    assert code == 0 and "\x1b[31m  [risk-widening]\x1b[0m" in out
    monkeypatch.setenv("NO_COLOR", "1")
    code, out, _ = cli("proposals", "show", pid)
    assert code == 0 and "\x1b[" not in out and "[risk-widening]" in out


# --------------------------------------------------------------------------- waiting


def test_wait_for_activation_times_out_with_exit_1(cli: Cli, repo: Path) -> None:
    code, out, err = cli("deploy", "defs", "--wait-for-activation", "--timeout", "0")
    assert code == 1
    assert "filed change proposal" in out
    proposal = out.split("filed change proposal ", 1)[1].split(";", 1)[0]
    assert f"waiting up to 0 s for change proposal {proposal} to be activated" in err
    assert f"`openseal proposals review|decide|activate {proposal}`" in err
    assert "is still proposed after waiting 0 s for activation" in err


def test_wait_for_activation_returns_once_activated(
    cli: Cli,
    repo: Path,
    backend: Backend,
) -> None:
    store = backend.open()

    def operator() -> None:
        found = eventually(lambda: gov.list_proposals(store), timeout=60)
        pid = found[0].id
        gov.review(store, pid, BOB, "approve")
        gov.decide(store, pid, CAROL, "approve")
        gov.activate(store, pid, CAROL)

    helper = threading.Thread(target=operator, daemon=True)
    helper.start()
    result = deploy_json(cli, "defs", "--wait-for-activation", "--timeout", "120")
    helper.join(timeout=60)
    assert result["final_status"] == "activated"
    assert gov.get_proposal(store, result["proposal"]["id"]).status is S.ACTIVATED


def test_wait_for_activation_fails_on_rejection(
    cli: Cli,
    repo: Path,
    backend: Backend,
) -> None:
    store = backend.open()

    def operator() -> None:
        found = eventually(lambda: gov.list_proposals(store), timeout=60)
        gov.decide(store, found[0].id, CAROL, "reject", comment="no")

    helper = threading.Thread(target=operator, daemon=True)
    helper.start()
    code, _, err = cli("deploy", "defs", "--wait-for-activation", "--timeout", "120")
    helper.join(timeout=60)
    assert code == 1 and "is rejected; it will not be activated" in err


def test_deploy_and_show_say_what_live_runs_still_pin(
    cli: Cli,
    backend: Backend,
    tmp_path: Path,
) -> None:
    from openseal.runtime import service
    from tests.runtime.engine_support import register
    from tests.runtime.governance_support import WORKFLOW, compile_set, key, without_lookup

    store = backend.open()
    v1 = compile_set(tmp_path / "v1")
    register(store, list(v1.values()))
    request = service.StartObjective(WORKFLOW, {"question": "why"})
    for _ in range(3):
        service.create_objective(store, request, service.CLI)
    pinned = key(v1, f"workflow.{WORKFLOW}")
    without_lookup(tmp_path / "v2")

    code, out, err = cli("deploy", str(tmp_path / "v2"), "--actor", "user:alice")
    assert code == 0, err
    line = f"{WORKFLOW}: removes skill.lookup, still pinned by 3 live runs ({pinned[:12]}: 3)"
    assert f"  in use: {line}" in out.splitlines()
    [proposal] = cli.json("proposals", "list")
    code, out, err = cli("proposals", "show", proposal["id"])
    assert code == 0, err
    assert f"  in use       {line}" in out.splitlines()
    shown = cli.json("proposals", "show", proposal["id"])
    assert {item["capability"] for item in shown["in_use"]} == {
        "skill.lookup", "binding.helper_looks_up", "model.m",
    }  # fmt: skip

    code, out, err = cli("deployments", "show", WORKFLOW)
    assert code == 0, err
    assert "  live runs    3 runs on 1 version(s)" in out
    assert [pinned[:12], "3", "active"] == out.splitlines()[-1].split()
    assert cli.json("deployments", "show", WORKFLOW)["live"] == [{"digest": pinned, "runs": 3}]
    code, _, err = cli("deployments", "show", "nothing")
    assert code == 1 and "deployment nothing not found" in err


def test_commands_take_handles(
    cli: Cli,
    backend: Backend,
    tmp_path: Path,
) -> None:
    from openseal.runtime import service
    from tests.runtime.engine_support import register
    from tests.runtime.governance_support import WORKFLOW, compile_set, without_lookup

    store = backend.open()
    register(store, list(compile_set(tmp_path / "v1").values()))
    request = service.StartObjective(WORKFLOW, {"question": "why"})
    run = service.create_objective(store, request, service.CLI).run
    assert run is not None
    code, out, err = cli("runs", "show", service.handle(run.id))
    assert code == 0 and out.startswith(f"run {run.id}"), err
    assert cli.json("objectives", "show", service.handle(run.objective_id))["objective"]["id"] == (
        run.objective_id
    )
    code, out, err = cli("runs", "pause", service.handle(run.id), "--reason", "a look")
    assert code == 0 and "paused" in out, err
    without_lookup(tmp_path / "v2")
    assert cli("deploy", str(tmp_path / "v2"))[0] == 0
    [proposal] = cli.json("proposals", "list")
    shown = cli.json("proposals", "show", service.handle(proposal["id"]))
    assert shown["id"] == proposal["id"]
    code, _, err = cli("runs", "show", "zzzzzzzz")
    assert code == 1 and "zzzzzzzz" in err
