"""Invariant 10 for the whole quickstart flow: the procurement token never persists.

The quickstart runs with a canary as the simulator's bearer token (the simulator refuses any
other, so the order succeeding proves the canary was used on every call). Afterwards every
table (all rows, all columns, the artefacts' bytes among them), every file under the home (the
database, its journal, the context file), every event payload, everything logged and
everything printed is searched for the canary: it must appear nowhere.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import sqlalchemy as sa

from openseal.cli.main import main
from openseal.runtime.store import open_store

pytestmark = pytest.mark.slow

DEFINITIONS = Path(__file__).resolve().parents[3] / "definitions" / "procurement" / "hcl"
CANARY = "canary-5f0c1e9a-must-never-be-stored"


def table_dump(home: Path) -> str:
    """Every row of every table, every column, as text."""
    store = open_store(home=home)
    try:
        metadata = sa.MetaData()
        metadata.reflect(store.engine)
        assert {"runs", "events", "activities", "actions", "proposals"} <= set(metadata.tables)
        lines = []
        with store.engine.connect() as conn:
            for table in metadata.sorted_tables:
                for row in conn.execute(sa.select(table)):
                    lines.append(f"{table.name}: {tuple(str(v) for v in row)}")
            runs = [str(r) for r in conn.execute(sa.text("SELECT id FROM runs")).scalars()]
        payloads = [
            json.dumps(e.payload) for run in runs for e in store.runs.events(run, 0, 100_000)
        ]
    finally:
        store.close()
    assert len(lines) > 50 and payloads  # the flow really stored things
    # the proposal's artefact is in its row (no file on SQLite), so its bytes were searched
    assert any(line.startswith("artifacts: ") and "None" not in line for line in lines)
    return "\n".join(lines + payloads)


def file_bytes(home: Path) -> dict[str, bytes]:
    files = {str(p): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()}
    assert any(name.endswith("openseal.db") for name in files)
    return files


@pytest.mark.parametrize("output", ["text", "json"])
def test_the_token_appears_in_no_table_file_event_log_or_output(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    output: str,
) -> None:
    # the quickstart makes its token with `secrets.token_urlsafe`; make it the canary
    monkeypatch.setattr("openseal.quickstart.secrets.token_urlsafe", lambda _n=None: CANARY)
    caplog.set_level(logging.DEBUG)
    home = tmp_path / "home"

    code = main(
        ["quickstart", "--home", str(home), "--definitions", str(DEFINITIONS), "--output", output]
    )
    printed = capfd.readouterr()

    assert code == 0, printed.err
    assert "PO-000001" in printed.out  # the simulator only answers to the canary
    logged = "\n".join(
        f"{r.name} {r.getMessage()} {r.exc_text or ''} {r.stack_info or ''}" for r in caplog.records
    )
    assert caplog.records  # the worker's logging was captured
    for where, text in {
        "stdout": printed.out,
        "stderr": printed.err,
        "logs": logged,
        "tables and events": table_dump(home),
    }.items():
        assert CANARY not in text, where
    for name, data in file_bytes(home).items():
        assert CANARY.encode() not in data, name
