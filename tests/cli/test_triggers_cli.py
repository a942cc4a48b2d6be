"""``openseal triggers`` on SQLite and PostgreSQL, in-process through ``main``."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runtime.store import Store
from tests.cli.support import Cli
from tests.runtime.support import Backend
from tests.runtime.trigger_support import EVENT_TRIGGER, deploy_triggers, schedule, trigger_project


@pytest.fixture
def store(cli: Cli, backend: Backend, tmp_path: Path) -> Store:
    assert cli("db", "upgrade")[0] == 0
    opened = backend.open()
    deploy_triggers(opened, trigger_project(tmp_path, schedule() + EVENT_TRIGGER))
    return opened


def test_list_shows_status_next_occurrence_and_last_firing(cli: Cli, store: Store) -> None:
    listed = cli.json("triggers", "list")
    assert isinstance(listed, dict)
    by_name = {t["name"]: t for t in listed["triggers"]}
    assert set(by_name) == {"hourly", "restock"}
    assert by_name["hourly"]["fires_on"] == "every 3600s"
    assert by_name["hourly"]["next_occurrence"] is not None
    assert by_name["restock"]["fires_on"] == "event stock.low"
    assert by_name["restock"]["next_occurrence"] is None
    assert by_name["restock"]["last_firing"] is None
    code, out, _ = cli("triggers", "list")
    header, hourly, _restock = (line.split() for line in out.splitlines())
    assert code == 0 and header == ["NAME", "STATUS", "FIRES_ON", "WORKFLOW", "NEXT", "LAST"]
    assert hourly[:5] == ["hourly", "active", "every", "3600s", "small"]


def test_pause_resume_retire(cli: Cli, store: Store) -> None:
    code, out, _ = cli("triggers", "pause", "hourly", "--reason", "maintenance")
    assert (code, out) == (0, "trigger hourly is paused; next -\n")
    assert cli.json("triggers", "show", "hourly")["trigger"]["status"] == "paused"  # type: ignore[index]
    assert cli("triggers", "resume", "hourly")[0] == 0
    assert cli("triggers", "retire", "hourly")[0] == 0
    code, _, err = cli("triggers", "resume", "hourly")
    assert code == 1 and "retired" in err
    code, _, err = cli("triggers", "pause", "nightly")
    assert code == 1 and "no trigger 'nightly' is deployed" in err
