"""Where an archive lives: a local directory, or any URL an fsspec filesystem speaks
(``s3://bucket/prefix``, ``gs://…``, ``az://…``, ``memory://…``; ``file://`` is a directory).

Both forms make a batch visible only once it is whole, each in the way its storage allows:

- a **directory** writes a batch into a hidden ``.partial-…`` directory, syncs every file and
  renames it into place (a rename is atomic on a local filesystem), and takes an advisory
  ``flock`` on ``.lock`` so one archive writes into it at a time;
- an **object store** has no atomic rename, so a batch's table files are written straight
  under ``batch-…/`` and its ``manifest.json`` last: a ``batch-…/`` without a manifest is not a
  batch (readers skip it; an archive an hour or more later removes it, so a batch another
  process is writing at this moment is never taken for one a crash left). One object is
  written whole or not at all on every object store fsspec serves, and every file's sha256 in
  the manifest is checked on read. The lock is a lease: a ``.lock`` object naming its holder
  and when it expires, renewed while the archive writes (see :class:`UrlLocation`).

Paths inside a location are ``/``-separated keys relative to it (``batch-…/runs.jsonl.gz``).
"""

from __future__ import annotations

import fcntl
import json
import os
import posixpath
import secrets
import shutil
import socket
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from openseal.errors import OpenSealError, UsageError
from openseal.runtime.durable_files import sync_directory

PARTIAL = ".partial-"
BATCH = "batch-"
LOCK = ".lock"
MANIFEST = "manifest.json"
#: how long an object store's lock lasts without renewal; renewed at a third of it
LEASE_SECONDS = 300.0
#: how old (by the time in its name) a batch without a manifest on an object store must be
#: before an archive removes it: far longer than any batch takes to write
PARTIAL_GRACE = timedelta(hours=1)
#: the extra of openseal that installs each object store's fsspec package
EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure"}

T = TypeVar("T")


class ArchiveBusy(OpenSealError):
    """Another process holds the archive's lock."""

    code = "archive_busy"


class ArchiveUrlInvalid(UsageError):
    """An archive URL openseal cannot use: malformed, of an unknown protocol, or of one whose
    package is not installed."""

    code = "archive_url_invalid"


class ArchiveUnavailable(OpenSealError):
    """The object store behind an archive URL failed (refused, unreachable)."""

    code = "archive_unavailable"


@dataclass(frozen=True)
class Entry:
    """One ``batch-…`` directory (or prefix) and the names of the files in it."""

    name: str
    files: frozenset[str]


class Location(ABC):
    """An archive's storage: a few operations on keys relative to it."""

    #: the path or URL as the user gave it, for messages
    label: str

    @property
    @abstractmethod
    def basename(self) -> str: ...

    @abstractmethod
    def parent(self) -> Location: ...

    @abstractmethod
    def exists(self) -> bool:
        """Whether anything is stored there."""

    @abstractmethod
    def is_file(self, key: str) -> bool: ...

    @abstractmethod
    def read(self, key: str) -> bytes:
        """The bytes of ``key``; FileNotFoundError when there is none."""

    @abstractmethod
    def put(self, key: str, data: bytes) -> None:
        """Write ``key`` whole (replacing it), or not at all."""

    @abstractmethod
    def entries(self) -> list[Entry]:
        """The ``batch-…`` directories, sorted by name, with their files."""

    @abstractmethod
    def write_batch(self, name: str, files: Mapping[str, bytes]) -> None:
        """Write a batch's files so that it appears whole: ``files[MANIFEST]`` names it."""

    @abstractmethod
    def remove(self, name: str) -> None:
        """Remove a batch directory, manifest first (so it stops being a batch at once)."""

    @abstractmethod
    def drop_partial(self, now: datetime) -> list[str]:
        """Remove what a crash left of batches not written whole; their names."""

    @abstractmethod
    def lock(self) -> AbstractContextManager[None]:
        """Held while an archive writes here (:class:`ArchiveBusy` when another holds it)."""

    def key(self, *parts: str) -> str:
        return "/".join(part for part in parts if part)

    def __str__(self) -> str:
        return self.label


