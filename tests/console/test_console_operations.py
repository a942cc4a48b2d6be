"""Change proposals and actions needing attention in the console, in headless Chromium against
a real ``openseal serve``: the semantic diff with risk-widening lines marked, a review given
and a refusal shown; an order whose outcome is unknown reconciled from the page."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from openseal.cli.output import handle
from openseal.quickstart import compile_definitions
from tests.console.support import ALICE, BOB, DEFINITIONS, Console, sign_in

#: a real browser against a served console: run with `make test-slow`
pytestmark = pytest.mark.slow


def file_widening_proposal(console: Console, tmp_path: Path) -> str:
    """Raise the buyer's order limit (a risk-widening change) and file it as alice."""
    shutil.copytree(DEFINITIONS.parent, tmp_path / "procurement")  # prompts/ come along
    subprocess.run(["git", "init", "-q", str(tmp_path / "procurement")], check=True)
    copy = tmp_path / "procurement" / "hcl"
    team = copy / "team.hcl"
    team.write_text(
        team.read_text(encoding="utf-8").replace("args.total <= 20000", "args.total <= 90000"),
        encoding="utf-8",
    )
    documents = [d.document for d in compile_definitions(copy)]
    with console.client(ALICE) as alice:
        filed = alice.post("/proposals", json={"documents": documents, "message": "bigger orders"})
        assert filed.status_code == 201, filed.text
        return str(filed.json()["proposal"]["id"])


def test_a_change_proposal_shows_what_widens_and_takes_reviews(
    console: Console, page: Page, tmp_path: Path
) -> None:
    proposal_id = file_widening_proposal(console, tmp_path)
    sign_in(page, console, BOB, "#/proposals")
    page.get_by_role("link", name=handle(proposal_id)).click()
    widening = page.locator('#diff li[data-widening="true"]')
    expect(widening.first).to_contain_text("widens risk")
    expect(widening.first).to_contain_text("buyer_submits_orders")
    expect(page.get_by_text("No reviews yet.")).to_be_visible()
    page.get_by_label("Comment").fill("the limit is agreed with finance")
    page.get_by_role("button", name="Review: approve").click()
    expect(page.locator("#proposal-message")).to_contain_text("done")
    expect(page.get_by_text("user:bob: approve")).to_be_visible()
    # The author may neither review her own proposal nor approve it (it widens risk): the page
    # offers neither button and says why; rejecting it stays hers to do.
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, console, ALICE, f"#/proposals/{proposal_id}")
    expect(page.locator("#proposal-withheld")).to_contain_text("another person reviews it")
    expect(page.locator("#proposal-withheld")).to_contain_text("its author may reject it")
    expect(page.get_by_role("button", name="Review: approve")).to_have_count(0)
    expect(page.get_by_role("button", name="Decide: approve")).to_have_count(0)
    expect(page.get_by_role("button", name="Decide: reject")).to_have_count(1)


def test_an_order_whose_outcome_is_unknown_is_reconciled_then_resolved_from_the_page(
    console: Console, page: Page
) -> None:
    run_id = console.start_run()
    approval = console.pending_approval(run_id)
    orders = console.simulator.order_count()
    # The procurement service answers 503 to everything: the submission and every lookup.
    console.simulator.set_fault(fail_with_status=503, fail_scope="all")
    try:
        with console.client(ALICE) as alice:
            decided = alice.post(
                f"/approvals/{approval['id']}/decision",
                json={"decision": "approve", "hash": approval["proposal_hash"], "reason": "ok"},
            )
            assert decided.status_code == 200, decided.text
        action = console.wait_for_action(run_id, {"unknown"})
        sign_in(page, console, BOB, "#/actions")
        card = page.locator(f'#attention li[data-action="{action["id"]}"]')
        expect(card).to_contain_text("unknown")
        expect(page.get_by_text("nothing new is sent")).to_be_visible()
        card.get_by_role("button", name="Reconcile").click()
        expect(page.locator("#actions-message")).to_contain_text(f"{action['key']}: unknown")
        card = page.locator(f'#attention li[data-action="{action["id"]}"]')
        card.get_by_label("Outcome").select_option("failed")
        card.get_by_label("Evidence you checked").fill("no order with this key at the vendor")
        card.get_by_role("button", name="Resolve").click()
        expect(page.locator(f'#attention li[data-action="{action["id"]}"]')).to_have_count(0)
        settled = console.wait_for_action(run_id, {"failed"})
        assert settled["resolution"]["evidence"] == "no order with this key at the vendor"
        assert console.simulator.order_count() == orders  # nothing was sent again
    finally:
        console.simulator.set_fault(reset=True)
