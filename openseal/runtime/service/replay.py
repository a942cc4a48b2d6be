"""Replay as the API and the CLI reach it: a change proposal's effect on recorded runs, and
the check that each run's own version still reads its history the same way. Both read the
store and write nothing; a caller replays only the proposals and runs in its scopes."""

from __future__ import annotations

from dataclasses import replace

from openseal.errors import UsageError
from openseal.runtime import replay
from openseal.runtime.caller import CLI, Caller
from openseal.runtime.listing import parse_since
from openseal.runtime.replay import ReplayReport, Selection
from openseal.runtime.replay.report import render
from openseal.runtime.service.governance import get_proposal
from openseal.runtime.store import Store

__all__ = [
    "ReplayReport", "Selection", "check_runs", "render", "replay_proposal", "selection",
]  # fmt: skip

#: the most runs one replay re-drives
MAX_RUNS = 10_000


def selection(
    *,
    runs: int | None = None,
    since: str | None = None,
    run_ids: tuple[str, ...] = (),
    workflow: str | None = None,
) -> Selection:
    """Which runs to replay, from what a person typed: the ``runs`` newest, those started
    ``since`` (an age such as ``1d``, or an ISO 8601 time), or the runs named; one at most."""
    given = [name for name, value in (("runs", runs), ("since", since), ("run", run_ids)) if value]
    if len(given) > 1:
        raise UsageError(f"choose the runs one way: {' or '.join(given)}, not both")
    if runs is not None and not 1 <= runs <= MAX_RUNS:
        raise UsageError(f"runs: between 1 and {MAX_RUNS}, got {runs}")
    if len(run_ids) > MAX_RUNS:
        raise UsageError(f"at most {MAX_RUNS} runs by id")
    moment = parse_since(since) if since else None
    return Selection(runs=runs, since=moment, run_ids=tuple(run_ids), workflow=workflow)


def replay_proposal(
    store: Store, proposal_id: str, selection: Selection, caller: Caller = CLI
) -> ReplayReport:
    """Replay the selected runs through the versions change proposal ``proposal_id``
    proposes (an id or unique prefix; another scope's is not found)."""
    proposal = get_proposal(store, proposal_id, caller)
    scoped = replace(selection, scopes=caller.grant.visible())
    return replay.replay_proposal(store, proposal.id, scoped)


def check_runs(store: Store, selection: Selection, caller: Caller = CLI) -> ReplayReport:
    """Replay the selected runs through their own pinned versions."""
    return replay.check_runs(store, replace(selection, scopes=caller.grant.visible()))