class DirectoryLocation(Location):
    """A local directory: batches renamed into place, files synced, an ``flock``."""

    def __init__(self, path: Path, label: str | None = None) -> None:
        self.path = path
        self.label = label or str(path)

    @property
    def basename(self) -> str:
        return self.path.resolve().name

    def parent(self) -> Location:
        return DirectoryLocation(self.path.resolve().parent)

    def exists(self) -> bool:
        return self.path.is_dir()

    def is_file(self, key: str) -> bool:
        return (self.path / key).is_file()

    def read(self, key: str) -> bytes:
        return (self.path / key).read_bytes()

    def put(self, key: str, data: bytes) -> None:
        target = self.path / key
        temporary = target.with_name(f".{target.name}")
        _sync_write(temporary, data)
        os.replace(temporary, target)

    def entries(self) -> list[Entry]:
        if not self.path.is_dir():
            return []
        return [
            Entry(path.name, frozenset(child.name for child in path.iterdir()))
            for path in sorted(self.path.iterdir())
            if path.is_dir() and path.name.startswith(BATCH)
        ]

    def write_batch(self, name: str, files: Mapping[str, bytes]) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        partial = self.path / f"{PARTIAL}{name}"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        for file, data in files.items():  # the manifest last, as on an object store
            if file != MANIFEST:
                _sync_write(partial / file, data)
        _sync_write(partial / MANIFEST, files[MANIFEST])
        sync_directory(partial)
        os.replace(partial, self.path / name)
        sync_directory(self.path)

    def remove(self, name: str) -> None:
        shutil.rmtree(self.path / name, ignore_errors=True)

    def drop_partial(self, now: datetime) -> list[str]:
        if not self.path.is_dir():
            return []
        gone = [p for p in self.path.iterdir() if p.is_dir() and p.name.startswith(PARTIAL)]
        for path in gone:
            shutil.rmtree(path)
        return [p.name for p in gone]

    @contextmanager
    def lock(self) -> Iterator[None]:
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / LOCK, "a+b") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ArchiveBusy(f"another process is archiving into {self.label}") from None
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class UrlLocation(Location):
    """A prefix of an fsspec filesystem (an object store's bucket, or memory).

    Its lock is a lease, ``.lock``: ``{"holder", "expires_at"}``. Taking it is refused while
    another holder's lease has not expired; it is written, then read back to see that this
    process holds it, and renewed by every write once a third of it has passed. It keeps a
    second archive (``--archive-every`` given to two processes) out of a prefix; it is not a
    consensus: two processes taking it in the same instant may both go on, which costs a
    duplicate copy of a batch, never a run (neither removes a batch the other is writing:
    :meth:`drop_partial` leaves young ones alone). A process killed while archiving holds it until
    it expires (:data:`LEASE_SECONDS`).
    """

    def __init__(self, fs: Any, root: str, label: str) -> None:
        self.fs, self.root, self.label = fs, root.rstrip("/"), label.rstrip("/")
        self._holder: str | None = None
        self._renew_at = 0.0

    @property
    def basename(self) -> str:
        return posixpath.basename(self.root)

    def parent(self) -> Location:
        return UrlLocation(self.fs, posixpath.dirname(self.root), posixpath.dirname(self.label))

    def _path(self, key: str) -> str:
        return f"{self.root}/{key}" if key else self.root

    def _call(self, what: str, call: Callable[[], T]) -> T:
        """A filesystem call; its failures, whatever the library raises, as one line."""
        try:
            return call()
        except (FileNotFoundError, OpenSealError):
            raise
        except Exception as exc:
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise ArchiveUnavailable(f"{self.label}: cannot {what}: {detail}") from None

    def exists(self) -> bool:
        return bool(self._call("list it", lambda: self.fs.find(self.root, maxdepth=2)))

    def is_file(self, key: str) -> bool:
        return bool(self._call(f"read {key}", lambda: self.fs.isfile(self._path(key))))

    def read(self, key: str) -> bytes:
        data = self._call(f"read {key}", lambda: self.fs.cat_file(self._path(key)))
        return bytes(data)

    def put(self, key: str, data: bytes) -> None:
        self._keep_lease()
        self._call(f"write {key}", lambda: self.fs.pipe_file(self._path(key), data))

    def _files(self) -> dict[str, set[str]]:
        found: list[str] = self._call("list it", lambda: self.fs.find(self.root))
        dirs: dict[str, set[str]] = {}
        start = len(self.root) + 1
        for path in found:
            parts = path[start:].split("/")
            if len(parts) == 2 and parts[0].startswith(BATCH):
                dirs.setdefault(parts[0], set()).add(parts[1])
        return dirs

    def entries(self) -> list[Entry]:
        return [Entry(name, frozenset(files)) for name, files in sorted(self._files().items())]

    def write_batch(self, name: str, files: Mapping[str, bytes]) -> None:
        for file, data in files.items():
            if file != MANIFEST:
                self.put(self.key(name, file), data)
        self.put(self.key(name, MANIFEST), files[MANIFEST])  # last: the batch is whole

    def remove(self, name: str) -> None:
        manifest = self._path(self.key(name, MANIFEST))
        rest: list[str] = self._call("list it", lambda: self.fs.find(self._path(name)))
        for path in [manifest, *(p for p in rest if p != manifest)]:
            self._remove(path)

    def _remove(self, path: str) -> None:
        with suppress(FileNotFoundError):
            self._call(f"remove {path}", lambda: self.fs.rm_file(path))

    def drop_partial(self, now: datetime) -> list[str]:
        """Batches without a manifest written at least :data:`PARTIAL_GRACE` before ``now``
        (by the time in their names): younger ones may be another process's, being written
        (its lease notwithstanding: taking a lease is not a consensus)."""
        gone = [
            name
            for name, files in self._files().items()
            if MANIFEST not in files and _written_before(name, now - PARTIAL_GRACE)
        ]
        for name in gone:
            self.remove(name)
        return gone

    def _lease(self) -> dict[str, Any] | None:
        try:
            body = json.loads(self.read(LOCK))
        except FileNotFoundError:
            return None
        except ValueError:  # a lock written half by a store that is not atomic: none
            return None
        return body if isinstance(body, dict) else None

    def _write_lease(self) -> None:
        until = datetime.now(UTC) + timedelta(seconds=LEASE_SECONDS)
        body = {"holder": self._holder, "expires_at": until.isoformat()}
        self._call("write its lock", lambda: self.fs.pipe_file(self._path(LOCK), _json(body)))
        self._renew_at = time.monotonic() + LEASE_SECONDS / 3

    def _keep_lease(self) -> None:
        if self._holder is not None and time.monotonic() >= self._renew_at:
            self._write_lease()

    @contextmanager
    def lock(self) -> Iterator[None]:
        holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        held = self._lease()
        if held is not None and _unexpired(held):
            raise ArchiveBusy(_busy(self.label, held))
        self._holder = holder
        self._write_lease()
        held = self._lease()
        if held is None or held.get("holder") != holder:
            self._holder = None
            raise ArchiveBusy(_busy(self.label, held or {}))
        try:
            yield
        finally:
            self._holder = None
            if (self._lease() or {}).get("holder") == holder:
                self._remove(self._path(LOCK))


