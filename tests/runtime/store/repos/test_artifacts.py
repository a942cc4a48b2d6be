from __future__ import annotations

import os
import threading

import pytest
import sqlalchemy as sa

from openseal.runtime.store import Store
from openseal.runtime.store.db.errors import ArtifactCorrupt, NotFound
from openseal.runtime.store.repos.artifacts import INLINE_MAX_BYTES, sha256_hex
from openseal.runtime.store.tables import schema

#: an artefact SQLite stores in its row, and one it stores as a file (PostgreSQL: both in rows)
SMALL = b'{"po": "PO-1"}'
LARGE = os.urandom(INLINE_MAX_BYTES + 1)
SIZES = pytest.mark.parametrize("data", [SMALL, LARGE], ids=["small", "large"])


def files(store: Store) -> None:
    if store.artifacts.in_database:
        pytest.skip("artefacts are files only on SQLite")


def stored_content(store: Store, digest: str) -> bytes | None:
    """The bytes in the artefact's row (None: the artefact is a file)."""
    with store.engine.connect() as conn:
        content = conn.execute(
            sa.select(schema.artifacts.c.content).where(schema.artifacts.c.digest == digest)
        ).scalar_one()
    return None if content is None else bytes(content)


def files_under(store: Store) -> list[str]:
    return [p.name for p in store.artifacts.root.rglob("*") if p.is_file()]


def test_put_and_read_round_trip(store: Store) -> None:
    info = store.artifacts.put(SMALL, "application/json")
    assert info.digest == sha256_hex(SMALL)
    assert info.size == len(SMALL)
    assert store.artifacts.read(info.digest) == SMALL
    assert store.artifacts.info(info.digest).media_type == "application/json"
    path = store.artifacts.path(info.digest)
    assert path.parent.name == info.digest[:2] and path.name == info.digest[2:]
    assert store.artifacts.in_database is (store.dialect == "postgresql")


def test_a_small_artefact_is_in_its_row_and_no_file(store: Store) -> None:
    # PostgreSQL keeps every artefact in the store, on no host's disk; SQLite the small ones,
    # committed with the row (no file, no fsync of their own).
    info = store.artifacts.put(SMALL)
    assert stored_content(store, info.digest) == SMALL
    assert files_under(store) == []
    assert store.artifacts.read(info.digest) == SMALL
    boundary = store.artifacts.put(os.urandom(INLINE_MAX_BYTES))
    assert stored_content(store, boundary.digest) is not None
    assert files_under(store) == []


def test_a_large_artefact_is_a_file_on_sqlite(store: Store) -> None:
    files(store)
    info = store.artifacts.put(LARGE)
    assert stored_content(store, info.digest) is None
    assert store.artifacts.path(info.digest).read_bytes() == LARGE
    assert store.artifacts.read(info.digest) == LARGE


def test_a_file_and_its_directory_entries_are_synced_before_its_row(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A power failure after the row commits must not take the file's name away: the file,
    its fan-out directory and the artefacts root are each synced before the row is written."""
    files(store)
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    digest = store.artifacts.write_file(LARGE)
    target = store.artifacts.path(digest)
    assert str(target.parent) in synced
    assert str(store.artifacts.root) in synced
    assert any(name.startswith(str(target.parent / ".tmp-")) for name in synced)


def test_files_are_create_only(store: Store) -> None:
    files(store)
    first = store.artifacts.put(LARGE)
    path = store.artifacts.path(first.digest)
    inode = path.stat().st_ino
    again = store.artifacts.put(LARGE)
    assert again == first
    assert path.stat().st_ino == inode  # not rewritten
    assert not os.access(path, os.W_OK) or os.geteuid() == 0
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]


@SIZES
def test_concurrent_writers_of_the_same_content_do_not_clobber(store: Store, data: bytes) -> None:
    errors: list[BaseException] = []

    def write() -> None:
        try:
            store.artifacts.put(data)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert store.artifacts.read(sha256_hex(data)) == data


def corrupt(store: Store, digest: str, data: bytes) -> None:
    """Change an artefact's stored bytes (in its row, else its file) behind the store's back."""
    if stored_content(store, digest) is not None:
        with store.engine.begin() as conn:
            conn.execute(
                sa.update(schema.artifacts)
                .where(schema.artifacts.c.digest == digest)
                .values(content=data)
            )
        return
    path = store.artifacts.path(digest)
    path.chmod(0o644)
    path.write_bytes(data)


@SIZES
def test_corruption_is_detected_on_read(store: Store, data: bytes) -> None:
    info = store.artifacts.put(data)
    corrupt(store, info.digest, b"tampered order")
    with pytest.raises(ArtifactCorrupt) as raised:
        store.artifacts.read(info.digest)
    assert raised.value.code == "artifact_corrupt"
    with pytest.raises(ArtifactCorrupt):
        store.artifacts.put(data)  # a rewrite must not paper over corruption


def file_backed(store: Store, data: bytes) -> str:
    """``data`` stored as a file with a row without content, as before artefacts were rows."""
    digest = store.artifacts.put(data).digest
    with store.engine.begin() as conn:
        conn.execute(
            sa.update(schema.artifacts)
            .where(schema.artifacts.c.digest == digest)
            .values(content=None)
        )
    path = store.artifacts.path(digest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return digest


def test_a_row_stored_as_a_file_before_still_reads_verified(store: Store) -> None:
    digest = file_backed(store, SMALL)
    assert store.artifacts.read(digest) == SMALL
    store.artifacts.path(digest).write_bytes(b"tampered order")
    with pytest.raises(ArtifactCorrupt):
        store.artifacts.read(digest)
    store.artifacts.path(digest).unlink()
    with pytest.raises(NotFound):
        store.artifacts.read(digest)


def test_storing_a_file_backed_artefact_again_moves_it_into_its_row(store: Store) -> None:
    digest = file_backed(store, SMALL)
    store.artifacts.put(SMALL)
    store.artifacts.path(digest).unlink()
    assert stored_content(store, digest) == SMALL
    assert store.artifacts.read(digest) == SMALL


def test_missing_and_malformed_digests(store: Store) -> None:
    with pytest.raises(NotFound):
        store.artifacts.read("0" * 64)
    with pytest.raises(NotFound):
        store.artifacts.read("../../etc/passwd")
