"""Screenshots of the console's main pages for docs/console.md (``make console-screenshots``).

Starts ``openseal serve`` over a fresh store with the procurement example, makes one run that
completed and one that waits for approval, and photographs the pages in headless Chromium.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright

from tests.console.support import ALICE, CHROMIUM, Console, serving, sign_in

OUT = Path("docs/images")


def shoot(page: Page, name: str, out: Path) -> None:
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(out / f"console-{name}.png"), full_page=True)
    print(out / f"console-{name}.png")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as home, serving(Path(home)) as console:
        done = console.start_run()
        approve(console, done)
        console.wait_status(done, "completed")
        waiting = console.start_run()
        approval = console.pending_approval(waiting)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
            for width, suffix in ((1280, ""), (390, "-phone")):
                page = browser.new_page(viewport={"width": width, "height": 800})
                sign_in(page, console, ALICE)
                expect(page.locator(f'#runs tr[data-run="{waiting}"]')).to_be_visible()
                shoot(page, f"runs{suffix}", out)
                page.goto(f"{console.url}/#/runs/{waiting}")
                expect(page.locator('#graph g.node[aria-current="step"]')).to_have_count(1)
                shoot(page, f"run{suffix}", out)
                page.goto(f"{console.url}/#/approvals/{approval['id']}")
                expect(page.locator("#proposal-hash")).to_be_visible()
                shoot(page, f"approval{suffix}", out)
                page.goto(f"{console.url}/#/teams/procurement")
                expect(page.locator(f'#actor-runs tr[data-run="{waiting}"]')).to_be_visible()
                shoot(page, f"team{suffix}", out)
                page.close()
            browser.close()


def approve(console: Console, run_id: str) -> None:
    approval = console.pending_approval(run_id)
    with console.client(ALICE) as alice:
        alice.post(
            f"/approvals/{approval['id']}/decision",
            json={"decision": "approve", "hash": approval["proposal_hash"], "reason": "ok"},
        ).raise_for_status()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
