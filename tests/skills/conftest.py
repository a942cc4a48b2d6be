from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.skills.server import Server, serve


@pytest.fixture
def server() -> Iterator[Server]:
    with serve() as running:
        yield running
