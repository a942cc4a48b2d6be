"""The archive's format: an open one anyone can read with ``gzip`` and a JSON parser.

An archive is a directory (or an object-store prefix, :mod:`.archive_location`) of batches, one
directory each, named so they sort in the order they were written
(``batch-20261207T061500Z-3f9a1c2e``)::

    manifest.json          what the batch holds: its runs, and per table a file, its row
                           count and the sha256 of the file's bytes
    runs.jsonl.gz          one JSON object per line per row, gzip-compressed
    events.jsonl.gz        ... one file per table (docs/archive-format.md lists them)
    committed.json         written once the batch's rows left the live store

A batch is whole once its manifest is there: the manifest is written after every other file
(in a directory, the whole batch is then renamed into place). A ``batch-*`` without a manifest
is a batch a process did not finish writing: readers skip it, a later archive removes it. A
batch with a manifest but no ``committed.json`` was written but perhaps not yet deleted from
the live store: its rows may be in both places, never in neither.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from openseal.errors import OpenSealError, UsageError
from openseal.runtime.lifecycle.archive_location import MANIFEST as MANIFEST
from openseal.runtime.lifecycle.archive_location import PARTIAL as PARTIAL
from openseal.runtime.lifecycle.archive_location import ArchiveBusy as ArchiveBusy
from openseal.runtime.lifecycle.archive_location import Location, UrlLocation, locate_archive

FORMAT = "openseal-archive"
VERSION = 1
COMMITTED = "committed.json"


class ArchiveCorrupt(OpenSealError):
    """A batch whose files do not match its manifest (or that has none)."""

    code = "archive_corrupt"


@dataclass(frozen=True)
class Batch:
    """One batch: where it is, its name (its directory's), its manifest, and whether its rows
    had left the live store when it was read."""

    location: Location
    name: str
    manifest: dict[str, Any]
    committed: bool = False

    @property
    def runs(self) -> list[str]:
        return list(self.manifest["runs"])

    @property
    def where(self) -> str:
        """The batch's path or URL, for messages."""
        return f"{self.location.label}/{self.name}"

    def key(self, file: str) -> str:
        return self.location.key(self.name, file)


def encode_lines(rows: Sequence[Mapping[str, Any]]) -> bytes:
    """Rows as gzip-compressed JSON Lines; the same rows give the same bytes (no timestamp in
    the gzip header, keys sorted)."""
    text = "".join(
        json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
        for row in rows
    )
    return gzip.compress(text.encode("utf-8"), mtime=0)


def write_batch(
    root: Location | str | Path, name: str, runs: Sequence[str],
    tables: Mapping[str, Sequence[Mapping[str, Any]]], created_at: datetime,
) -> Batch:  # fmt: skip
    """Write a batch under ``root`` and make it appear whole (see the module's docstring)."""
    location = locate_archive(root)
    files: dict[str, bytes] = {}
    entries: dict[str, dict[str, Any]] = {}
    for table, rows in tables.items():
        data = encode_lines(rows)
        file = f"{table}.jsonl.gz"
        files[file] = data
        entries[table] = {
            "file": file,
            "rows": len(rows),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    manifest = {
        "format": FORMAT, "version": VERSION, "batch": name,
        "created_at": created_at.isoformat(), "runs": list(runs), "tables": entries,
    }  # fmt: skip
    files[MANIFEST] = json.dumps(manifest, indent=2, sort_keys=True).encode()
    location.write_batch(name, files)
    return Batch(location, name, manifest)


def load_manifest(root: Location | str | Path, name: str, committed: bool | None = None) -> Batch:
    """The batch ``name`` under ``root`` (``committed``: already known from a listing)."""
    location = locate_archive(root)
    where = f"{location.label}/{name}"
    try:
        manifest = json.loads(location.read(location.key(name, MANIFEST)).decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise ArchiveCorrupt(f"{where}: no readable {MANIFEST} ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveCorrupt(f"{where}/{MANIFEST} is not an openseal archive manifest")
    if manifest.get("version") != VERSION:
        raise ArchiveCorrupt(
            f"{where}/{MANIFEST}: archive format version {manifest.get('version')!r}; "
            f"this openseal reads version {VERSION}"
        )
    if committed is None:
        committed = location.is_file(location.key(name, COMMITTED))
    return Batch(location, name, manifest, committed)


def read_table(batch: Batch, table: str) -> list[dict[str, Any]]:
    """A table's rows in ``batch``, after checking its file's sha256 and row count."""
    entry = batch.manifest["tables"].get(table)
    if entry is None:
        return []
    where = f"{batch.where}/{entry['file']}"
    try:
        data = batch.location.read(batch.key(entry["file"]))
    except OSError as exc:
        raise ArchiveCorrupt(f"{where}: {exc.strerror or 'not found'}") from None
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise ArchiveCorrupt(f"{where}: its sha256 is not the one {MANIFEST} records")
    rows = [json.loads(line) for line in gzip.decompress(data).decode("utf-8").splitlines()]
    if len(rows) != entry["rows"]:
        raise ArchiveCorrupt(f"{where}: {len(rows)} rows, {MANIFEST} records {entry['rows']}")
    return rows


def read_batch(batch: Batch) -> dict[str, list[dict[str, Any]]]:
    """Every table of ``batch``, each checked (:func:`read_table`)."""
    return {table: read_table(batch, table) for table in batch.manifest["tables"]}


def mark_committed(batch: Batch, deleted: Mapping[str, int], kept: Sequence[str]) -> None:
    """Record that the batch's rows left the live store (``kept``: runs that changed since
    they were read, left live)."""
    body = json.dumps({"deleted": dict(deleted), "kept": list(kept)}, indent=2, sort_keys=True)
    batch.location.put(batch.key(COMMITTED), body.encode())


def discard(batch: Batch) -> None:
    """Remove a batch that failed its own read-back: its rows are still live, and a batch
    left behind that does not match its manifest would stop every later archive."""
    batch.location.remove(batch.name)


@contextmanager
def writing(root: Location | str | Path) -> Iterator[None]:
    """Hold the archive's lock (``.lock``: an advisory ``flock`` in a directory, a lease on an
    object store): one archive writes into it at a time."""
    with locate_archive(root).lock():
        yield


def batches(root: Location | str | Path) -> Iterator[Batch]:
    """The whole batches under ``root``, oldest first (a ``batch-*`` without a manifest is
    not whole yet: skipped)."""
    location = locate_archive(root)
    if not location.exists():
        raise UsageError(f"no archive at {location.label}: nothing is stored there")
    for entry in location.entries():
        if MANIFEST in entry.files:
            yield load_manifest(location, entry.name, committed=COMMITTED in entry.files)
        elif not isinstance(location, UrlLocation):  # renamed in whole: a directory's is
            raise ArchiveCorrupt(f"{location.label}/{entry.name}: no {MANIFEST}")


def drop_partial(root: Location | str | Path, now: datetime) -> list[str]:
    """Remove batches a crash left half-written; their names."""
    return locate_archive(root).drop_partial(now)
