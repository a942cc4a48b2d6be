"""The store-backed source of compiled documents: pinned versions, loaded once and cached.

Versions are immutable (invariant 12), so a document or a built
:class:`~openseal.runtime.compiled.CompiledWorkflow` read once serves every later turn.
"""

from __future__ import annotations

import threading
from typing import Any

from openseal.runtime.compiled import CompiledWorkflow, DefinitionError, version_key
from openseal.runtime.store import DefinitionVersion, Store


class WorkflowCatalog:
    """Loads pinned versions from the store; versions are immutable, so caching is safe."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._documents: dict[str, DefinitionVersion] = {}
        # Compiled workflows are immutable too; building one parses every guard again.
        self._workflows: dict[str, CompiledWorkflow] = {}

    def _version(self, digest: str) -> DefinitionVersion:
        key = version_key(digest)
        with self._lock:
            cached = self._documents.get(key)
        if cached is None:
            cached = self._store.definitions.get(key)
            with self._lock:
                self._documents[key] = cached
        return cached

    def document(self, digest: str) -> dict[str, Any]:
        return self._version(digest).document

    def workflow(self, digest: str) -> CompiledWorkflow:
        cached = self._workflows.get(digest)
        if cached is not None:
            return cached
        version = self._version(digest)
        if version.kind != "workflow":
            raise DefinitionError(f"version {digest} is a {version.kind}, not a workflow")
        built = CompiledWorkflow(version.name, version.digest, version.document, self)
        with self._lock:
            self._workflows[digest] = built
        return built
