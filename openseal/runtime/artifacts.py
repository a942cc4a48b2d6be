"""Content-addressed artefact files: create-only, verified by digest on every read.

Files live at ``<root>/ab/cdef…`` (the sha256 hex split after two characters). A write goes
to a temporary file in the same directory, is synced, then hard-linked into place: ``link``
fails if the name exists, so two writers of the same content can never clobber each other
and a reader never sees a half-written file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import sqlalchemy as sa

from openseal.runtime import fastsql, schema
from openseal.runtime.records import ArtifactInfo
from openseal.runtime.store_base import StoreBase
from openseal.runtime.store_errors import ArtifactCorrupt, NotFound

artifacts = schema.artifacts
SELECT_ARTIFACT = sa.select(artifacts).where(artifacts.c.digest == sa.bindparam("p_digest"))
INSERT_ARTIFACT = sa.insert(artifacts)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ArtifactStore:
    def __init__(self, root: Path, store: StoreBase) -> None:
        self.root = root
        self._store = store

    def path(self, digest: str) -> Path:
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise NotFound(f"{digest!r} is not an artefact digest (64 lowercase hex)")
        return self.root / digest[:2] / digest[2:]

    def put(self, data: bytes, media_type: str = "application/octet-stream") -> ArtifactInfo:
        """Store ``data`` once and return its record; storing it again is a no-op."""
        digest = self.write_file(data)
        return self._record(digest, len(data), media_type)

    def write_file(self, data: bytes) -> str:
        """Write (or verify) the file of ``data`` and return its digest; no database row yet.

        Pair it with :meth:`record_in`, which adds the row inside the caller's transaction.
        """
        digest = sha256_hex(data)
        target = self.path(digest)
        if target.exists():
            self._verify(target, digest)
        else:
            self._write_create_only(target, data, digest)
        return digest

    def record_in(
        self, conn: sa.Connection, digest: str, size: int, media_type: str
    ) -> ArtifactInfo:
        """The artefact's row, inserted in ``conn``'s transaction unless it exists already.

        The file must have been written first (:meth:`write_file`): a row never points at a
        file that is not on disk.
        """
        row = fastsql.one_or_none(fastsql.execute(conn, SELECT_ARTIFACT, {"p_digest": digest}))
        if row is not None:
            return ArtifactInfo.from_row(row)
        info = ArtifactInfo(digest, size, media_type, self._store.now())
        fastsql.execute(conn, INSERT_ARTIFACT, info.__dict__)
        return info

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
                self._verify(target, digest)
        finally:
            os.unlink(temp_name)

    def _record(self, digest: str, size: int, media_type: str) -> ArtifactInfo:
        try:
            return self._insert_row(digest, size, media_type)
        except sa.exc.IntegrityError:
            # A concurrent writer of the same content inserted the row first.
            return self.info(digest)

    def _insert_row(self, digest: str, size: int, media_type: str) -> ArtifactInfo:
        with self._store.write() as conn:
            row = conn.execute(sa.select(artifacts).where(artifacts.c.digest == digest))
            existing = row.mappings().one_or_none()
            if existing is not None:
                return ArtifactInfo.from_row(existing)
            info = ArtifactInfo(digest, size, media_type, self._store.now())
            conn.execute(sa.insert(artifacts).values(**info.__dict__))
        return info

    def read(self, digest: str) -> bytes:
        """The artefact's bytes, after checking they still hash to ``digest``."""
        target = self.path(digest)
        try:
            data = target.read_bytes()
        except FileNotFoundError:
            raise NotFound(f"artefact {digest} not found") from None
        if sha256_hex(data) != digest:
            raise ArtifactCorrupt(f"artefact {digest} is corrupt: its content hash differs")
        return data

    def _verify(self, target: Path, digest: str) -> None:
        if sha256_hex(target.read_bytes()) != digest:
            raise ArtifactCorrupt(f"artefact {digest} is corrupt: its content hash differs")

    def info(self, digest: str) -> ArtifactInfo:
        with self._store.read() as conn:
            row = conn.execute(sa.select(artifacts).where(artifacts.c.digest == digest))
            found = row.mappings().one_or_none()
        if found is None:
            raise NotFound(f"artefact {digest} not found")
        return ArtifactInfo.from_row(found)
