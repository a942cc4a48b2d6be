"""A scope's retention is an operator setting kept in the store, on both backends: an archive
honours it (the longest period that speaks for a run wins), an operator may set or lengthen
it, only an admin shortens or removes it; the CLI and the API set and list it."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.errors import UsageError
from openseal.runtime import service
from openseal.runtime.access import Forbidden, Grant
from openseal.runtime.lifecycle.archive import ArchiveRequest, archive
from openseal.runtime.lifecycle.retention import DAY, Retention
from openseal.runtime.store import NotFound, Store
from tests.api.support import assert_error, operated, serving
from tests.cli.support import Cli, cli  # noqa: F401  (fixtures)
from tests.runtime.lifecycle.test_archive import NOW_ONLY, later
from tests.runtime.support import deploy, new_run

OPERATOR = service.Caller("user:olga", False, Grant.of(["operator"], ["default"]))
ADMIN = service.Caller("user:ada", False, Grant.of(["admin"], ["*"]))
ELSEWHERE = service.Caller("user:eve", False, Grant.of(["operator"], ["sales"]))


def ended(store: Store) -> str:
    run = new_run(store)
    service.cancel_run(store, service.RunCommand(run.id, reason="ended"), service.CLI)
    return run.id


def test_an_archive_keeps_a_scopes_runs_as_long_as_its_stored_setting_says(
    store: Store, tmp_path: Path
) -> None:
    deploy(store)
    run = ended(store)
    set_to = service.set_scope_retention(store, "default", "20d", OPERATOR)
    assert (set_to.keep_ended_runs, set_to.seconds, set_to.updated_by) == (
        "20d", 20 * DAY, "user:olga",
    )  # fmt: skip
    to = tmp_path / "archive"
    later(store, 11)
    assert archive(store, ArchiveRequest(to=to, retention=NOW_ONLY, dry_run=True)).runs == 0
    assert archive(store, ArchiveRequest(to=to, retention=NOW_ONLY)).runs == 0
    # an option naming the scope does not shorten what the store says: the longer wins
    shorter = Retention(keep_ended_runs=0.0, scopes={"default": 5 * DAY})
    assert archive(store, ArchiveRequest(to=to, retention=shorter)).runs == 0
    later(store, 21)
    longer = Retention(keep_ended_runs=0.0, scopes={"default": 30 * DAY})
    assert archive(store, ArchiveRequest(to=to, retention=longer)).runs == 0
    assert archive(store, ArchiveRequest(to=to, retention=NOW_ONLY)).runs == 1
    with pytest.raises(NotFound):
        store.runs.get(run)


def test_only_an_admin_shortens_or_removes_a_scopes_retention(store: Store) -> None:
    assert service.set_scope_retention(store, "default", "30d", OPERATOR).seconds == 30 * DAY
    assert service.set_scope_retention(store, "default", "1w5w", OPERATOR).seconds == 42 * DAY
    for shortening in ("7d", None):
        with pytest.raises(Forbidden, match="needs an admin"):
            service.set_scope_retention(store, "default", shortening, OPERATOR)
    with pytest.raises(NotFound):
        service.set_scope_retention(store, "default", "90d", ELSEWHERE)
    with pytest.raises(UsageError, match="shorter than 1h"):
        service.set_scope_retention(store, "default", "30m", ADMIN)
    with pytest.raises(UsageError, match="expected a period"):
        service.set_scope_retention(store, "default", "forever", ADMIN)
    assert [r.scope for r in service.scope_retentions(store, OPERATOR)] == ["default"]
    assert service.scope_retentions(store, ELSEWHERE) == []
    assert service.set_scope_retention(store, "default", "7d", ADMIN).seconds == 7 * DAY
    removed = service.set_scope_retention(store, "default", None, ADMIN)
    assert (removed.keep_ended_runs, removed.seconds) == (None, None)
    assert service.scope_retentions(store, ADMIN) == []


def test_the_commands_set_and_list_a_scopes_retention(cli: Cli) -> None:  # noqa: F811
    assert cli("db", "upgrade")[0] == 0
    assert cli("scopes", "retention")[1] == "no scope has a retention setting\n"
    code, out, err = cli("scopes", "set-retention", "procurement", "--keep-ended-runs", "400d")
    assert (code, out) == (0, "scope procurement: ended runs stay live 400d\n"), err
    [shown] = cli.json("scopes", "retention")["retention"]  # type: ignore[index]
    assert (shown["scope"], shown["keep_ended_runs"], shown["seconds"]) == (
        "procurement", "400d", 400 * DAY,
    )  # fmt: skip
    code, _out, err = cli("scopes", "set-retention", "procurement")
    assert code == 2 and "exactly one of --keep-ended-runs PERIOD and --none" in err
    code, out, err = cli("scopes", "set-retention", "procurement", "--none")
    assert code == 0 and "no retention setting" in out, err


def test_the_api_sets_and_lists_a_scopes_retention(store: Store, tmp_path: Path) -> None:
    with serving(operated(tmp_path), store) as server, server.client() as client:
        set_to = client.put("/scopes/default/retention", json={"keep_ended_runs": "90d"})
        assert set_to.status_code == 200, set_to.text
        assert set_to.json()["retention"]["seconds"] == 90 * DAY
        listed = client.get("/scopes/retention").json()["retention"]
        assert [(r["scope"], r["keep_ended_runs"]) for r in listed] == [("default", "90d")]
        bad = client.put("/scopes/default/retention", json={"keep_ended_runs": "soon"})
        assert_error(bad, 422, "invalid_request")
        removed = client.put("/scopes/default/retention", json={"keep_ended_runs": None})
        assert removed.json()["retention"]["keep_ended_runs"] is None
