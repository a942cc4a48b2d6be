"""Proposal fields are text, never markup: a model that names its vendor with HTML gets that
HTML shown as characters on the approval page, and nothing of it runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.console.support import ALICE, SCRIPT, Console, serving, sign_in

#: a real browser against a served console: run with `make test-slow`
pytestmark = pytest.mark.slow

VENDOR = '<script>window.pwned = 1</script><img src="x" onerror="window.pwned = 2">northwind'


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    home = Path(tmp_path_factory.mktemp("console-text"))
    script = json.loads(SCRIPT.read_text(encoding="utf-8"))
    script["research"][-1]["output"]["vendor"] = VENDOR
    (home / "script.json").write_text(json.dumps(script), encoding="utf-8")
    with serving(home, home / "script.json") as served:
        yield served


def test_a_vendor_named_with_markup_is_shown_as_text(console: Console, page: Page) -> None:
    run_id = console.start_run()
    approval = console.pending_approval(run_id)
    sign_in(page, console, ALICE, f"#/approvals/{approval['id']}")
    vendor = page.locator('#proposal-fields tr[data-field="args.vendor"] td')
    expect(vendor).to_have_text(VENDOR)
    assert vendor.locator("script, img").count() == 0
    assert page.locator("main script, main img").count() == 0
    page.goto(f"{console.url}/#/runs/{run_id}")
    expect(page.get_by_text(VENDOR).first).to_be_visible()
    assert page.evaluate("window.pwned") is None
