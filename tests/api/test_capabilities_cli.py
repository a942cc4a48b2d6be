"""`openseal capabilities` asks a real server over loopback HTTP."""

from __future__ import annotations

import json

from click.testing import CliRunner

from openseal.cli.main import cli, main
from tests.api.conftest import Serve


def test_lists_what_the_server_serves_and_why_not(serve: Serve) -> None:
    server = serve(external_workers=True)
    result = CliRunner().invoke(
        cli, ["capabilities", "--url", server.url, "--home", str(server.settings.home)]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("run_creation") and "available" in line for line in lines)
    assert any(line.startswith("approval_decisions") and "not served" in line for line in lines)
    payload = json.loads(
        CliRunner()
        .invoke(
            cli,
            [
                "capabilities",
                "--url",
                server.url,
                "--home",
                str(server.settings.home),
                "--output",
                "json",
            ],
        )
        .output
    )
    by_name = {c["name"]: c for c in payload["capabilities"]}
    assert by_name["run_creation"]["available"] is True
    assert by_name["approval_decisions"]["available"] is False


def test_unreachable_server_is_one_line_and_exit_1(capsys: object) -> None:
    assert main(["capabilities", "--url", "http://127.0.0.1:9"]) == 1
