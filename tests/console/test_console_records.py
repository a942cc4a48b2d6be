"""The console's pages for objectives, triggers, agent requests and deployments, in headless
Chromium against a real ``openseal serve``: an objective created, paused and resumed from its
page, a draft activated, a trigger paused, the deployments and their versions, and the pages'
accessibility."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from openseal.cli.output import handle
from openseal.quickstart import REQUEST, WORKFLOW
from openseal.runtime import service
from openseal.runtime.store import open_store
from tests.console.support import ALICE, BOB, Console, serving, sign_in
from tests.console.test_console import serious
from tests.runtime.trigger_support import deploy_triggers, schedule, trigger_project

#: a real browser against a served console: run with `make test-slow`
pytestmark = pytest.mark.slow


def objective_status(console: Console, objective_id: str) -> str:
    with console.client(ALICE) as alice:
        return str(alice.get(f"/objectives/{objective_id}").json()["objective"]["status"])


def test_an_objective_is_created_paused_and_resumed_from_its_page(
    console: Console, page: Page
) -> None:
    sign_in(page, console, ALICE, "#/objectives")
    page.get_by_label("Workflow").fill(WORKFLOW)
    page.get_by_label("Goal").fill("laptops for the new team")
    page.get_by_label("Priority").fill("5")
    page.get_by_label("Inputs (JSON)").fill(json.dumps(REQUEST))
    page.get_by_role("button", name="Create").click()
    expect(page.locator("h1")).to_contain_text("Objective")
    objective_id = page.locator("h1 code").inner_text()
    expect(page.locator("#objective-runs tbody tr")).to_have_count(1)
    expect(page.get_by_text("laptops for the new team")).to_be_visible()
    page.get_by_label("Reason").fill("waiting for the budget")
    page.get_by_role("button", name="Pause").click()
    expect(page.locator("#objective-status")).to_have_text("paused")
    assert objective_status(console, objective_id) == "paused"
    expect(page.get_by_role("button", name="Pause")).to_have_count(0)  # only what applies
    page.get_by_role("button", name="Resume").click()
    expect(page.locator("#objective-status")).to_have_text("active")
    page.goto(f"{console.url}/#/objectives")
    row = page.locator(f'#objectives tr[data-objective="{objective_id}"]')
    expect(row).to_contain_text("laptops for the new team")
    expect(row).to_contain_text("5")


def test_a_draft_starts_no_run_until_activated_and_bad_inputs_are_refused_visibly(
    console: Console, page: Page
) -> None:
    sign_in(page, console, ALICE, "#/objectives")
    page.get_by_label("Workflow").fill(WORKFLOW)
    page.get_by_label("Inputs (JSON)").fill("{not json")
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#objective-create-message [role=alert]")).to_contain_text("not JSON")
    page.get_by_label("Inputs (JSON)").fill(json.dumps(REQUEST))
    page.locator("#objective-draft").check()
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#objective-status")).to_have_text("draft")
    expect(page.get_by_text("A draft starts no run until it is activated.")).to_be_visible()
    page.get_by_role("button", name="Activate").click()
    expect(page.locator("#objective-status")).to_have_text("active")
    expect(page.locator("#objective-runs tbody tr")).to_have_count(1)


def test_a_trigger_shows_what_fires_it_and_is_paused_from_its_page(
    console: Console, page: Page, tmp_path: Path
) -> None:
    store = open_store(home=console.home)
    try:
        deploy_triggers(store, trigger_project(tmp_path, schedule("hourly")))
    finally:
        store.close()
    sign_in(page, console, BOB, "#/triggers")
    row = page.locator('#triggers tr[data-trigger="hourly"]')
    expect(row).to_contain_text("every")
    row.get_by_role("link", name="hourly").click()
    expect(page.locator("#trigger-status")).to_have_text("active")
    expect(page.get_by_text("It has not fired yet.")).to_be_visible()
    page.get_by_role("button", name="Pause").click()
    expect(page.locator("#trigger-status")).to_have_text("paused")
    with console.client(BOB) as bob:
        assert bob.get("/triggers/hourly").json()["trigger"]["status"] == "paused"
    page.get_by_role("button", name="Resume").click()
    expect(page.locator("#trigger-status")).to_have_text("active")


def test_deployments_list_their_versions_and_requests_say_when_there_are_none(
    console: Console, page: Page
) -> None:
    sign_in(page, console, ALICE, "#/deployments")
    row = page.locator(f'#deployments tr[data-deployment="{WORKFLOW}"]')
    expect(row).to_contain_text("workflow")
    row.get_by_role("link", name=WORKFLOW).click()
    expect(page.locator("#activations tbody tr")).to_have_count(1)
    # one version only: nothing to roll back to
    expect(page.get_by_role("button", name="Propose rollback")).to_have_count(0)
    page.goto(f"{console.url}/#/requests")
    expect(page.locator("#requests-empty")).to_have_text("No agent requests.")


def test_the_record_pages_have_no_serious_accessibility_violations(
    console: Console, page: Page
) -> None:
    axe = Axe()
    sign_in(page, console, ALICE, "#/objectives")
    expect(page.locator("#objective-create")).to_be_visible()
    assert serious(axe.run(page)) == []
    for route, ready in (
        ("#/triggers", "h1"),
        ("#/requests", "#requests-empty"),
        ("#/deployments", "#deployments"),
        (f"#/deployments/{WORKFLOW}", "#activations"),
    ):
        page.goto(f"{console.url}/{route}")
        expect(page.locator(ready)).to_be_visible()
        assert serious(axe.run(page)) == [], route


def test_a_waiting_run_leads_to_its_approval_and_the_inbox_shows_what_it_asks(
    console: Console, page: Page
) -> None:
    run_id = console.start_run()
    approval = console.pending_approval(run_id)
    sign_in(page, console, ALICE, "#/approvals")
    row = page.locator(f'#approvals tr[data-approval="{approval["id"]}"]')
    expect(row).to_contain_text("submit_purchase_order")
    expect(row).to_contain_text("11490")
    expect(row).to_contain_text("vendor=northwind")
    page.goto(f"{console.url}/#/runs/{run_id}")
    expect(page.locator("#run-status")).to_have_text("waiting_for_approval")
    page.locator("#run-approvals").get_by_role("link", name=handle(approval["id"])).click()
    expect(page.locator("#proposal-hash")).to_have_text(approval["proposal_hash"])


def ten_thousand_runs(home: Path) -> None:
    store = open_store(home=home)
    try:
        for _ in range(10_000):
            service.create_objective(store, service.StartObjective(WORKFLOW, REQUEST), service.CLI)
    finally:
        store.close()


def test_ten_thousand_runs_are_paged_found_by_id_and_a_refresh_keeps_the_position(
    page: Page, tmp_path: Path
) -> None:
    with serving(tmp_path / "home", workers=0, before=ten_thousand_runs) as console:
        with console.client(ALICE) as alice:
            oldest = alice.get("/runs", params={"limit": 1000}).json()["runs"][-1]["id"]
        sign_in(page, console, ALICE, "#/runs")
        rows = page.locator("#runs tbody tr")
        expect(rows).to_have_count(100)
        page.get_by_role("button", name="Show more").click()
        expect(rows).to_have_count(200)
        page.get_by_role("button", name="Show more").click()
        expect(rows).to_have_count(300)
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        scrolled = page.evaluate("window.scrollY")
        page.evaluate("window.dispatchEvent(new Event('focus'))")  # refreshes now
        expect(page.locator("#runs + p, p[aria-live]").first).to_contain_text("300 run(s)")
        expect(rows).to_have_count(300)
        assert page.evaluate("window.scrollY") == scrolled
        page.get_by_label("Find").fill(oldest)
        page.get_by_label("Find").press("Enter")
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_attribute("data-run", oldest)
        page.get_by_label("Find").fill(oldest[:10])  # ten thousand runs made in seconds share it
        page.get_by_label("Find").press("Enter")
        expect(page.locator("#runs-message [role=alert]")).to_contain_text("ambiguous")
        page.get_by_label("Find").fill("")
        page.get_by_label("Find").press("Enter")
        page.get_by_label("Status").select_option("completed")
        expect(page.get_by_text("0 run(s)")).to_be_visible()
