"""Ask fixtures: a store on each backend with the release-note definitions deployed, its
writer's model on a local chat server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.store import Store
from tests.asks.support import KEY, KEY_VARIABLE, release_documents
from tests.runtime.conftest import backend, pg_admin  # noqa: F401  (fixtures)
from tests.runtime.providers.chat_server import ChatServer
from tests.runtime.support import Backend


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    with ChatServer(require_key=KEY) as running:
        yield running


@pytest.fixture
def store(backend: Backend, tmp_path: Path, chat: ChatServer) -> Store:  # noqa: F811
    opened = backend.open()
    service.register_documents(opened, release_documents(tmp_path, chat), actor="user:test")
    return opened
