"""The base of every repository."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openseal.runtime.store.store import Store


class Repository:
    """One aggregate's operations. A repository holds no state of its own beyond caches of
    immutable rows; it opens transactions through the store, or works inside the caller's
    (methods taking a ``conn``)."""

    def __init__(self, store: Store) -> None:
        self._store = store
