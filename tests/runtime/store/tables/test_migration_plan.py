"""What each migration declares, ``openseal db upgrade --plan``, and migrations that leave
writers running on PostgreSQL."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory

from openseal.cli.main import main
from openseal.errors import StoreError
from openseal.runtime.store import plan_upgrade
from openseal.runtime.store.tables import migrations
from openseal.runtime.store.tables.migrations import plan
from tests.runtime.support import Backend, eventually


def test_every_migration_declares_what_it_does_and_what_it_locks() -> None:
    scripts = list(ScriptDirectory.from_config(migrations._config()).walk_revisions())
    assert len(scripts) == len(plan.every_migration())
    for script in scripts:
        declared = plan.declared(script)  # raises, naming the file, when it is missing
        assert declared.locks in plan.LOCK_LEVELS
        assert len(declared.summary) <= 100, script.path


def test_a_missing_declaration_is_named(tmp_path: Path) -> None:
    class Script:
        module = type("module", (), {"SUMMARY": "add a thing"})
        path = "0099_thing.py"
        revision = "0099"

    with pytest.raises(ValueError, match=r"0099_thing\.py: LOCKS must be one of none, brief"):
        plan.declared(Script())  # type: ignore[arg-type]


def _engine(backend: Backend) -> sa.Engine:
    if backend.url is None:
        from openseal.runtime.store.db.dialects import sqlite_engine

        backend.home.mkdir(parents=True, exist_ok=True)
        return sqlite_engine(backend.home / "openseal.db", synchronous="NORMAL",
                             busy_timeout_ms=10_000)  # fmt: skip
    options = {"options": f"-csearch_path={backend.pg_schema}"}
    return sa.create_engine(backend.url, connect_args=options)


def _url(backend: Backend) -> str | None:
    if backend.url is None:
        return None
    return f"{backend.url}?options={quote(f'-csearch_path={backend.pg_schema}')}"


def test_the_plan_lists_the_migrations_a_database_misses_and_changes_nothing(
    backend: Backend,
) -> None:
    engine = _engine(backend)
    try:
        migrations.upgrade(engine, "0012")
        found = plan_upgrade(_url(backend), home=backend.home)
        assert found.current == "0012"
        assert found.head == migrations.head_revision()
        assert [m.revision for m in found.pending][:2] == ["0013", "0014"]
        assert found.pending[-1].revision == found.head
        assert {m.revision: m.locks for m in found.pending}["0013"] == "writes"
        assert {m.revision: m.locks for m in found.pending}["0014"] == "none"
        assert migrations.current_revision(engine) == "0012"  # nothing applied
        migrations.upgrade(engine)
        assert plan_upgrade(_url(backend), home=backend.home).pending == ()
    finally:
        engine.dispose()


def test_a_plan_for_no_store_yet_lists_every_migration_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    found = plan_upgrade(home=tmp_path / "home")
    assert found.current is None
    assert [m.revision for m in found.pending] == sorted(migrations.known_revisions())
    assert not (tmp_path / "home").exists()


def test_a_plan_for_a_newer_database_is_refused(backend: Backend) -> None:
    store = backend.open()
    with store.write() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999_later'"))
    with pytest.raises(StoreError) as raised:
        plan_upgrade(_url(backend), home=backend.home)
    assert raised.value.code == "schema_newer"


def test_the_cli_plan_in_text_and_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    home = tmp_path / "home"
    engine = _engine(Backend("sqlite", None, home, None))
    try:
        migrations.upgrade(engine, "0013")
    finally:
        engine.dispose()
    assert main(["db", "upgrade", "--plan", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert "database at 0013; `openseal db upgrade` applies" in out
    assert "  0014  none    index the status of child runs" in out
    assert "locks none: writers go on" in out
    assert main(["db", "upgrade", "--plan", "--home", str(home), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["current"] == "0013"
    assert data["pending"][0] == {
        "revision": "0014",
        "summary": plan.every_migration()[13].summary,
        "locks": "none",
    }


def test_building_the_child_runs_index_leaves_writers_running_on_postgresql(
    backend: Backend,
) -> None:
    """A writer's transaction is open on ``runs`` when the migration starts: the index build
    waits for it to end. A plain ``CREATE INDEX`` would queue its table lock, and every later
    writer on ``runs`` would queue behind it; built concurrently, a later writer goes on."""
    if backend.url is None:
        pytest.skip("SQLite has one writer at a time: there is no concurrent build")
    engine = _engine(backend)
    write = sa.text("UPDATE runs SET status = status WHERE id = 'none'")
    try:
        migrations.upgrade(engine, "0013")
        with engine.connect() as early:
            early.execute(write)  # holds the lock every writer of runs takes, until it ends
            upgraded = threading.Thread(target=migrations.upgrade, args=(engine,))
            upgraded.start()
            eventually(lambda: _index_build_waiting(engine), timeout=120)
            later_done = threading.Event()

            def later_writer() -> None:
                with engine.begin() as later:
                    later.execute(write)
                later_done.set()

            threading.Thread(target=later_writer, daemon=True).start()
            eventually(later_done.is_set, timeout=120)  # not blocked by the build
            early.commit()
        upgraded.join(timeout=300)
        assert not upgraded.is_alive()
        assert migrations.current_revision(engine) == migrations.head_revision()
        with engine.connect() as conn:
            valid = conn.execute(sa.text(
                "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relname = 'ix_runs_children' "
                "AND c.relnamespace = current_schema()::regnamespace"
            )).scalar_one()  # fmt: skip
        assert valid is True
    finally:
        engine.dispose()


def _index_build_waiting(engine: sa.Engine) -> bool:
    with engine.connect() as conn:
        return bool(conn.execute(sa.text(
            "SELECT 1 FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX%ix_runs_children%' "
            "AND wait_event_type = 'Lock' AND datname = current_database()"
        )).first())  # fmt: skip


def test_a_process_stays_ready_when_a_newer_openseal_migrates_under_it(backend: Backend) -> None:
    """A rolling upgrade migrates while the older processes still serve: they stay ready on
    the newer schema (a newly started one refuses it: ``schema_newer``), and are not ready on
    an older one."""
    store = backend.open()
    assert store.health.readiness().ok
    with store.write() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999_later'"))
    assert store.health.readiness().ok
    with store.write() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0013'"))
    ready = store.health.readiness()
    assert not ready.ok
    assert ready.checks["migrations"] == f"at 0013, need {migrations.head_revision()}"


def test_the_connection_that_built_an_index_concurrently_is_not_pooled(backend: Backend) -> None:
    """Alembic's autocommit block leaves the driver's connection out of autocommit, the mode
    every store connection on PostgreSQL keeps (it sends its own BEGIN): the migrating
    connection is closed rather than handed to a later transaction."""
    if backend.url is None:
        pytest.skip("SQLite builds the index in the migration's transaction")
    from openseal.runtime.store.db.dialects import create_engine

    url = _url(backend)
    engine = create_engine(url, home=backend.home, synchronous="NORMAL", busy_timeout_ms=1000)
    try:
        migrations.upgrade(engine, "0013")
        migrations.upgrade(engine)
        with engine.connect() as conn:
            assert conn.connection.dbapi_connection.autocommit  # type: ignore[union-attr]
    finally:
        engine.dispose()


#: statements that hold up writers of a table that exists already, and the lock level that
#: must be declared for each (PostgreSQL)
_HOLDS_WRITERS = [
    (re.compile(r"^CREATE (?:UNIQUE )?INDEX (?!CONCURRENTLY)(?:IF NOT EXISTS )?\S+ ON (\S+)"),
     "writes"),
    (re.compile(r"^(?:UPDATE|DELETE FROM) (\S+)(?!.*SKIP LOCKED)", re.DOTALL), "writes"),
    (re.compile(r"^DROP TABLE (\S+)"), "writes"),
    (re.compile(r"^ALTER TABLE (\S+)"), "brief"),
]  # fmt: skip
_ORDER = {level: i for i, level in enumerate(plan.LOCK_LEVELS)}


def test_what_each_migration_declares_it_locks_covers_what_it_runs(backend: Backend) -> None:
    """Each migration is run on PostgreSQL with its statements recorded: one that builds an
    index in its transaction, updates or drops a table that existed before it declares
    ``writes``; one that alters such a table at least ``brief``."""
    if backend.url is None:
        pytest.skip("the declarations are about PostgreSQL")
    engine = _engine(backend)
    sent: list[str] = []
    sa.event.listen(engine, "before_cursor_execute", lambda *a: sent.append(a[2]))
    try:
        for migration in plan.every_migration():
            with engine.connect() as conn:
                existing = set(sa.inspect(conn).get_table_names()) - {"alembic_version"}
            sent.clear()
            migrations.upgrade(engine, migration.revision)
            for sql in sent:
                statement = " ".join(sql.split())
                for pattern, needed in _HOLDS_WRITERS:
                    found = pattern.match(statement.upper())
                    if found and found[1].strip('"').lower() in existing:
                        assert _ORDER[migration.locks] >= _ORDER[needed], (
                            f"{migration.revision} declares {migration.locks!r} but runs: "
                            f"{statement[:120]}"
                        )
    finally:
        engine.dispose()
