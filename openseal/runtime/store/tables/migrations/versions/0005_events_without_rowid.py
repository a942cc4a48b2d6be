"""Run events stored in their primary key order (SQLite ``WITHOUT ROWID``).

An event is only ever looked up by ``(run_id, seq)``. As an ordinary SQLite table it was
stored twice — the rows by rowid, plus a separate index on the key — which cost a waiting run
about 180 bytes. A ``WITHOUT ROWID`` table keeps the rows in the key's B-tree only. SQLite
cannot change this in place, so the table is rebuilt; PostgreSQL has no such option and is
unchanged.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 18:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

SUMMARY = "SQLite: rebuild events as a WITHOUT ROWID table (PostgreSQL: nothing)"
LOCKS = "none"

COLUMNS = "run_id, seq, type, actor, payload, at"


def _rebuild(rowid: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("ALTER TABLE events RENAME TO events_rebuild")
    op.execute(
        "CREATE TABLE events ("
        " run_id VARCHAR(32) NOT NULL,"
        " seq INTEGER NOT NULL,"
        " type VARCHAR(100) NOT NULL,"
        " actor VARCHAR(200) NOT NULL,"
        " payload JSON NOT NULL,"
        " at FLOAT NOT NULL,"
        " PRIMARY KEY (run_id, seq),"
        " FOREIGN KEY(run_id) REFERENCES runs (id)"
        ")" + ("" if rowid else " WITHOUT ROWID")
    )
    op.execute(f"INSERT INTO events ({COLUMNS}) SELECT {COLUMNS} FROM events_rebuild")
    op.execute("DROP TABLE events_rebuild")


def upgrade() -> None:
    _rebuild(rowid=False)


def downgrade() -> None:
    _rebuild(rowid=True)
