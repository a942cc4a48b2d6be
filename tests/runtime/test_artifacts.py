from __future__ import annotations

import os
import threading

import pytest
import sqlalchemy as sa

from openseal.runtime.store import Store, schema
from openseal.runtime.store.artifacts import sha256_hex
from openseal.runtime.store.errors import ArtifactCorrupt, NotFound


def files(store: Store) -> None:
    if store.artifacts.in_database:
        pytest.skip("artefacts are files only on SQLite")


def test_put_and_read_round_trip(store: Store) -> None:
    data = b'{"po": "PO-1"}'
    info = store.artifacts.put(data, "application/json")
    assert info.digest == sha256_hex(data)
    assert info.size == len(data)
    assert store.artifacts.read(info.digest) == data
    assert store.artifacts.info(info.digest).media_type == "application/json"
    path = store.artifacts.path(info.digest)
    assert path.parent.name == info.digest[:2] and path.name == info.digest[2:]
    # SQLite keeps files; PostgreSQL keeps the bytes in the store, on no host's disk.
    assert path.exists() is (store.dialect == "sqlite")
    assert store.artifacts.in_database is (store.dialect == "postgresql")


def test_files_are_create_only(store: Store) -> None:
    files(store)
    data = b"order"
    first = store.artifacts.put(data)
    path = store.artifacts.path(first.digest)
    inode = path.stat().st_ino
    again = store.artifacts.put(data)
    assert again == first
    assert path.stat().st_ino == inode  # not rewritten
    assert not os.access(path, os.W_OK) or os.geteuid() == 0
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]


def test_concurrent_writers_of_the_same_content_do_not_clobber(store: Store) -> None:
    data = os.urandom(1 << 16)
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
    """Change an artefact's stored bytes behind the store's back."""
    if store.artifacts.in_database:
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


def test_corruption_is_detected_on_read(store: Store) -> None:
    info = store.artifacts.put(b"exact order")
    corrupt(store, info.digest, b"tampered order")
    with pytest.raises(ArtifactCorrupt) as raised:
        store.artifacts.read(info.digest)
    assert raised.value.code == "artifact_corrupt"
    with pytest.raises(ArtifactCorrupt):
        store.artifacts.put(b"exact order")  # a rewrite must not paper over corruption


def test_missing_and_malformed_digests(store: Store) -> None:
    with pytest.raises(NotFound):
        store.artifacts.read("0" * 64)
    with pytest.raises(NotFound):
        store.artifacts.read("../../etc/passwd")
