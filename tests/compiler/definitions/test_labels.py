"""How many labels a block takes, read from the definition model."""

from __future__ import annotations

import pytest

from openseal.compiler.definitions.labels import Labels, block_labels

DEFINITION = Labels(1, 1)
NAMED = Labels(1, None)


@pytest.mark.parametrize(
    ("path", "block_type", "expected"),
    [
        ((), "agent", DEFINITION),
        ((), "workflow", DEFINITION),
        ((), "agnet", None),  # an unknown kind is OS109's
        (("workflow", "w"), "state", NAMED),
        (("workflow", "w"), "input", NAMED),
        (("workflow", "w", "state", "s"), "on", NAMED),
        (("workflow", "w", "state", "s"), "proposal", NAMED),
        (("workflow", "w", "state", "s", "parallel"), "branch", NAMED),
        (("workflow", "w", "state", "s"), "branch", None),  # a decision's branches: a list
        (("workflow", "w", "state", "s"), "turn", None),
        (("workflow", "w", "state", "s", "branch", 0), "next", None),
        (("runbook", "r"), "step", NAMED),
        (("team", "t"), "role", NAMED),
        (("skill", "s"), "adapter", None),  # `adapter "http" {}` and `adapter { http {} }`
        (("skill", "s", "adapter"), "http", None),
        (("model", "m"), "parameters", None),
        (("workflow", "w", "nowhere"), "state", None),
    ],
)
def test_block_labels(
    path: tuple[str | int, ...], block_type: str, expected: Labels | None
) -> None:
    assert block_labels(path, block_type) == expected
