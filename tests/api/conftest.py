"""API fixtures: a store on each backend (SQLite and PostgreSQL) with the small workflow
deployed, and live servers on loopback over it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from openseal.api import ApiSettings
from openseal.local_operator import LocalOperator
from openseal.runtime.store import Store
from tests.api.support import LiveServer, serving
from tests.runtime.conftest import backend, pg_admin  # noqa: F401  (fixtures)
from tests.runtime.engine_support import register, small_workflow
from tests.runtime.support import Backend

ALICE_TOKEN = "alice-token-0123456789abcdef"
BOB_TOKEN = "bob-token-0123456789abcdef"
CAROL_TOKEN = "carol-token-0123456789abcdef"


def sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


Serve = Callable[..., LiveServer]


@pytest.fixture
def store(backend: Backend, tmp_path: Path) -> Store:  # noqa: F811
    opened = backend.open()
    register(opened, small_workflow(tmp_path))
    return opened


@pytest.fixture
def serve(store: Store, tmp_path: Path) -> Iterator[Serve]:
    """``serve(**settings)`` starts a server over ``store``; all are stopped afterwards. It
    serves the local operator (as ``openseal serve --local-operator``) unless told
    ``local_operator=None``."""
    with ExitStack() as stack:

        def start(**options: Any) -> LiveServer:
            options.setdefault("home", tmp_path)
            options.setdefault("local_operator", LocalOperator.new())
            options.setdefault("stream_poll_seconds", 0.05)
            return stack.enter_context(serving(ApiSettings(**options), store))

        yield start
