"""Handles: eight base32 characters a person can type for any id, accepted wherever an id is
(docs/decisions/0019-handles.md). The store lookups run on both backends."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from openseal.runtime import service
from openseal.runtime.clock import new_id
from openseal.runtime.id_prefix import (
    HANDLE_ALPHABET,
    AmbiguousId,
    choose_id,
    handle,
    handle_suffix,
    matching,
)
from openseal.runtime.service import governance as gov
from openseal.runtime.store import Store
from tests.runtime.engine_support import register
from tests.runtime.governance_support import WORKFLOW, compile_set

ID = "01a24f1973f253bef751d1286c90d720"


def test_a_handle_is_the_ids_last_forty_bits_in_crockford_base32() -> None:
    assert handle(ID) == "51p91ns0"
    assert handle_suffix("51p91ns0") == ID[-10:]
    # typed as people type: any case, look-alikes read as Crockford's base32 reads them
    assert handle_suffix("51P91NS0") == ID[-10:]
    assert handle_suffix("5Ip9lnsO") == ID[-10:]
    for wrong in ("51p91ns", "51p91ns00", "51p91nsu", "", "01a24f19-"):
        assert handle_suffix(wrong) is None


def test_ids_made_in_one_burst_have_distinct_handles() -> None:
    # one process adds one to the random part within a millisecond: the low bits tell apart
    ids = [new_id() for _ in range(5_000)]
    handles = {handle(i) for i in ids}
    assert len(handles) == len(ids)
    assert all(len(h) == 8 and set(h) <= set(HANDLE_ALPHABET) for h in handles)
    assert all(handle_suffix(handle(i)) == i[-10:] for i in ids[:100])


def test_a_reference_matching_two_ids_is_ambiguous() -> None:
    other = "01a24f1a00000000000000" + ID[-10:]  # another id with the same handle
    found = matching([ID, other, "01a24f19" + "0" * 24], "51p91ns0")
    assert found == [ID, other]
    with pytest.raises(AmbiguousId, match="51p91ns0"):
        choose_id("run", "51p91ns0", found)
    # an all-hex handle is also a prefix: both ways are looked at
    assert matching([ID], "01a24f19") == [ID]


def start(store: Store, n: int) -> list[str]:
    request = service.StartObjective(WORKFLOW, {"question": "why"})
    runs = [service.create_objective(store, request, service.CLI).run for _ in range(n)]
    return [run.id for run in runs if run is not None]


def test_every_kind_resolves_its_handle_in_the_store(store: Store, tmp_path: Path) -> None:
    register(store, list(compile_set(tmp_path / "v1").values()))
    runs = start(store, 5)
    for run_id in runs:
        assert service.complete_id(store, "run", handle(run_id)) == run_id
        assert service.complete_id(store, "run", handle(run_id).upper()) == run_id
        assert service.show_run(store, service.complete_id(store, "run", handle(run_id)))
    objective = store.runs.get(runs[0]).objective_id
    assert service.complete_id(store, "objective", handle(objective)) == objective
    # the prefix the docs used to show is ambiguous among runs made together; a handle is not
    with pytest.raises(AmbiguousId):
        service.complete_id(store, "run", runs[0][:8])
    # neither a handle nor a prefix of anything: left for the caller's own lookup to refuse
    assert service.complete_id(store, "run", "zzzzzzzz") == "zzzzzzzz"
    token = service.tokens.create_token(
        store, service.NewToken("user:vera", ("viewer",), ("default",)), service.CLI
    ).token
    assert service.complete_id(store, "token", handle(token.id)) == token.id


def test_a_change_proposal_is_found_by_its_handle(store: Store, tmp_path: Path) -> None:
    result = gov.deploy(store, gov.Deployment(compile_set(tmp_path / "v1"), None), service.CLI)
    assert result.proposal is not None
    found = gov.get_proposal(store, handle(result.proposal.id))
    assert found.id == result.proposal.id


def test_completion_offers_handles(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openseal.cli.runtime import complete_ids

    if store.engine.dialect.name != "sqlite":
        pytest.skip("completion reads the embedded store under --home")
    register(store, list(compile_set(tmp_path / "v1").values()))
    runs = start(store, 3)
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    context = click.Context(click.Command("show"))
    context.params = {"home": str(Path(str(store.engine.url.database)).parent)}
    offered = complete_ids("run")(context, click.Argument(["run_id"]), "")
    assert set(offered) == {handle(r) for r in runs}
    first = handle(runs[0])
    assert complete_ids("run")(context, click.Argument(["run_id"]), first[:3]) == [
        h for h in (handle(r) for r in reversed(runs)) if h.startswith(first[:3])
    ]
    assert runs[0] in complete_ids("run")(context, click.Argument(["run_id"]), runs[0][:20])
