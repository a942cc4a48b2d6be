"""The archive on disk: an open format anyone can read with ``gzip`` and a JSON parser.

An archive is a directory of batches, one directory each, named so they sort in the order
they were written (``batch-20261207T061500Z-3f9a1c2e``)::

    manifest.json          what the batch holds: its runs, and per table a file, its row
                           count and the sha256 of the file's bytes
    runs.jsonl.gz          one JSON object per line per row, gzip-compressed
    events.jsonl.gz        ... one file per table (docs/archive-format.md lists them)
    committed.json         written once the batch's rows left the live store

A batch is written in a hidden directory (``.partial-…``) and renamed into place once every
file and the manifest are on disk, so a ``batch-*`` directory is always whole. A batch with a
manifest but no ``committed.json`` was written but perhaps not yet deleted from the live
store: its rows may be in both places, never in neither.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from openseal.errors import OpenSealError, UsageError

FORMAT = "openseal-archive"
VERSION = 1
MANIFEST = "manifest.json"
COMMITTED = "committed.json"
PARTIAL = ".partial-"


class ArchiveBusy(OpenSealError):
    """Another process holds the archive directory's lock."""

    code = "archive_busy"


class ArchiveCorrupt(OpenSealError):
    """A batch whose files do not match its manifest (or that has none)."""

    code = "archive_corrupt"


@dataclass(frozen=True)
class Batch:
    """One batch directory and its manifest."""

    path: Path
    manifest: dict[str, Any]

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def runs(self) -> list[str]:
        return list(self.manifest["runs"])

    @property
    def committed(self) -> bool:
        return (self.path / COMMITTED).exists()


def _sync_write(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def encode_lines(rows: Sequence[Mapping[str, Any]]) -> bytes:
    """Rows as gzip-compressed JSON Lines; the same rows give the same bytes (no timestamp in
    the gzip header, keys sorted)."""
    text = "".join(
        json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
        for row in rows
    )
    return gzip.compress(text.encode("utf-8"), mtime=0)


def write_batch(
    root: Path, name: str, runs: Sequence[str], tables: Mapping[str, Sequence[Mapping[str, Any]]],
    created_at: datetime,
) -> Batch:  # fmt: skip
    """Write a batch under ``root`` and make it appear whole (see the module's docstring)."""
    root.mkdir(parents=True, exist_ok=True)
    partial = root / f"{PARTIAL}{name}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    entries: dict[str, dict[str, Any]] = {}
    for table, rows in tables.items():
        data = encode_lines(rows)
        file = f"{table}.jsonl.gz"
        _sync_write(partial / file, data)
        entries[table] = {
            "file": file,
            "rows": len(rows),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    manifest = {
        "format": FORMAT, "version": VERSION, "batch": name,
        "created_at": created_at.isoformat(), "runs": list(runs), "tables": entries,
    }  # fmt: skip
    _sync_write(partial / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True).encode())
    _sync_dir(partial)
    final = root / name
    os.replace(partial, final)
    _sync_dir(root)
    return Batch(final, manifest)


def load_manifest(path: Path) -> Batch:
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ArchiveCorrupt(f"{path}: no readable {MANIFEST} ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveCorrupt(f"{path / MANIFEST} is not an openseal archive manifest")
    if manifest.get("version") != VERSION:
        raise ArchiveCorrupt(
            f"{path / MANIFEST}: archive format version {manifest.get('version')!r}; "
            f"this openseal reads version {VERSION}"
        )
    return Batch(path, manifest)


def read_table(batch: Batch, table: str) -> list[dict[str, Any]]:
    """A table's rows in ``batch``, after checking its file's sha256 and row count."""
    entry = batch.manifest["tables"].get(table)
    if entry is None:
        return []
    path = batch.path / entry["file"]
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ArchiveCorrupt(f"{path}: {exc.strerror}") from None
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise ArchiveCorrupt(f"{path}: its sha256 is not the one {MANIFEST} records")
    rows = [json.loads(line) for line in gzip.decompress(data).decode("utf-8").splitlines()]
    if len(rows) != entry["rows"]:
        raise ArchiveCorrupt(f"{path}: {len(rows)} rows, {MANIFEST} records {entry['rows']}")
    return rows


def read_batch(batch: Batch) -> dict[str, list[dict[str, Any]]]:
    """Every table of ``batch``, each checked (:func:`read_table`)."""
    return {table: read_table(batch, table) for table in batch.manifest["tables"]}


def mark_committed(batch: Batch, deleted: Mapping[str, int], kept: Sequence[str]) -> None:
    """Record that the batch's rows left the live store (``kept``: runs that changed since
    they were read, left live)."""
    body = json.dumps({"deleted": dict(deleted), "kept": list(kept)}, indent=2, sort_keys=True)
    temporary = batch.path / f".{COMMITTED}"
    _sync_write(temporary, body.encode())
    os.replace(temporary, batch.path / COMMITTED)


@contextmanager
def writing(root: Path) -> Iterator[None]:
    """Hold the archive directory's lock (``.lock``, an advisory ``flock``): one archive
    writes into a directory at a time."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ArchiveBusy(f"another process is archiving into {root}") from None
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def batches(root: Path) -> Iterator[Batch]:
    """The whole batches under ``root``, oldest first."""
    if not root.is_dir():
        raise UsageError(f"no archive at {root}: not a directory")
    for path in sorted(root.iterdir()):
        if path.is_dir() and path.name.startswith("batch-"):
            yield load_manifest(path)


def drop_partial(root: Path) -> list[str]:
    """Remove batches a crash left half-written; their names."""
    if not root.is_dir():
        return []
    gone = [p for p in root.iterdir() if p.is_dir() and p.name.startswith(PARTIAL)]
    for path in gone:
        shutil.rmtree(path)
    return [p.name for p in gone]
