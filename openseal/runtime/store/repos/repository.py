"""The base of every repository."""

from __future__ import annotations

from openseal.runtime.store.db.base import StoreBase


class Repository:
    """One aggregate's operations. A repository holds no state of its own beyond caches of
    immutable rows; it opens transactions through the database it is given (the store's
    transactions and dialect hooks, never its other repositories), or works inside the
    caller's (methods taking a ``conn``)."""

    def __init__(self, store: StoreBase) -> None:
        self._store = store
