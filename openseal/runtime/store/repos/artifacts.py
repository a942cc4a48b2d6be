"""Content-addressed artefacts: create-only, verified by digest on every read, on every host.

Where the bytes live follows the database (DESIGN §5, invariant 16; decision record 0010):

* **PostgreSQL** (many hosts): the bytes are in the artefact's row (``artifacts.content``),
  written in the same transaction as whatever refers to them, so a worker or a server on any
  host reads exactly what the drafting host stored — nothing a second host needs is on one
  host's disk. Rows from before artefacts moved into the database have no content; their file
  is read if this host has it, and they are reported as not found otherwise.
* **SQLite** (one host): an artefact of at most :data:`INLINE_MAX_BYTES` (every proposal) is
  stored in its row too, in the caller's transaction, whose WAL commit makes it durable: no
  file and no fsync of its own. A larger one is a file at ``<home>/artifacts/ab/cdef…`` (the
  sha256 hex split after two characters), and its row has no content. The file is written to
  a temporary file in the same directory, synced, then hard-linked into place: ``link`` fails
  if the name exists, so two writers of the same content can never clobber each other and a
  reader never sees a half-written file. Rows written as files before small artefacts moved
  into the database keep reading their file.

Either way every read recomputes the sha256 and refuses bytes that do not match
(:class:`ArtifactCorrupt`).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import sqlalchemy as sa

from openseal.runtime.durable_files import sync_directory
from openseal.runtime.store.db import combined, fastsql
from openseal.runtime.store.db.base import StoreBase
from openseal.runtime.store.db.errors import ArtifactCorrupt, NotFound
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import ArtifactInfo

#: The largest artefact SQLite stores in its row; larger ones are files. Far above any
#: proposal (a few KiB of canonical JSON), and below the size from which SQLite's own
#: measurements find a separate file faster to read than a BLOB (about 100 KB with 4 KiB
#: pages); it also bounds what one commit adds to the WAL, which holds the bytes until a
#: checkpoint copies them into the database file.
INLINE_MAX_BYTES = 64 * 1024

artifacts = schema.artifacts
INFO_COLUMNS = (
    artifacts.c.digest,
    artifacts.c.size,
    artifacts.c.media_type,
    artifacts.c.created_at,
)
SELECT_ARTIFACT = sa.select(*INFO_COLUMNS).where(artifacts.c.digest == sa.bindparam("p_digest"))
SELECT_CONTENT = sa.select(artifacts.c.content).where(
    artifacts.c.digest == sa.bindparam("p_digest")
)
FILL_CONTENT = (
    sa.update(artifacts)
    .where(artifacts.c.digest == sa.bindparam("p_digest"), artifacts.c.content.is_(None))
    .values(content=sa.bindparam("v_content", type_=artifacts.c.content.type))
)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ArtifactStore:
    """The store's artefacts: in their rows (all on PostgreSQL, the small ones on SQLite),
    else in files under ``root``."""

    def __init__(self, root: Path, store: StoreBase) -> None:
        self.root = root
        self._store = store
        #: every artefact's bytes live in its row (PostgreSQL), none in files under ``root``
        self.in_database = store.dialect != "sqlite"

    def inline(self, size: int) -> bool:
        """Whether an artefact of ``size`` bytes is stored in its row rather than a file."""
        return self.in_database or size <= INLINE_MAX_BYTES

    def path(self, digest: str) -> Path:
        _check_digest(digest)
        return self.root / digest[:2] / digest[2:]

    def put(self, data: bytes, media_type: str = "application/octet-stream") -> ArtifactInfo:
        """Store ``data`` once and return its record; storing it again is a no-op."""
        digest = self.write_file(data)
        try:
            with self._store.write() as conn:
                return self.record_in(conn, digest, len(data), media_type, data)
        except sa.exc.IntegrityError:
            # A concurrent writer of the same content inserted the row first.
            return self.info(digest)

    def write_file(self, data: bytes) -> str:
        """Prepare ``data`` outside any transaction and return its digest; no row yet.

        A file (a large artefact on SQLite) is written (or verified) now, so no lock is held
        over its fsync; bytes stored in the row need nothing before it. Pair it with
        :meth:`record_in`, which adds the row inside the caller's transaction.
        """
        digest = sha256_hex(data)
        if self.inline(len(data)):
            return digest
        target = self.path(digest)
        if target.exists():
            self._verify(target.read_bytes(), digest)
        else:
            self._write_create_only(target, data, digest)
        return digest

    def record_in(
        self,
        conn: sa.Connection,
        digest: str,
        size: int,
        media_type: str,
        data: bytes | None = None,
    ) -> ArtifactInfo:
        """The artefact's row, inserted in ``conn``'s transaction unless it exists already.

        ``data`` is the artefact's bytes: required when they are stored in the row
        (:meth:`inline`). A file must have been written first (:meth:`write_file`): a row
        never points at a file that is not on disk.
        """
        row = self.new_row(digest, size, media_type, data)
        (inserted,) = self._store.insert_new_rows(conn, [row])
        return self.recorded(conn, row, inserted)

    def new_row(
        self, digest: str, size: int, media_type: str, data: bytes | None = None
    ) -> combined.NewRow:
        """:meth:`record_in` in three steps, for a caller inserting other rows with it: the
        row to insert unless it exists (``store.insert_new_rows``), then :meth:`recorded`."""
        if self.inline(size):
            if data is None:
                raise ValueError("artefacts stored in the database are recorded with their bytes")
            self._verify(data, digest)
        info = ArtifactInfo(digest, size, media_type, self._store.now())
        content = data if self.inline(size) else None
        return artifacts, ("digest",), {**info.__dict__, "content": content}

    def recorded(self, conn: sa.Connection, row: combined.NewRow, inserted: bool) -> ArtifactInfo:
        """The artefact of ``row`` (:meth:`new_row`), which was ``inserted`` or existed."""
        values = row[2]
        if inserted:
            return ArtifactInfo(
                values["digest"], values["size"], values["media_type"], values["created_at"]
            )
        digest, data = values["digest"], values["content"]
        found = fastsql.one_or_none(fastsql.execute(conn, SELECT_ARTIFACT, {"p_digest": digest}))
        assert found is not None  # it is why nothing was inserted
        if self.inline(values["size"]):
            self._keep(conn, digest, data)
        return ArtifactInfo.from_row(found)

    def _keep(self, conn: sa.Connection, digest: str, data: bytes | None) -> None:
        """The row exists: its bytes must still be these (storing again never papers over a
        corruption); a row from before the bytes moved into the database is completed."""
        found = fastsql.one_or_none(fastsql.execute(conn, SELECT_CONTENT, {"p_digest": digest}))
        content = None if found is None else found["content"]
        if content is None:
            fastsql.execute_count(conn, FILL_CONTENT, {"p_digest": digest, "v_content": data})
        else:
            self._verify(bytes(content), digest)

    def _write_create_only(self, target: Path, data: bytes, digest: str) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temp_name, 0o444)
            try:
                os.link(temp_name, target)
            except FileExistsError:
                # Another writer got there first; its file must hold the same bytes.
                self._verify(target.read_bytes(), digest)
        finally:
            os.unlink(temp_name)
        # The file's name must survive a power failure before a row may name it: the
        # directory entries the link (and a new fan-out directory) added are synced too.
        sync_directory(target.parent)
        sync_directory(self.root)

    def read(self, digest: str) -> bytes:
        """The artefact's bytes, after checking they still hash to ``digest``."""
        with self._store.read() as conn:
            return self.read_in(conn, digest)

    def read_in(self, conn: sa.Connection, digest: str) -> bytes:
        """:meth:`read` in the caller's transaction (admission verifies what it admits)."""
        _check_digest(digest)
        found = fastsql.one_or_none(fastsql.execute(conn, SELECT_CONTENT, {"p_digest": digest}))
        if found is None:
            raise NotFound(f"artefact {digest} is not in the store")
        content = found["content"]
        if content is None:
            return self._read_file(digest)
        data = bytes(content)
        self._verify(data, digest)
        return data

    def _read_file(self, digest: str) -> bytes:
        try:
            data = self.path(digest).read_bytes()
        except FileNotFoundError:
            if self.in_database:
                raise NotFound(
                    f"artefact {digest} was stored as a file on the host that drafted it, "
                    "before artefacts moved into the database, and this host does not have it"
                ) from None
            raise NotFound(f"artefact {digest} not found: its file is missing") from None
        self._verify(data, digest)
        return data

    @staticmethod
    def _verify(data: bytes, digest: str) -> None:
        if sha256_hex(data) != digest:
            raise ArtifactCorrupt(f"artefact {digest} is corrupt: its content hash differs")

    def info(self, digest: str) -> ArtifactInfo:
        with self._store.read() as conn:
            found = fastsql.one_or_none(
                fastsql.execute(conn, SELECT_ARTIFACT, {"p_digest": digest})
            )
        if found is None:
            raise NotFound(f"artefact {digest} not found")
        return ArtifactInfo.from_row(found)


def _check_digest(digest: str) -> None:
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise NotFound(f"{digest!r} is not an artefact digest (64 lowercase hex)")
