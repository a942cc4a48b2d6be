"""docs/cli.md's exit-code table holds for every command: each row's command families are run
into the outcomes the row names (0, 1 and 2), and every command of ``openseal`` has a row.

The commands run in-process through ``main`` against a scratch home and the example
definitions; what can only end with a signal (``serve`` and ``simulator`` exiting 0) or takes
minutes (``quickstart``) is named in ``ELSEWHERE`` with the test that covers it.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from openseal.cli.main import COMMANDS, main
from openseal.runtime.store import open_store
from tests.runtime.engine_support import register, small_workflow

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cli.md"
PROCUREMENT = str(ROOT / "definitions" / "procurement" / "hcl")
RUNBOOK = str(ROOT / "definitions" / "runbooks" / "vendor_quotes" / "hcl" / "runbook.hcl")
QUOTES = str(ROOT / "definitions" / "runbooks" / "vendor_quotes" / "quotes.json")
NOT_AN_ID = "ffffffffffff"

#: (command, exit code) → the arguments that end there; ``{bad}`` is a definition file that
#: does not compile, ``{out}`` a scratch directory, ``{port}`` a port something listens on
CASES: dict[tuple[str, int], list[str]] = {
    ("validate", 0): ["validate", PROCUREMENT],
    ("validate", 1): ["validate", "{bad}"],
    ("validate", 2): ["validate", "--max-diagnostics", "-1", PROCUREMENT],
    ("compile", 0): ["compile", PROCUREMENT, "--out", "{out}/bundle"],
    ("compile", 1): ["compile", "{bad}", "--out", "{out}/bundle"],
    ("compile", 2): ["compile"],
    ("graph", 0): ["graph", PROCUREMENT],
    ("graph", 1): ["graph", "{bad}"],
    ("graph", 2): ["graph", PROCUREMENT, "-o", "procure.svg"],
    ("diff", 0): ["diff", PROCUREMENT, PROCUREMENT],
    ("diff", 1): ["diff", "{bad}", PROCUREMENT],
    ("diff", 2): ["diff", PROCUREMENT],
    ("schema", 0): ["schema", "--out", "{out}/schemas"],
    ("schema", 1): ["schema", "--out", "{file}"],
    ("schema", 2): ["schema", "--bogus"],
    ("run", 0): ["run", RUNBOOK, "--input-file", QUOTES, "--input", "budget=9000"],
    ("run", 1): ["run", "{bad}"],
    ("run", 2): ["run"],
    ("deploy", 0): ["deploy", PROCUREMENT, "--actor", "user:alice"],
    ("deploy", 1): ["deploy", "{bad}", "--actor", "user:alice"],
    ("deploy", 2): ["deploy"],
    ("proposals", 0): ["proposals", "list"],
    ("proposals", 1): ["proposals", "show", NOT_AN_ID],
    ("proposals", 2): ["proposals", "list", "--limit", "0"],
    ("replay", 0): ["replay", "--check"],
    ("replay", 1): ["replay", "--check", "{malformed_url}"],
    ("replay", 2): ["replay", "--runs", "0"],
    ("deployments", 0): ["deployments", "list"],
    ("deployments", 1): ["deployments", "history", "nothing_deployed"],
    ("deployments", 2): ["deployments", "sideways"],
    ("objectives", 0): ["objectives", "create", "--workflow", "small", "--input", "n=5"],
    ("objectives", 1): ["objectives", "create", "--workflow", "small", "--input", "n=five"],
    ("objectives", 2): ["objectives", "create", "--workflow", "small", "--input", "n"],
    ("runs", 0): ["runs", "list"],
    ("runs", 1): ["runs", "show", NOT_AN_ID],
    ("runs", 2): ["runs", "list", "--since", "soon"],
    ("approvals", 0): ["approvals", "list"],
    ("approvals", 1): ["approvals", "show", NOT_AN_ID],
    ("approvals", 2): ["approvals", "list", "--status", "sideways"],
    ("actions", 0): ["actions", "list"],
    ("actions", 1): ["actions", "show", NOT_AN_ID],
    ("actions", 2): ["actions", "list", "--limit", "0"],
    ("triggers", 0): ["triggers", "list"],
    ("triggers", 1): ["triggers", "show", "nothing_deployed"],
    ("triggers", 2): ["triggers", "list", "--bogus"],
    ("agents", 0): ["agents", "show", "clerk"],
    ("agents", 1): ["agents", "pause", "nobody"],
    ("agents", 2): ["agents", "show"],
    ("teams", 0): ["teams", "--help"],
    ("teams", 1): ["teams", "show", "nobody"],
    ("teams", 2): ["teams", "sideways"],
    ("scopes", 0): ["scopes", "limit", "default", "--max", "4"],
    ("scopes", 1): ["scopes", "limits", "{malformed_url}"],
    ("scopes", 2): ["scopes", "limit", "default"],
    ("requests", 0): ["requests", "list"],
    ("requests", 1): ["requests", "show", NOT_AN_ID],
    ("requests", 2): ["requests", "list", "--bogus"],
    ("db", 0): ["db", "upgrade"],
    ("db", 1): ["db", "upgrade", "{malformed_url}"],
    ("db", 2): ["db", "sideways"],
    ("worker", 0): ["worker", "--until-idle"],
    ("worker", 1): ["worker", "--until-idle", "{malformed_url}"],
    ("worker", 2): ["worker", "--concurrency", "0"],
    ("serve", 1): ["serve", "--port", "{port}"],
    ("serve", 2): ["serve", "--port", "-1"],
    ("simulator", 1): ["simulator", "procurement", "--port", "{port}"],
    ("simulator", 2): ["simulator", "sideways"],
    ("quickstart", 2): ["quickstart", "--bogus"],
    ("capabilities", 1): ["capabilities", "--url", "http://127.0.0.1:{closed}"],
    ("capabilities", 2): ["capabilities", "--url"],
    ("tokens", 0): ["tokens", "list"],
    ("tokens", 1): ["tokens", "revoke", NOT_AN_ID],
    ("tokens", 2): ["tokens", "create"],
    ("models", 1): ["models", "check", "nothing", "--definitions", PROCUREMENT],
    ("models", 2): ["models", "check"],
    ("author", 1): ["author", "a workflow that orders laptops", "--definitions", PROCUREMENT],
    ("author", 2): ["author"],
    ("ask", 1): ["ask", "order ten laptops", "--agent", "nobody", "--yes"],
    ("ask", 2): ["ask", "order ten laptops"],
    ("completion", 0): ["completion", "bash"],
    ("completion", 2): ["completion", "tcsh"],
}

#: outcomes the table names that these in-process runs cannot reach, and the test that does
ELSEWHERE = {
    ("serve", 0): "tests/api/test_operations.py (SIGTERM drains a real server)",
    ("simulator", 0): "tests/simulator (the simulator stops on SIGTERM)",
    ("quickstart", 0): "tests/test_quickstart.py",
    ("quickstart", 1): "tests/test_quickstart.py",
    ("capabilities", 0): "tests/api/test_capabilities_cli.py",
    ("models", 0): "tests/runtime/providers/test_models_check.py",
    ("author", 0): "tests/authoring/test_authoring_docs.py",
    ("ask", 0): "tests/asks/test_ask_cli.py",
}


def table() -> dict[str, dict[int, str]]:
    """docs/cli.md's exit-code table: command → {code: meaning} ("—" rows left out)."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, dict[int, str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        outcomes = {code: cell for code, cell in enumerate(cells[1:]) if cell != "—"}
        for command in re.findall(r"`([a-z]+)`", cells[0]):
            rows[command] = outcomes
    return rows


