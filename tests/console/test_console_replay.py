"""A change proposal replayed against recorded runs from its page, in headless Chromium
against a real ``openseal serve``: the summary first, the group by first differing state with
its reason, and each run's verdict linking to the run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from openseal.quickstart import compile_definitions
from tests.console.support import ALICE, BOB, DEFINITIONS, Console, sign_in

#: a real browser against a served console: run with `make test-slow`
pytestmark = pytest.mark.slow


def file_tighter_proposal(console: Console, tmp_path: Path) -> str:
    """Lower the buyer's order limit to 10000 EUR and file it as alice."""
    shutil.copytree(DEFINITIONS.parent, tmp_path / "procurement")  # prompts/ come along
    subprocess.run(["git", "init", "-q", str(tmp_path / "procurement")], check=True)
    team = tmp_path / "procurement" / "hcl" / "team.hcl"
    text = team.read_text(encoding="utf-8")
    team.write_text(text.replace("args.total <= 20000", "args.total <= 10000"), encoding="utf-8")
    documents = [d.document for d in compile_definitions(team.parent)]
    with console.client(ALICE) as alice:
        filed = alice.post("/proposals", json={"documents": documents, "message": "smaller orders"})
        assert filed.status_code == 201, filed.text
        return str(filed.json()["proposal"]["id"])


def test_a_proposal_is_replayed_against_recorded_runs_from_its_page(
    console: Console, page: Page, tmp_path: Path
) -> None:
    ordered = console.start_run()  # ten laptops, 11490 EUR: approved and ordered
    approval = console.pending_approval(ordered)
    with console.client(ALICE) as alice:
        decided = alice.post(
            f"/approvals/{approval['id']}/decision",
            json={"decision": "approve", "hash": approval["proposal_hash"]},
        )
        assert decided.status_code == 200, decided.text
    console.wait_status(ordered, "completed")
    waiting = console.start_run()  # left waiting for its approval
    proposal_id = file_tighter_proposal(console, tmp_path)

    sign_in(page, console, BOB, f"#/proposals/{proposal_id}")
    page.get_by_label("Which runs").select_option("runs=100")
    page.get_by_role("button", name="Replay").click()
    expect(page.locator("#replay-summary")).to_have_text(
        "2 run(s) replayed: 1 same, 1 diverge, 0 need new input."
    )
    group = page.locator('#replay-groups > li[data-verdict="diverges"][data-state="submit"]')
    expect(group).to_contain_text("diverges at submit: 1 run(s)")
    expect(group).to_contain_text("binding buyer_submits_orders: constraint 1 does not hold")
    rows = page.locator("#replay-runs tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator('#replay-runs tr[data-verdict="diverges"]')).to_contain_text(ordered)
    expect(page.locator('#replay-runs tr[data-verdict="same"]')).to_contain_text(waiting)
    page.get_by_role("button", name="Show the move plan").click()
    expect(page.locator("#move-plan")).to_have_text(
        "This change carries no migration: waiting runs stay on their versions."
    )
    page.get_by_role("link", name=ordered).click()
    expect(page).to_have_url(f"{console.url}/#/runs/{ordered}")


def file_migrating_proposal(console: Console, tmp_path: Path) -> str:
    """The order limit lowered to 10000 EUR, with a ``migrate`` block taking the runs waiting
    for approval on the active version along; filed as alice."""
    active = {d.name: d.digest for d in compile_definitions(DEFINITIONS)}["procure_laptops"]
    shutil.copytree(DEFINITIONS.parent, tmp_path / "migrating")
    subprocess.run(["git", "init", "-q", str(tmp_path / "migrating")], check=True)
    folder = tmp_path / "migrating" / "hcl"
    team = folder / "team.hcl"
    team.write_text(
        team.read_text("utf-8").replace("args.total <= 20000", "args.total <= 10000"), "utf-8"
    )
    workflow = folder / "workflow.hcl"
    block = (
        f'  migrate {{\n    version = "{active.removeprefix("sha256:")[:12]}"\n'
        '    state "review" {\n      to = state.review\n    }\n    leave = ["submit"]\n  }\n\n'
        '  state "done" {'
    )
    workflow.write_text(workflow.read_text("utf-8").replace('  state "done" {', block), "utf-8")
    documents = [d.document for d in compile_definitions(folder)]
    with console.client(ALICE) as alice:
        filed = alice.post("/proposals", json={"documents": documents, "message": "re-ask"})
        assert filed.status_code == 201, filed.text
        return str(filed.json()["proposal"]["id"])


def test_a_migrating_proposal_shows_its_move_plan(
    console: Console, page: Page, tmp_path: Path
) -> None:
    """The waiting run's approval is asked again under the lower limit: the page's dry run
    and its replay both say so, and the section has no serious accessibility violation."""
    from axe_playwright_python.sync_playwright import Axe

    from tests.console.test_console import serious

    waiting = console.start_run()  # 11490 EUR, waiting for its approval
    proposal_id = file_migrating_proposal(console, tmp_path)

    sign_in(page, console, BOB, f"#/proposals/{proposal_id}")
    page.get_by_role("button", name="Show the move plan").click()
    row = page.locator(f'#move-plan-runs tr[data-run="{waiting}"]')
    expect(row).to_have_attribute("data-outcome", "would_move")
    expect(row).to_contain_text(":review")
    expect(row).to_contain_text("asked again")
    page.get_by_label("Which runs").select_option("runs=100")
    page.get_by_role("button", name="Replay").click()
    moved = page.locator(f'#replay-moves tr[data-run="{waiting}"]')
    expect(moved).to_contain_text("would move")
    expect(moved).to_contain_text("asked again")
    assert serious(Axe().run(page)) == []
    with console.client(ALICE) as alice:  # a dry run: the run has not moved
        run = alice.get(f"/runs/{waiting}").json()["run"]
        assert run["status"] == "waiting_for_approval"
