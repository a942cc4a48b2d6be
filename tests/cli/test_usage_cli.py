"""What a mistyped command line gets: the nearest command to type instead, exit code 2."""

from __future__ import annotations

import pytest

from openseal.cli.main import main


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
