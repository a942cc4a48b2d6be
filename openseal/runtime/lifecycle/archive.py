"""Archiving ended runs: out of the live store into an archive (a directory or an object-store
URL, :mod:`.archive_location`), in batches.

Each batch is one pass of three steps, in this order, so that a crash anywhere leaves every
row live, or in a verified archive, or both — never in neither:

1. **read** up to ``batch_size`` ended run trees whose retention has passed (a run started by
   no other, with every run below it; :mod:`.retention`), keeping back any tree with an action
   that is not settled or settled within the action window, or with spend an owner's budget
   still counts (one without a period counts it for ever);
2. **write** the batch (:mod:`.archive_format`; its manifest last, so it is visible only once
   whole) and **verify** it: every file read back against the manifest's sha256 and row count
   (a batch that fails is removed again, its rows still live);
3. **delete** the batch's rows in one transaction, the runs' rows locked first; a run that
   changed since it was read keeps the whole batch live. Then mark the batch committed.

A batch written but not marked committed (the process died between 2 and 3) is finished
first by the next archive into the same place: verified again, then deleted — deleting
rows already gone deletes nothing. Workers are not stopped: a batch's delete is one short
transaction, and ended runs are never claimed.

Nothing is archived while the store is in recovery mode (after a restore, invariant 18):
until its actions are reconciled, the evidence recovery reads must stay where it looks, and
the keys that refuse a duplicate must not be forgotten (:class:`InRecovery`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from openseal.errors import RuntimeFailure
from openseal.runtime.faults import archive_hook_from_env
from openseal.runtime.lifecycle import archive_format as fmt
from openseal.runtime.lifecycle.archive_location import Location, locate_archive
from openseal.runtime.lifecycle.retention import Retention, workflow_keep
from openseal.runtime.store import EndedRun, NotFound, Store

#: the column of each table's rows naming the run a row belongs to
RUN_FIELD = {
    "runs": "id", "events": "run_id", "turns": "run_id", "activities": "run_id",
    "inbound_events": "consumed_by_run_id", "proposals": "run_id", "approvals": "run_id",
    "actions": "run_id", "spend_reservations": "run_id", "agent_requests": "caller_run_id",
    "dependency_groups": "parent_run_id", "dependency_members": "run_id",
}  # fmt: skip
SETTLED = frozenset({"succeeded", "failed", "denied", "canceled"})
Rows = dict[str, list[dict[str, Any]]]
#: a crash test's hook, called with a point of :data:`openseal.runtime.faults.ARCHIVE_POINTS`
#: and the batch's name
Hook = Callable[[str, str], None]


@dataclass(frozen=True)
class ArchiveRequest:
    """What ``openseal db archive`` asks: where the archive is (a directory's path, or a URL),
    an optional upper bound on when the runs ended, the retention policy, the batch size, and
    whether to only count."""

    to: str | Path | Location
    retention: Retention = field(default_factory=Retention)
    ended_before: datetime | None = None
    batch_size: int = 100
    dry_run: bool = False


@dataclass
class ArchiveReport:
    """What an archive did (or, dry, would do)."""

    dry_run: bool
    batches: list[str] = field(default_factory=list)
    runs: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    #: why runs whose retention passed stayed live, and how many trees each
    kept: dict[str, int] = field(default_factory=dict)
    resumed: list[str] = field(default_factory=list)
    idempotency_keys_expired: int = 0
    delivery_keys_expired: int = 0
    #: inbound events consumed by archived runs, removed from the live store once their
    #: delivery key expired (their runs' batches hold them)
    inbound_events_removed: int = 0

    def count(self, rows: Mapping[str, Sequence[Any]]) -> None:
        for table, found in rows.items():
            self.rows[table] = self.rows.get(table, 0) + len(found)


def archive(
    store: Store, request: ArchiveRequest, *, stop: Callable[[], bool] = lambda: False
) -> ArchiveReport:
    """Archive every ended run tree whose retention passed (the scopes' stored settings count
    with the request's; see the module docstring), then forget expired keys. ``stop`` is asked
    between batches. One archive writes into a place at a time (another is refused,
    ``archive_busy``); a dry run writes nothing. Refused in recovery mode (:class:`InRecovery`),
    dry or not."""
    refuse_in_recovery(store)
    report = ArchiveReport(dry_run=request.dry_run)
    with store.read() as conn:
        stored = {s.scope: s.keep_ended_runs for s in store.retention.all(conn).values()}
    request = replace(request, retention=request.retention.with_scopes(stored))
    if request.dry_run:
        _batches(store, request, report, None, stop)
        return report
    to = locate_archive(request.to)
    request = replace(request, to=to)
    with fmt.writing(to):
        hook = archive_hook_from_env()
        fmt.drop_partial(to, store.now())
        finish_written(store, to, report, hook)
        _batches(store, request, report, hook, stop)
        _expire_keys(store, request.retention, store.now(), report)
    return report


class InRecovery(RuntimeFailure):
    """The store is in recovery mode: nothing is archived until recovery is finished."""

    code = "recovery_mode"


def in_recovery(store: Store) -> bool:
    return store.recoveries.active() is not None


def refuse_in_recovery(store: Store) -> None:
    """:class:`InRecovery` while the store is in recovery mode (after a restore)."""
    if in_recovery(store):
        raise InRecovery(
            "the store is in recovery mode after a restore: nothing is archived until its "
            "actions are reconciled and recovery is finished (`openseal db recovery status`, "
            "then `openseal db recovery reconcile` and `openseal db recovery finish`)"
        )


def _batches(
    store: Store, request: ArchiveRequest, report: ArchiveReport, hook: Hook | None,
    stop: Callable[[], bool],
) -> None:  # fmt: skip
    now = store.now()
    before = now if request.ended_before is None else min(now, request.ended_before)
    cursor: tuple[datetime, str] | None = None
    while not stop():
        with store.read() as conn:
            found = store.archive.ended_roots(conn, before, cursor, request.batch_size)
        if not found:
            break
        cursor = (found[-1].ended_at, found[-1].id)
        due = [run.id for run in found if _retention_passed(store, request, run, now)]
        if due:
            _archive_batch(store, request, due, now, report, hook)


def _retention_passed(store: Store, request: ArchiveRequest, run: EndedRun, now: datetime) -> bool:
    document = store.definitions.get(run.workflow_digest).document
    keep = request.retention.keep_for(run.scope, workflow_keep(document))
    return run.ended_at <= now - timedelta(seconds=keep)


def _archive_batch(
    store: Store, request: ArchiveRequest, roots: list[str], now: datetime,
    report: ArchiveReport, hook: Hook | None,
) -> None:  # fmt: skip
    with store.read() as conn:
        tree = store.archive.tree(conn, roots)
        rows = store.archive.rows(conn, [run.id for run in tree])
    parent = {run.id: run.parent_run_id for run in tree}
    periods = _owner_periods(store, rows["runs"])
    windows = _action_windows(store, rows["proposals"], request.retention.action_window)
    why = _reasons_to_keep(rows, parent, periods, windows, now)
    for run in rows["runs"]:  # a child may have ended after its root (one that detached)
        ended = EndedRun(
            run["id"], run["scope"], run["workflow_digest"],
            datetime.fromisoformat(run["updated_at"]),
        )  # fmt: skip
        if run["parent_run_id"] is not None and not _retention_passed(store, request, ended, now):
            why.setdefault(_root(parent, run["id"]), "a run below it ended within its retention")
    for reason in why.values():
        report.kept[reason] = report.kept.get(reason, 0) + 1
    if why:
        taken = {run_id for run_id in parent if _root(parent, run_id) not in why}
        rows = only(rows, taken)
    if not rows["runs"]:
        return
    report.runs += len(rows["runs"])
    report.count(rows)
    if request.dry_run:
        return
    name = f"batch-{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"
    batch = fmt.write_batch(request.to, name, [r["id"] for r in rows["runs"]], rows, now)
    try:
        rows = fmt.read_batch(batch)  # read back: verified before anything goes
    except fmt.ArchiveCorrupt:
        fmt.discard(batch)
        raise
    if hook is not None:
        hook("archive.written", batch.name)
    _delete(store, batch, rows, hook)
    report.batches.append(batch.name)


def _root(parent: Mapping[str, str | None], run_id: str) -> str:
    while parent.get(run_id) is not None:
        run_id = parent[run_id]  # type: ignore[assignment]
    return run_id


def _owner_periods(store: Store, runs: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Run id → the rolling period of its owner's spend budget (None: spend counts for ever),
    as the version it ran pinned says: after it, the owner's budget no longer counts a spend."""
    periods: dict[str, float | None] = {}
    for run in runs:
        budgets = store.definitions.get(run["workflow_digest"]).document.get("budgets")
        owner = budgets.get("owner") if isinstance(budgets, Mapping) else None
        period = owner.get("period") if isinstance(owner, Mapping) else None
        periods[run["id"]] = float(period) if isinstance(period, int | float) else None
    return periods


def _action_windows(
    store: Store, proposals: Sequence[Mapping[str, Any]], default: float
) -> dict[str, float]:
    """Proposal id → how long after its action settled the destination may still act on a
    retry of its key: the longer of the skill's declared ``idempotency.window`` (the version
    the proposal was drafted for) and the deployment's ``default``."""
    windows: dict[str, float] = {}
    for proposal in proposals:
        declared = None
        try:
            digest = str(proposal["skill_digest"]).removeprefix("sha256:")
            spec = store.definitions.get(digest).document.get("spec")
        except NotFound:
            spec = None
        idempotency = spec.get("idempotency") if isinstance(spec, Mapping) else None
        if isinstance(idempotency, Mapping):
            declared = idempotency.get("window")
        windows[proposal["id"]] = max(default, float(declared or 0))
    return windows


def _reasons_to_keep(
    rows: Rows, parent: Mapping[str, str | None], periods: Mapping[str, float | None],
    windows: Mapping[str, float], now: datetime,
) -> dict[str, str]:  # fmt: skip
    """Root run id → why its tree stays live (evidence the live store still needs; the first
    reason found)."""
    why: dict[str, str] = {}
    for run in rows["runs"]:
        if run["status"] not in ("completed", "failed", "canceled"):
            why.setdefault(_root(parent, run["id"]), "a run below it has not ended")
    for action in rows["actions"]:
        settled_at = action["finished_at"] or action["updated_at"]
        if action["status"] not in SETTLED:
            why.setdefault(_root(parent, action["run_id"]), "an action is not settled")
        elif datetime.fromisoformat(settled_at) > now - timedelta(
            seconds=windows.get(action["proposal_id"], 0.0)
        ):
            why.setdefault(
                _root(parent, action["run_id"]), "an action settled within the action window"
            )
    for spent in rows["spend_reservations"]:
        if spent["status"] != "committed" or spent["scope"].startswith("run:"):
            continue
        period = periods.get(spent["run_id"])
        if period is None or datetime.fromisoformat(spent["created_at"]) > now - timedelta(
            seconds=period
        ):
            why.setdefault(
                _root(parent, spent["run_id"]), "its spend still counts in an owner's budget"
            )
    return why


def only(rows: Rows, run_ids: set[str]) -> Rows:
    """The rows of ``run_ids`` out of ``rows`` (with the objectives and artefacts they name)."""
    out: Rows = {
        table: [row for row in found if row.get(RUN_FIELD[table]) in run_ids]
        for table, found in rows.items()
        if table in RUN_FIELD
    }
    objectives = {row["objective_id"] for row in out["runs"]}
    digests = {row["artifact_digest"] for row in out["proposals"]}
    out["objectives"] = [row for row in rows.get("objectives", []) if row["id"] in objectives]
    out["artifacts"] = [row for row in rows.get("artifacts", []) if row["digest"] in digests]
    return {table: out.get(table, []) for table in rows}


def _delete(store: Store, batch: fmt.Batch, rows: Rows, hook: Hook | None) -> None:
    """Delete a verified batch's rows from the live store (all of them, or none when a run
    changed since it was read), then mark the batch committed. Nothing in recovery mode."""
    revisions = {row["id"]: int(row["revision"]) for row in rows["runs"]}
    with store.write() as conn:
        # read in the transaction that deletes: recovery begun since the pass started (an
        # operator's `db recovery start`) leaves the batch written, finished after recovery
        if store.recoveries.active(conn) is not None:
            refuse_in_recovery(store)
        changed = store.archive.changed(conn, revisions)
        deleted: dict[str, int] = {}
        if not changed:
            deleted = store.archive.delete(
                conn, sorted(revisions), sorted({row["id"] for row in rows["objectives"]}),
                sorted({row["digest"] for row in rows["artifacts"]}),
            )  # fmt: skip
    if hook is not None:
        hook("archive.deleted", batch.name)
    fmt.mark_committed(batch, deleted, sorted(revisions) if changed else [])


def finish_written(store: Store, root: Location, report: ArchiveReport, hook: Hook | None) -> None:
    """Finish the batches a crash left written but not deleted from the live store."""
    for batch in fmt.batches(root):
        if not batch.committed:
            _delete(store, batch, fmt.read_batch(batch), hook)
            report.resumed.append(batch.name)


def _expire_keys(store: Store, retention: Retention, now: datetime, report: ArchiveReport) -> None:
    with store.write() as conn:
        if store.recoveries.active(conn) is not None:  # the keys refuse duplicates: kept
            refuse_in_recovery(store)
        keys, deliveries, removed = store.archive.expire_keys(
            conn,
            now - timedelta(seconds=retention.idempotency_keys),
            now - timedelta(seconds=retention.delivery_keys),
        )
    report.idempotency_keys_expired += keys
    report.delivery_keys_expired += deliveries
    report.inbound_events_removed += removed
