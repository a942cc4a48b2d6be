"""Compiled versions read in the caller's transaction and parsed once per store (a version
never changes, invariant 12): the one cache the definitions repository and the objectives
repository (which starts runs on a version) share, given to both by the store.
"""

from __future__ import annotations

import sqlalchemy as sa

from openseal.runtime.store.db import fastsql
from openseal.runtime.store.db.errors import NotFound
from openseal.runtime.store.tables.records import DefinitionVersion
from openseal.runtime.store.tables.statements import ACTIVE_DIGEST, VERSION


class Versions:
    """Versions by digest, parsed once; and the version a deployment points at."""

    def __init__(self) -> None:
        self._parsed: dict[str, DefinitionVersion] = {}

    def cached(self, digest: str) -> DefinitionVersion | None:
        """Version ``digest`` if it was read already (no statement)."""
        return self._parsed.get(digest)

    def get(self, conn: sa.Connection, digest: str) -> DefinitionVersion:
        """Version ``digest``, read in the caller's transaction the first time."""
        found = self._parsed.get(digest)
        if found is None:
            row = conn.execute(VERSION, {"p_digest": digest}).mappings().one_or_none()
            if row is None:
                raise NotFound(f"definition version {digest} not found")
            found = self._parsed[digest] = DefinitionVersion.from_row(row)
        return found

    def active(self, conn: sa.Connection, name: str) -> DefinitionVersion | None:
        """The version deployment ``name`` points at (None if never activated), read in the
        caller's transaction."""
        found = fastsql.one_or_none(fastsql.execute(conn, ACTIVE_DIGEST, {"p_name": name}))
        digest = None if found is None else found["active_digest"]
        return None if digest is None else self.get(conn, digest)