def test_every_command_has_a_row_and_every_outcome_a_case() -> None:
    rows = table()
    missing = sorted(set(COMMANDS) - set(rows))
    assert not missing, f"add these commands to docs/cli.md's exit-code table: {missing}"
    for command, outcomes in rows.items():
        for code in outcomes:
            assert (command, code) in CASES or (command, code) in ELSEWHERE, (command, code)
    for command, code in CASES:
        assert code in rows[command], f"`{command}` exits {code}, which the table does not name"


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    home = tmp_path / "home"
    monkeypatch.setenv("OPENSEAL_HOME", str(home))
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    monkeypatch.delenv("OPENSEAL_AUTHORING_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    store = open_store(home=home)
    register(store, small_workflow(tmp_path))
    store.close()
    bad = tmp_path / "bad.hcl"
    bad.write_text('workflow "w" {\n  modle = 1\n', encoding="utf-8")
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    with socket.socket() as busy, socket.socket() as closed:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        closed.bind(("127.0.0.1", 0))
        yield {
            "bad": str(bad), "out": str(tmp_path / "out"), "file": str(blocker / "x"),
            "port": str(busy.getsockname()[1]), "closed": str(closed.getsockname()[1]),
        }  # fmt: skip


@pytest.mark.parametrize(("command", "code"), sorted(CASES), ids=lambda v: str(v))
def test_each_command_ends_as_the_table_says(
    command: str,
    code: int,
    scratch: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = []
    for arg in CASES[(command, code)]:
        if arg == "{malformed_url}":
            monkeypatch.setenv("OPENSEAL_DATABASE_URL", "postgresql+psycopg://u:pw@db:port/x")
            continue
        args.append(arg.format(**scratch))
    try:
        got = main(args)
    except SystemExit as stopped:  # diagnostics end the command with sys.exit, as `run()` does
        got = int(stopped.code or 0)
    out, err = capsys.readouterr()
    assert got == code, f"openseal {' '.join(args)} exited {got}:\n{out}\n{err}"
    assert "Traceback" not in out + err and "internal error" not in err
    if code == 1:
        assert err.strip(), "a refusal says why on stderr"
