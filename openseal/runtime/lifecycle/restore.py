"""Reading runs back out of an archive: one run's record (``runs show --archive``) and runs
put back into the live store (``db restore-archive``).

``PATH`` is an archive (every batch in it) or one batch, as a directory's path or a URL
(:mod:`.archive_location`). A run archived, restored and archived again is in two batches; the
newest copy is the one read. Every file is checked against its batch's manifest as it is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openseal.errors import OpenSealError
from openseal.runtime.lifecycle import archive_format as fmt
from openseal.runtime.lifecycle.archive import Rows, only
from openseal.runtime.lifecycle.archive_location import Location, locate_archive
from openseal.runtime.store import Store


class NotInArchive(OpenSealError):
    code = "not_found"


Where = str | Path | Location


def batches_at(path: Where) -> list[fmt.Batch]:
    """The batches at ``path`` (an archive or one batch), newest first."""
    location = locate_archive(path, "PATH")
    if location.is_file(fmt.MANIFEST):
        return [fmt.load_manifest(location.parent(), location.basename)]
    return list(reversed(list(fmt.batches(location))))


def _tree_of(rows: Rows, run_id: str) -> set[str]:
    """``run_id``'s whole tree (from its root down) among the archived runs."""
    parent = {row["id"]: row["parent_run_id"] for row in rows["runs"]}
    root = run_id
    while parent.get(root) in parent:
        root = parent[root]
    tree, level = {root}, {root}
    while level:
        level = {child for child, up in parent.items() if up in level} - tree
        tree |= level
    return tree


def find_archived_run(path: Where, run_id: str) -> dict[str, Any]:
    """The archived record of ``run_id``: its run row and, per table, the rows that are its
    own (events, turns, activities, proposals, approvals, actions ...) plus its objective."""
    for batch in batches_at(path):
        if run_id in batch.runs:
            rows = only(fmt.read_batch(batch), {run_id})
            record: dict[str, Any] = {"batch": batch.name, "run": rows["runs"][0]}
            record.update({t: r for t, r in rows.items() if t != "runs"})
            return record
    raise NotInArchive(f"no run {run_id} in the archive at {path}")


@dataclass
class RestoreReport:
    runs: list[str] = field(default_factory=list)
    rows_inserted: int = 0
    batches: list[str] = field(default_factory=list)


def restore_archive(store: Store, path: Where, run_id: str | None = None) -> RestoreReport:
    """Put archived runs back into the live store: every run at ``path``, or ``run_id``'s
    tree. Each batch in one transaction; a row already live is left as it is, so restoring
    twice restores once."""
    report = RestoreReport()
    seen: set[str] = set()
    for batch in batches_at(path):
        if run_id is not None and run_id not in batch.runs:
            continue
        rows = fmt.read_batch(batch)
        wanted = _tree_of(rows, run_id) if run_id is not None else set(batch.runs)
        wanted -= seen  # a newer batch had them
        if not wanted:
            continue
        rows = only(rows, wanted)
        with store.write() as conn:
            report.rows_inserted += store.archive.restore(conn, rows)
        seen |= wanted
        report.runs += sorted(wanted)
        report.batches.append(batch.name)
        if run_id is not None:
            break
    if run_id is not None and not report.runs:
        raise NotInArchive(f"no run {run_id} in the archive at {path}")
    return report
