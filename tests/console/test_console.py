"""The web console in headless Chromium against a real ``openseal serve``: the run page with
its current state, approving the exact order from its page until the order is confirmed,
refusals shown on the page, live events, buttons that follow what the caller may do, and the
security headers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from tests.console.support import ALICE, BOB, Console, sign_in, wait_for

#: a real browser against a served console: run with `make test-slow`
pytestmark = pytest.mark.slow


def test_every_page_carries_a_strict_policy_and_the_api_reference_needs_no_internet(
    console: Console, page: Page
) -> None:
    for path in ("/", "/console/static/js/main.js", "/api/v1/docs"):
        response = httpx.get(f"{console.url}{path}", timeout=30)
        assert response.status_code == 200, path
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-eval" not in policy
        assert (
            "frame-ancestors 'none'" in policy
            and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
        )
        assert response.headers["x-content-type-options"] == "nosniff"
    index = httpx.get(f"{console.url}/", timeout=30).text
    assert "<script>" not in index and "http://" not in index and "https://" not in index
    outside: list[str] = []
    page.on(
        "request",
        lambda request: (
            outside.append(request.url) if not request.url.startswith(console.url) else None
        ),
    )
    page.goto(f"{console.url}/api/v1/docs")
    operation = page.locator(".opblock-summary-path", has_text="/api/v1/approvals/{ref}/decision")
    # a hang guard: the server builds the OpenAPI document on its first request (seconds on
    # a loaded machine), and Swagger UI renders seventy paths
    expect(operation.first).to_be_visible(timeout=60_000)
    assert outside == []


def test_the_run_page_draws_the_graph_with_the_current_state_highlighted(
    console: Console, page: Page
) -> None:
    run_id = console.start_run()
    sign_in(page, console, ALICE)
    row = page.locator(f'#runs tr[data-run="{run_id}"]')
    expect(row).to_contain_text("waiting_for_approval")
    expect(row).to_contain_text("procure_laptops")
    expect(row).to_contain_text("approval")
    row.get_by_role("link").click()
    current = page.locator('#graph g.node[aria-current="step"]')
    expect(current).to_have_count(1)
    expect(current).to_have_attribute("data-state", "review")
    expect(current).to_have_class(re.compile(r"\bcurrent\b"))
    expect(page.locator('#graph g.node[data-state="research"]')).to_have_class(
        re.compile(r"\bvisited\b")
    )
    expect(page.locator("#current-state")).to_have_text("review")
    expect(page.locator("#timeline li").first).to_be_visible()


def test_an_order_approved_on_its_page_is_dispatched_once_and_confirmed(
    console: Console, page: Page
) -> None:
    run_id = console.start_run()
    approval = console.pending_approval(run_id)
    orders_before = console.simulator.order_count()
    sign_in(page, console, ALICE, f"#/approvals/{approval['id']}")
    expect(page.locator("#proposal-hash")).to_have_text(approval["proposal_hash"])
    fields = page.locator("#proposal-fields")
    expect(fields.locator('tr[data-field="args.vendor"] td')).to_have_text("northwind")
    expect(fields.locator('tr[data-field="args.total"] td')).to_have_text("11490")
    expect(fields.locator('tr[data-field="actor"] td')).to_contain_text("buyer")
    expect(page.get_by_text("✓ satisfied:").first).to_be_visible()
    page.get_by_label("Reason (required)").fill("the exact order I asked for")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator("#decision-message")).to_contain_text("approve by user:alice")
    page.get_by_role("link", name="Watch the run").click()
    expect(page.locator("#run-status")).to_have_text("completed")
    expect(page.locator("#run-actions")).to_contain_text("succeeded")
    expect(page.locator("#run-actions")).to_contain_text(f"{run_id}:")
    done = console.run(run_id)
    assert done["run"]["status"] == "completed"
    assert console.simulator.order_count() == orders_before + 1


def test_a_decision_on_a_proposal_changed_since_the_page_loaded_is_refused_visibly(
    console: Console, page: Page
) -> None:
    run_id = console.start_run()
    approval = console.pending_approval(run_id)
    sign_in(page, console, ALICE, f"#/approvals/{approval['id']}")
    expect(page.locator("#proposal-hash")).to_have_text(approval["proposal_hash"])
    # The page is shown a hash other than the approval's: what it sends is what it shows.
    page.locator("#proposal-hash").evaluate("(el) => { el.textContent = '0'.repeat(64); }")
    page.get_by_label("Reason (required)").fill("looks right")
    page.get_by_role("button", name="Approve").click()
    alert = page.locator("#decision-message [role=alert]")
    expect(alert).to_contain_text("hash_mismatch")
    expect(alert).to_contain_text("Nothing was approved")
    assert console.pending_approval(run_id)["id"] == approval["id"]
    # Meanwhile somebody else asks for changes: the run drafts a new proposal.
    page.reload()
    sign_in(page, console, ALICE, f"#/approvals/{approval['id']}")
    expect(page.locator("#proposal-hash")).to_have_text(approval["proposal_hash"])
    with console.client(ALICE) as alice:
        changed = alice.post(
            f"/approvals/{approval['id']}/decision",
            json={"decision": "request_changes", "hash": approval["proposal_hash"],
                  "reason": "another vendor please"},
        )  # fmt: skip
        assert changed.status_code == 200, changed.text
    page.get_by_label("Reason (required)").fill("approve the old one")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator("#decision-message [role=alert]")).to_contain_text("already_decided")
    console.wait_status(run_id, "waiting_for_approval")
    assert console.pending_approval(run_id)["id"] != approval["id"]


def test_a_new_event_appears_on_the_open_run_page(console: Console, page: Page) -> None:
    run_id = console.start_run()
    sign_in(page, console, ALICE, f"#/runs/{run_id}")
    timeline = page.locator("#timeline li[data-seq]")
    expect(timeline.first).to_be_visible()
    last = int(wait_for("the timeline", lambda: console.run(run_id)["run"]["last_event_seq"]))
    expect(page.locator(f'#timeline li[data-seq="{last}"]')).to_be_visible()
    page.get_by_label("Reason (optional)").fill("lunch")
    page.get_by_role("button", name="Pause").click()
    expect(page.locator(f'#timeline li[data-seq="{last + 1}"]')).to_contain_text("paused")
    expect(page.locator("#run-status")).to_have_text("paused")
    # Resumed elsewhere: the page hears of it through the stream alone.
    with console.client(BOB) as bob:
        resumed = bob.post(f"/runs/{run_id}/resume", json={"reason": "back"})
        assert resumed.status_code == 200, resumed.text
    expect(page.locator(f'#timeline li[data-seq="{last + 2}"]')).to_be_visible()
    expect(page.locator("#run-status")).to_have_text("waiting_for_approval")


def test_a_stale_revision_is_refused_on_the_run_page(console: Console, page: Page) -> None:
    run_id = console.start_run()
    page.route("**/events/stream*", lambda route: route.abort())  # the page stays as it was
    sign_in(page, console, BOB, f"#/runs/{run_id}")
    expect(page.locator("#revision")).to_be_visible()
    shown = int(page.locator("#revision").inner_text())
    with console.client(BOB) as bob:
        bob.post(f"/runs/{run_id}/pause", json={"reason": "elsewhere"})
        bob.post(f"/runs/{run_id}/resume", json={"reason": "elsewhere"})
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#command-message [role=alert]")).to_contain_text(f"revision {shown}")
    assert console.run(run_id)["run"]["status"] == "waiting_for_approval"


def test_someone_not_among_the_approvers_gets_no_approve_button_and_a_forged_request_fails(
    console: Console, page: Page
) -> None:
    run_id = console.start_run()
    approval = console.pending_approval(run_id)
    sign_in(page, console, BOB, f"#/approvals/{approval['id']}")
    expect(page.locator("#proposal-hash")).to_have_text(approval["proposal_hash"])
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    # bob's token may approve (the authority's tokens grant the role), not this approval
    expect(
        page.get_by_text("You (user:bob) are not among this approval's approvers.")
    ).to_be_visible()
    forged = page.evaluate(
        """async ([id, hash, token]) => {
            const r = await fetch(`/api/v1/approvals/${id}/decision`, {method: "POST",
              headers: {"Content-Type": "application/json", Authorization: `Bearer ${token}`},
              body: JSON.stringify({decision: "approve", hash, reason: "forged"})});
            return [r.status, (await r.json()).error.code];
        }""",
        [approval["id"], approval["proposal_hash"], BOB],
    )
    assert forged == [403, "not_an_approver"]
    assert console.pending_approval(run_id)["id"] == approval["id"]


def test_the_runs_creator_gets_no_approve_button_and_is_told_why(
    console: Console, page: Page
) -> None:
    run_id = console.start_run(by=ALICE)  # alice approves orders, and created this one
    approval = console.pending_approval(run_id)
    sign_in(page, console, ALICE, f"#/approvals/{approval['id']}")
    expect(page.locator("#proposal-hash")).to_have_text(approval["proposal_hash"])
    expect(page.get_by_text(f"You (user:alice) created run {run_id}")).to_be_visible()
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    with console.client(ALICE) as alice:
        refused = alice.post(
            f"/approvals/{approval['id']}/decision",
            json={"decision": "approve", "hash": approval["proposal_hash"], "reason": "mine"},
        )
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "separation_of_duties"


def test_a_cross_site_state_change_is_refused(console: Console) -> None:
    refused = httpx.post(
        f"{console.url}/api/v1/runs/x/pause",
        json={},
        headers={"Origin": "http://evil.example", "Authorization": f"Bearer {ALICE}"},
    )
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "cross_site_request"
    fetched = httpx.post(
        f"{console.url}/api/v1/runs/x/pause",
        json={},
        headers={"Sec-Fetch-Site": "cross-site", "Authorization": f"Bearer {ALICE}"},
    )
    assert fetched.json()["error"]["code"] == "cross_site_request"


def test_changes_requested_on_the_page_send_the_run_back_to_research(
    console: Console, page: Page
) -> None:
    run_id = console.start_run()
    approval = console.pending_approval(run_id)
    sign_in(page, console, ALICE, f"#/approvals/{approval['id']}")
    page.get_by_label("Reason (required)").fill("find a vendor with enough stock")
    page.get_by_role("button", name="Request changes").click()
    expect(page.locator("#decision-message")).to_contain_text("request_changes by user:alice")
    page.get_by_role("link", name="Watch the run").click()
    expect(page.locator("#timeline")).to_contain_text("from=review to=research")
    expect(page.locator("#turns tr[data-turn]").filter(has_text="research")).to_have_count(2)
    expect(page.locator("#run-status")).to_have_text("waiting_for_approval")
    assert console.pending_approval(run_id)["id"] != approval["id"]


def focus_by_tab(page: Page, selector: str) -> None:
    """Press Tab until the focused element matches ``selector`` (keyboard only)."""
    for _ in range(80):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def test_an_order_can_be_approved_with_the_keyboard_alone(console: Console, page: Page) -> None:
    run_id = console.start_run()
    approval = console.pending_approval(run_id)
    page.goto(f"{console.url}/#/approvals")
    expect(page.get_by_label("API token")).to_be_focused()
    page.keyboard.type(ALICE)
    page.keyboard.press("Enter")
    expect(page.locator("#principal")).to_have_text("user:alice")
    focus_by_tab(page, f'a[href="#/approvals/{approval["id"]}"]')
    page.keyboard.press("Enter")
    expect(page.locator("#proposal-hash")).to_have_text(approval["proposal_hash"])
    focus_by_tab(page, "#decision-reason")
    page.keyboard.type("approved from the keyboard")
    focus_by_tab(page, "#decision button[value=approve]")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("", "none")  # the focus is visible
    page.keyboard.press("Enter")
    expect(page.locator("#decision-message")).to_contain_text("approve by user:alice")
    console.wait_status(run_id, "completed")


def serious(results: Any) -> list[str]:
    return [
        f"{v['id']}: {v['help']} ({len(v['nodes'])} nodes)"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def test_every_page_has_no_serious_accessibility_violations(
    console: Console, page: Page, tmp_path: Path
) -> None:
    from tests.console.test_console_operations import file_widening_proposal

    run_id = console.start_run()
    approval = console.pending_approval(run_id)
    proposal = file_widening_proposal(console, tmp_path)
    objective = console.run(run_id)["run"]["objective_id"]
    axe = Axe()
    sign_in(page, console, ALICE)
    pages = (
        ("#/runs", f'#runs tr[data-run="{run_id}"]'),
        (f"#/runs/{run_id}", '#graph g.node[aria-current="step"]'),
        ("#/approvals", f'a[href="#/approvals/{approval["id"]}"]'),
        (f"#/approvals/{approval['id']}", "#proposal-hash"),
        ("#/objectives", "#objective-create"),
        (f"#/objectives/{objective}", "h1 code"),
        ("#/requests", "#requests-empty"),
        ("#/triggers", "h1"),
        ("#/proposals", "#proposals"),
        (f"#/proposals/{proposal}", "#diff"),
        ("#/deployments", "#deployments"),
        ("#/deployments/procure_laptops", "#activations"),
        ("#/actions", "h1"),
        ("#/ask", "#ask"),
        ("#/teams/procurement", "#actor-runs"),
    )
    for scheme in ("light", "dark"):  # the dark scheme keeps its contrast too
        page.emulate_media(color_scheme=scheme)
        for route, ready in pages:
            page.goto(f"{console.url}/{route}")
            expect(page.locator(ready).first).to_be_visible()
            assert serious(axe.run(page)) == [], (scheme, route)


def test_the_pages_fit_a_phone_width(console: Console, page: Page) -> None:
    run_id = console.start_run()
    approval = console.pending_approval(run_id)
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, console, ALICE)
    for route, ready in (
        ("#/runs", f'#runs tr[data-run="{run_id}"]'),
        (f"#/runs/{run_id}", "#graph svg"),
        (f"#/approvals/{approval['id']}", "#decision button[value=approve]"),
        ("#/objectives", "#objectives tbody tr >> nth=0"),
        ("#/deployments", "#deployments tbody tr >> nth=0"),
    ):
        page.goto(f"{console.url}/{route}")
        expect(page.locator(ready)).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, (route, width)
