"""What the whole suite shares: the ``slow_on_postgresql`` mark.

A test marked ``slow_on_postgresql`` runs on SQLite with ``make test`` and on PostgreSQL with
``make test-slow`` (CI runs both): for a test that costs seconds on each backend and whose
subject is above the store, which the store's own tests cover on both backends in
``make test``.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_postgresql = callspec is not None and callspec.params.get("backend") == "postgresql"
        if on_postgresql and item.get_closest_marker("slow_on_postgresql"):
            item.add_marker(pytest.mark.slow)
