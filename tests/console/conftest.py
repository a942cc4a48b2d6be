"""Fixtures for the console tests: one served console per module, one headless Chromium for
the package, a fresh page per test.

The browser is package-scoped, not session-scoped: Playwright's sync API keeps an event loop
running in the main thread while it is open, and the tests after this package call
``asyncio.run``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.console.support import REBOUND_HOST, Console, chromium_or_skip, serving


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    executable = chromium_or_skip()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(executable),
            headless=True,
            # a made-up name that leads to this machine, as a rebound DNS name would
            args=["--no-sandbox", f"--host-resolver-rules=MAP {REBOUND_HOST} 127.0.0.1"],
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    with serving(Path(tmp_path_factory.mktemp("console"))) as served:
        yield served


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(30_000)  # a hang guard
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on(
        "console",
        lambda message: errors.append(message.text) if message.type == "error" else None,
    )
    try:
        yield opened
    finally:
        context.close()
    assert not [e for e in errors if "Failed to load resource" not in e], errors
