"""The local operator in headless Chromium: the console URL `openseal serve --local-operator`
prints signs the console in through an HttpOnly cookie, and a page whose name leads to
127.0.0.1 (DNS rebinding) reads nothing and decides nothing, even holding the secret."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.console.support import REBOUND_HOST, Console, serving

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    with serving(Path(tmp_path_factory.mktemp("local")), local_operator=True) as served:
        yield served


def _fetch(page: Page, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a script of the page gets from the server that served it (status and JSON)."""
    found: dict[str, Any] = page.evaluate(
        """async ([path, body]) => {
            const init = body === null ? {} : {method: "POST", body: JSON.stringify(body),
                headers: {"Content-Type": "application/json"}};
            const response = await fetch(path, {...init, credentials: "same-origin"});
            return {status: response.status, body: await response.json()};
        }""",
        [path, body],
    )
    return found


def test_the_printed_url_signs_in_the_local_operator_who_approves_the_order(
    local: Console, page: Page
) -> None:
    run_id = local.start_run()
    approval = local.pending_approval(run_id)
    orders_before = local.simulator.order_count()
    page.goto(local.operator_url())
    expect(page.locator("#principal")).to_have_text("user:local")
    assert "local-operator=" not in page.url  # out of the address bar and the history
    assert page.evaluate("document.cookie") == ""  # HttpOnly: no script reads it back
    page.goto(f"{local.url}/#/approvals/{approval['id']}")
    expect(page.locator("#proposal-hash")).to_have_text(approval["proposal_hash"])
    page.get_by_label("Reason (required)").fill("the order I asked for")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator("#decision-message")).to_contain_text("approve by user:local")
    local.wait_status(run_id, "completed")
    assert local.simulator.order_count() == orders_before + 1


@pytest.fixture
def any_page(browser: Browser) -> Iterator[Page]:
    """A page whose console messages are not checked: Chromium warns that it ignores the
    security headers of an address that is not loopback, which the rebound name is."""
    context = browser.new_context()
    opened = context.new_page()
    opened.set_default_timeout(30_000)  # a hang guard
    try:
        yield opened
    finally:
        context.close()


def test_a_rebound_page_reads_nothing_and_decides_nothing(local: Console, any_page: Page) -> None:
    page = any_page
    run_id = local.start_run()
    approval = local.pending_approval(run_id)
    port = local.url.rsplit(":", 1)[1]
    rebound = f"http://{REBOUND_HOST}:{port}"
    # the console signed in at 127.0.0.1 in this browser: its cookie is 127.0.0.1's alone
    page.goto(local.operator_url())
    expect(page.locator("#principal")).to_have_text("user:local")
    page.goto(f"{rebound}/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert _fetch(page, "/api/v1/runs")["status"] == 401
    decision = {"decision": "approve", "hash": approval["proposal_hash"]}
    refused = _fetch(page, f"/api/v1/approvals/{approval['id']}/decision", decision)
    assert refused["status"] == 401, refused
    # even a page that learned the secret gets nothing under its own name
    secret = local.operator_url().split("local-operator=", 1)[1]
    page.goto(f"{rebound}/#local-operator={secret}")
    expect(page.locator(".notice")).to_contain_text("not accepted")
    answered: dict[str, Any] = page.evaluate(
        """async ([path, secret]) => {
            const response = await fetch(path, {headers: {Authorization: `Bearer ${secret}`}});
            return {status: response.status, body: await response.json()};
        }""",
        ["/api/v1/runs", secret],
    )
    assert answered["status"] == 421 and answered["body"]["error"]["code"] == "misdirected_request"
    assert local.pending_approval(run_id)["status"] == "pending"
    assert local.run(run_id)["run"]["status"] == "waiting_for_approval"
