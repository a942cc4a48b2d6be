"""Named commit points where a crash test can stop a worker process.

DESIGN §8 asks for a crash-boundary matrix: kill a worker at every named point and check the
outcome. The engine calls its hook at ``turn.started`` (the turn is saved, nothing executed),
``activity.recorded`` (a model/tool result is saved, the run has not advanced) and
``turn.before_advance`` (the outcome is known, not yet applied).

Setting ``OPENSEAL_FAULT_POINT=<point>`` and ``OPENSEAL_FAULT_DIR=<dir>`` makes a worker,
on first reaching that point, create ``<dir>/<point>.reached`` (containing the run id) and
block until ``<dir>/<point>.release`` exists — long enough for a test to SIGKILL or SIGSTOP
it. Without those variables there is no hook and no cost.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from openseal.runtime.states.base import Hook
from openseal.runtime.store import Claim

POINT_ENV = "OPENSEAL_FAULT_POINT"
DIR_ENV = "OPENSEAL_FAULT_DIR"
POINTS = (
    "turn.started",
    "activity.recorded",
    "turn.before_advance",
    # governed actions: admitted and marked dispatched (one commit, not sent yet), about to
    # send, and the reply received but its outcome not yet recorded
    "action.admitted",
    "action.dispatched",
    "action.before_record",
)


class BlockAt:
    """Block the first thread reaching ``point`` until the release file appears."""

    def __init__(self, point: str, directory: Path, *, poll: float = 0.05) -> None:
        self.point = point
        self.directory = directory
        self.poll = poll
        self._fired = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, point: str, claim: Claim) -> None:
        if point != self.point:
            return
        with self._lock:
            if self._fired.is_set():
                return
            self._fired.set()
        (self.directory / f"{point}.reached").write_text(claim.run_id, encoding="utf-8")
        release = self.directory / f"{point}.release"
        while not release.exists():
            time.sleep(self.poll)


def hook_from_env() -> Hook | None:
    point = os.environ.get(POINT_ENV)
    directory = os.environ.get(DIR_ENV)
    if not point or not directory:
        return None
    return BlockAt(point, Path(directory))
