"""SQLite-only behaviour of the embedded default: pragmas and BEGIN IMMEDIATE."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from openseal.runtime.store import SQLiteStore, Store, open_store


def _pragma(store: Store, name: str) -> object:
    with store.engine.connect() as conn:
        return conn.exec_driver_sql(f"PRAGMA {name}").scalar()


def test_default_store_is_sqlite_under_home_with_its_pragmas(tmp_path: Path) -> None:
    store = open_store(home=tmp_path / "home")
    try:
        assert isinstance(store, SQLiteStore)
        assert (tmp_path / "home" / "openseal.db").exists()
        assert _pragma(store, "journal_mode") == "wal"
        assert _pragma(store, "synchronous") == 2  # FULL
        assert _pragma(store, "foreign_keys") == 1
        assert _pragma(store, "busy_timeout") == 10_000
        assert _pragma(store, "temp_store") == 2  # MEMORY: a batch's savepoints journal there
    finally:
        store.close()


def test_synchronous_is_configurable(tmp_path: Path) -> None:
    store = open_store(home=tmp_path, synchronous="NORMAL")
    try:
        assert _pragma(store, "synchronous") == 1
    finally:
        store.close()


def test_foreign_keys_are_enforced(tmp_path: Path) -> None:
    store = open_store(home=tmp_path)
    try:
        with pytest.raises(sa.exc.IntegrityError), store.write() as conn:
            conn.exec_driver_sql(
                "INSERT INTO deployments (name, active_digest, revision) VALUES ('x', 'nope', 1)"
            )
    finally:
        store.close()


def test_write_transactions_take_the_write_lock_at_begin(tmp_path: Path) -> None:
    # With a deferred BEGIN a transaction that has only read holds no write lock, and a
    # second writer would get in; BEGIN IMMEDIATE makes the second writer wait (and here,
    # with a tiny busy timeout, fail).
    first = open_store(home=tmp_path)
    second = open_store(home=tmp_path, busy_timeout_ms=50)
    try:
        with first.write() as conn:
            conn.exec_driver_sql("SELECT count(*) FROM runs").scalar()
            with pytest.raises(sa.exc.OperationalError, match="locked"), second.write():
                pass
            with second.read() as reader:
                assert reader.exec_driver_sql("SELECT count(*) FROM runs").scalar() == 0
    finally:
        first.close()
        second.close()


def test_sqlite_url_selects_a_file(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/sub/x.db", home=tmp_path)
    try:
        assert (tmp_path / "sub" / "x.db").exists()
    finally:
        store.close()
