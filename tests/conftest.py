"""What the whole suite shares: which PostgreSQL halves run with the slow set, and a
collector as usual in every test.

The PostgreSQL half of a test marked ``slow_on_postgresql``, or of any test of the faces over
the service (:data:`FACES`: the HTTP API, the CLI), runs with ``make test-slow``; its SQLite
half stays in ``make test``. CI runs both. What differs between the backends is the store's,
and the store's own tests (tests/runtime) run on both in ``make test``.
"""

from __future__ import annotations

import gc
import os
import shutil
from collections.abc import Iterator

import pytest

#: folders of tests whose subject is a face over the service
FACES = ("tests/api/", "tests/cli/")
#: face tests that keep both halves in ``make test``: the CLI opening a PostgreSQL store
#: named by OPENSEAL_DATABASE_URL
BOTH_HALVES = ("tests/cli/test_runtime_cli.py",)


def _postgresql_half_is_slow(item: pytest.Item) -> bool:
    if item.get_closest_marker("slow_on_postgresql"):
        return True
    return item.nodeid.startswith(FACES) and not item.nodeid.startswith(BOTH_HALVES)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_postgresql = callspec is not None and callspec.params.get("backend") == "postgresql"
        if on_postgresql and _postgresql_half_is_slow(item):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _collected_as_usual() -> Iterator[None]:
    """A worker command run in-process freezes the heap as it would its own process's
    (``freeze_start_up_heap``); the next test starts with the collector as usual."""
    yield
    if gc.get_freeze_count():
        gc.unfreeze()


@pytest.fixture
def graphviz_dot() -> str:
    """Graphviz's ``dot``, which ``openseal graph --format svg`` runs; a failure under CI (whose
    ``.ci/run`` installs it), a skip elsewhere, when it is missing."""
    found = shutil.which("dot")
    if found is None:
        message = "Graphviz `dot` is missing: apt-get install graphviz (.ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found