def _written_before(name: str, when: datetime) -> bool:
    """Whether batch ``name`` (``batch-20261207T061500Z-…``) was named before ``when``; a name
    not of that form is not one of ours: never."""
    try:
        named = datetime.strptime(name.split("-")[1], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except (IndexError, ValueError):
        return False
    return named <= when


def _json(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, indent=2, sort_keys=True).encode()


def _unexpired(lease: Mapping[str, Any]) -> bool:
    try:
        return datetime.fromisoformat(str(lease["expires_at"])) > datetime.now(UTC)
    except (KeyError, ValueError, TypeError):
        return False


def _busy(label: str, lease: Mapping[str, Any]) -> str:
    holder = lease.get("holder", "another process")
    until = lease.get("expires_at")
    tail = f"; its lock expires at {until} if that process is gone" if until else ""
    return f"another process ({holder}) is archiving into {label}{tail}"


def _sync_write(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def is_url(target: str) -> bool:
    return "://" in target or "::" in target


def locate_archive(target: str | Path | Location, option: str = "--to") -> Location:
    """The location ``target`` names: a path (a directory), or a URL (``file://`` too is a
    directory). A URL openseal cannot use is :class:`ArchiveUrlInvalid` (``option`` names
    where it was given), with what to do about it.

    >>> locate_archive("archive").label, locate_archive("file:///srv/archive").label
    ('archive', '/srv/archive')
    """
    if isinstance(target, Location):
        return target
    if isinstance(target, Path) or not is_url(target):
        return DirectoryLocation(Path(target))
    protocol = target.split("://", 1)[0].rsplit("::", 1)[-1]
    try:
        from fsspec.core import url_to_fs
        from fsspec.implementations.local import LocalFileSystem

        fs, root = url_to_fs(target)
    except ImportError as exc:
        extra = EXTRAS.get(protocol)
        hint = f"pip install 'openseal[{extra}]'" if extra else "install its fsspec package"
        raise ArchiveUrlInvalid(
            f"{option} {target}: the {protocol}:// protocol needs a package that is not "
            f"installed ({exc}): {hint}"
        ) from None
    except ValueError as exc:
        detail = "no filesystem speaks it" if "Protocol not known" in str(exc) else str(exc)
        raise ArchiveUrlInvalid(
            f"{option} {target}: {protocol}:// is not an archive location ({detail}); give a "
            "directory, or a URL such as s3://BUCKET/PREFIX, gs://BUCKET/PREFIX or file:///PATH"
        ) from None
    except Exception as exc:  # a library's own complaint about the URL, as one line
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ArchiveUrlInvalid(f"{option} {target}: {detail}") from None
    if isinstance(fs, LocalFileSystem):
        return DirectoryLocation(Path(root), label=root)
    if not root.strip("/"):
        raise ArchiveUrlInvalid(
            f"{option} {target}: name a bucket (and a prefix) to archive under, such as "
            f"{protocol}://BUCKET/openseal-archive"
        )
    return UrlLocation(fs, root, target)
