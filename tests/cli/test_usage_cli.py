"""What a mistyped command line gets: the nearest command to type instead, exit code 2; and
``--status`` on a list takes (and the shell completes) only the statuses of its records."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import pytest

from openseal.cli.main import main
from openseal.runtime.statuses import (
    ActionStatus,
    AgentRequestStatus,
    ApprovalStatus,
    ChangeProposalStatus,
    ObjectiveStatus,
    RunStatus,
)


@pytest.mark.parametrize(
    ("argv", "typed", "nearest"),
    [
        (["rnus"], "rnus", "runs"),
        (["aprovals", "list"], "aprovals", "approvals"),
        (["runs", "lsit"], "lsit", "list"),
        (["proposals", "activte", "0191f0"], "activte", "activate"),
        (["deployments", "histroy", "procure_laptops"], "histroy", "history"),
    ],
)
def test_a_mistyped_command_suggests_the_nearest(
    argv: list[str], typed: str, nearest: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == f"Error: No such command '{typed}'; did you mean `{nearest}`?"


def test_a_command_nothing_is_near_is_refused_without_a_guess(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for argv in (["zzzzzz"], ["runs", "zzzzzz"]):
        assert main(argv) == 2
        assert capsys.readouterr().err.splitlines()[-1] == "Error: No such command 'zzzzzz'."


#: each list's ``--status`` and the statuses its records can have
STATUSES: dict[tuple[str, ...], type[StrEnum]] = {
    ("runs", "list"): RunStatus,
    ("objectives", "list"): ObjectiveStatus,
    ("approvals", "list"): ApprovalStatus,
    ("actions", "list"): ActionStatus,
    ("proposals", "list"): ChangeProposalStatus,
    ("requests", "list"): AgentRequestStatus,
}


@pytest.mark.parametrize("command", sorted(STATUSES), ids=" ".join)
def test_status_values_complete_and_only_those_are_taken(
    command: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    names = [str(status) for status in STATUSES[command]]
    monkeypatch.setenv("_OPENSEAL_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", f"openseal {' '.join(command)} --status ")
    monkeypatch.setenv("COMP_CWORD", str(len(command) + 2))
    with pytest.raises(SystemExit):
        main(list(command))
    offered = [line.split(",", 1)[1] for line in capsys.readouterr().out.splitlines()]
    assert offered == names
    monkeypatch.delenv("_OPENSEAL_COMPLETE")
    home = str(tmp_path / "nowhere")  # refused before any store is looked for
    assert main([*command, "--status", "sideways", "--home", home]) == 2
    err = capsys.readouterr().err
    assert "Invalid value for '--status': 'sideways' is not one of" in err
    assert all(f"'{name}'" in err for name in names)
