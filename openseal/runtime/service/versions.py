"""Definition versions by digest: what a list of runs needs to name each run's workflow, so it
imports nothing of the compiler or governance."""

from __future__ import annotations

from typing import TYPE_CHECKING

from openseal.errors import UsageError
from openseal.runtime.store import store_key

if TYPE_CHECKING:
    from openseal.runtime.store import DefinitionVersion, Reads


def get_version(store: Reads, digest: str) -> DefinitionVersion:
    """A stored definition version by digest (``sha256:`` prefix optional)."""
    key = store_key(digest.strip().lower())
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise UsageError(f"{digest!r} is not a sha256 digest (64 hex characters)")
    return store.definitions.get(key)
